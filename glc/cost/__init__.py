"""Cost models: what extraction and the lowering choose by (issue 10)."""
