#!/usr/bin/env bash
# W2 with both systems in one run: installs DuckDB (PyPI `duckdb`) into a virtual environment,
# then runs artdb-bench's W2, which measures artdb natively and runs DuckDB's side
# (w2_duckdb.py) as a child process, and prints one table with both.
#
# Usage: crates/artdb-bench/scripts/w2.sh [N] [JSON_PATH]     (default N = 1000000)
set -euo pipefail
cd "$(dirname "$0")/../../.."
N="${1:-1000000}"
JSON="${2:-target/w2.json}"
VENV="${ARTDB_W2_VENV:-target/w2-venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet duckdb
fi
"$VENV/bin/python" -c 'import duckdb; print("duckdb", duckdb.__version__)'
mkdir -p "$(dirname "$JSON")"
cargo run --release -p artdb-bench -- w2 --n "$N" --duckdb "$VENV/bin/python" --json "$JSON"
