"""Random quantized networks (scripts/netgen.py) through ``glc import`` and the compiler, on the
ISA simulator: a fixed sample of ``scripts/fuzz.py --networks``. Each network's compiled result
must equal the interpreter's bit for bit, and the interpreter onnxruntime's; no tracebacks, no
hangs. ``python scripts/fuzz.py --networks --count N --jobs J`` runs the same check longer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: generated.py

import fuzz  # noqa: E402
import netgen  # noqa: E402
from generated import NETWORKS as SAMPLE  # noqa: E402
from generated import networks  # noqa: E402

# One xdist worker runs every test that reads the generated sample (scripts/test.sh runs the
# suite with --dist loadgroup): a worker generates and runs it once, for all of them.
pytestmark = pytest.mark.xdist_group("generated")


@pytest.fixture(scope="module")
def outcomes() -> list:
    return networks()


def test_every_network_runs_and_equals_the_interpreter_and_onnxruntime(outcomes):
    """Bit for bit, no races; a disagreement with onnxruntime only where it ran convs or
    Gemms in float (``float-reference``: docs/onnx.md, QDQ with int8 activations)."""
    findings = [f"seed {o.seed} {o.kind}: {o.detail}\n    {o.graph}\n    "
                f"{fuzz.reproduce(o.seed, 'isa', 'n16')}" for o in outcomes
                if o.kind in ("traceback", "hang", "race", "mismatch", "reference")]
    assert not findings, "\n".join(findings)


def test_refusals_are_rare(outcomes):
    refused = [f"seed {o.seed}: {o.detail}" for o in outcomes if o.kind == "refused"]
    assert len(refused) <= len(SAMPLE) // 10, "\n".join(refused)


def test_the_sample_covers_every_feature():
    seen = set().union(*(netgen.make(seed).features for seed in SAMPLE))
    assert set(netgen.FEATURES) <= seen, sorted(set(netgen.FEATURES) - seen)


def test_a_seed_makes_the_same_network_and_the_cli_writes_it(tmp_path):
    network = netgen.make(7)
    assert netgen.make(7) == network
    path = tmp_path / "model.onnx"
    sys.argv = ["netgen.py", "--seed", "7", "-o", str(path)]
    assert netgen.main() == 0
    assert path.read_bytes() == network.model

