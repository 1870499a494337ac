#!/usr/bin/env bash
# The whole test suite: installs what it needs (pip), lints, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e '.[test,onnx,synth,plot,dask]'
python -m ruff check .
# One worker per core; the tests that share a generated sample or a cluster run on one worker
# (their files' xdist_group).
python -m pytest -n auto --dist loadgroup "$@"
