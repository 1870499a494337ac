"""The compile and schedule cache (glc/cache.py, docs/cache.md) on the imported ResNet-50 at
224×224 (uint8 activations, per-channel weights; on n16, as in the onnx
section): its compile without the cache, with the cache empty (cold: every entry written),
with the schedule entries alone (the compile entry removed: every kernel's estimate and
cycle count read, the rest of the compile done), and with the compile entry; then two
`glc run`s of a ResNet-50 at 32×32 folder on the ISA simulator, the second of which reads its
compile from the cache.

Each measurement is a process of its own (no memo in memory carries over): `compile s` is
compile_program's seconds in it, `process s` the whole process's (Python's start, loading
the program). `vs uncached` is the compile seconds over the uncached compile's in the same
run. `same program` says the instruction stream and predicted cycles equal the uncached
compile's, byte for byte. For the run, `compile s` is the compile stage `glc -v run`
reports, `process s` the whole run (the interpreter's reference, the ISA simulator).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.onnx import UINT8, _imported

SECTION = "cache"
TITLE = "compile and schedule cache: ResNet-50 compiled cold, warm and uncached; glc run twice"

ROOT = Path(__file__).resolve().parents[2]

# A compile in a fresh process: its seconds, whether it was read from the cache, and what it
# produced (the instruction stream's sha256 and the predicted cycles), as JSON.
DRIVER = """
import hashlib, json, pickle, sys, time
from pathlib import Path
from glc.cache import open_cache
from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.lower.image import Image, schedule
from glc.rewrites import DEFAULT, select
config = load_config(sys.argv[2])
bundle = load(sys.argv[1])
start = time.perf_counter()
result = compile_program(bundle, rules=select(DEFAULT, config.array_size), config=config,
                         cache=open_cache(sys.argv[3] == "cache"))
seconds = time.perf_counter() - start
# every opcode and field value of the instruction stream, as the cycle key has them
words = pickle.dumps([(i.op.code, i.values) for run in schedule(result.lowered)
                      if isinstance(run, Image) for i in run.instructions], 5)
print(json.dumps({"seconds": seconds, "cached": result.cached,
                  "program": hashlib.sha256(words).hexdigest(),
                  "predicted": result.lowered.figures()["predicted_cycles"]}))
"""


def run() -> list[dict]:
    """One row per measurement."""
    with tempfile.TemporaryDirectory() as scratch:
        imported, _ = _imported(Path(scratch), "resnet50", 224, UINT8)
        folder = imported.folder
        cache = Path(scratch) / "cache"
        env = {**os.environ, "GLC_CACHE_DIR": str(cache),
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        config_path = "n16"

        def compiled(what: str, cached: bool) -> dict:
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", DRIVER, str(folder), config_path,
                                   "cache" if cached else "none"], env=env, check=True,
                                  capture_output=True, text=True)
            wall = time.perf_counter() - start
            found = json.loads(done.stdout.splitlines()[-1])
            return {"what": what, "compile s": round(found["seconds"], 2),
                    "process s": round(wall, 2), "read from cache": found["cached"],
                    "predicted": found["predicted"], "program": found["program"]}

        rows = [compiled("uncached (--no-cache)", False),
                compiled("cold: empty cache", True)]
        shutil.rmtree(cache / "compile")
        rows.append(compiled("warm schedule cache (compile entry removed)", True))
        rows.append(compiled("warm compile cache", True))
        # glc run on the ISA simulator, twice: ResNet-50 at 32×32 (the 214 s a run),
        # whose 1.9 M cycles simulate in seconds where 224×224's 17.5 M take minutes.
        small, _ = _imported(Path(scratch), "resnet50", 32, UINT8)
        rows += [_glc_run(f"glc run {what} (ResNet-50 32x32)", small.folder, "n16", env)
                 for what in ("first", "second, unchanged folder")]
    base, first_run = dict(rows[0]), rows[4]
    for row in rows:  # the runs against the first run's compile, the compiles the uncached one
        against = first_run if row["what"].startswith("glc run") else base
        row["vs uncached"] = round(row["compile s"] / against["compile s"], 3)
        if "program" in row:
            row["same program"] = row.pop("program") == base["program"] and \
                row["predicted"] == base["predicted"]
    return rows


def _glc_run(what: str, folder: Path, config_path: str, env: dict) -> dict:
    """``glc -v run`` of the folder on the ISA simulator: its compile stage's seconds (-v),
    whether it read the compile from the cache, the whole process's seconds, the match."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "glc", "-v", "run", str(folder), "--config",
                           config_path, "--engine", "isa", "--json"], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    stage = re.search(r"^compile: ([0-9.]+) s.*$", done.stderr, re.MULTILINE)
    figures = json.loads(done.stdout) if done.stdout.strip() else {}
    return {"what": what, "compile s": float(stage.group(1)) if stage else None,
            "process s": round(wall, 2),
            "read from cache": bool(stage) and stage.group(0).endswith("cache hit"),
            "predicted": figures.get("predicted_cycles"),
            "cycles": figures.get("cycles"), "match": figures.get("match")}
