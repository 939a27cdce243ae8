#!/usr/bin/env bash
# The runner test.sh gives cargo for test binaries
# (CARGO_TARGET_<triple>_RUNNER): runs one and prints its wall time to
# stderr, "[test.sh] test binary CRATE/NAME: N s" (cargo runs each test
# binary in its package's directory), to see where the suite's time goes
# (docs/testing.md, "Running time").
start=$SECONDS
status=0
"$@" || status=$?
echo "[test.sh] test binary $(basename "$PWD")/$(basename "$1" | sed 's/-[0-9a-f]*$//'): $((SECONDS - start)) s" >&2
exit $status
