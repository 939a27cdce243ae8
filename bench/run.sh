#!/usr/bin/env bash
# Benchmarks warchest against its peers on the same files, in turns, and
# prints medians, ratios and peak memory. See docs/performance.md.
#
#   bench/run.sh [--runs N] [--corpus DIR]   the whole table (builds the corpus if missing)
#   bench/run.sh --smoke                     one pass on a fixture with the debug build,
#                                            no FastWARC harness (CI: keeps the script alive)
#   bench/run.sh --python [--spark] FILE     Python iteration and Spark rows (docs/python.md)
#   bench/run.sh --derive [--smoke] [FILE]   derive text/wet/wat against Resiliparse and
#                                            trafilatura (docs/derive.md); --smoke: a fixture,
#                                            the debug build
#   bench/run.sh --search [--smoke] FILE...  search-index docs/s, search p50/p99 (docs/search.md)
#   bench/run.sh --derive --search FILE      both, in one run
#   bench/run.sh --browser [--smoke] [--pages N] [--tabs N]
#                                            browser capture: warchest --browser, warcprox +
#                                            Chromium, wget --mirror (docs/performance.md)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
# Python rows: a release wheel, then bench/python_bench.py.
if [ "${1:-}" = "--python" ]; then
    shift
    # A fresh folder: one wheel, whatever versions were built before.
    wheels=$(mktemp -d)
    # The release profile without the `remote` feature (object_store,
    # reqwest, rustls, ring, tokio: half the crates and most of the code
    # thin LTO works through, none of it on the measured path, whose
    # sources and dependency features are the same either way): the
    # build takes a fraction of the time (docs/python.md, "Speed").
    python3 -m maturin build -q --strip --release --no-default-features \
        -m "$root/crates/warchest-py/Cargo.toml" -i python3 -o "$wheels"
    python3 -m pip install -q --force-reinstall --no-deps "$wheels"/warchest-*.whl
    rm -rf "$wheels"
    exec python3 "$here/python_bench.py" "$@"
fi
# Rows of one area each (derive, search), or both in one run
# (`--derive --search FILE`): the binary built (the debug build with
# --smoke), then each area's script, bench/AREA_bench.py, on the same file.
case "${1:-}" in
--derive | --search)
    areas=()
    rest=()
    for a in "$@"; do
        case $a in
        --derive | --search) areas+=("${a#--}") ;;
        *) rest+=("$a") ;;
        esac
    done
    if [[ " $* " == *" --smoke "* ]]; then
        cargo build -q -p warchest-cli --manifest-path "$root/Cargo.toml"
        export WARCHEST_BIN=$CARGO_TARGET_DIR/debug/warchest
        rest+=("$root/../shared/fixtures/pywb/iana.warc.gz")
    else
        cargo build -q --release -p warchest-cli --manifest-path "$root/Cargo.toml"
        export WARCHEST_BIN=$CARGO_TARGET_DIR/release/warchest
    fi
    for area in "${areas[@]}"; do
        python3 "$here/${area}_bench.py" "${rest[@]}"
    done
    exit 0
    ;;
esac
# Browser capture rows: bench/browser_bench.py (issue 30).
if [ "${1:-}" = "--browser" ]; then
    shift
    if [[ " $* " == *" --smoke "* ]]; then
        cargo build -q -p warchest-cli --manifest-path "$root/Cargo.toml"
        exec python3 "$here/browser_bench.py" --bin "$CARGO_TARGET_DIR/debug/warchest" "$@"
    fi
    cargo build -q --release -p warchest-cli --manifest-path "$root/Cargo.toml"
    exec python3 "$here/browser_bench.py" --bin "$CARGO_TARGET_DIR/release/warchest" "$@"
fi
if [[ " $* " == *" --smoke "* ]]; then
    cargo build -q -p warchest-cli --manifest-path "$root/Cargo.toml"
    export WARCHEST_BIN=$CARGO_TARGET_DIR/debug/warchest
    unset BENCH_BIN
    # The serve load test too, a second a row, so that it cannot rot.
    if command -v wrk >/dev/null; then
        python3 "$here/load.py" --bin "$WARCHEST_BIN" --secs 1 --idle 20 --no-pywb
    fi
else
    cargo build -q --release -p warchest-cli --manifest-path "$root/Cargo.toml"
    cargo build -q --release --manifest-path "$here/harness/Cargo.toml"
    export WARCHEST_BIN=$CARGO_TARGET_DIR/release/warchest
    export BENCH_BIN=$CARGO_TARGET_DIR/release/warchest-bench
fi
exec python3 "$here/bench.py" "$@"
