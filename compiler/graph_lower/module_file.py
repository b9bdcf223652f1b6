"""The module format, version 3: one folder for every target, written atomically.

::

    model.vtamod/
      manifest.json   format "vtamod", version 3, targets, executor "graph" or "aot"
                      (with aot: entry, header, object, workspace/constant bytes), cpu (triple,
                      cpu, "+" features the kernels were compiled with; absent for
                      GPU-only modules), vta (accelerator config; accelerator modules),
                      variants (fleet modules: one entry per CPU, ``fleet.py``),
                      files (name -> "sha256:<hex>"), inputs/outputs, stats, digest
                      (sha256 of the manifest itself, without this key)
      graph.json      the execution plan (``compiler/graph_lower/build.py``)
      kernels.so      CPU kernels (C ABI); GPU modules: kernels.cu + kernels.cubin or kernels.cl
      params.npz      constants the kernels read
      programs/*.vtaprog   accelerator programs, one per offloaded node
      variants/<cpu>/ fleet modules: the parts of each further CPU variant that differ

:func:`write_module` writes it into a hidden folder beside the destination and
swaps it into place (``replace_dir.py``), so an interrupted or failed write leaves
the earlier module (or nothing), never half of one, and concurrent saves to one
destination serialize, never leave it missing (Linux) and leave no copies behind. ``driver.runtime.load_module`` checks
every file's hash, the CPU features and the format on load.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .replace_dir import replace_dir

FORMAT = "vtamod"
VERSION = 3


def sha256(data: bytes) -> str:
    """``"sha256:<hex>"`` of ``data``, the form the manifest records."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def params_bytes(params: dict) -> bytes:
    """The ``params.npz`` file of ``params`` (name -> array), as bytes."""
    buf = io.BytesIO()
    np.savez(buf, **params)
    return buf.getvalue()


def module_bytes(cm, params: "bytes | None" = None) -> dict:
    """Every file of the module ``cm`` except manifest.json: relative path -> bytes
    (``params``: the params.npz bytes to use instead of ``cm.params``'s)."""
    out = {"graph.json": json.dumps(cm.graph_json, indent=1).encode()}
    out.update(cm.files)
    out["params.npz"] = params_bytes(cm.params) if params is None else params
    with tempfile.TemporaryDirectory(prefix="vtamod_prog_") as tmp:
        for name, prog in cm.programs.items():
            p = os.path.join(tmp, "p.vtaprog")
            prog.save(p)
            out[name] = Path(p).read_bytes()
    return out


def manifest(cm, files: dict) -> dict:
    """manifest.json of ``cm`` whose files (relative path -> bytes) are ``files``."""
    gj = cm.graph_json
    doc = {"format": FORMAT, "version": VERSION, "targets": list(cm.targets),
           "executor": getattr(cm, "executor", "graph")}
    if getattr(cm, "aot", None) is not None:
        doc["aot"] = dict(cm.aot)
    if cm.cpu is not None:
        doc["cpu"] = dict(cm.cpu)
    if cm.vta is not None:
        doc["vta"] = dict(cm.vta)
    if getattr(cm, "variants", None):
        doc["variants"] = [dict(v) for v in cm.variants]
    doc["files"] = {name: sha256(data) for name, data in sorted(files.items())}
    doc["inputs"] = [{k: i[k] for k in ("name", "shape", "dtype")} for i in gj["inputs"]]
    doc["outputs"] = [{k: o[k] for k in ("name", "shape", "dtype")} for o in gj["outputs"]]
    doc["stats"] = _jsonable(cm.stats)
    doc["digest"] = manifest_digest(doc)
    return doc


def manifest_digest(doc: dict) -> str:
    """The sha256 of manifest ``doc`` without its ``digest`` key, over sorted-key compact
    JSON (``driver/runtime/source.py`` checks the same on load)."""
    body = {k: v for k, v in doc.items() if k != "digest"}
    return sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x if isinstance(x, (str, int, float, bool, type(None))) else str(x)


def check_destination(path) -> None:
    """Refuse a destination that is a non-empty folder holding no module.

    Raises:
        ValueError: ``path`` is a folder with files but no manifest.json or graph.json
            (an earlier module, of any version, may be replaced; nothing else).
    """
    out = Path(path)
    if out.is_dir() and any(out.iterdir()) and not (
            (out / "manifest.json").is_file() or (out / "graph.json").is_file()):
        raise ValueError(f"{path}: is a folder that holds no compiled module (no manifest.json or "
                         "graph.json); name a new folder (e.g. out/model.vtamod) or an earlier "
                         "module to replace")


def write_module(cm, path) -> str:
    """Write ``cm`` as the module folder ``path`` atomically (module docstring).

    An earlier module at ``path`` is replaced whole; its parent folder is created.

    Returns:
        ``path`` (as given, a str).

    Raises:
        ValueError: ``path`` is a folder holding something other than a module.
        OSError: the folder cannot be written (the earlier module is left as it was).
        replace_dir.SaveLockTimeout: other processes kept saving into the folder too long.
    """
    check_destination(path)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it 0700
        files = module_bytes(cm)
        for name, data in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        (tmp / "manifest.json").write_text(json.dumps(manifest(cm, files), indent=1))
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return str(path)
