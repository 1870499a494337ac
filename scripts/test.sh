#!/usr/bin/env bash
# The whole test suite: installs what it needs (pip), lints, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e '.[test,onnx,synth,plot,dask]'
python -m ruff check .
python -m pytest "$@"
