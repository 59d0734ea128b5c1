#!/usr/bin/env bash
# CI for the Python package (called by .ci/run; also the way to run it by hand): a virtual
# environment under target/ (made once, reused), maturin + pytest + hypothesis installed into it
# when missing, the abi3 wheel built in release mode and installed, then the pytest suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="${ARTDB_PY_VENV:-target/py-venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
# mypy pinned: a new release may reject stubs that passed, which would break CI on no change.
MYPY_VERSION=1.15.0
# dask: tests/test_dask_cookbook.py runs examples/dask_bitable_shards.py (pure Python, quick).
if ! "$VENV/bin/python" -c 'import maturin, pytest, hypothesis, dask' >/dev/null 2>&1; then
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet maturin pytest hypothesis dask
fi
if [ "$("$VENV/bin/python" -m mypy --version 2>/dev/null | cut -d' ' -f2)" != "$MYPY_VERSION" ]; then
  "$VENV/bin/pip" install --quiet "mypy==$MYPY_VERSION"
fi
rm -rf target/py-wheels
"$VENV/bin/maturin" build --release --quiet -m crates/artdb-py/Cargo.toml -i "$VENV/bin/python" \
  --out target/py-wheels
"$VENV/bin/pip" install --quiet --force-reinstall --no-deps target/py-wheels/artdb-*.whl
cd crates/artdb-py
# -p no:cacheprovider: leave nothing in the source tree.
"../../$VENV/bin/python" -m pytest -q -p no:cacheprovider tests
# The stubs against a typed use (tests/typing/usage.py) and against the installed module
# (stubtest: every name, argument and default the stubs give exists at run time, and the
# reverse). The cache goes under target/, not into the source tree.
"../../$VENV/bin/python" -m mypy --strict --cache-dir ../../target/py-mypy-cache tests/typing/usage.py
"../../$VENV/bin/python" -m mypy.stubtest artdb --mypy-config-file stubtest.ini \
  --allowlist stubtest-allowlist.txt
# W7's script at a tiny scale as a smoke run (no timing asserted; the peers that need pip
# installs are left out here: sqlite3 is in the standard library).
"../../$VENV/bin/python" bench/w7.py --n 20000 --systems artdb,sqlite3 --gets 5000 \
  --ranges 1000 --puts 10 --dir ../../target/py-bench-smoke >/dev/null
"../../$VENV/bin/python" bench/w7_puts.py --n 2000 --rounds 2 --batch 5 --systems artdb,sqlite3,floor \
  --dir ../../target/py-bench-smoke-puts >/dev/null
echo "artdb-py W7 smoke run: ok"
