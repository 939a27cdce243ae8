#!/usr/bin/env bash
# The whole test suite: the Python peers the differential tests compare
# against, formatting and lints, then every Rust test (unit, integration, doc).
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pip install -q --disable-pip-version-check -r tests/requirements.txt
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
# The Python package: the wheel built into the same target directory (the
# dev profile optimises dependencies), installed, then its pytest suite:
# warcio differential, scan, writer, the Spark data source and examples/
# on one local[2] session. See docs/python.md.
wheels=$(mktemp -d)
python3 -m maturin build -q --strip --profile dev -m crates/warchest-py/Cargo.toml -i python3 -o "$wheels"
python3 -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheels"/warchest-*.whl
rm -rf "$wheels"
python3 -m pytest -q -p no:cacheprovider crates/warchest-py/tests
