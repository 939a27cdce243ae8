#!/usr/bin/env bash
# Benchmarks warchest against its peers on the same files, in turns, and
# prints medians and ratios. See docs/performance.md.
#
#   bench/run.sh [--runs N] [--corpus DIR]   full run (builds the corpus if missing)
#   bench/run.sh --smoke                     one quick pass on a fixture (CI)
#   bench/run.sh --python [--spark] FILE     Python iteration and Spark rows
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
# Python rows (docs/python.md): a release wheel, then bench/python_bench.py.
if [ "${1:-}" = "--python" ]; then
  shift
  python3 -m maturin build -q --strip --release -m "$root/crates/warchest-py/Cargo.toml" -i python3 -o "$CARGO_TARGET_DIR/wheels"
  python3 -m pip install -q --force-reinstall --no-deps "$CARGO_TARGET_DIR"/wheels/warchest-*.whl
  exec python3 "$here/python_bench.py" "$@"
fi
cargo build -q --release -p warchest-cli --manifest-path "$root/Cargo.toml"
cargo build -q --release --manifest-path "$here/harness/Cargo.toml"
export WARCHEST_BIN=$CARGO_TARGET_DIR/release/warchest
export BENCH_BIN=$CARGO_TARGET_DIR/release/warchest-bench
exec python3 "$here/bench.py" "$@"
