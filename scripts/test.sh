#!/usr/bin/env bash
# The whole test suite: builds and installs the package (Rust core + Python front) with its
# test extras, then runs the Rust tests and the Python tests. Used by README and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
echo "== building and installing toposched with its test extras (the Rust core: a few minutes the first time) =="
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
echo "== Rust tests =="
cargo test --quiet -p toposched-core -p toposched-io
# Habits (ARCHITECTURE.md, rules): clippy with warnings as errors on every crate, ruff on the
# Python, mypy --strict on the whole package, no module exempt;
# the stub's signatures are checked by mypy.stubtest in tests/test_stub.py.
echo "== clippy, ruff, mypy =="
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
cargo clippy --quiet --release --all-targets -- -D warnings
# ruff's binary sits beside the interpreter that installed it (a venv that borrows the
# system's site-packages has none of its own): ask the package where it is
RUFF=$(python3 -c 'import shutil
try:
    from ruff.__main__ import find_ruff_bin
    print(find_ruff_bin())
except Exception:
    print(shutil.which("ruff") or "ruff")')
"$RUFF" check python tests
python3 -m mypy
# Headless Chromium for tests/test_report_browser.py (Debian's package; needs root to install).
command -v chromium >/dev/null || { if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || echo "warning: could not install chromium" >&2; else echo "warning: chromium not installed and not root: the browser test skips (fails under CI)" >&2; fi; }
# hwloc's lstopo for the node agent's live topology (tests/test_node_*.py; Debian's package).
command -v lstopo-no-graphics >/dev/null || { if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hwloc >/dev/null || echo "warning: could not install hwloc" >&2; else echo "warning: hwloc not installed and not root: the live-topology tests skip" >&2; fi; }
# A real Slurm 22.05 with accounting for tests/test_live_slurm.py: plain slurm-wlm (not the emulator),
# slurmdbd and MariaDB for sacct. Needs root to install; the test skips only when not root.
if [ ! -x /usr/sbin/slurmctld-wlm ] || [ ! -x /usr/sbin/slurmdbd ] || [ ! -x /usr/sbin/mariadbd ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm slurmdbd mariadb-server >/dev/null || echo "warning: could not install slurm-wlm slurmdbd mariadb-server" >&2
  else
    echo "warning: slurm-wlm/slurmdbd/mariadb-server not installed and not root: the real-Slurm test skips (it runs under CI)" >&2
  fi
fi
echo "== Python tests (a dot per test; the real-Slurm tests take a few minutes) =="
python3 -m pytest -q
