"""``compiler.build_model``: an ONNX model (or a graph IR ``Graph``) -> a :class:`CompiledModel`.

Usage::

    from compiler.build_model import build_model
    cm = build_model("model.onnx", input_shapes={"x": (1, 3, 224, 224)})
    cm.save("out/model.vtamod")          # graph.json + kernels.so + params.npz

    from driver.runtime import load_module   # numpy + ctypes only
    m = load_module("out/model.vtamod")
    m.set_input("x", x); m.run(); y = m.get_output(0)

Pipeline: ``frontend.onnx.from_onnx`` -> ``graph.optimize`` (type inference,
constant and batch-norm folding, fusion, memory plan) -> ``graph_lower``
(one kernel per fused group, shared across equal signatures, all in one
shared library).
"""
from __future__ import annotations

import time

from compiler.graph_lower import CompiledModel, compile_graph


def _static_shapes(model, input_shapes):
    """Input shapes with every dynamic dimension (e.g. batch) set to 1 unless given."""
    shapes = dict(input_shapes or {})
    init = {t.name for t in model.graph.initializer}
    for v in model.graph.input:
        if v.name in init or v.name in shapes:
            continue
        dims = v.type.tensor_type.shape.dim
        if any(not d.HasField("dim_value") or d.dim_value <= 0 for d in dims):
            shapes[v.name] = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                                   for d in dims)
    return shapes


def build_model(model, target: str = "llvm", params=None, input_shapes=None, progress=None,
                opt_level: int = 3, layout_block: "int | None" = None) -> CompiledModel:
    """Compile ``model`` for the CPU or a GPU.

    Args:
        model: an ONNX ``ModelProto``, a path to a ``.onnx`` file, or a graph IR
            ``Graph`` (then ``params`` holds its constants).
        target: an LLVM host target string (``"llvm"``), or a GPU target:
            ``"cuda"`` (``"cuda -arch=sm_90"`` is the default arch) or ``"opencl"``
            (then the module's kernel files are GPU sources and binaries, run by
            ``driver.gpu_runtime``; see ``compiler/graph_lower/gpu.py``).
        params: constants of a ``Graph`` model (ignored for ONNX).
        input_shapes: name -> shape, overriding the model's (dynamic dimensions
            default to 1).
        progress: optional ``(iterable, total, desc) -> iterable`` wrapper (tqdm).
        opt_level: LLVM optimisation level 0..3.
        layout_block: run the graph's ``alter_layout`` pass with this block
            (convs in NCHW{b}c, kernels OIHW{b}i{b}o, lowered by
            ``topi.conv2d.conv2d_nchwc``). None (default): convs stay NCHW
            and pack their constant weights to ``[O/ob, I, KH, KW, ob]``
            themselves, which needs no layout transforms between layers.

    Returns:
        a :class:`~compiler.graph_lower.CompiledModel`; ``stats`` holds the
        compile time per phase in seconds.

    Raises:
        compiler.frontend.FrontendError: the ONNX model does not import.
        compiler.graph.GraphError: the graph is invalid.
        compiler.graph_lower.LoweringError: an operator without a CPU kernel.
    """
    from compiler.graph import Graph, optimize
    start = time.perf_counter()
    if isinstance(model, Graph):
        graph, consts = model, dict(params or {})
    else:
        from compiler.frontend.onnx import from_onnx, load_model
        proto = load_model(model)
        graph, consts = from_onnx(proto, _static_shapes(proto, input_shapes))
    t_import = time.perf_counter()
    opt = optimize(graph, consts, layout_block=layout_block)
    t_opt = time.perf_counter()
    if target.split()[:1] in (["cuda"], ["opencl"]):
        from compiler.graph_lower.gpu import compile_graph_gpu
        cm = compile_graph_gpu(opt.graph, opt.params, opt.memory_plan, target, progress)
    else:
        cm = compile_graph(opt.graph, opt.params, opt.memory_plan, target, progress, opt_level)
    cm.stats.update(import_s=t_import - start, optimize_s=t_opt - t_import,
                    total_s=time.perf_counter() - start)
    return cm
