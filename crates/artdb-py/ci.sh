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
if ! "$VENV/bin/python" -c 'import maturin, pytest, hypothesis' >/dev/null 2>&1; then
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet maturin pytest hypothesis
fi
rm -rf target/py-wheels
"$VENV/bin/maturin" build --release --quiet -m crates/artdb-py/Cargo.toml -i "$VENV/bin/python" \
  --out target/py-wheels
"$VENV/bin/pip" install --quiet --force-reinstall --no-deps target/py-wheels/artdb-*.whl
cd crates/artdb-py
# -p no:cacheprovider: leave nothing in the source tree.
"../../$VENV/bin/python" -m pytest -q -p no:cacheprovider tests
# W7's script at a tiny scale as a smoke run (no timing asserted; the peers that need pip
# installs are left out here: sqlite3 is in the standard library).
"../../$VENV/bin/python" bench/w7.py --n 20000 --systems artdb,sqlite3 --gets 5000 \
  --ranges 1000 --puts 10 --dir ../../target/py-bench-smoke >/dev/null
echo "artdb-py W7 smoke run: ok"
