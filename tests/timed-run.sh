#!/usr/bin/env bash
# The runner test.sh gives cargo for test binaries
# (CARGO_TARGET_<triple>_RUNNER): runs one and prints its wall time to
# stderr, "[test.sh] test binary CRATE/NAME: N s" (cargo runs each test
# binary in its package's directory), to see where the suite's time goes
# (docs/testing.md, "Running time").
#
# Tests run four at a time, not one a core: the CLI's wait on servers,
# browsers and the `warchest` processes they start about half their time
# (189 CPU s, user and system, children included, for a binary that took
# 197 s of wall time on the 2 cores in CI), and so do the crawler's and
# the remote crate's (docs/testing.md, "Running time"). The browser
# crate's binary keeps libtest's default, one a core: its hung-browser
# and endless-page cases bound their time, and want the cores.
if [ "$(basename "$PWD")" != warchest-browser ] && [ -z "${RUST_TEST_THREADS:-}" ]; then
    export RUST_TEST_THREADS=4
fi
# test.sh's checks beside the tests wait for this mark: cargo is past its
# build, and has let go of the target directory's lock.
if [ -n "${WARCHEST_TESTS_STARTED:-}" ]; then
    : > "$WARCHEST_TESTS_STARTED" || true
fi
start=$SECONDS
status=0
"$@" || status=$?
echo "[test.sh] test binary $(basename "$PWD")/$(basename "$1" | sed 's/-[0-9a-f]*$//'): $((SECONDS - start)) s" >&2
exit $status
