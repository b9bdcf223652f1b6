"""The ahead-of-time executor: a model's execution plan as one C-callable function.

``compile_graph(..., executor="aot")`` lowers the graph exactly as for the graph
executor (the same kernels, the same calls in the same order, the same memory
plan) and then, instead of leaving the calls to ``driver.runtime``, emits them as
one LLVM function linked into the kernels' module::

    int32_t vtamod_run(void *const *inputs, void *const *outputs, void *workspace);

* ``inputs[i]`` / ``outputs[i]``: the model's inputs and outputs in graph.json
  order, each 64-byte aligned, dense, of the declared shape and dtype;
* ``workspace``: ``workspace_bytes`` bytes, 64-byte aligned, scratch for one run
  (nothing is kept between runs): every activation slot of the memory plan at a
  fixed offset (:func:`workspace_layout`), then the kernels' shared scratch;
* parameters are constant data in the object (``vtamod_c0``, ... in ``.rodata``),
  linked in after optimisation so the optimiser never folds weights into code;
* returns 0, -1 for a NULL pointer, -2 for a pointer that is not 64-byte aligned,
  or the first kernel's non-zero status. The function allocates nothing.

Symbols: every name the module exports and every name ``model.h`` declares starts with
one prefix, ``vtamod_`` unless ``aot_files(..., prefix="mnist_")`` picks another
(:func:`check_prefix`): ``mnist_run``, ``mnist_c0``, ``mnist_input_names``,
``MNIST_WORKSPACE_BYTES``. The kernels are internal to the object, so two models with
distinct prefixes link into one program (``docs/deploy.md``).

Files of an AOT module: ``model.so`` (host: kernels + entry + constants, one
shared library that ``driver.runtime.load_module`` opens, with the SONAME
``lib<prefix>model.so``: :func:`soname`) or ``model.o`` (a cross triple: one
relocatable object to link with ``driver/aot/harness.c`` or any C program), and
``model.h`` (:func:`header`), the C declaration of the entry, the inputs and outputs
(names, shapes, dtypes, bytes) and the workspace size.
"""
from __future__ import annotations

import binascii
import re

import numpy as np
from llvmlite import ir

from vta_hw.errors import ArgumentError

from .link import compile_object, link_library

#: default prefix of every symbol the module exports and every name model.h declares
PREFIX = "vtamod_"
#: the rule a prefix follows: a letter, then letters, digits or underscores (a leading
#: underscore would make the header's upper-case macros names reserved to C itself)
_PREFIX_RULE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
#: byte alignment of every input, output, workspace region and constant
ALIGN = 64
#: the entry's status codes other than a kernel's own
STATUS_NULL, STATUS_MISALIGNED = -1, -2

_I8, _I32, _I64, _PTR = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.PointerType()
_C_TYPES = {"float32": "float", "float64": "double", "int8": "int8_t", "uint8": "uint8_t",
            "int16": "int16_t", "int32": "int32_t", "int64": "int64_t", "bool": "uint8_t"}


def check_prefix(prefix: str, what: str = "aot_prefix") -> str:
    """``prefix``, checked as the start of a C identifier (``what`` names it in the error:
    ``--aot-prefix`` on the command line).

    Raises:
        ArgumentError: (a ValueError) ``prefix`` is not a str of a letter, then letters,
            digits or underscores.
    """
    if not isinstance(prefix, str) or not _PREFIX_RULE.fullmatch(prefix):
        raise ArgumentError(f"{what} must be the start of a C identifier: a letter, then letters, "
                            f"digits or underscores (e.g. 'mnist_'), not {prefix!r}")
    return prefix


def entry_name(prefix: str = PREFIX) -> str:
    """The entry function's symbol: ``<prefix>run`` (``vtamod_run``)."""
    return f"{prefix}run"


def soname(prefix: str = PREFIX) -> str:
    """The SONAME of a host ``model.so``: ``lib<prefix>model.so`` (``libvtamod_model.so``), the
    file name a program linked against it looks for (``-l<prefix>model``)."""
    return f"lib{prefix}model.so"


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _nbytes(spec: dict) -> int:
    return int(np.prod(spec["shape"])) * np.dtype(spec["dtype"]).itemsize


def workspace_layout(graph_json: dict) -> dict:
    """Where the memory plan's buffers sit in the one workspace (bytes, 64-aligned).

    Returns:
        ``{"slots": [offset per slot], "scratch": offset of the kernels' scratch,
        "bytes": total workspace size}``.
    """
    offsets, off = [], 0
    for n in graph_json["slots"]:
        offsets.append(off)
        off += _align(n)
    return {"slots": offsets, "scratch": off, "bytes": off + _align(graph_json["workspace_bytes"])}


def constant_symbols(params: dict, prefix: str = PREFIX) -> dict:
    """Parameter name -> ``(symbol, bytes)`` of its constant data (``<prefix>c<i>``; an empty
    array takes one byte)."""
    return {name: (f"{prefix}c{i}", max(np.asarray(v).nbytes, 1))
            for i, (name, v) in enumerate(params.items())}


def entry_ir(graph_json: dict, symbols: dict, target, entry: str = entry_name()) -> str:
    """LLVM IR of the entry function (module docstring) for ``target``: declarations of
    the kernels and constants it calls and reads, defined by the modules it is linked with.

    Args:
        graph_json: the execution plan (``build.compile_graph``).
        symbols: parameter name -> ``(symbol, bytes)`` (:func:`constant_symbols`).
        target: a ``compiler.codegen.llvm.target.Target``.
        entry: the function's symbol (:func:`entry_name`).
    """
    mod = ir.Module(name="aot_entry")
    mod.triple = target.triple
    mod.data_layout = str(target.machine().target_data)
    fn = ir.Function(mod, ir.FunctionType(_I32, [_PTR, _PTR, _PTR]), entry)
    inputs, outputs, workspace = fn.args
    for a, name in zip(fn.args, ("inputs", "outputs", "workspace")):
        a.name = name
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    layout = workspace_layout(graph_json)

    def fail_if(cond, code: int, label: str) -> None:
        bad, ok = fn.append_basic_block(f"{label}_bad"), fn.append_basic_block(f"{label}_ok")
        b.cbranch(cond, bad, ok)
        b.position_at_end(bad)
        b.ret(ir.Constant(_I32, code))
        b.position_at_end(ok)

    def misaligned(p):
        return b.icmp_unsigned("!=", b.and_(b.ptrtoint(p, _I64), ir.Constant(_I64, ALIGN - 1)),
                               ir.Constant(_I64, 0))

    null = ir.Constant(_PTR, None)
    for a in fn.args:
        fail_if(b.icmp_unsigned("==", a, null), STATUS_NULL, f"{a.name}_null")
    fail_if(misaligned(workspace), STATUS_MISALIGNED, "workspace_align")
    io = {}
    for kind, array, specs in (("input", inputs, graph_json["inputs"]),
                               ("output", outputs, graph_json["outputs"])):
        for i in range(len(specs)):
            p = b.load(b.gep(array, [ir.Constant(_I64, i)], source_etype=_PTR), typ=_PTR)
            fail_if(b.icmp_unsigned("==", p, null), STATUS_NULL, f"{kind}{i}_null")
            fail_if(misaligned(p), STATUS_MISALIGNED, f"{kind}{i}_align")
            io[kind, i] = p

    consts: dict = {}

    def pointer(ref: dict):
        kind = ref["kind"]
        if kind == "input":
            return io["input", ref["index"]]
        if kind == "param":
            sym, size = symbols[ref["name"]]
            if sym not in consts:
                gv = ir.GlobalVariable(mod, ir.ArrayType(_I8, size), sym)
                gv.global_constant = True
                consts[sym] = gv
            return consts[sym]
        off = (layout["slots"][ref["slot"]] if kind == "slot"
               else layout["scratch"] + ref["offset"])
        return b.gep(workspace, [ir.Constant(_I64, off)], source_etype=_I8)

    kernels: dict = {}
    for k, call in enumerate(graph_json["calls"]):
        name = call["kernel"]
        if name not in kernels:
            kernels[name] = ir.Function(mod, ir.FunctionType(_I32, [_PTR] * len(call["args"])), name)
        rc = b.call(kernels[name], [pointer(r) for r in call["args"]])
        fail = fn.append_basic_block(f"call{k}_fail")
        ok = fn.append_basic_block(f"call{k}_ok")
        b.cbranch(b.icmp_signed("!=", rc, ir.Constant(_I32, 0)), fail, ok)
        b.position_at_end(fail)
        b.ret(rc)
        b.position_at_end(ok)
    memcpy = mod.declare_intrinsic("llvm.memcpy", [_PTR, _PTR, _I64])
    for i, o in enumerate(graph_json["outputs"]):
        b.call(memcpy, [io["output", i], pointer(o["ref"]), ir.Constant(_I64, _nbytes(o)),
                        ir.Constant(ir.IntType(1), 0)])
    b.ret(ir.Constant(_I32, 0))
    return str(mod)


def constants_ir(params: dict, symbols: dict, target) -> str:
    """LLVM IR defining each parameter's bytes as a 64-byte aligned constant named by
    ``symbols`` (written directly as text: ResNet-18's 47 MB take about a second)."""
    lines = [f'target triple = "{target.triple}"',
             f'target datalayout = "{target.machine().target_data}"']
    for name, value in params.items():
        data = np.ascontiguousarray(value).tobytes() or b"\0"
        body = "\\" + binascii.hexlify(data, "\\").decode()
        lines.append(f'@{symbols[name][0]} = constant [{len(data)} x i8] c"{body}", align {ALIGN}')
    return "\n".join(lines) + "\n"


def header(graph_json: dict, workspace_bytes: int, constant_bytes: int, target,
           prefix: str = PREFIX) -> str:
    """``model.h``: the C declaration of the entry and of the model's interface, every name
    starting with ``prefix`` (the macros with it in upper case: ``VTAMOD_NUM_INPUTS``)."""
    P = prefix.upper()
    guard = f"{P}MODEL_H"
    ins, outs = graph_json["inputs"], graph_json["outputs"]
    lines = [f"/* Generated by `vta compile --executor aot` for {target.triple}: do not edit. */",
             f"#ifndef {guard}", f"#define {guard}", "", "#include <stddef.h>", "#include <stdint.h>",
             "", f"#define {P}NUM_INPUTS {len(ins)}", f"#define {P}NUM_OUTPUTS {len(outs)}",
             f"/* bytes of scratch one run needs (activations + kernel scratch), {ALIGN}-byte aligned */",
             f"#define {P}WORKSPACE_BYTES {workspace_bytes}u",
             "/* bytes of parameters held as constant data in the object */",
             f"#define {P}CONSTANT_BYTES {constant_bytes}u", f"#define {P}ALIGN {ALIGN}", ""]
    for kind, specs in (("INPUT", ins), ("OUTPUT", outs)):
        for i, s in enumerate(specs):
            lines.append(f"/* {kind.lower()} {i} {s['name']!r}: {s['dtype']}{list(s['shape'])} "
                         f"({_C_TYPES.get(s['dtype'], s['dtype'])}) */")
            lines.append(f"#define {P}{kind}{i}_BYTES {_nbytes(s)}u")
            lines.append(f"#define {P}{kind}{i}_NDIM {len(s['shape'])}")
            lines.append(f"#define {P}{kind}{i}_SHAPE {{{', '.join(map(str, s['shape'])) or '1'}}}")
    lines.append("")
    unused = "__attribute__((unused))"
    for kind, specs in (("input", ins), ("output", outs)):
        names = ", ".join(f'"{s["name"]}"' for s in specs)
        dtypes = ", ".join(f'"{s["dtype"]}"' for s in specs)
        sizes = ", ".join(f"{_nbytes(s)}u" for s in specs)
        descs = ", ".join(f'"{s["dtype"]}{list(s["shape"])}"' for s in specs)
        lines += [f"static const char *const {prefix}{kind}_names[] {unused} = {{{names}}};",
                  f"static const char *const {prefix}{kind}_dtypes[] {unused} = {{{dtypes}}};",
                  f"static const size_t {prefix}{kind}_bytes[] {unused} = {{{sizes}}};",
                  f"static const char *const {prefix}{kind}_desc[] {unused} = {{{descs}}};"]
    lines += ["", "/* Run the model once. inputs[i], outputs[i]: the buffers above, in this order;",
              f" * workspace: {P}WORKSPACE_BYTES bytes. Every pointer {ALIGN}-byte aligned. Nothing",
              " * is allocated; calls with distinct workspaces and outputs may run concurrently.",
              f" * Returns 0, {STATUS_NULL} (a NULL pointer), {STATUS_MISALIGNED} (a pointer not "
              f"{ALIGN}-byte aligned)", " * or the failing kernel's non-zero status. */",
              f"int32_t {entry_name(prefix)}(void *const *inputs, void *const *outputs, void *workspace);",
              "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def aot_files(funcs: list, graph_json: dict, params: dict, target, opt_level: int = 3,
              prefix: str = PREFIX):
    """Build an AOT module's files from the lowered kernels and their plan.

    Args:
        funcs: the lowered kernels (the PrimFuncs the graph executor links too).
        graph_json: their execution plan.
        params: name -> array, the packed constants the calls read.
        target: a ``Target``: the host (``model.so``) or a cross triple (``model.o``).
        opt_level: LLVM optimisation level.
        prefix: the start of every exported symbol and header name (:func:`check_prefix`).

    Returns:
        ``(files, info)``: file name -> bytes (``model.so`` or ``model.o``, ``model.h``),
        and the manifest's ``aot`` entry ``{"entry", "prefix", "header", "object",
        "workspace_bytes", "constant_bytes"}`` (a host module also ``"soname"``).

    Raises:
        ArgumentError: a bad ``prefix``.
        RuntimeError: no C compiler to link the host library.
    """
    check_prefix(prefix)
    entry, symbols = entry_name(prefix), constant_symbols(params, prefix)
    code, data = entry_ir(graph_json, symbols, target, entry), constants_ir(params, symbols, target)
    info = {"entry": entry, "prefix": prefix, "header": "model.h"}
    if target.is_host:
        name, blob = "model.so", link_library(funcs, target, True, opt_level, code, data,
                                              exports=[entry], soname=soname(prefix))
        info["soname"] = soname(prefix)
    else:
        name, blob = "model.o", compile_object(funcs, target, True, opt_level, code, data,
                                               exports=[entry])
    ws = workspace_layout(graph_json)["bytes"]
    const = sum(size for _, size in symbols.values())
    info.update(object=name, workspace_bytes=ws, constant_bytes=const)
    return {name: blob, "model.h": header(graph_json, ws, const, target, prefix).encode()}, info
