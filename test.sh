#!/usr/bin/env bash
# The whole test suite, on a fresh machine: the system packages the tests
# drive (Chromium for replay in a browser, a Java runtime for Spark), the
# Python peers the differential tests compare against, formatting and
# lints, every Rust test (unit, one integration binary per crate, doc), then
# the Python package's suite against its built wheel.
set -euo pipefail
cd "$(dirname "$0")"
# Where the time goes: each phase's wall time on stderr, "[test.sh] PHASE:
# N s", and each test binary's through tests/timed-run.sh, cargo's runner
# here (docs/testing.md, "Running time").
phase_start=$SECONDS
phase() {
  echo "[test.sh] $1: $((SECONDS - phase_start)) s" >&2
  phase_start=$SECONDS
}
host=$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z-' 'A-Z_')
export "CARGO_TARGET_${host}_RUNNER=$PWD/tests/timed-run.sh"
need_apt=()
command -v python3 >/dev/null || need_apt+=(python3 python3-pip)
command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v prlimit >/dev/null || need_apt+=(util-linux)
# wrk: the serve load test's client (bench/load.py; bench/run.sh --smoke).
command -v wrk >/dev/null || need_apt+=(wrk)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]} (apt-get)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# pip only when a requirement is not met (tests/requirements_met.py).
python3 tests/requirements_met.py tests/requirements.txt 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check -r tests/requirements.txt
phase "system and Python packages"
cargo fmt --all -- --check
# The fuzz targets are a workspace of their own: formatted too.
cargo fmt --all --manifest-path fuzz/Cargo.toml -- --check
# Clippy over every target of the workspace. With WARCHEST_LINT_IN_BUILD=1
# (.ci/run, a cold clone) the lints run inside the test build instead:
# clippy-driver compiles the workspace's own crates for `cargo test` and
# lints them as it goes (-D warnings), which is what `cargo clippy` does
# without the code generation, so the workspace is type-checked once, not
# twice (docs/testing.md, "Running time"). Cargo does not count the wrapper
# in its fingerprints, so a warm target dir built without it would skip
# the lints of unchanged crates: the separate pass stays the default.
if [ "${WARCHEST_LINT_IN_BUILD:-}" = 1 ]; then
  export RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
  [ -x "$RUSTC_WORKSPACE_WRAPPER" ] || { echo "no clippy-driver at $RUSTC_WORKSPACE_WRAPPER" >&2; exit 2; }
else
  cargo clippy --workspace --all-targets -- -D warnings
fi
phase "fmt and clippy"
# The light builds users choose: the format crate and the index without
# their optional features (docs/architecture.md); and the Python binding
# without `remote`, as bench/run.sh builds its wheel.
cargo clippy -p warchest --no-default-features -- -D warnings
cargo clippy -p warchest-index --no-default-features --all-targets -- -D warnings
cargo clippy -p warchest-py --no-default-features --all-targets -- -D warnings
phase "clippy without default features"
# The API documentation builds and every intra-doc link in it resolves.
env -u RUSTC_WORKSPACE_WRAPPER RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps --workspace
phase "rustdoc"
# The fuzz targets (a cargo-fuzz workspace of its own, fuzz/) type-check
# against today's API: a rename once left one that no longer built, and
# nothing noticed (docs/testing.md, "Fuzzing"). Checked, not run or
# instrumented: that needs nightly and time; nor is libFuzzer's C++
# compiled (--no-default-features: nothing is linked). The workspace's
# target directory, not one of its own: fuzz/'s dev profile has the
# workspace's debug settings, so the dependencies rustdoc just checked
# are reused (about 25 s here, 70-80 s in a directory of its own).
env -u RUSTC_WORKSPACE_WRAPPER CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" \
  cargo check -q --locked --manifest-path fuzz/Cargo.toml --bins --no-default-features
phase "fuzz targets check"
cargo test --workspace --no-run
phase "test build"
cargo test --workspace
phase "cargo test"
# The Python package: the wheel built into the same target directory (the
# dev profile optimises the hot dependencies), installed, then its pytest suite:
# warcio differential, scan, writer, the Spark data source and examples/
# on one local[2] session. See docs/python.md.
wheels=$(mktemp -d)
env -u RUSTC_WORKSPACE_WRAPPER python3 -m maturin build -q --strip --profile dev -m crates/warchest-py/Cargo.toml -i python3 -o "$wheels"
python3 -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheels"/warchest-*.whl
rm -rf "$wheels"
phase "wheel (maturin)"
python3 -m pytest -q -p no:cacheprovider --durations=15 crates/warchest-py/tests
phase "pytest"
