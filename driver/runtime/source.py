"""Where a module's parts come from: a folder on disk (checked) or a compiled model in memory.

:func:`open_folder` reads ``manifest.json`` (format "vtamod", version 3, written by
``CompiledModel.save``) and checks, each failure a one-line ``RuntimeModuleError``
naming the file and the fix:

- a folder of an earlier format (no manifest.json, graph.json of format "vtamod-1",
  "vtamod-gpu-1", "vtamod-vta-1" or "vtamod-vta-2"): recompile it;
- the manifest's own ``digest`` (sha256 of its other keys) matches, so a manifest
  damaged or edited by hand (a part's hash replaced, the config changed) is refused;
- every file the manifest lists exists, lies inside the folder and has its sha256 (a
  mismatch names the file, with what is wrong when that can be told: truncated
  library, invalid JSON); the parts are kept as read, so what runs is what was
  hashed, and a module replaced while being read is read again;
- the graph is valid JSON.

The hashes catch damage, mixed copies and hand edits; they are no signature: whoever
can write the folder can write a consistent manifest too. Where that matters, sign the
folder (e.g. minisign or sigstore over manifest.json).

:func:`from_memory` wraps a ``compiler.graph_lower.CompiledModel`` (any object with
its attributes, ``executor`` and ``aot`` of AOT modules: nothing here imports the
compiler) so that it runs without a
save/load round trip.
"""
from __future__ import annotations

import hashlib
import json
import os

from .errors import RuntimeModuleError
from .native import elf_problem, load_params

FORMAT = "vtamod"
VERSION = 3
#: graph.json formats of module folders written before the manifest (version 3)
OLD_FORMATS = ("vtamod-1", "vtamod-gpu-1", "vtamod-vta-1", "vtamod-vta-2")
RECOMPILE = "recompile it with `vta compile`"


class ModuleSource:
    """A module's manifest, graph and files, from disk or memory.

    Attributes:
        where: the folder (or ``"<in-memory module>"``) for messages.
        manifest: the manifest (``targets``, ``cpu``, ``vta``, ...).
        graph: the execution plan (graph.json).
    """

    def __init__(self, where: str, manifest: dict, graph: dict, files: dict, params, programs):
        self.where, self.manifest, self.graph = where, manifest, graph
        self._files, self._params, self._programs = files, params, programs

    @property
    def targets(self) -> list:
        return list(self.manifest.get("targets", []))

    @property
    def kind(self) -> str:
        """``"vta"`` (accelerator), ``"gpu"`` (cuda/opencl) or ``"cpu"``."""
        kinds = [t.split()[0] for t in self.targets if t.split()]
        if "vta" in kinds:
            return "vta"
        if kinds and kinds[0] in ("cuda", "opencl"):
            return "gpu"
        return "cpu"

    @property
    def variant_name(self) -> "str | None":
        """The CPU variant of a fleet module this source views (``variant``), else None."""
        return self.manifest.get("cpu_variant")

    def variant(self, entry: dict) -> "ModuleSource":
        """The view of one CPU variant of a fleet module (a manifest ``variants`` entry,
        ``compiler/graph_lower/fleet.py``): its plan, kernels, parameters and programs under
        their usual names, the manifest's ``cpu`` and ``targets`` those of the variant.

        Raises:
            RuntimeModuleError: the entry names a part the module does not hold.
        """
        def part(name):
            path = entry["files"].get(name, name)
            if path == name and name in ("graph.json", "params.npz"):
                return None                              # the first variant's own
            if path in self._programs:
                return self._programs[path]
            if path not in self._files:
                raise RuntimeModuleError(f"module {self.where!r}: variant {entry['name']} "
                                         f"names {path}, which the module does not hold; "
                                         f"{RECOMPILE}")
            return self._files[path]
        manifest = {k: v for k, v in self.manifest.items() if k != "variants"}
        manifest.update(cpu=entry["cpu"], targets=list(entry.get("targets", self.targets)),
                        cpu_variant=entry["name"])
        raw_graph, npz = part("graph.json"), part("params.npz")
        try:
            graph = self.graph if raw_graph is None else json.loads(raw_graph)
        except ValueError as exc:
            raise RuntimeModuleError(f"module {self.where!r}: variant {entry['name']}'s "
                                     f"graph.json is not valid JSON ({exc}); {RECOMPILE}") from None
        where = os.path.join(self.where, entry["files"].get("params.npz", "params.npz"))
        shared = entry.get("shared_params", [])

        def params():
            own = load_params(npz, where) if npz is not None else self.params()
            base = self.params() if shared else {}
            missing = [k for k in shared if k not in base]
            if missing:
                raise RuntimeModuleError(f"module {self.where!r}: variant {entry['name']} "
                                         f"shares parameter {missing[0]!r}, which params.npz "
                                         f"lacks; {RECOMPILE}")
            return {**{k: base[k] for k in shared}, **own}
        files = {name: part(name) for name in entry["files"]
                 if name not in ("graph.json", "params.npz") and not name.startswith("programs/")}
        programs = {name: part(name) for name in entry["files"] if name.startswith("programs/")}
        return ModuleSource(self.where, manifest, graph, files, params, programs)

    def has(self, name: str) -> bool:
        return name in self._files

    def read(self, name: str) -> bytes:
        """The bytes of file ``name`` (``kernels.so``, ``kernels.cubin``, ...)."""
        if name not in self._files:
            raise RuntimeModuleError(f"module {self.where!r} has no {name}; {RECOMPILE}")
        return self._files[name]

    def library(self, name: str = "kernels.so") -> bytes:
        """The bytes of the shared library ``name`` (kernels.so; model.so of AOT modules),
        for ``native.open_library``."""
        data = self._files.get(name)
        if data is None:
            raise RuntimeModuleError(f"module {self.where!r} has no {name}; {RECOMPILE}")
        return data

    def params(self) -> dict:
        """name -> array."""
        if callable(self._params):
            self._params = self._params()
        return self._params

    def program(self, name: str):
        """The ``vta_hw.program.Program`` at graph.json path ``name``."""
        if name not in self._programs:
            raise RuntimeModuleError(f"module {self.where!r} has no {name} (named in graph.json); "
                                     f"{RECOMPILE}")
        prog = self._programs[name]
        if isinstance(prog, bytes):  # the verified bytes read by open_folder
            from vta_hw.program_file import ProgramFormatError, from_bytes
            try:
                prog = from_bytes(prog, os.path.join(self.where, name))
            except ProgramFormatError as exc:
                raise RuntimeModuleError(f"{exc}; {RECOMPILE}") from None
            self._programs[name] = prog
        return prog


def _old_format_or_not_a_module(path: str) -> RuntimeModuleError:
    gj = os.path.join(path, "graph.json")
    if not os.path.isfile(gj):
        return RuntimeModuleError(f"{path!r} is not a compiled module folder (no manifest.json); "
                                  "create one with `vta compile model.onnx -o model.vtamod`")
    try:
        with open(gj) as f:
            fmt = json.load(f).get("format")
    except (ValueError, AttributeError, OSError):
        fmt = None
    if fmt in OLD_FORMATS:
        return RuntimeModuleError(f"{path}: written by an earlier version (format {fmt!r}); "
                                  f"{RECOMPILE}")
    return RuntimeModuleError(f"{path}: no manifest.json (graph.json format {fmt!r}), not a module "
                              f"of format {FORMAT!r} version {VERSION}; {RECOMPILE}")


def _damage(name: str, data: bytes) -> str:
    """What is wrong with file ``name`` whose hash differs, as a phrase after its path."""
    if name.endswith(".so"):
        bad = elf_problem(data)
        if bad:
            return f": {bad}"
    if name.endswith(".json"):
        try:
            json.loads(data)
        except ValueError as exc:
            return f" is not valid JSON ({exc})"
    if name.endswith(".npz"):
        try:
            load_params(data)
        except RuntimeModuleError:
            return ": truncated or damaged"
    return ": its contents changed"


def sha256(data: bytes) -> str:
    """``"sha256:<hex>"``, the form manifest.json records."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def manifest_digest(doc: dict) -> str:
    """The sha256 of a manifest without its ``digest`` key, over sorted-key compact JSON
    (``compiler/graph_lower/module_file.py`` computes the same when it writes one)."""
    body = {k: v for k, v in doc.items() if k != "digest"}
    return sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def _open_dir(path: str) -> int:
    """A file descriptor of the module folder ``path``: every part is read through it, so all
    come from one folder even if another process swaps a new module in meanwhile."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        raise RuntimeModuleError(f"{path!r} does not exist; give the folder that `vta compile "
                                 "model.onnx -o model.vtamod` wrote") from None
    except OSError:
        raise RuntimeModuleError(f"{path!r} is not a compiled module folder; create one with "
                                 "`vta compile model.onnx -o model.vtamod`") from None


def _read_at(dir_fd: int, name: str) -> bytes:
    """The bytes of ``name`` inside the folder ``dir_fd`` (FileNotFoundError if absent)."""
    fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _read_manifest_bytes(path: str, dir_fd: int) -> bytes:
    try:
        return _read_at(dir_fd, "manifest.json")
    except (FileNotFoundError, IsADirectoryError):
        raise _old_format_or_not_a_module(path) from None


def _parse_manifest(path: str, raw: bytes) -> dict:
    mpath = os.path.join(path, "manifest.json")
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise RuntimeModuleError(f"{mpath} is not valid JSON ({exc}); the file is truncated or "
                                 f"damaged: {RECOMPILE}") from None
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if fmt != FORMAT:
        raise RuntimeModuleError(f"{mpath} has format {fmt!r}, this runtime reads {FORMAT!r} "
                                 f"version {VERSION}; {RECOMPILE}")
    version = doc.get("version")
    if version != VERSION:
        newer = isinstance(version, int) and version > VERSION
        raise RuntimeModuleError(
            f"{mpath}: module version {version!r}, this runtime reads version {VERSION}; "
            + ("update this runtime, or recompile the module with this version's `vta compile`"
               if newer else RECOMPILE))
    if not isinstance(doc.get("files"), dict) or not isinstance(doc.get("targets"), list):
        raise RuntimeModuleError(f"{mpath} lists no files or targets; {RECOMPILE}")
    if "digest" not in doc:
        raise RuntimeModuleError(f"{mpath} has no digest (written before manifests carried "
                                 f"one); {RECOMPILE}")
    if doc["digest"] != manifest_digest(doc):
        raise RuntimeModuleError(f"{mpath}: its digest {str(doc['digest'])[:20]}... differs from "
                                 "its contents: the manifest was damaged or edited by hand (a "
                                 "part's hash, the config, the targets); recompile the module "
                                 "with `vta compile`")
    return doc


def read_manifest(path) -> dict:
    """The manifest of the module folder ``path``, its format, version and digest checked
    (files are not read: see :func:`open_folder`).

    Raises:
        RuntimeModuleError: no folder, an earlier format, invalid JSON, another format
            or version, a digest that differs.
    """
    path = os.fspath(path)
    dir_fd = _open_dir(path)
    try:
        return _parse_manifest(path, _read_manifest_bytes(path, dir_fd))
    finally:
        os.close(dir_fd)


def open_folder(path, tries: int = 20) -> ModuleSource:
    """A :class:`ModuleSource` for the module folder ``path`` (module docstring).

    Every part is read once, through one descriptor of the folder, and kept: what runs is
    exactly what was hashed, all from one module. A module replaced while it is read
    (another process saving to ``path``: the folder read was swapped out and is being
    removed) is read again from the new one, at most ``tries`` times.

    Raises:
        RuntimeModuleError: see the module docstring.
    """
    path = os.fspath(path)
    for attempt in range(tries):
        dir_fd = _open_dir(path)
        try:
            doc = _parse_manifest(path, _read_manifest_bytes(path, dir_fd))
            contents = _read_parts(path, doc, dir_fd)
            break
        except RuntimeModuleError:
            if attempt + 1 == tries or not _replaced(path, dir_fd):
                raise  # damaged, not replaced meanwhile
        finally:
            os.close(dir_fd)
    if "graph.json" not in contents:
        raise RuntimeModuleError(f"module {path!r} has no graph.json in its manifest; {RECOMPILE}")
    graph = json.loads(contents.pop("graph.json"))
    programs = {n: contents.pop(n) for n in list(contents) if n.startswith("programs/")}
    npz = contents.pop("params.npz", None)
    where = os.path.join(path, "params.npz")

    def params():
        if npz is None:
            raise RuntimeModuleError(f"module {path!r} has no params.npz; {RECOMPILE}")
        return load_params(npz, where)
    return ModuleSource(path, doc, graph, contents, params, programs)


def _replaced(path: str, dir_fd: int) -> bool:
    """Whether ``path`` now names another folder than the one open as ``dir_fd`` (whose
    inode cannot be reused while it is open)."""
    try:
        return os.stat(path).st_ino != os.fstat(dir_fd).st_ino
    except OSError:
        return True


def _read_parts(path: str, doc: dict, dir_fd: int) -> dict:
    """name -> bytes of every file the manifest lists, each checked against its sha256."""
    contents = {}
    for name, digest in doc["files"].items():
        full = os.path.join(path, name)
        if not isinstance(name, str) or os.path.isabs(name) or ".." in name.split("/"):
            raise RuntimeModuleError(f"{path}/manifest.json lists file {name!r}, which is not "
                                     f"inside the module folder; {RECOMPILE}")
        try:
            data = _read_at(dir_fd, name)
        except OSError:
            raise RuntimeModuleError(f"module {path!r} has no {name} (listed in manifest.json); "
                                     f"{RECOMPILE}") from None
        if sha256(data) != digest:
            raise RuntimeModuleError(f"{full}{_damage(name, data)}; its sha256 differs from "
                                     f"manifest.json (damaged or edited): recompile the module "
                                     f"with `vta compile`")
        contents[name] = data
    return contents


def from_memory(cm) -> ModuleSource:
    """A :class:`ModuleSource` over a ``CompiledModel`` (its ``graph_json``, ``files``,
    ``params``, ``programs``, ``targets``, ``cpu`` and ``vta``)."""
    manifest = {"format": FORMAT, "version": VERSION, "targets": list(cm.targets)}
    if getattr(cm, "cpu", None) is not None:
        manifest["cpu"] = cm.cpu
    if getattr(cm, "vta", None) is not None:
        manifest["vta"] = cm.vta
    if getattr(cm, "aot", None) is not None:
        manifest.update(executor="aot", aot=cm.aot)
    if getattr(cm, "variants", None):
        manifest["variants"] = cm.variants
    return ModuleSource("<in-memory module>", manifest, cm.graph_json, dict(cm.files),
                        dict(cm.params), dict(getattr(cm, "programs", {}) or {}))
