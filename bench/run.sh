#!/usr/bin/env bash
# Benchmarks warchest against its peers on the same files, in turns, and
# prints medians, ratios and peak memory. See docs/performance.md.
#
#   bench/run.sh [--runs N] [--corpus DIR]   the whole table (builds the corpus if missing)
#   bench/run.sh --smoke                     one pass on a fixture with the debug build,
#                                            no FastWARC harness (CI: keeps the script alive;
#                                            BENCH_SMOKE_BIN=PATH: that binary, no build)
#   bench/run.sh --python [--no-build] [--fetch N] [--spark] FILE...
#                                            Python iteration, fetch and Spark rows (docs/python.md);
#                                            --no-build: the warchest wheel python3 has installed
#   bench/run.sh --spark FILE...             the Spark rows alone (--python --spark-only)
#   bench/run.sh --derive [--smoke] [FILE]   derive text/wet/wat against Resiliparse and
#                                            trafilatura (docs/derive.md); --smoke: a fixture,
#                                            the debug build
#   bench/run.sh --search [--smoke] FILE...  search-index docs/s, search p50/p99 (docs/search.md)
#   bench/run.sh --remote [--smoke] FILE [--scan-only]
#                                            remote rows (bench/remote_bench.py): ls -j 1/2 over
#                                            HTTP (nginx) and S3 against the local file, 20 ms
#                                            latency; --smoke: a fixture, moto, one run
#   bench/run.sh --derive --search FILE      both, in one run
#   bench/run.sh --derive --search --bytes N FILE
#                                            both, on FILE's records that start before byte N
#   bench/run.sh --browser [--smoke] [--pages N] [--tabs N]
#                                            browser capture: warchest --browser, warcprox +
#                                            Chromium, wget --mirror (docs/performance.md)
#   bench/run.sh --crawl [--smoke] [--sites N] [--pages N] [--frontier N]
#                                            warchest crawl against wget --mirror on the
#                                            generated test web, and a 1,000,000-URL frontier's
#                                            peak RSS (docs/performance.md)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
# Python rows: a release wheel, then bench/python_bench.py.
if [ "${1:-}" = "--spark" ]; then
    shift
    set -- --python --spark-only "$@"
fi
if [ "${1:-}" = "--python" ]; then
    shift
    if [[ " $* " == *" --no-build "* ]]; then
        args=()
        for a in "$@"; do [ "$a" = --no-build ] || args+=("$a"); done
        python3 -c 'import warchest; print("warchest wheel:", warchest.__file__)'
        exec python3 "$here/python_bench.py" "${args[@]}"
    fi
    # The rows that read from the S3 server need the `remote` feature.
    features=--no-default-features
    if [[ " $* " == *" --fetch "* || " $* " == *" --spark"* ]]; then
        features=
    fi
    # A fresh folder: one wheel, whatever versions were built before.
    wheels=$(mktemp -d)
    # The release profile without the `remote` feature (object_store,
    # reqwest, rustls, ring, tokio: half the crates and most of the code
    # thin LTO works through, none of it on the measured path, whose
    # sources and dependency features are the same either way): the
    # build takes a fraction of the time (docs/python.md, "Speed").
    # shellcheck disable=SC2086 # $features is one flag or none
    python3 -m maturin build -q --strip --release $features \
        -m "$root/crates/warchest-py/Cargo.toml" -i python3 -o "$wheels"
    python3 -m pip install -q --force-reinstall --no-deps "$wheels"/warchest-*.whl
    rm -rf "$wheels"
    exec python3 "$here/python_bench.py" "$@"
fi
# Remote rows (bench/remote_bench.py): the binary built (the debug build
# with --smoke, on a fixture), then the script.
if [ "${1:-}" = "--remote" ]; then
    shift
    if [[ " $* " == *" --smoke "* ]]; then
        cargo build -q -p warchest-cli --manifest-path "$root/Cargo.toml"
        export WARCHEST_BIN=$CARGO_TARGET_DIR/debug/warchest
        set -- "$@" "$root/../shared/fixtures/resiliparse/block-sized-records.warc"
    else
        cargo build -q --release -p warchest-cli --manifest-path "$root/Cargo.toml"
        export WARCHEST_BIN=$CARGO_TARGET_DIR/release/warchest
    fi
    exec python3 "$here/remote_bench.py" "$@"
fi
# Rows of one area each (derive, search), or both in one run
# (`--derive --search FILE`): the binary built (the debug build with
# --smoke), then each area's script, bench/AREA_bench.py, on the same file.
case "${1:-}" in
--derive | --search)
    areas=()
    rest=()
    slice=
    while [ $# -gt 0 ]; do
        case $1 in
        --derive | --search) areas+=("${1#--}") ;;
        --bytes) slice=$2; shift ;;
        *) rest+=("$1") ;;
        esac
        shift
    done
    # The arguments are in `rest` by now (`$*` is empty after the shifts).
    if [[ " ${rest[*]} " == *" --smoke "* ]]; then
        cargo build -q -p warchest-cli --manifest-path "$root/Cargo.toml"
        export WARCHEST_BIN=$CARGO_TARGET_DIR/debug/warchest
        rest+=("$root/../shared/fixtures/pywb/iana.warc.gz")
    else
        cargo build -q --release -p warchest-cli --manifest-path "$root/Cargo.toml"
        export WARCHEST_BIN=$CARGO_TARGET_DIR/release/warchest
    fi
    # --bytes N: the records of FILE (the last argument) that start before
    # byte N, cut by `warchest filter`, so that a quiet run of both areas
    # fits in minutes (docs/performance.md).
    if [ -n "$slice" ]; then
        cut=$(mktemp -d)
        trap 'rm -rf "$cut"' EXIT
        file=${rest[-1]}
        "$WARCHEST_BIN" -q filter "$file" ":offset < $slice" -o "$cut/$(basename "$file")"
        rest[-1]=$cut/$(basename "$file")
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
# The crawl row: bench/crawl_bench.py on the crawl crate's test web (issue 29).
if [ "${1:-}" = "--crawl" ]; then
    shift
    profile=release
    flag=--release
    if [[ " $* " == *" --smoke "* ]]; then
        profile=debug
        flag=
    fi
    cargo build -q $flag -p warchest-cli --manifest-path "$root/Cargo.toml"
    cargo build -q $flag -p warchest-crawl --features testweb --example testweb \
        --manifest-path "$root/Cargo.toml"
    exec python3 "$here/crawl_bench.py" --bin "$CARGO_TARGET_DIR/$profile/warchest" \
        --testweb "$CARGO_TARGET_DIR/$profile/examples/testweb" "$@"
fi
if [[ " $* " == *" --smoke "* ]]; then
    # BENCH_SMOKE_BIN: a debug binary already built. .ci/run passes the one
    # its `cargo test --workspace` built: `cargo build -p warchest-cli`
    # unifies features over that package alone, which differ from the
    # workspace's (dev-dependencies' features among them), and would
    # compile arrow, parquet and our crates again (docs/testing.md).
    if [ -n "${BENCH_SMOKE_BIN:-}" ]; then
        export WARCHEST_BIN=$BENCH_SMOKE_BIN
    else
        cargo build -q -p warchest-cli --manifest-path "$root/Cargo.toml"
        export WARCHEST_BIN=$CARGO_TARGET_DIR/debug/warchest
    fi
    unset BENCH_BIN
    # The serve load test too, a second a row, so that it cannot rot.
    if command -v wrk >/dev/null; then
        python3 "$here/load.py" --bin "$WARCHEST_BIN" --secs 1 --idle 20 --no-pywb
    fi
else
    # The inflate floor's rows need libdeflate's own gunzip.
    command -v libdeflate-gunzip >/dev/null || {
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libdeflate-tools >/dev/null
    }
    cargo build -q --release -p warchest-cli --manifest-path "$root/Cargo.toml"
    cargo build -q --release --manifest-path "$here/harness/Cargo.toml"
    export WARCHEST_BIN=$CARGO_TARGET_DIR/release/warchest
    export BENCH_BIN=$CARGO_TARGET_DIR/release/warchest-bench
fi
exec python3 "$here/bench.py" "$@"
