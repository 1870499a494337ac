"""A lowered Program on disk: ``program.s``, ``program.bin`` and ``manifest.json``.

``program.bin`` holds the images (glc/lower/image.py: consecutive kernels joined by barriers,
one HALT each) one after the other (docs/isa.md, "Binary images"); the manifest gives each
image's and each kernel's word range, the memory map (every tensor's name, address, shape, dtype
and role), the inputs, the output (its buffer and the view it is read through), the host steps
(their terms, as Glenside text), the figures, and the sha256 of every other file of the folder
(``files``). ``read`` checks those hashes and rebuilds the Program from these files, so
``glc simulate`` runs what ``glc compile -o`` wrote, and refuses a folder whose files disagree.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, fields
from pathlib import Path
from types import MappingProxyType

from glc.errors import GlcError
from glc.hwconfig import HwConfig, config_from_dict
from glc.isa.encoding import decode, read_image, to_bytes
from glc.lower.image import BARRIER, HALT, Image, schedule
from glc.lower.kernel import Kernel
from glc.lower.program import Buffer, HostStep, KernelStep, Program
from glc.lower.view import Digit, View
from glc.syntax.printer import print_term
from glc.syntax.reader import parse_term

MANIFEST = "manifest.json"
FILES = ("program.s", "program.bin", MANIFEST)


def manifest(program: Program, nodes: Mapping[str, str] = MappingProxyType({})) -> dict:
    """The manifest as a JSON-ready dict; ``nodes``: the source node each step computes
    (glc/report.py, ``Names.steps``), what ``glc simulate --report`` names the steps by."""
    roles = {name: "input" for name in program.inputs}
    steps, images, offset = [], [], 0
    for run in schedule(program):
        if isinstance(run, HostStep):
            roles[run.output] = "copy" if run.copy else "host"
            steps.append({"kind": "copy" if run.copy else "host", "name": run.name,
                          "term": print_term(run.term),
                          "inputs": {sym: _view_json(v) for sym, v in run.views.items()},
                          "output": run.output, **({"why": run.why} if run.why else {}),
                          **({"node": nodes[run.name]} if run.name in nodes else {})})
            continue
        images.append({"words": [offset, len(run.instructions)],
                       "kernels": [s.name for s in run.steps],
                       "predicted_cycles": run.predicted_cycles(program.config)})
        for index, step in enumerate(run.steps):
            roles[step.output] = "kernel"
            offset += len(BARRIER) if index else 0
            k = step.kernel
            body = len(k.instructions) - 1  # its HALT is the image's
            steps.append({"kind": "kernel", "name": step.name, "words": [offset, body],
                          "unit": k.kind, "m": k.m, "k": k.k, "n_out": k.n_out, "raw": k.raw,
                          "relu": k.relu,
                          "shift": k.shift, "inputs": step.inputs, "output": step.output,
                          "predicted_cycles": k.predicted_cycles(program.config),
                          "ideal_cycles": k.ideal_cycles(program.config),
                          "term": k.label,
                          **({"node": nodes[step.name]} if step.name in nodes else {})})
            offset += body
        offset += 1  # the image's HALT
    config = program.config
    view = program.output
    return {"config": config.name,
            "hardware": {f.name: getattr(config, f.name) for f in fields(HwConfig)
                         if f.name != "name"},
            "memory": [{**asdict(b), "shape": list(b.shape), "role": roles[b.name]}
                       for b in program.buffers.values()],
            "inputs": program.inputs,
            "output": {"buffer": view.buffer, "dtype": program.output_dtype,
                       "shape": list(view.dims), "view": _view_json(view)},
            "image_words": images,
            "steps": steps,
            **program.figures()}


def assembly(program: Program) -> str:
    """The readable assembly: each image (its kernels under comments naming their terms, the
    barriers between them, its HALT), host steps as comments where they run."""
    runs = schedule(program)
    images = [r for r in runs if isinstance(r, Image)]
    parts = [f"; glc lowered program for {program.config.name}: {len(program.kernels)} "
             f"kernel(s) in {len(images)} image(s), each run from its first instruction to its "
             "HALT (manifest.json: image_words)\n"]
    for run in runs:
        if isinstance(run, Image):
            parts.append(f"\n; ==== image: {', '.join(s.name for s in run.steps)}\n{run.text()}")
        else:
            kind = "host copy" if run.copy else "host step"
            parts.append(f"\n; ---- {kind} {run.name} (numpy): {print_term(run.term)}\n")
    return "".join(parts)


def write(program: Program, outdir: Path, texts: Mapping[str, str] = MappingProxyType({}),
          nodes: Mapping[str, str] = MappingProxyType({})) -> list[Path]:
    """Write the three files, and ``texts`` (file name -> text), into ``outdir`` (``nodes``:
    each step's source node, for the manifest); the manifest,
    written last, records the sha256 of every other file in ``outdir`` under ``files``, so
    ``read`` can tell a folder that mixes two compilations. Returns the paths."""
    words = [w for run in schedule(program) if isinstance(run, Image) for w in run.words]
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        paths = [outdir / name for name in FILES]
        paths[0].write_text(assembly(program))
        paths[1].write_bytes(to_bytes(words))
        for name, text in texts.items():
            (outdir / name).write_text(text)
        files = {p.name: _sha256(p) for p in sorted(outdir.iterdir())
                 if p.is_file() and p.name != MANIFEST}
        paths[2].write_text(json.dumps({**manifest(program, nodes), "files": files},
                                       indent=1) + "\n")
    except OSError as error:
        raise GlcError(f"cannot write: {error.strerror}", str(error.filename or outdir)) from None
    return paths + [outdir / name for name in texts]


def read(outdir: Path) -> Program:
    """The Program ``write`` left in ``outdir``; a GlcError naming the first file whose sha256
    differs from the manifest's (the folder mixes two compilations, or was edited)."""
    path = outdir / MANIFEST
    try:
        data = json.loads(path.read_text())
        _verify(outdir, data.get("files") if isinstance(data, dict) else None)
        words = read_image(outdir / "program.bin")
    except FileNotFoundError as error:
        raise GlcError("not a compiled program folder (glc compile -o writes one)",
                       str(error.filename)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise GlcError(f"bad manifest: {error}", str(path)) from None
    except OSError as error:
        raise GlcError(f"cannot read: {error.strerror}", str(error.filename or outdir)) from None
    try:
        config = config_from_dict(data["hardware"], str(path), data["config"])
        buffers = {b["name"]: Buffer(b["name"], tuple(b["shape"]), b["dtype"], b["address"])
                   for b in data["memory"]}
        program = Program(config, buffers, list(data["inputs"]))
        for step in data["steps"]:
            if step["kind"] == "kernel":
                first, count = step["words"]
                kernel = Kernel(step["term"], step["m"], step["k"], step["n_out"], step["raw"],
                                step["relu"], step["shift"],
                                [*(decode(w) for w in words[first:first + count]), HALT],
                                kind=step["unit"])
                program.steps.append(KernelStep(step["name"], kernel, step["inputs"],
                                                step["output"]))
            else:
                views = {sym: _view_from_json(v) for sym, v in step["inputs"].items()}
                program.steps.append(HostStep(step["name"], parse_term(step["term"]), views,
                                              step["output"], step["kind"] == "copy",
                                              step.get("why", "")))
        program.output = _view_from_json(data["output"]["view"])
        program.output_dtype = data["output"]["dtype"]
    except KeyError as error:
        raise GlcError(f"bad manifest: no {error} entry", str(path)) from None
    except (TypeError, ValueError) as error:
        raise GlcError(f"bad manifest: {error}", str(path)) from None
    return program


def read_nodes(outdir: Path) -> dict[str, str]:
    """Each step's source node as the manifest of ``outdir`` (already ``read``) records it;
    empty for a folder an older glc wrote."""
    try:
        steps = json.loads((outdir / MANIFEST).read_text()).get("steps", [])
        return {step["name"]: step["node"] for step in steps if "node" in step}
    except (OSError, ValueError, AttributeError, TypeError, KeyError):
        return {}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _verify(outdir: Path, files: object) -> None:
    """Every file the manifest lists has the sha256 it records."""
    manifest_path = str(outdir / MANIFEST)
    if not isinstance(files, dict) or "program.bin" not in files:
        raise GlcError("the manifest records no file hashes (an older glc, or not glc compile, "
                       "wrote it): compile the program again", manifest_path)
    for name, digest in files.items():
        path = outdir / str(name)
        if not path.is_file():
            raise GlcError(f"missing: {MANIFEST} lists it", str(path))
        if _sha256(path) != digest:
            raise GlcError(f"does not match the sha256 {MANIFEST} records: the folder mixes two "
                           "compilations or was edited; compile the program again", str(path))


def _view_json(view: View) -> dict:
    return {"buffer": view.buffer, "offset": view.offset,
            "groups": [[[d.size, d.stride, list(d.coefs)] for d in g] for g in view.groups],
            "coords": [list(c) for c in view.coords], "fill": view.fill}


def _view_from_json(data: dict) -> View:
    return View(data["buffer"], data["offset"],
                tuple(tuple(Digit(s, st, tuple(c)) for s, st, c in g) for g in data["groups"]),
                tuple(tuple(c) for c in data["coords"]), data["fill"])
