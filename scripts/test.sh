#!/usr/bin/env bash
# The whole test suite: builds and installs the package (Rust core + Python front) with its
# test extras, then runs the Rust tests and the Python tests. Used by README and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
cargo test --quiet -p toposched-core
python3 -m pytest -q
