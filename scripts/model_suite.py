"""The model suite's networks, made on this machine without a download: torchvision's and
transformers' architectures and two small audio models, given seeded random weights, exported by
PyTorch's TorchScript ONNX exporter and quantized by onnxruntime in the four forms its
documentation shows. Each file is cached (``$GLC_MODELS_CACHE``, else ``build/models`` in the
repository), keyed by model, input size, seed and form: a second run starts at the import.

torch, torchvision and transformers are the ``models`` extra (``pip install -e '.[models]'``);
they are imported only to export a network that is not cached yet.
"""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
EXTRA = "pip install -e '.[models]'"
# The exporter: TorchScript's (dynamo=False), the one most published ONNX files come from, at
# the opset onnxruntime's quantizer documents.
OPSET = 17
FULL = 224  # the resolution of --full's rows
CALIBRATION_SAMPLES = 4


def cache_dir() -> Path:
    """Where exported and quantized models are kept."""
    return Path(os.environ.get("GLC_MODELS_CACHE", REPO / "build" / "models")).resolve()


@dataclass(frozen=True)
class Architecture:
    """A network of the suite: ``build(size)`` gives the torch module (seeded, in eval mode)
    and its example input's shape; ``size`` is the image's height and width for an image
    model, else fixed (None). ``reduced`` is the size of the default rows; ``full``: also
    measured at 224×224 with --full."""

    build: Callable
    package: str
    reduced: int | None = None
    full: bool = False


def _torchvision(name: str, **options) -> Callable:
    def build(size: int):
        import torchvision

        model = torchvision.models.get_model(name, weights=None, **options)
        return model, (1, 3, size, size)
    return build


def _bert(seq: int, ids: bool = False) -> Callable:
    """A 2-layer BERT encoder (hidden 64, 2 heads) over ``seq`` token embeddings (a float
    input), or with ``ids`` from int64 token ids, its embedding lookup included."""
    def build(size):
        import torch
        import transformers

        bert = transformers.BertModel(_bert_config(), add_pooling_layer=False)
        # transformers initialises every Linear's bias to zero, and PyTorch's exporter then
        # shares one zero initializer among the layers; a trained model's biases differ
        with torch.no_grad():
            for module in bert.modules():
                if isinstance(module, torch.nn.Linear):
                    module.bias.normal_(0.0, 0.1)

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, x):
                given = {"input_ids": x} if ids else {"inputs_embeds": x}
                return self.bert(**given).last_hidden_state
        return Encoder(), ((1, seq) if ids else (1, seq, 64))
    return build


VOCABULARY = 1000  # bert-ids' token ids are drawn below it


def _bert_config():
    import transformers

    return transformers.BertConfig(vocab_size=VOCABULARY, hidden_size=64, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=128,
                                   max_position_embeddings=512, attn_implementation="eager")


def _vit(size: int):
    """A 2-layer ViT (hidden 64, 2 heads, 10 classes): 16×16 patches at 64 and above, 8×8 at
    32 (16 tokens)."""
    import torch
    import transformers

    config = transformers.ViTConfig(image_size=size, patch_size=16 if size >= 64 else 8,
                                    hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                    intermediate_size=128, num_labels=10,
                                    attn_implementation="eager")
    vit = transformers.ViTForImageClassification(config)

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vit = vit

        def forward(self, x):
            return self.vit(x).logits
    return Logits(), (1, 3, size, size)


def _keyword_spotter(size):
    """A Conv1d keyword spotter: 40 MFCCs × 49 frames (1 s at a 20 ms hop) → 12 keywords."""
    from torch import nn

    def block(c_in, c_out, stride):
        return [nn.Conv1d(c_in, c_out, 3, stride, 1), nn.BatchNorm1d(c_out), nn.ReLU()]
    model = nn.Sequential(*block(40, 64, 1), *block(64, 64, 2), *block(64, 128, 2),
                          nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(128, 12))
    return model, (1, 40, 49)


def _gru(size):
    """A GRU keyword model: 49 frames of 40 MFCCs, hidden 64, the last step → 12 keywords."""
    from torch import nn

    class Gru(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(40, 64, batch_first=True)
            self.out = nn.Linear(64, 12)

        def forward(self, x):
            steps, _ = self.gru(x)
            return self.out(steps[:, -1])
    return Gru(), (1, 49, 40)


TV = "torchvision"
ARCHITECTURES = {
    "resnet18": Architecture(_torchvision("resnet18"), TV, 32, full=True),
    "resnet34": Architecture(_torchvision("resnet34"), TV, 32),
    "mobilenet_v2": Architecture(_torchvision("mobilenet_v2"), TV, 32, full=True),
    "mobilenet_v3_small": Architecture(_torchvision("mobilenet_v3_small"), TV, 32),
    "mobilenet_v3_large": Architecture(_torchvision("mobilenet_v3_large"), TV, 32, full=True),
    "efficientnet_b0": Architecture(_torchvision("efficientnet_b0"), TV, 32, full=True),
    "shufflenet_v2_x1_0": Architecture(_torchvision("shufflenet_v2_x1_0"), TV, 32),
    "squeezenet1_1": Architecture(_torchvision("squeezenet1_1"), TV, 32, full=True),
    "googlenet": Architecture(_torchvision("googlenet", aux_logits=False, init_weights=True), TV,
                              32),
    "regnet_x_400mf": Architecture(_torchvision("regnet_x_400mf"), TV, 32),
    "densenet121": Architecture(_torchvision("densenet121"), TV, 32),
    "mnasnet1_0": Architecture(_torchvision("mnasnet1_0"), TV, 32),
    "bert-64": Architecture(_bert(64), "transformers"),
    "bert-128": Architecture(_bert(128), "transformers"),
    "bert-384": Architecture(_bert(384), "transformers"),
    "bert-ids-128": Architecture(_bert(128, ids=True), "transformers"),
    "vit": Architecture(_vit, "transformers", 32, full=True),
    "kws-conv1d": Architecture(_keyword_spotter, "torch"),
    "gru": Architecture(_gru, "torch"),
}


def missing_extras() -> list[str]:
    """The ``models`` extra's packages that cannot be imported."""
    missing = []
    for package in ("torch", "torchvision", "transformers"):
        try:
            __import__(package)
        except Exception:  # an ImportError, or a broken install failing on import
            missing.append(package)
    return missing


def size_label(size: int | None) -> str:
    return f"{size}x{size}" if size else "-"


def _randomize_norms(model, generator) -> None:
    """Seeded statistics and affine factors for every batch and layer norm (their defaults,
    mean 0, variance 1, γ = 1, β = 0, fold into nothing): the folded convolutions' channels
    differ, as a trained network's do."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            count = module.num_features
            module.running_mean.copy_(torch.randn(count, generator=generator) * 0.1)
            module.running_var.copy_(torch.rand(count, generator=generator) + 0.5)
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm | torch.nn.LayerNorm) \
                and module.weight is not None:
            module.weight.copy_(torch.rand(module.weight.shape, generator=generator) + 0.5)
            module.bias.copy_(torch.randn(module.bias.shape, generator=generator) * 0.1)


def export(name: str, size: int | None, seed: int, out: Path) -> Path:
    """Architecture ``name`` at ``size`` with weights seeded by ``seed``, exported to ``out``
    (float32)."""
    import torch

    torch.manual_seed(seed)
    model, shape = ARCHITECTURES[name].build(size)
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        _randomize_norms(model, generator)
        if len(shape) == 2:  # token ids
            example = torch.randint(0, VOCABULARY, shape, generator=generator)
            names = ["input_ids"]
        else:
            example = torch.randn(shape, generator=generator)
            names = ["input"]
        with warnings.catch_warnings():  # that the TorchScript exporter is deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(model, (example,), str(out), dynamo=False, opset_version=OPSET,
                              input_names=names, output_names=["output"])
    return out


def sample_inputs(model: Path, seed: int, count: int) -> list[dict[str, np.ndarray]]:
    """``count`` seeded inputs of the float model: normal floats; token ids below
    ``VOCABULARY``."""
    import onnx

    rng = np.random.default_rng(seed)
    graph = onnx.load(str(model), load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    batches = []
    for _ in range(count):
        batch = {}
        for value in graph.input:
            if value.name in initializers:
                continue
            dims = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
            dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
            batch[value.name] = (rng.normal(0.0, 1.0, dims).astype(dtype) if dtype.kind == "f"
                                 else rng.integers(0, VOCABULARY, dims).astype(dtype))
        batches.append(batch)
    return batches


class _Calibration:
    """onnxruntime's CalibrationDataReader over seeded inputs."""

    def __init__(self, batches: list[dict[str, np.ndarray]]):
        self.batches = iter(batches)

    def get_next(self):
        return next(self.batches, None)


# The four forms: onnxruntime.quantization's static quantizer in the three forms its guide
# shows, and its dynamic quantizer. Weights take 7 bits (reduce_range), as glc's zoo does
# (glc/onnx/zoo.py): onnxruntime's u8×s8 kernels without VNNI add pairs of full-range products
# in saturating int16, so only then is its reference the same on every CPU.
FORMS = {
    "qdq-u8": dict(quant_format="QDQ", activation_type="QUInt8", per_channel=True),
    "qdq-s8": dict(quant_format="QDQ", activation_type="QInt8",
                   extra_options={"ActivationSymmetric": True, "WeightSymmetric": True}),
    "qop-u8": dict(quant_format="QOperator", activation_type="QUInt8"),
    "dynamic": None,
}


def quantize(source: Path, form: str, out: Path, seed: int) -> Path:
    """The float model ``source`` quantized in ``form`` into ``out``: onnxruntime's
    pre-processing (its optimizer folds each BatchNormalization into its conv), then the
    quantizer, the static ones calibrated on seeded inputs."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantizer's warnings (a norm weight's axis) on stderr
    try:
        return _quantize(source, form, out, seed)
    finally:
        root.setLevel(level)


def _quantize(source: Path, form: str, out: Path, seed: int) -> Path:
    from onnxruntime.quantization import (
        QuantFormat,
        QuantType,
        quant_pre_process,
        quantize_dynamic,
        quantize_static,
    )

    with tempfile.TemporaryDirectory() as tmp:
        prepared = Path(tmp) / "prepared.onnx"
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        options = FORMS[form]
        if options is None:
            quantize_dynamic(str(prepared), str(out), weight_type=QuantType.QInt8,
                             reduce_range=True)
            return out
        calibration = _Calibration(sample_inputs(prepared, seed, CALIBRATION_SAMPLES))
        quantize_static(str(prepared), str(out), calibration,
                        quant_format=getattr(QuantFormat, options["quant_format"]),
                        activation_type=getattr(QuantType, options["activation_type"]),
                        weight_type=QuantType.QInt8, reduce_range=True,
                        per_channel=options.get("per_channel", False),
                        extra_options=options.get("extra_options"))
    return out


def _stored(path: Path, make: Callable[[Path], Path]) -> Path:
    """``path`` if cached, else made by ``make`` into a temporary file renamed into place (an
    interrupted run leaves no half-written model behind)."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        make(partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def float_model(cache: Path, name: str, size: int | None, seed: int) -> Path:
    """Architecture ``name``'s float export, from the cache or made now."""
    key = f"{name}-seed{seed}" if size is None else f"{name}-{size_label(size)}-seed{seed}"
    return _stored(cache / key / "float.onnx", lambda out: export(name, size, seed, out))


def quantized_model(source: Path, form: str, seed: int) -> Path:
    """The float model ``source`` quantized in ``form``, cached beside it."""
    return _stored(source.with_name(f"{form}.onnx"), lambda out: quantize(source, form, out, seed))
