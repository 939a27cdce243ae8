"""Driver of bench/run.sh: runs each workload with each tool in turns,
several times, and prints medians, ratios and peak memory for every row of
the performance table of issue 20 (the inflate floor, libdeflate-gunzip,
measured in the same turns; FastWARC 2 through bench/harness; cdxj-indexer;
check and ls as yardsticks of validate and index), then issue 11's zstd and
LZ4 rows. The Python rows are bench/run.sh --python's (python_bench.py).

Wall seconds are medians over the runs; CPU seconds (user + system) and
peak resident memory come from the operating system's accounting of each
child process (wait4), so they are meaningful even on a busy machine.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pagecache

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCH = os.environ.get("BENCH_BIN")
WARCHEST = os.environ["WARCHEST_BIN"]


KEEP_CACHE = False


def warm(cmd):
    """Settles every file cmd names in the page cache (pagecache.py)."""
    pagecache.settle([a for a in cmd[1:] if os.path.isfile(a)], drop=not KEEP_CACHE)


def run(cmd):
    """Runs cmd with its output discarded: (wall s, cpu s, peak KiB)."""
    warm(cmd)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    p.returncode = os.waitstatus_to_exitcode(status)
    # check and validate exit 1 when they find a problem: still a timing.
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def ensure_corpus(d):
    os.makedirs(d, exist_ok=True)
    gz = os.path.join(d, "rustdocs.warc.gz")
    if not os.path.exists(gz):
        subprocess.run(["bash", os.path.join(ROOT, "..", "shared", "bench", "make-corpus.sh"), d, "--stored"], check=True)
    return derive(d, gz)


def derive(d, gz):
    """The plain, zstd and LZ4 variants of gz, made once."""
    base = os.path.basename(gz)[: -len(".warc.gz")]
    plain = os.path.join(d, base + ".warc")
    if not os.path.exists(plain):
        with open(plain, "wb") as f:
            subprocess.run(["gzip", "-dc", gz], check=True, stdout=f)
    files = {"gzip": gz, "plain": plain}
    zst = os.path.join(d, base + ".warc.zst")
    if not os.path.exists(zst):
        subprocess.run([WARCHEST, "-q", "recompress", gz, "-o", zst, "--to", "zstd"], check=True)
    files["zstd"] = zst
    # One LZ4 frame per record, as warchest writes it (the file name is
    # new: the lz4 tool's whole-file frame was `.warc.lz4`).
    lz = os.path.join(d, base + ".records.warc.lz4")
    if not os.path.exists(lz):
        subprocess.run([WARCHEST, "-q", "recompress", gz, "-o", lz, "--to", "lz4"], check=True)
    files["lz4"] = lz
    return files


def rows(files, have_harness, have_peers):
    """(name, warchest command, peer name, peer command, target) per row:
    the rows of issue 20 first, then the zstd and LZ4 rows of issue 11. A
    row is met when warchest's median wall time over the peer's is at most
    the target."""
    w, b = WARCHEST, BENCH
    gz, plain = files["gzip"], files["plain"]
    out = []

    def fw(work, path):
        return [b, "fastwarc", work, path] if have_harness else None

    # The floor: libdeflate's bare inflate of the same file, in the same turns.
    floor = ["libdeflate-gunzip", "-c", gz] if shutil.which("libdeflate-gunzip") else None
    out.append(("gzip skip  ls -j 1", [w, "ls", "-j", "1", gz], "inflate floor", floor, 1.05))
    out.append(("gzip skip  ls -j 1", [w, "ls", "-j", "1", gz], "fastwarc skip", fw("skip", gz), None))
    out.append(("gzip skip  ls -j 2", [w, "ls", "-j", "2", gz], "inflate floor", floor, 0.55))
    out.append(("gzip skip  ls -j 2", [w, "ls", "-j", "2", gz], "fastwarc skip", fw("skip", gz), None))
    # The row of the issue: plain `ls` as a user runs it (no -j: one thread
    # per core, the file cut into chunks); -j 1 for its figures only.
    out.append(("plain skip ls", [w, "ls", plain], "fastwarc skip", fw("skip", plain), 0.5))
    out.append(("plain skip ls -j 1", [w, "ls", "-j", "1", plain], "fastwarc skip", fw("skip", plain), None))
    if have_harness:
        out.append(("plain skip library", [b, "warchest", "skip", plain], "fastwarc skip", fw("skip", plain), None))
        out.append(("plain read library", [b, "warchest", "read", plain], "fastwarc read", fw("read", plain), 0.7))
        out.append(("gzip read  library", [b, "warchest", "read", gz], "fastwarc read", fw("read", gz), 0.8))
    out.append(("gzip digests check -j 2", [w, "check", "-j", "2", gz], "fastwarc read", fw("read", gz), 1.0))
    idx = lambda j: [w, "index", "--format", "cdxj", "-j", j, gz]  # noqa: E731
    out.append(("gzip index cdxj -j 1", idx("1"), "ls -j 1", [w, "ls", "-j", "1", gz], 1.2))
    out.append(("gzip index cdxj -j 2", idx("2"), "ls -j 2", [w, "ls", "-j", "2", gz], None))
    # cdxj-indexer -p: POST/PUT keys appended, as warchest index does by default.
    peer = ["cdxj-indexer", "-p", gz] if have_peers and shutil.which("cdxj-indexer") else None
    out.append(("gzip index cdxj -j 2", idx("2"), "cdxj-indexer -p", peer, 1 / 15))
    # An uncompressed file indexed in chunks on both cores, the records a
    # read in order pairs carried across the cuts (issue 33: every reading
    # command on every core).
    pidx = lambda j: [w, "index", "--format", "cdxj", "-j", j, plain]  # noqa: E731
    out.append(("plain index cdxj -j 2", pidx("2"), "index -j 1", pidx("1"), 0.8))
    # stats on the threads left over: chunks of a plain file, a gzip
    # file's members decoded ahead (no target: figures only).
    for kind, f in (("plain", plain), ("gzip ", gz)):
        st = lambda j, f=f: [w, "stats", "-j", j, f]  # noqa: E731
        out.append((f"{kind} stats -j 2", st("2"), "stats -j 1", st("1"), None))
    out.append(("gzip validate -j 2", [w, "validate", "-j", "2", gz], "check -j 2", [w, "check", "-j", "2", gz], 1.0))
    out.append(("gzip validate -j 1", [w, "validate", "-j", "1", gz], "check -j 1", [w, "check", "-j", "1", gz], None))
    # A plain file: records read in order, their digests computed ahead on
    # the other core (docs/validation.md, "Speed"); figures only.
    out.append(("plain validate -j 2", [w, "validate", "-j", "2", plain], "check -j 2", [w, "check", "-j", "2", plain], None))
    out.append(("plain validate -j 2", [w, "validate", "-j", "2", plain], "validate -j 1", [w, "validate", "-j", "1", plain], None))
    # Issue 11's rows for the other codecs (targets met there).
    for codec in ("zstd", "lz4"):
        if codec in files:
            f = files[codec]
            out.append((f"{codec} skip  ls -j 1", [w, "ls", "-j", "1", f], "fastwarc skip", fw("skip", f), 1.0))
            out.append((f"{codec} skip  ls -j 2", [w, "ls", "-j", "2", f], "fastwarc skip", fw("skip", f), 0.6))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus"))
    ap.add_argument("--smoke", action="store_true", help="one quick pass on a fixture, for CI")
    ap.add_argument("--only", action="append", metavar="TEXT",
                    help="only the rows whose name holds TEXT (repeatable): e.g. --only 'gzip skip  ls -j 2' --only validate")
    ap.add_argument("--keep-cache", action="store_true",
                    help="leave the corpus in the page cache as it is (by default each file is dropped and read back before each run)")
    a = ap.parse_args()
    have_harness = bool(BENCH) and os.path.exists(BENCH)
    if a.smoke:
        tmp = tempfile.mkdtemp(prefix="warchest-bench-")
        fx = os.path.join(ROOT, "..", "shared", "fixtures", "pywb", "iana.warc.gz")
        gz = os.path.join(tmp, "iana.warc.gz")
        shutil.copy(fx, gz)
        files, runs, have_peers = derive(tmp, gz), 1, False
    else:
        files, runs, have_peers = ensure_corpus(a.corpus), a.runs, True

    global KEEP_CACHE
    KEEP_CACHE = a.keep_cache
    table = rows(files, have_harness, have_peers)
    if a.only:
        table = [r for r in table if any(t in r[0] for t in a.only)]
        if not table:
            sys.exit(f"no row's name holds any of {a.only}")
    # Each distinct command is run once a turn and shared by the rows that
    # name it (ls -j 1 is both a row and index's yardstick).
    cmds = []
    for _, cmd, _, peer, _ in table:
        for c in (cmd, peer):
            if c and c not in cmds:
                cmds.append(c)
    results = {}
    failed = set()
    for _ in range(runs):
        for c in cmds:  # in turns: drift hits every tool alike
            key = tuple(c)
            # cdxj-indexer takes ~8 s a run: three runs are plenty.
            if c[0] == "cdxj-indexer" and len(results.get(key, [])) >= 3:
                continue
            if key in failed:
                continue
            try:
                results.setdefault(key, []).append(run(c))
            except RuntimeError as e:
                if c[0] == WARCHEST or c[0] == BENCH:
                    raise
                print(f"peer failed, rows without ratio: {e}", file=sys.stderr)
                failed.add(key)

    med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
    print(f"{'row':26} {'wall':>7} {'cpu':>7} {'MiB':>5} | {'peer':16} {'wall':>7} {'cpu':>7} {'MiB':>5} | {'ratio':>5} target")
    peak = 0.0
    unmeasured = 0
    for name, cmd, pname, peer, target in table:
        m = results[tuple(cmd)]
        mw, mc, mm = med(m, 0), med(m, 1), max(x[2] for x in m) / 1024
        peak = max(peak, mm)
        line = f"{name:26} {mw:7.3f} {mc:7.3f} {mm:5.0f} | "
        p = results.get(tuple(peer)) if peer else None
        if p:
            pw, pc, pm = med(p, 0), med(p, 1), max(x[2] for x in p) / 1024
            ratio = mw / pw
            line += f"{pname:16} {pw:7.3f} {pc:7.3f} {pm:5.0f} | {ratio:5.2f}"
            if target is not None:
                # Against cdxj-indexer the target reads "N times faster".
                want = f"<= {target:.2f}" if target >= 0.1 else f">= {1 / target:.0f}x faster ({1 / ratio:.1f}x)"
                line += f" {want}"
                # A smoke pass is a debug build on a fixture: figures, no verdicts.
                if not a.smoke:
                    line += " ok" if ratio <= target else " MISSED"
        else:
            line += f"{pname:16} {'-':>7} {'-':>7} {'-':>5} |"
            # A row with a target whose peer did not run has no verdict:
            # say so, rather than print a row that reads like a pass.
            if target is not None and not a.smoke:
                line += f"       NOT MEASURED ({pname} missing)"
                unmeasured += 1
        print(line)
    memory = f"peak memory of any warchest row: {peak:.0f} MiB"
    if not a.smoke:
        memory += " (<= 64 MiB " + ("ok)" if peak <= 64 else "MISSED)")
    print(memory)
    print("Python rows (warchest, FastWARC 2 and warcio from Python): bench/run.sh --python FILE")
    if a.smoke:
        shutil.rmtree(tmp, ignore_errors=True)
    if unmeasured:
        # bench/run.sh installs the peers; run by hand, a missing one fails the run.
        sys.exit(f"{unmeasured} row(s) with a target not measured: their peer is missing "
                 "(the inflate floor is libdeflate-gunzip, Debian's libdeflate-tools)")


if __name__ == "__main__":
    main()
