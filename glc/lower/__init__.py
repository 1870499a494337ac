"""The lowering: an extracted term to an accelerator Program (docs/lowering.md)."""
