"""The model suite (scripts/model_suite.py): torchvision's classification architectures,
transformers' BERT encoder and ViT, a Conv1d keyword spotter and a GRU, with seeded weights,
exported by PyTorch and quantized by onnxruntime in four forms (QDQ uint8 activations with
per-channel weights, QDQ int8 symmetric, QOperator uint8, dynamic), each imported by
``glc import``, compiled for n16 with the default rules and run on the ISA simulator (races
checked), as tests/onnx's ``exact_on_the_isa`` does.

Each row is one model in one form: the seconds to import and to compile; whether the ISA
simulator's result equals onnxruntime's output bit for bit; the kernels; the host steps, by
operator; the simulated cycles and their efficiency against the compute ideal and the roofline
limit (glc/cost/limit.py), as the onnx section reports them; for a model glc refuses, the stage
and the one-line refusal (a Python exception inside glc is marked ``TRACEBACK``: a bug). Each
case runs in a child process with a time limit (glc/workers.py), so a crash or a hang is a row.
A second table ranks the refusals by how many architectures each blocks.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import model_suite  # noqa: E402

from glc import workers  # noqa: E402
from glc.errors import GlcError  # noqa: E402

SECTION = "models"
TITLE = ("Model suite: torchvision and transformers architectures in four quantized forms, "
         "imported, compiled and run on the ISA simulator (N = 16)")
TIMEOUT = 900.0  # seconds per model and form: export, quantization, import, compile and run


@dataclass(frozen=True)
class Case:
    """One row: a model at an input size in a form. ``source`` is a float ONNX model to start
    from instead of exporting architecture ``model`` (the tests' small graphs)."""

    model: str
    size: int | None
    form: str
    seed: int = 0
    source: Path | None = None


def cases(full: bool = False, models: list[str] | None = None, seed: int = 0) -> list[Case]:
    """Every chosen architecture (all by default) at its reduced size in every form; with
    ``full`` also the marked ones at 224×224."""
    chosen = models or list(model_suite.ARCHITECTURES)
    unknown = [m for m in chosen if m not in model_suite.ARCHITECTURES]
    if unknown:
        raise GlcError(f"no model {', '.join(unknown)} in the suite; it has "
                       f"{', '.join(model_suite.ARCHITECTURES)}")
    found = []
    for name in chosen:
        architecture = model_suite.ARCHITECTURES[name]
        sizes = [architecture.reduced]
        if full and architecture.full:
            sizes.append(model_suite.FULL)
        found += [Case(name, size, form, seed) for size in sizes for form in model_suite.FORMS]
    return found


def run(jobs: int = 1, full: bool = False, models: list[str] | None = None,
        seed: int | None = None, timeout: float = TIMEOUT) -> list[dict]:
    """One row per model and form, ``jobs`` cases at a time. A GlcError, in one line, when
    torch itself is missing; a missing torchvision or transformers refuses its models' rows."""
    missing = model_suite.missing_extras()
    if "torch" in missing:
        raise GlcError(f"the model suite needs torch, which cannot be imported "
                       f"({model_suite.EXTRA})")
    if missing:
        print(f"models: {', '.join(missing)} cannot be imported ({model_suite.EXTRA}); "
              "their architectures are refused", file=sys.stderr)
    return measure_all(cases(full, models, seed or 0), jobs, timeout, model_suite.cache_dir())


def measure_all(chosen: list[Case], jobs: int, timeout: float, cache: Path) -> list[dict]:
    """Each case measured in a child process of its own; a hang or a crash is its row's
    refusal."""
    calls = [(measure, (case, cache)) for case in chosen]
    rows = []
    for case, outcome in zip(chosen, workers.run(calls, jobs, timeout), strict=True):
        if isinstance(outcome, workers.TimedOut):
            outcome = {**_named(case), "refusal": f"timeout: over {outcome.seconds:g} s"}
        elif isinstance(outcome, workers.Died):
            outcome = {**_named(case), "refusal": f"crash: the process ended with status "
                                                  f"{outcome.exitcode}"}
        rows.append(outcome)
        print(f"models: {_one_line(outcome)}", file=sys.stderr, flush=True)
    return rows


def _named(case: Case) -> dict:
    return {"model": case.model, "input": model_suite.size_label(case.size), "form": case.form}


def _one_line(row: dict) -> str:
    """A row as a progress line."""
    verdict = row.get("refusal") or f"bit-exact {row.get('bit-exact')}, {row.get('cycles')} cycles"
    return f"{row['model']} {row['input']} {row['form']}: {verdict}"


GLC_STAGES = ("import", "compile", "run")  # where an exception other than GlcError is a bug


def measure(case: Case, cache: Path) -> dict:
    """``case`` made (or taken from the cache), imported, compiled and run on the ISA
    simulator: its row. Every failure is the row's ``refusal``, named by its stage, never an
    exception."""
    row = _named(case)
    stage = ["export"]  # the stage running
    try:
        _measure(case, cache, row, stage)
    except GlcError as error:
        row["refusal"] = f"{stage[0]}: {error.message}"
    except Exception as error:  # a bug in glc, or torch or onnxruntime refusing the model
        row["refusal"] = f"{stage[0]}: {_exception(error, stage[0] in GLC_STAGES)}"
    return row


def _measure(case: Case, cache: Path, row: dict, stage: list[str]) -> None:
    """Fill ``row`` with the figures of each stage, ``stage[0]`` naming the one running."""
    from glc.compiler import compile_program
    from glc.hwconfig import load_config
    from glc.inputs import load
    from glc.lower.execute import execute
    from glc.onnx.importer import import_model, onnxruntime_output
    from glc.report import kernel_limits, limit_figures
    from glc.rewrites import DEFAULT, select

    source = case.source
    if source is None:
        package = model_suite.ARCHITECTURES[case.model].package
        try:
            __import__(package)
        except Exception:  # an ImportError, or a broken install failing on import
            raise GlcError(f"{package} cannot be imported ({model_suite.EXTRA})") from None
        source = model_suite.float_model(cache, case.model, case.size, case.seed)
    stage[0] = "quantize"
    model = model_suite.quantized_model(source, case.form, case.seed)
    # a model onnxruntime's quantizer writes and its runtime refuses is the quantizer's refusal
    onnxruntime_output(model, model_suite.sample_inputs(model, case.seed, 1)[0])
    with tempfile.TemporaryDirectory() as scratch:
        stage[0] = "import"
        start = time.perf_counter()
        imported = import_model(model, Path(scratch) / "program", seed=case.seed,
                                inputs_dir=_token_ids(model, case.seed, Path(scratch)))
        row["import s"] = round(time.perf_counter() - start, 2)
        bundle = load(imported.folder)
        stage[0] = "compile"
        config = load_config("n16")
        start = time.perf_counter()
        lowered = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                                  config=config).lowered
        row["compile s"] = round(time.perf_counter() - start, 2)
        figures = lowered.figures()
        stage[0] = "run"
        outcome = execute(lowered, bundle.arrays, "isa", check_races=True)
        limits = limit_figures(kernel_limits(lowered), outcome.cycles)
        row.update({"bit-exact": bool(np.array_equal(outcome.result, bundle.expected)),
                    "kernels": figures["kernels"], "host steps": len(figures["host"]),
                    "host by op": host_by_op(figures["host"]), "cycles": outcome.cycles,
                    "efficiency": round(figures["ideal_cycles"] / max(outcome.cycles, 1), 4),
                    "vs roofline": limits["roofline_efficiency"]})


def _token_ids(model: Path, seed: int, scratch: Path) -> Path | None:
    """A folder of valid sample token ids for a model with an integer input (glc import's own
    sample spans the dtype's range, which an embedding's Gather refuses), else None."""
    batch = model_suite.sample_inputs(model, seed, 1)[0]
    if all(a.dtype.kind == "f" for a in batch.values()):
        return None
    folder = scratch / "inputs"
    folder.mkdir()
    for name, array in batch.items():
        np.save(folder / f"{name}.npy", array)
    return folder


def host_by_op(host: list[str]) -> str:
    """The lowering's host steps (``name: operator`` and maybe `` (on the host: why)``)
    counted by operator, most first: ``17 compute relu, 2 quantize-linear``."""
    counts: dict[str, int] = defaultdict(int)
    for step in host:
        counts[step.split(": ", 1)[1].split(" (on the host", 1)[0]] += 1
    return ", ".join(f"{n} {op}" for op, n in sorted(counts.items(), key=lambda c: (-c[1], c[0])))


def _exception(error: Exception, in_glc: bool) -> str:
    """An unexpected exception on one line: its type and message, and for one raised inside
    glc (a bug: glc's errors are GlcErrors) ``TRACEBACK`` and the innermost glc frame."""
    first = (str(error).strip().splitlines() or [""])[0][:300]
    text = f"{type(error).__name__}: {first}"
    if not in_glc:
        return text
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if f"{Path('glc')}/" in f.filename.replace(str(ROOT / "scripts"), "")]
    frame = frames[-1] if frames else None
    where = f" at {Path(frame.filename).relative_to(ROOT)}:{frame.lineno}" if frame and \
        Path(frame.filename).is_relative_to(ROOT) else ""
    return f"TRACEBACK {text}{where}"


# --- the ranking of refusals ------------------------------------------------------------------

def pattern(refusal: str) -> str:
    """A refusal without what differs between models: node names, tensor names (quoted, or in
    onnxruntime's words a parenthesized path) and shapes."""
    text = re.sub(r"node '[^']*' ", "", refusal)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\([^()\s]*[./][^()\s]*\)", "(…)", text)
    return re.sub(r"\(\d+(?:, \d+)*,?\)", "(…)", text)


def summaries(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    """The refusals ranked by how many architectures each blocks (in any form), then by how
    many cases; and per architecture, the forms that import and that are bit-exact."""
    blocked: dict[str, set[str]] = defaultdict(set)
    count: dict[str, int] = defaultdict(int)
    for row in rows:
        if row.get("refusal"):
            key = pattern(row["refusal"])
            blocked[key].add(row["model"])
            count[key] += 1
    ranked = sorted(blocked, key=lambda k: (-len(blocked[k]), -count[k], k))
    ranking = [{"refusal": key, "architectures": len(blocked[key]), "cases": count[key],
                "blocks": ", ".join(sorted(blocked[key]))} for key in ranked]
    per_model = []
    for model in dict.fromkeys(row["model"] for row in rows):
        mine = [r for r in rows if r["model"] == model]
        per_model.append({
            "model": model,
            "imports": _forms(r for r in mine if "import s" in r),
            "runs": _forms(r for r in mine if "bit-exact" in r),
            "bit-exact": _forms(r for r in mine if r.get("bit-exact") is True)})
    return [("refusals, ranked by the architectures they block", ranking),
            ("per architecture: the forms that import, that run, and that are bit-exact",
             per_model)]


def _forms(rows) -> str:
    return ", ".join(f"{r['form']} {r['input']}" if r["input"] != "-" else r["form"]
                     for r in rows) or "none"
