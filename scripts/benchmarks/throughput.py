"""Throughput as users count it: per FPGA configuration, GOPS and images per second at the Fmax
recorded for it on the LFE5U-85F (hw/baselines/synth.json, the best of placement seeds 1–3 of
`glc synth`; scripts/bench.py --only synth re-measures it), next to published figures of open
accelerators.

Cycles are the cycle model's (glc/isa/cycles.py), which the RTL matches exactly; seconds are
cycles / Fmax. A network's operations are counted from its ONNX graph, independently of glc:
2 per multiply-accumulate of every Conv, ConvInteger, QLinearConv, MatMul, MatMulInteger,
QLinearMatMul and Gemm (output elements × the reduction's length), nothing for the rest. The
workloads: the int8 256×256×256 GEMM (`gemm256-int8`, the isa section's schedule), the layer
suite (scripts/layer_suite.py: real networks' layers at their real shapes; a layer too large for
a configuration's memories is left out and counted), ResNet-50 at 224×224 (the onnx wheel's
architecture, seeded weights, uint8 activations, per-channel weights: glc/onnx/zoo.py) and
MobileNetV2 at 224×224 (torchvision's, QDQ uint8 with per-channel weights: scripts/model_suite.py,
needs the ``models`` extra), each compiled for the configuration with the default rules.
A configuration without a recorded Fmax (never placed) shows its cycles and no rate.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

from benchmarks import layers
from benchmarks.isa import schedule
from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.isa.asm import assemble
from glc.isa.cycles import predict
from glc.onnx.importer import import_model
from glc.onnx.zoo import make
from glc.report import kernel_limits, limit_figures
from glc.rewrites import DEFAULT, select
from glc.synth.baseline import load_baseline

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import model_suite  # noqa: E402

SECTION = "throughput"
TITLE = ("Throughput at the recorded Fmax on the LFE5U-85F: GOPS and images per second "
         "(cycle model = RTL)")
CONFIGS = ["ecp5n8", "ecp5n16"]
RESOLUTION = 224

# Published figures of open accelerators, for scale (each with where it was published).
PUBLISHED = [
    {"config": "VTA (16×16 int8 GEMM core, PYNQ-Z1 Zynq-7020, 100 MHz)",
     "workload": "peak", "Fmax MHz": 100, "GOPS": 51.2,
     "source": "Moreau et al., IEEE Micro 2019: 16·16·2 ops at 100 MHz"},
    {"config": "Gemmini (Chipyard SoC with a Rocket host, Nexys Video Artix-7)",
     "workload": "ResNet-50 224×224", "cycles/image": 1_358_733_049,
     "source": "luffca.com 2022, 'Running ResNet-50 on FPGA with Gemmini SoC' (Linux, "
               "gemmini-rocc-tests resnet50-linux)"},
]


def run() -> list[dict]:
    """One row per configuration and workload, then the published figures."""
    baseline = load_baseline()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        networks = _networks(Path(scratch))
        for name in CONFIGS:
            config = load_config(name)
            fmax = baseline.get(name, {}).get("fmax_mhz")
            rows.append(_rated(name, fmax, "gemm256-int8", *_gemm256(config)))
            rows.append(_layer_suite(name, fmax))
            for label, (folder, macs) in networks.items():
                rows.append(_rated(name, fmax, label, *_network(folder, macs, config),
                                   per_image=True))
    return rows + PUBLISHED


def _rated(name: str, fmax: float | None, workload: str, macs: int, cycles: int,
           roofline: float | None, per_image: bool = False) -> dict:
    """A row: the workload's cycles and, at ``fmax``, its GOPS (and images per second)."""
    row = {"config": name, "workload": workload, "Fmax MHz": fmax if fmax else "not placed",
           "GOPs": round(2 * macs / 1e9, 3), "cycles" if not per_image else "cycles/image":
           cycles, "vs roofline": roofline}
    if fmax:
        seconds = cycles / (fmax * 1e6)
        row["GOPS"] = round(2 * macs / seconds / 1e9, 2)
        if per_image:
            row["images/s"] = round(1 / seconds, 2)
    return row


def _gemm256(config) -> tuple[int, int, float | None]:
    text, _, _ = schedule("gemm", (256, 256, 256), "int8", config)
    cycles = predict(assemble(text, config).instructions(), config).counters.cycles
    return 256 ** 3, cycles, None


def _layer_suite(name: str, fmax: float | None) -> dict:
    found = layers.measure_all(name, unfit_ok=True)
    fitting = [row for row in found if row is not None]
    macs = sum(row["MACs"] for row in fitting)
    cycles = sum(row["predicted"] for row in fitting)
    row = _rated(name, fmax, f"layer suite ({len(fitting)} of {len(found)} layers fit)",
                 macs, cycles, None)
    row["MACs/cycle/N²"] = round(macs / cycles / load_config(name).array_size ** 2, 3)
    return row


def _network(folder: Path, macs: int, config) -> tuple[int, int, float]:
    bundle = load(folder)
    lowered = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    cycles = lowered.figures()["predicted_cycles"]
    limits = limit_figures(kernel_limits(lowered), cycles)
    return macs, cycles, limits["roofline_efficiency"]


def _networks(scratch: Path) -> dict[str, tuple[Path, int]]:
    """The networks imported once (folder, MACs by the ONNX graph), by row label."""
    found = {}
    model = make("resnet50", scratch / "resnet50.onnx", resolution=RESOLUTION,
                 activations="uint8", per_channel=True)
    found[f"ResNet-50 {RESOLUTION}×{RESOLUTION}"] = (
        import_model(model, scratch / "resnet50").folder, graph_macs(model))
    if not model_suite.missing_extras():
        source = model_suite.float_model(model_suite.cache_dir(), "mobilenet_v2", RESOLUTION, 0)
        model = model_suite.quantized_model(source, "qdq-u8", 0)
        found[f"MobileNetV2 {RESOLUTION}×{RESOLUTION}"] = (
            import_model(model, scratch / "mobilenet_v2").folder, graph_macs(model))
    else:
        print(f"throughput: MobileNetV2 needs the models extra ({model_suite.EXTRA})",
              file=sys.stderr)
    return found


# Each product operator: (the input whose last dimension, or channels × kernel, is reduced,
# the weight input) — ONNX's operand positions.
_PRODUCTS = {"Conv": (0, 1), "ConvInteger": (0, 1), "QLinearConv": (0, 3),
             "MatMul": (0, 1), "MatMulInteger": (0, 1), "QLinearMatMul": (0, 3), "Gemm": (0, 1)}


def graph_macs(path: Path) -> int:
    """The multiply-accumulates of every product in the ONNX model at ``path`` (shapes by ONNX's
    own shape inference)."""
    import onnx

    model = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    graph = model.graph
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
              for i in [*graph.input, *graph.value_info, *graph.output]}
    shapes.update({t.name: list(t.dims) for t in graph.initializer})
    total = 0
    for node in graph.node:
        if node.op_type not in _PRODUCTS:
            continue
        data, weight = _PRODUCTS[node.op_type]
        out = math.prod(shapes[node.output[0]])
        if "Conv" in node.op_type:
            reduced = math.prod(shapes[node.input[weight]][1:])  # C/group × kernel
        elif node.op_type == "Gemm" and any(a.name == "transA" and a.i for a in node.attribute):
            reduced = shapes[node.input[data]][0]
        else:
            reduced = shapes[node.input[data]][-1]
        total += out * reduced
    return total
