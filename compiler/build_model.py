"""``compiler.build_model``: a whole model -> a :class:`CompiledModel` for any target.

Usage::

    from compiler import build_model          # or: from compiler.build_model import build_model
    cm = build_model("model.onnx", input_shapes={"x": (1, 3, 224, 224)})             # host CPU
    cm = build_model("model.onnx", target="cuda")                                     # or "opencl"
    cm = build_model("model.onnx", target="vta", calib={"x": samples},               # accelerator
                     config="1x16_i8w8a32_15_15_18_17", per_channel=False)
    cm.save("out/model.vtamod")          # one module format (version 3), written atomically

    from driver.runtime import load_module   # numpy + ctypes only
    m = load_module("out/model.vtamod")      # or load_module(cm): runs from memory
    m.set_input("x", x); m.run(); y = m.get_output(0)

Routes, one per target kind (``ROUTES``), after one front end (``import_model``:
the first entry of ``compiler.frontend.registry`` that takes the model: graph IR,
PyTorch (``torch.export``), ONNX; dynamic ONNX dimensions set to 1 unless given)::

    cm = build_model(torch_module, example_inputs=(torch.randn(1, 3, 224, 224),))
    cm = build_model("model.pt2")                 # a saved torch.export program


    llvm     graph.optimize (folding, fusion, memory plan) -> graph_lower.compile_graph
             (one kernel per fused group, all in one shared library; executor="aot":
             plus one C-callable entry that runs them, graph_lower/aot.py). For a cross
             triple ("aarch64", "armv7", "wasm32", "llvm -mtriple=...") the module
             holds the kernels as one relocatable object (kernels.o) for that
             machine instead; the manifest names the triple, and loading it on
             another architecture is a one-line error.
    cuda     graph.optimize -> graph_lower.gpu.compile_graph_gpu (kernels.cu + kernels.cubin)
    opencl   as cuda, kernels.cl
    vta      int8 quantization (calibration) -> partition + accelerator programs
             (``compiler.quant``) -> the execution plan whose CPU steps are compiled
             kernels (``compiler/build_vta.py``)

The module object is itself callable (``compiler.build_model(...)`` and
``from compiler.build_model import build_model`` are the same function).
"""
from __future__ import annotations

import sys
import time
import types

from compiler.frontend import import_model  # noqa: F401  (compiler.build_model.import_model, as documented)
from compiler.graph_lower import CompiledModel, compile_graph
from compiler.graph_lower.aot import PREFIX, check_prefix
from compiler.graph_lower.build import EXECUTORS
from compiler.graph_lower.fleet import combine
from vta_hw.errors import ArgumentError


def _route_cpu(graph, consts, target, progress, opt_level, layout_block, options):
    from compiler.autotune import load_tuning
    from compiler.graph import optimize
    if "quantize" in options:
        return _route_cpu_int8(graph, consts, target, progress, opt_level, options)
    dtype = options.get("dtype", "float32")
    if dtype not in ("float32", "bfloat16"):
        raise ValueError(f"dtype must be 'float32' or 'bfloat16' (bf16 dense layers and "
                         f"convs, fp32 accumulation), not {dtype!r}")
    bf16 = None
    if dtype == "bfloat16":
        from compiler.graph_lower import bf16_accuracy
        from compiler.graph_lower.bf16 import mark_bf16
        # choose on the weights the kernels round: batch norm folded into the convs
        folded = optimize(graph, consts, fuse=False, verify=False)
        bf16 = bf16_accuracy.choose(folded.graph, folded.params)
        graph, consts = mark_bf16(folded.graph, bf16.keep_fp32), folded.params
    from compiler.codegen.llvm.target import parse_target
    from compiler.graph.passes.assign_layout import count_transforms
    tuning = load_tuning(options.get("tuning_log") or ())
    # the graph tuner's per-conv layouts, where a log holds a decision for this graph
    layouts = tuning.layout_chooser(parse_target(target)) if tuning.layouts and not layout_block \
        else None
    t0 = time.perf_counter()
    opt = optimize(graph, consts, layout_block=layout_block, layouts=layouts)
    t1 = time.perf_counter()
    cm = compile_graph(opt.graph, opt.params, opt.memory_plan, target, progress, opt_level,
                       options.get("executor", "graph"), tuning=tuning,
                       aot_prefix=options.get("aot_prefix", PREFIX))
    cm.stats["optimize_s"] = t1 - t0
    cm.stats["tuning"] = tuning.report()
    cm.stats["layout_transforms"] = count_transforms(opt.graph)
    if bf16 is not None:
        cm.stats["bf16"] = bf16.stats()
    return cm


def _route_cpu_int8(graph, consts, target, progress, opt_level, options):
    from compiler.quant.cpu_int8 import build_int8_cpu
    q = options.pop("quantize")
    if q != "int8":
        raise ValueError(f"quantize must be 'int8' (int8 x int8 -> int32 kernels on the CPU), "
                         f"not {q!r}")
    if options.pop("tuning_log", None):
        raise ValueError("tuning_log does not apply to quantize='int8' (its int8 kernels have "
                         "no tuning spaces yet); leave it out")
    return build_int8_cpu(graph, consts, cpu_target=target, progress=progress,
                          opt_level=opt_level, **options)


def _route_gpu(graph, consts, target, progress, opt_level, layout_block, options):
    from compiler.autotune import load_tuning
    from compiler.autotune.gpu_task import gpu_target_record
    from compiler.graph import optimize
    from compiler.graph_lower.gpu import compile_graph_gpu, parse_gpu_target
    t0 = time.perf_counter()
    opt = optimize(graph, consts, layout_block=layout_block)
    t1 = time.perf_counter()
    tuning = load_tuning(options.get("tuning_log") or ())
    parse_gpu_target(target)                 # a bad target fails before the device is asked
    device = gpu_target_record(target) if tuning else None
    cm = compile_graph_gpu(opt.graph, opt.params, opt.memory_plan, target, progress, tuning,
                           device)
    cm.stats["optimize_s"] = t1 - t0
    cm.stats["tuning"] = tuning.report()
    return cm


def _route_vta(graph, consts, target, progress, opt_level, layout_block, options):
    from compiler.build_vta import build_vta
    if target.split()[1:]:
        raise ArgumentError(f"target {target!r}: vta takes no options; choose the accelerator with "
                         "config='<preset>' (e.g. '1x16_i8w8a32_15_15_18_17')")
    return build_vta(graph, consts, progress=progress, opt_level=opt_level, **options)


#: target kind (the target string's first word) -> route
ROUTES = {"llvm": _route_cpu, "cuda": _route_gpu, "opencl": _route_gpu, "vta": _route_vta}
#: named LLVM targets (``compiler.codegen.llvm.target``) that take the llvm route
_LLVM_ALIASES = ("host", "aarch64", "armv7", "wasm32")
#: options that only the vta route takes
VTA_OPTIONS = ("config", "calib", "per_channel", "cpu_target", "vthreads", "dram", "measure",
               "min_channels", "seed", "placement", "clock_mhz", "force")
#: options of the llvm route: int8 quantization on the CPU (``compiler.quant.cpu_int8``)
CPU_OPTIONS = ("quantize", "calib", "per_channel", "seed", "dtype")


def target_kind(target: str) -> str:
    """The route of target string ``target``: its first word, a named LLVM target
    (``aarch64``...) counting as ``"llvm"``; one of ``ROUTES``.

    Raises:
        ArgumentError: (a ValueError) the kind is none of ``ROUTES``, listing them.
    """
    kind = target.split()[0] if target.split() else ""
    if kind in _LLVM_ALIASES:
        kind = "llvm"
    if kind not in ROUTES:
        raise ArgumentError(f"target must be 'llvm' (host CPU), 'cuda' ('cuda -arch=sm_80'), 'opencl' "
                            f"or 'vta' (the accelerator), not {target!r}")
    return kind


def _fleet(kind: str, target: str, executor: str, options: dict) -> list:
    """One ``(cpu target string, route target, route options)`` per CPU of a fleet target
    (``-mcpu=a,b,c``: of ``target`` on the llvm route, of ``cpu_target`` on the vta route;
    ``compiler/graph_lower/fleet.py``), or the one build of any other target.

    Raises:
        ArgumentError: a CPU list for the AOT executor, for another machine than this one's
            architecture (a cross triple, wasm32), or malformed (``split_cpus``).
    """
    from compiler.codegen.llvm.target import parse_target, split_cpus
    cpu_spec = (options.get("cpu_target") or "llvm") if kind == "vta" else target
    cpus = split_cpus(cpu_spec) if kind in ("llvm", "vta") else [cpu_spec]
    if len(cpus) == 1:
        return [(cpu_spec, target, options)]
    if executor != "graph":
        raise ArgumentError(f"target {cpu_spec!r}: a CPU list builds a fleet module for the "
                            f"graph executor; executor {executor!r} builds one object for the "
                            "one CPU it names (build one AOT module per CPU)")
    if not parse_target(cpus[0]).is_host:
        raise ArgumentError(f"target {cpu_spec!r}: a CPU list builds a module that "
                            "driver.runtime loads on this machine's architecture; cross "
                            "targets (aarch64, armv7, wasm32) get one object per triple and "
                            "CPU: build one module per CPU")
    if kind == "vta":
        return [(cpu, target, {**options, "cpu_target": cpu}) for cpu in cpus]
    return [(cpu, cpu, options) for cpu in cpus]


def build_model(model, target: str = "llvm", params=None, input_shapes=None, progress=None,
                opt_level: int = 3, layout_block: "int | None" = None, example_inputs=None,
                executor: str = "graph", tuning_log=None, aot_prefix: "str | None" = None,
                **options) -> CompiledModel:
    """Compile a whole model for the CPU, a GPU or the accelerator.

    Args:
        model: an ONNX ``ModelProto``, a path to a ``.onnx`` file, a PyTorch
            ``nn.Module`` (with ``example_inputs``), a ``torch.export`` program or the
            path of a saved one (``.pt2``), or a graph IR ``Graph`` (then ``params``
            holds its constants).
        target: ``"llvm"`` (the host; ``"llvm -mcpu=x86-64-v2"`` for a smaller
            feature set, recorded in the module and checked at load), ``"cuda"``
            (``"cuda -arch=sm_80"``; sm_90 by default), ``"opencl"``, or ``"vta"``
            (the accelerator, int8). A cross triple (``"aarch64"``, ``"armv7"``,
            ``"wasm32"``, ``"llvm -mtriple=..."``) gives a module whose kernels are a
            relocatable object for that machine (``kernels.o``).
        params: constants of a ``Graph`` model (ignored for ONNX).
        input_shapes: name -> shape, overriding the model's (dynamic dimensions
            default to 1). For vta, the batch the programs are compiled for.
        progress: optional ``(iterable, total, desc) -> iterable`` wrapper (tqdm).
        opt_level: LLVM optimisation level 0..3 (CPU kernels, also those of vta).
        layout_block: CPU only: run ``alter_layout`` with this block (convs in
            NCHW{b}c). None (default): convs stay NCHW with packed weights.
        example_inputs: PyTorch ``nn.Module`` only: the arguments it is exported with
            (a tuple of tensors); their shapes are the compiled shapes.
        executor: ``"graph"`` (default: ``driver.runtime`` calls the kernels in plan
            order) or ``"aot"`` (CPU targets: the same kernels and memory plan compiled
            into one C-callable function ``vtamod_run`` with the parameters as constant
            data and one workspace; files ``model.so`` on the host, with the SONAME
            ``libvtamod_model.so``, or ``model.o`` for a cross triple, and the C header
            ``model.h``; see ``docs/deploy.md``).
        tuning_log: a tuning log path (or a list of them, ``vta tune``); per workload the
            best record of this build's target is applied (a CPU's triple, name and code
            features; for vta the preset; for cuda/opencl the device of this machine, its
            name and driver version), else on a CPU the best record of a sibling CPU of
            the same ISA class (``compiler/autotune/isa_class.py``; counted per CPU in
            ``stats["tuning"]["sibling"]``); the others keep the default schedule. The
            logs shipped in ``compiler/autotune/logs/`` are applied in any case, under
            the same rule; ``stats["tuning"]`` says how many workloads the logs covered. On LLVM
            targets, a graph tuner decision for this model and target (``layout_block``
            not given) lays each conv out as it chose (``stats["tuning"]["layouts"]``),
            with the layout transforms the choice implies (``stats["layout_transforms"]``
            counts them).
        aot_prefix: ``executor="aot"`` only: the start of every symbol the module exports
            and every name of ``model.h`` instead of ``vtamod_`` (``"mnist_"``: entry
            ``mnist_run``, macros ``MNIST_...``, SONAME ``libmnist_model.so``), so that
            two models link into one program; a letter, then letters, digits or
            underscores.
        **options: target="llvm": ``quantize="int8"`` runs the model in int8 on the CPU
            (the project's power-of-two quantization; int8 x int8 -> int32 convs and
            dense layers on VNNI where the CPU has it, ``compiler.quant.cpu_int8``),
            with ``calib``, ``per_channel`` (default True) and ``seed`` as for vta;
            ``dtype="bfloat16"``: dense layers and convs in bf16 with fp32 accumulation
            where the CPU has AVX512-BF16 (``compiler.graph_lower.bf16``; fp32 elsewhere),
            but for the shortest prefix of them kept in fp32 so that an emulation meets
            cosine 0.999 to fp32 (``compiler.graph_lower.bf16_accuracy``; ``stats["bf16"]``
            names them).
            target="vta" only:
            config: a ``VTAConfig`` or preset name (default preset);
            calib: input name -> float32 samples ``[N, *input dims[1:]]`` (None: 8
                seeded standard-normal samples, a smoke calibration, with a
                ``compiler.quant.calibration.RandomCalibrationWarning``);
            per_channel: one power-of-two weight scale per output channel;
            cpu_target: the LLVM target of the CPU steps (default ``"llvm"``);
            placement: "supported" (default) or "cost" (each accelerator-able node where
                its estimated time is lower; needs clock_mhz), or a ``Placement``;
            clock_mhz: the accelerator clock placement "cost" weighs cycles at, MHz;
            force: op type ("conv2d", "dense", "add") -> "cpu" | "vta";
            vthreads, dram, measure, min_channels, seed: see ``compiler/build_vta.py``.

    Returns:
        a :class:`~compiler.graph_lower.CompiledModel`: ``save(path)`` writes the module,
        ``driver.runtime.load_module(cm)`` runs it from memory; ``stats`` holds the
        compile time per phase in seconds (``import_s``, ``total_s``, ...).

    Raises:
        ValueError: an unknown target kind or executor, ``executor="aot"`` for a GPU or
            the accelerator, ``aot_prefix`` without ``executor="aot"`` or not a C
            identifier's start, vta options for another target, or (vta) a bad config.
        compiler.frontend.FrontendError: the model does not import (for PyTorch also
            ``UnsupportedAtenError``, every unconverted op with its source line).
        compiler.graph.GraphError: the graph is invalid.
        compiler.graph_lower.LoweringError: an operator without a kernel.
        compiler.codegen.gpu.cuda.CudaCompileError: NVRTC/nvcc rejects a CUDA kernel.
    """
    if not isinstance(target, str):
        raise TypeError(f"target must be a str such as 'llvm', 'cuda', 'opencl' or 'vta', not "
                        f"{target!r}")
    kind = target_kind(target)
    extra = [k for k in options if k not in VTA_OPTIONS + CPU_OPTIONS]
    if extra:
        raise TypeError(f"build_model() got unexpected option(s) {', '.join(extra)}; options "
                        f"for target 'vta': {', '.join(VTA_OPTIONS)}; for 'llvm': "
                        f"{', '.join(CPU_OPTIONS)}")
    cpu_int8 = kind == "llvm" and "quantize" in options and all(k in CPU_OPTIONS for k in options)
    if "dtype" in options and (kind != "llvm" or "quantize" in options
                               or any(k != "dtype" for k in options)):
        raise ArgumentError(f"dtype={options['dtype']!r} applies to target 'llvm' alone (not with "
                         f"quantize or other options), not {target!r} with "
                         f"{', '.join(options)}")
    if cpu_int8 and executor != "graph":
        raise ArgumentError(f"quantize='int8' builds graph-executor modules, not executor "
                         f"{executor!r}; use executor='graph'")
    if kind == "llvm" and "quantize" in options and not cpu_int8:
        bad = [k for k in options if k not in CPU_OPTIONS]
        raise ArgumentError(f"option(s) {', '.join(bad)} apply to target 'vta' only; with "
                         f"quantize='int8' target {target!r} takes {', '.join(CPU_OPTIONS)}")
    if options and kind != "vta" and not cpu_int8 and list(options) != ["dtype"]:
        raise ArgumentError(f"option(s) {', '.join(options)} apply to target 'vta' only, not "
                         f"{target!r}")
    if executor not in EXECUTORS:
        raise ArgumentError(f"executor must be 'graph' or 'aot' (one C-callable function), not "
                         f"{executor!r}")
    if executor != "graph":
        if kind != "llvm":
            raise ArgumentError(f"executor {executor!r} builds CPU modules (target 'llvm' or a cross "
                             f"triple such as 'aarch64'), not target {target!r}; use "
                             "executor='graph' for GPUs and the accelerator")
        options = dict(options, executor=executor)
    if aot_prefix is not None:
        if executor != "aot":
            raise ArgumentError(f"aot_prefix={aot_prefix!r} names the symbols of an AOT module, "
                                f"not of executor {executor!r}; add executor='aot' or drop it")
        options["aot_prefix"] = check_prefix(aot_prefix)
    if tuning_log is not None:
        options = {**options, "tuning_log": tuning_log}
    start = time.perf_counter()
    graph, consts = import_model(model, params, input_shapes, example_inputs)
    t_import = time.perf_counter()
    builds = [(cpu, ROUTES[kind](graph, consts, t, progress, opt_level, layout_block, dict(opts)))
              for cpu, t, opts in _fleet(kind, target, executor, options)]
    cm = builds[0][1] if len(builds) == 1 else combine(builds)
    cm.stats.update(import_s=t_import - start, total_s=time.perf_counter() - start)
    return cm


class _CallableModule(types.ModuleType):
    """Lets ``compiler.build_model(...)`` call :func:`build_model` although
    ``compiler.build_model`` is this module."""

    def __call__(self, *args, **kwargs):
        return build_model(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
