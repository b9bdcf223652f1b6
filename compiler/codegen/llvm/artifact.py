"""Built modules: optimised LLVM code, runnable on the host and exportable.

:class:`BuiltModule` is what ``compiler.build`` returns: for the host it is
JIT-compiled at once and callable; for any target it emits an object file
or assembly, and for the host it links a shared library.
:func:`load_library` opens such a library again and returns its kernels
(argument specs travel inside the library as a JSON string symbol).
"""
from __future__ import annotations

import ctypes
import json
import time

import llvmlite.binding as llvm

from compiler.codegen.llvm.export import emit_assembly, emit_object, link_shared
from compiler.codegen.llvm.jit import JITModule
from compiler.codegen.llvm.codegen import SPECS_SYMBOL, LLVMSource
from compiler.codegen.llvm.module import ArgSpec, CompiledFunction
from compiler.codegen.llvm.optimize import optimize
from compiler.codegen.llvm.target import Target, init_llvm
from compiler.runtime_native.openmp import load_libgomp


def parse_ir(text: str) -> llvm.ModuleRef:
    """Parse and verify LLVM IR text.

    Raises:
        RuntimeError: the IR does not parse or verify (a backend bug; the
            message holds LLVM's diagnosis).
    """
    init_llvm()
    try:
        mod = llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as err:
        raise RuntimeError(f"generated LLVM IR is invalid (backend bug): {err}") from None
    return mod


class BuiltModule:
    """Compiled kernels for one target.

    Args:
        source: the emitted LLVM IR and argument specs.
        opt_level: LLVM optimisation level 0..3.

    Attributes:
        target: the :class:`Target`.
        specs: kernel name -> argument specs.
        llvm_ir: the optimised LLVM IR text.
        compile_seconds: wall time of optimisation plus JIT (host) in seconds.
    """

    def __init__(self, source: LLVMSource, opt_level: int = 3):
        start = time.perf_counter()
        self.target: Target = source.target
        self.specs = source.specs
        mod = parse_ir(source.text)
        optimize(mod, self.target.machine(), opt_level)
        self.llvm_ir = str(mod)
        self._functions = {}
        if self.target.is_host:
            self._jit = JITModule(mod, self.target)
            for name, specs in self.specs.items():
                self._functions[name] = CompiledFunction(name, self._jit.address(name), specs, self._jit)
        self.compile_seconds = time.perf_counter() - start

    # ------------------------------------------------------------------ running
    def get_function(self, name: str) -> CompiledFunction:
        """The host kernel ``name``.

        Raises:
            ValueError: the module was built for a cross target.
            KeyError: no kernel of that name.
        """
        if not self.target.is_host:
            raise ValueError(f"module built for {self.target} cannot run here; use "
                             "save_object()/export_library() and run it on that machine")
        if name not in self._functions:
            raise KeyError(f"no kernel {name!r}; kernels: {', '.join(self._functions)}")
        return self._functions[name]

    __getitem__ = get_function

    def __call__(self, *args) -> None:
        """Run the module's single kernel (see :class:`CompiledFunction` for errors)."""
        if len(self.specs) != 1:
            raise TypeError(f"module has kernels {', '.join(self.specs)}; pick one with "
                            "module[name]")
        self.get_function(next(iter(self.specs)))(*args)

    # ------------------------------------------------------------------ export
    def object_code(self) -> bytes:
        """Relocatable object file (ELF, or wasm for wasm32) of all kernels."""
        return emit_object(parse_ir(self.llvm_ir), self.target)

    def assembly(self) -> str:
        """Assembly text of all kernels."""
        return emit_assembly(parse_ir(self.llvm_ir), self.target)

    def save_object(self, path: str) -> str:
        """Write :meth:`object_code` to ``path``; returns ``path``."""
        with open(path, "wb") as f:
            f.write(self.object_code())
        return path

    def export_library(self, path: str, cc: "str | None" = None) -> str:
        """Link a shared library (host only) with the system C compiler; returns ``path``.

        Raises:
            ValueError: cross target (link its object with that target's toolchain).
            RuntimeError: no C compiler, or the link failed.
        """
        if not self.target.is_host:
            raise ValueError(f"shared libraries are linked for the host only; for {self.target} "
                             "use save_object() and that target's linker")
        return link_shared([self.object_code()], path, cc)

    def __repr__(self) -> str:
        return f"<BuiltModule {', '.join(self.specs)} for {self.target}>"


class LibraryModule:
    """Kernels of a shared library written by :meth:`BuiltModule.export_library`."""

    def __init__(self, path: str):
        load_libgomp()
        self.path = path
        self._lib = ctypes.CDLL(path)
        try:
            raw = ctypes.c_char_p.in_dll(self._lib, SPECS_SYMBOL)
        except ValueError:
            raise ValueError(f"{path} has no {SPECS_SYMBOL} symbol; was it written by "
                             "BuiltModule.export_library?") from None
        raw = ctypes.string_at(ctypes.addressof(raw))
        table = json.loads(raw.decode())
        self.specs = {n: [ArgSpec.from_json(d) for d in ds] for n, ds in table.items()}
        self._functions = {
            n: CompiledFunction(n, ctypes.cast(getattr(self._lib, n), ctypes.c_void_p).value, s,
                                self._lib)
            for n, s in self.specs.items()}

    def __getitem__(self, name: str) -> CompiledFunction:
        return self._functions[name]

    def __call__(self, *args) -> None:
        if len(self._functions) != 1:
            raise TypeError(f"library has kernels {', '.join(self._functions)}; pick one with "
                            "lib[name]")
        next(iter(self._functions.values()))(*args)


def load_library(path: str) -> LibraryModule:
    """Open a shared library written by :meth:`BuiltModule.export_library`."""
    return LibraryModule(path)
