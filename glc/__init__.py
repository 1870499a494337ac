"""glc: a Glenside compiler for a weight-stationary systolic-array accelerator."""

__version__ = "0.1.0"
