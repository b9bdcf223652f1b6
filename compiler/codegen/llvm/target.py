"""Code generation targets: which machine the LLVM backend emits for.

A target string follows TVM's form::

    "llvm"                                   # the host: JIT and shared libraries
    "llvm -mtriple=aarch64-linux-gnu"        # cross: object files only
    "llvm -mtriple=armv7-linux-gnueabihf -mattr=+neon"
    "llvm -mtriple=wasm32-unknown-unknown -mattr=+simd128"   # SIMD128: 4 x f32
    "llvm -mcpu=skylake-avx512 -mattr=+avx512f"

The host target takes its CPU name and feature string from LLVM's host
detection (``llvm.get_host_cpu_name()`` / ``get_host_cpu_features()``) less
the features the operating system hides (``vta_hw.host_cpu``: the kernel's
``/proc/cpuinfo`` view wins), so AVX2 and AVX-512 are used where the machine
has them and nothing the loader would refuse is. Cross targets get a
generic CPU unless ``-mcpu`` says otherwise. A named CPU's feature string is
the features LLVM knows it implies (``cpu_features``), with ``-mattr``'s
entries on top, so path selection (VNNI, AVX512-BF16, AMX) and the manifest
see them.

Errors: :func:`parse_target` raises ``ValueError`` for an unknown kind, an
unknown option, or a triple LLVM has no backend for.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import llvmlite.binding as llvm
from vta_hw import host_cpu
from vta_hw.errors import ArgumentError

from .cpu_features import cpu_features, merge
from .llvm_init import init_llvm

# Named cross targets the test-suite and the CLI know by a short name.
AARCH64 = "llvm -mtriple=aarch64-linux-gnu"
ARMV7 = "llvm -mtriple=armv7-linux-gnueabihf -mattr=+neon"
WASM32 = "llvm -mtriple=wasm32-unknown-unknown -mattr=+simd128"
_ALIASES = {"host": "llvm", "aarch64": AARCH64, "armv7": ARMV7, "wasm32": WASM32}


@dataclass(frozen=True)
class Target:
    """One LLVM code generation target.

    Attributes:
        triple: LLVM target triple, e.g. ``"x86_64-unknown-linux-gnu"``.
        cpu: LLVM CPU name (``"znver4"``, ``"generic"``, ...).
        features: LLVM feature string (``"+avx2,+fma,..."``), may be empty.
        is_host: True when code can run in this process (JIT, shared library).
        mattr: the ``-mattr=`` the target string gave (``""`` if none), which ``str()``
            prints rather than a named CPU's implied features; None for a Target made
            directly (``str()`` then prints ``features`` of a non-host target).
    """

    triple: str
    cpu: str
    features: str
    is_host: bool
    mattr: "str | None" = field(default=None, compare=False)   # spelling, not identity

    @property
    def arch(self) -> str:
        """First component of the triple: ``x86_64``, ``aarch64``, ``armv7``, ``wasm32``."""
        return self.triple.split("-")[0]

    @property
    def has_threads(self) -> bool:
        """Whether parallel loops go to the OpenMP runtime (libgomp).

        wasm32 has no thread runtime here, so its parallel loops run serially.
        """
        return not self.arch.startswith("wasm")

    @property
    def vector_bits(self) -> int:
        """Widest SIMD register in bits, from the feature string: 512 with +avx512f,
        256 with +avx/+avx2, else 128 (a named CPU counts with the features it implies)."""
        feats = set(self.features.split(","))
        if self.arch == "x86_64":
            if "+avx512f" in feats:
                return 512
            if "+avx" in feats or "+avx2" in feats:
                return 256
        return 128

    def vector_lanes(self, dtype_bits: int) -> int:
        """Number of lanes of ``dtype_bits``-bit elements in one SIMD register."""
        return max(1, self.vector_bits // dtype_bits)

    def machine(self, opt: int = 3, jit: bool = False) -> llvm.TargetMachine:
        """An llvmlite ``TargetMachine`` for this target (PIC, small code model)."""
        init_llvm()
        return llvm.Target.from_triple(self.triple).create_target_machine(
            cpu=self.cpu, features=self.features, opt=opt, reloc="pic",
            codemodel="default", jit=jit)

    def __str__(self) -> str:
        parts = ["llvm", f"-mtriple={self.triple}", f"-mcpu={self.cpu}"]
        mattr = self.mattr if self.mattr is not None else (
            self.features if not self.is_host else "")
        if mattr:
            parts.append(f"-mattr={mattr}")
        return " ".join(parts)


@functools.cache
def host_target() -> Target:
    """The machine this process runs on: LLVM's host CPU name and the features it reports
    that the operating system also lists (``vta_hw.host_cpu``), so kernels built for it
    use nothing the kernel hides and load here (tests monkeypatch this function with
    :func:`host_view_target` of another machine's fixture)."""
    init_llvm()
    return host_view_target(llvm.get_process_triple(), llvm.get_host_cpu_name(),
                            dict(llvm.get_host_cpu_features()), host_cpu.read_os_flags())


def host_view_target(triple: str, cpu: str, llvm_features: dict, os_flags: frozenset) -> Target:
    """The target "this machine" means on a host whose LLVM host query gives ``cpu`` and
    ``llvm_features`` (name -> on, ``llvm.get_host_cpu_features()``'s map, in its order)
    and whose operating system lists ``os_flags`` (``/proc/cpuinfo``): every feature the
    OS hides is switched off (``-rdseed``), so LLVM cannot use it."""
    feats = host_cpu.usable(llvm_features, os_flags)
    return Target(triple, cpu, ",".join(("+" if on else "-") + name for name, on in feats.items()),
                  True)


def parse_target(spec: "str | Target") -> Target:
    """Turn a target string (see module docstring) into a :class:`Target`.

    Raises:
        ValueError: the kind is not ``llvm``, an option is unknown, or LLVM has
            no backend for the triple.
    """
    if isinstance(spec, Target):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"target must be a str or Target, not {spec!r}")
    words = _ALIASES.get(spec.strip(), spec).split()
    if not words or words[0] != "llvm":
        raise ArgumentError(f"target kind must be 'llvm' (e.g. 'llvm -mtriple=aarch64-linux-gnu'), "
                         f"not {spec!r}")
    opts = {}
    for word in words[1:]:
        key, _, value = word.partition("=")
        if key not in ("-mtriple", "-mcpu", "-mattr") or not value:
            raise ArgumentError(f"target option must be -mtriple=, -mcpu= or -mattr=, not {word!r} "
                             f"in {spec!r}")
        opts[key] = value
    host = host_target()
    triple = normalize_triple(opts.get("-mtriple", host.triple))
    is_host = _same_machine(triple, host.triple)
    init_llvm()
    try:
        llvm.Target.from_triple(triple)
    except RuntimeError as err:
        raise ArgumentError(f"LLVM has no backend for triple {triple!r} (target {spec!r}): {err}") from None
    cpu = opts.get("-mcpu", host.cpu if is_host else "generic")
    if "," in cpu:
        raise ArgumentError(f"-mcpu={cpu}: a CPU list makes a fleet module (build_model, vta "
                            f"compile); this step compiles for one CPU (target {spec!r}): name "
                            "one, e.g. -mcpu=x86-64-v3")
    native = cpu == "native" and is_host
    if native:
        cpu = host.cpu
    if "-mcpu" in opts and not _cpu_known(triple, cpu):
        hint = (f"-mcpu=native (this machine: {host.cpu})" if is_host
                else "a CPU of that architecture, or no -mcpu (generic)")
        raise ArgumentError(f"-mcpu={cpu}: LLVM does not know this CPU for triple {triple!r} "
                         f"(target {spec!r}); use {hint}")
    mattr = opts.get("-mattr", "")
    if native:
        features = merge((), ",".join(filter(None, (host.features, mattr))))
    elif "-mcpu" in opts:
        features = merge(cpu_features(triple, cpu), mattr)
    else:
        features = mattr or (host.features if is_host else "")
    return Target(triple, cpu, features, is_host, mattr)


@functools.cache
def _cpu_known(triple: str, cpu: str) -> bool:
    """Whether LLVM knows ``cpu`` for ``triple``. LLVM only prints "'x' is not a recognized
    processor" on stderr (and may abort later, in codegen), so catch that message at fd 2."""
    import os
    import tempfile
    init_llvm()
    with tempfile.TemporaryFile() as cap:
        import sys
        if sys.stderr is not None and not sys.stderr.closed:
            sys.stderr.flush()  # Python's buffered text first, so none lands in ``cap``
        saved = os.dup(2)
        try:
            os.dup2(cap.fileno(), 2)
            llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features="")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        cap.seek(0)
        return b"not a recognized processor" not in cap.read()


#: operating systems a three-part triple (``arch-os-env``) may name without a vendor
_VENDORLESS_OS = ("linux",)


def normalize_triple(triple: str) -> str:
    """``triple`` with the vendor LLVM expects in the second place: ``armv7-linux-gnueabihf``
    -> ``armv7-unknown-linux-gnueabihf``. LLVM reads a three-part triple as arch-vendor-os,
    so without this the environment (``gnueabihf``: hard-float calls) is lost and ARMv7
    objects pass floats in integer registers, which a hard-float C library misreads."""
    parts = triple.split("-")
    if len(parts) == 3 and parts[1] in _VENDORLESS_OS:
        parts.insert(1, "unknown")
    return "-".join(parts)


def _same_machine(triple: str, host_triple: str) -> bool:
    arch, host_arch = triple.split("-")[0], host_triple.split("-")[0]
    return arch == host_arch and ("linux" in triple) == ("linux" in host_triple)


def split_cpus(spec: str) -> list:
    """The target strings of a fleet target: ``"llvm -mcpu=x86-64-v2,x86-64-v3"`` ->
    ``["llvm -mcpu=x86-64-v2", "llvm -mcpu=x86-64-v3"]`` (one per ``-mcpu`` entry, the
    other options kept); a target with one CPU (or none) -> ``[spec]``.

    Raises:
        ArgumentError: an empty or repeated entry in the ``-mcpu`` list.
    """
    words = _ALIASES.get(spec.strip(), spec).split()
    cpus = next((w.partition("=")[2] for w in words if w.startswith("-mcpu=")), None)
    if cpus is None or "," not in cpus:
        return [spec]
    names = cpus.split(",")
    if "" in names:
        raise ArgumentError(f"-mcpu={cpus}: an empty entry in the list of CPUs or levels (no "
                            "spaces around the commas: -mcpu=x86-64-v2,x86-64-v3,x86-64-v4)")
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise ArgumentError(f"-mcpu={cpus}: {twice} is listed twice; name each CPU or level once "
                            "(e.g. -mcpu=x86-64-v2,x86-64-v3,x86-64-v4)")
    return [" ".join(f"-mcpu={name}" if w.startswith("-mcpu=") else w for w in words)
            for name in names]
