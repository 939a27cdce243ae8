#!/usr/bin/env bash
# The whole test suite: the Python peers the differential tests compare
# against, formatting and lints, then every Rust test (unit, integration, doc).
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install -q --disable-pip-version-check -r tests/requirements.txt
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
