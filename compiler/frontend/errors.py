"""Errors raised while importing a model."""

from vta_hw.errors import VtaError


class FrontendError(VtaError, ValueError):
    """The model cannot be imported: unreadable file, unsupported opset, dynamic
    dimension without an input shape override, or a node with bad attributes.
    The message names the node (name and op type), the bad value and the fix.
    """


class UnsupportedOperatorError(FrontendError):
    """The model uses operators the frontend does not convert.

    `unsupported` lists every offending (op_type, node_name, domain), so one
    run reports them all.
    """

    def __init__(self, unsupported: list[tuple[str, str, str]]):
        self.unsupported = unsupported
        lines = "\n".join(f"  {op} (node {name!r}{', domain ' + repr(dom) if dom not in ('', 'ai.onnx') else ''})"
                          for op, name, dom in unsupported)
        kinds = sorted({op for op, _, _ in unsupported})
        super().__init__(f"{len(unsupported)} node(s) use operators the ONNX frontend does not support "
                         f"({', '.join(kinds)}):\n{lines}\n"
                         "Export the model without them, or add converters in compiler/frontend/onnx_ops/.")


class UnsupportedAtenError(FrontendError):
    """The exported program uses ATen ops the PyTorch frontend does not convert.

    `unsupported` lists every offending (op, FX node name, source line), so one
    run reports them all.
    """

    def __init__(self, unsupported: list[tuple[str, str, str]]):
        self.unsupported = unsupported
        lines = "\n".join(f"  {op} (node {name!r}{', ' + line if line else ''})"
                          for op, name, line in unsupported)
        kinds = sorted({op for op, _, _ in unsupported})
        super().__init__(f"{len(unsupported)} node(s) use ATen ops the PyTorch frontend does not "
                         f"support ({', '.join(kinds)}):\n{lines}\n"
                         "Rewrite the model without them, use torch.compile(model, backend='vta') "
                         "(they then run in eager PyTorch), or add converters in "
                         "compiler/frontend/torch_ops/.")
