#!/usr/bin/env bash
# Builds the C API's static library and runs the Go package's tests with the race detector.
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release -p artdb-capi
go vet ./...
go test -race -count=1 ./...
