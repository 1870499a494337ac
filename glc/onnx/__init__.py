"""``glc import``: quantized ONNX models in, program folders out (docs/onnx.md)."""
