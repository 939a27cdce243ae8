"""Driver of bench/run.sh: runs each workload with each tool in turns,
several times, and prints medians, ratios and peak memory for every row of
the performance table (issue 11, and validate against check for issue 5).

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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCH = os.environ.get("BENCH_BIN")
WARCHEST = os.environ["WARCHEST_BIN"]


def run(cmd):
    """Runs cmd with its output discarded: (wall s, cpu s, peak KiB)."""
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
    """(name, warchest command, peer name, peer command, target) per row."""
    w, b = WARCHEST, BENCH
    gz = files["gzip"]
    out = []

    def fw(work, path):
        return [b, "fastwarc", work, path] if have_harness else None

    out.append(("gzip skip  ls -j 1", [w, "ls", "-j", "1", gz], "fastwarc skip", fw("skip", gz), 0.75))
    out.append(("gzip skip  ls -j 2", [w, "ls", "-j", "2", gz], "fastwarc skip", fw("skip", gz), 0.47))
    if have_harness:
        out.append(("gzip skip  library", [b, "warchest", "skip", gz], "fastwarc skip", fw("skip", gz), 0.75))
        out.append(("gzip read  library", [b, "warchest", "read", gz], "fastwarc read", fw("read", gz), 0.8))
    out.append(("gzip digests check -j 2", [w, "check", "-j", "2", gz], "fastwarc read", fw("read", gz), 1.0))
    out.append(("plain skip ls -j 1", [w, "ls", "-j", "1", files["plain"]], "fastwarc skip", fw("skip", files["plain"]), 0.3))
    for codec in ("zstd", "lz4"):
        if codec in files:
            f = files[codec]
            out.append((f"{codec} skip  ls -j 1", [w, "ls", "-j", "1", f], "fastwarc skip", fw("skip", f), 1.0))
            out.append((f"{codec} skip  ls -j 2", [w, "ls", "-j", "2", f], "fastwarc skip", fw("skip", f), 0.6))
    peer = ["cdxj-indexer", gz] if have_peers and shutil.which("cdxj-indexer") else None
    for j in ("1", "2"):
        idx = [w, "index", "--format", "cdxj", "-j", j, gz]
        out.append((f"gzip index cdxj -j {j}", idx, "cdxj-indexer", peer, 1 / 15))
        out.append((f"gzip index cdxj -j {j}", idx, f"ls -j {j}", [w, "ls", "-j", j, gz], 1.2))
    # Issue 5: validate at least at check's speed, on the same threads.
    for j in ("1", "2"):
        out.append((f"gzip validate -j {j}", [w, "validate", "-j", j, gz], f"check -j {j}", [w, "check", "-j", j, gz], 1.0))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus"))
    ap.add_argument("--smoke", action="store_true", help="one quick pass on a fixture, for CI")
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

    table = rows(files, have_harness, have_peers)
    results = {}
    for _ in range(runs):
        for i, (_, cmd, _, peer, _) in enumerate(table):  # in turns: drift hits both
            results.setdefault((i, 0), []).append(run(cmd))
            if peer:
                # cdxj-indexer takes ~20 s: three runs are plenty.
                if peer[0] == "cdxj-indexer" and len(results.get((i, 1), [])) >= 3:
                    continue
                try:
                    results.setdefault((i, 1), []).append(run(peer))
                except RuntimeError as e:
                    print(f"peer failed, row without ratio: {e}", file=sys.stderr)
                    table[i] = table[i][:3] + (None,) + table[i][4:]
    floor = None
    if shutil.which("libdeflate-gunzip"):
        floor = statistics.median(run(["libdeflate-gunzip", "-c", files["gzip"]])[0] for _ in range(runs))

    med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
    print(f"{'row':26} {'wall':>7} {'cpu':>7} {'MiB':>5} | {'peer':14} {'wall':>7} {'cpu':>7} | {'ratio':>5} {'target':>7}")
    for i, (name, _, pname, peer, target) in enumerate(table):
        m = results[(i, 0)]
        mw, mc, mm = med(m, 0), med(m, 1), max(x[2] for x in m) / 1024
        line = f"{name:26} {mw:7.3f} {mc:7.3f} {mm:5.0f} | "
        p = results.get((i, 1))
        if p:
            pw, pc = med(p, 0), med(p, 1)
            line += f"{pname:14} {pw:7.3f} {pc:7.3f} | {mw / pw:5.2f}"
            # A smoke pass is a debug build on a fixture: figures, no verdicts.
            if not a.smoke:
                ok = "ok" if mw / pw <= target else "MISSED"
                line += f" <= {target:.2f} {ok}"
        else:
            line += f"{pname:14} {'-':>7} {'-':>7} |"
        print(line)
        if mm > 64 and not a.smoke:
            print(f"  peak memory {mm:.0f} MiB is over 64 MiB", file=sys.stderr)
    if floor is not None:
        print(f"libdeflate-gunzip -c (inflate floor): {floor:.3f} s")
    if a.smoke:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
