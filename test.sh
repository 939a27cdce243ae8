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
cargo test --workspace --no-run
phase "test build"
# What does not need the test binaries runs beside them, at the lowest
# CPU priority (docs/testing.md, "Running time"): the tests leave about a
# third of two cores idle while they wait on servers, browsers and the
# processes they start, and these checks take it; a test that wakes takes
# its core back at once. One process group, killed if this script ends
# first. It waits until `cargo test` has checked its build (timed-run.sh
# marks the first test binary's start): cargo takes the target directory's
# lock only to build, not to run tests, and a cargo started first at
# priority 19 would hold that lock while `cargo test` waited.
beside=$(mktemp -d)
export WARCHEST_TESTS_STARTED="$beside/started"
beside_checks() {
  renice -n 19 -p "$BASHPID" >/dev/null 2>&1 || true
  for _ in $(seq 1200); do [ -e "$WARCHEST_TESTS_STARTED" ] && break; sleep 0.5; done
  local start=$SECONDS
  step() {
    echo "[test.sh] beside the tests, $1: $((SECONDS - start)) s" >&2
    start=$SECONDS
  }
  # The Python package: the wheel built into the same target directory
  # (the dev profile optimises the hot dependencies) and installed; pytest
  # runs it after `cargo test`. See docs/python.md.
  local wheels
  wheels=$(mktemp -d)
  env -u RUSTC_WORKSPACE_WRAPPER python3 -m maturin build -q --strip --profile dev -m crates/warchest-py/Cargo.toml -i python3 -o "$wheels"
  python3 -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheels"/warchest-*.whl
  rm -rf "$wheels"
  touch "$beside/wheel"
  step "wheel (maturin)"
  # The light builds users choose: the format crate and the index without
  # their optional features (docs/architecture.md); and the Python binding
  # without `remote`, as bench/run.sh builds its wheel.
  cargo clippy -p warchest --no-default-features -- -D warnings
  cargo clippy -p warchest-index --no-default-features --all-targets -- -D warnings
  cargo clippy -p warchest-py --no-default-features --all-targets -- -D warnings
  step "clippy without default features"
  # The API documentation builds and every intra-doc link in it resolves.
  env -u RUSTC_WORKSPACE_WRAPPER RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps --workspace
  step "rustdoc"
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
  step "fuzz targets check"
}
set -m
(set -e; beside_checks) </dev/null >"$beside/log" 2>&1 &
beside_pid=$!
set +m
beside_done() {
  local status=0
  wait "$beside_pid" || status=$?
  cat "$beside/log" >&2
  [ "$status" = 0 ] || echo "[test.sh] the checks beside the tests failed (exit $status): above" >&2
  return "$status"
}
# This script ending first (a failed test, ^C) ends the checks too.
trap 'kill -TERM -- "-$beside_pid" 2>/dev/null || true; rm -rf "$beside"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cargo test --workspace
phase "cargo test"
# pytest wants the wheel, the first thing beside the tests.
for _ in $(seq 3600); do
  [ -e "$beside/wheel" ] || ! kill -0 "$beside_pid" 2>/dev/null && break
  sleep 0.5
done
[ -e "$beside/wheel" ] || { beside_done; exit 1; }
phase "waiting for the wheel"
python3 -m pytest -q -p no:cacheprovider --durations=15 crates/warchest-py/tests
phase "pytest"
beside_done
phase "waiting for the checks beside the tests"
