"""Driver of bench/run.sh: runs each workload with each tool in turns,
several times, and prints the medians and the ratios the performance issue
asks for. Wall-clock seconds; the machine's other load is the caller's
business (run it on a quiet machine)."""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BENCH = os.environ["BENCH_BIN"]
WARCHEST = os.environ["WARCHEST_BIN"]


def timed(cmd, **kw):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t


def harness(tool, work, path):
    out = subprocess.run([BENCH, tool, work, path], check=True, capture_output=True, text=True)
    secs, records, _ = out.stdout.split()
    return float(secs), int(records)


def ensure_corpus(d):
    gz = os.path.join(d, "rustdocs.warc.gz")
    if not os.path.exists(gz):
        subprocess.run(["bash", os.path.join(ROOT, "..", "shared", "bench", "make-corpus.sh"), d, "--stored"], check=True)
    plain = os.path.join(d, "rustdocs.warc")
    if not os.path.exists(plain):
        with open(plain, "wb") as f:
            subprocess.run(["gzip", "-dc", gz], check=True, stdout=f)
    files = {"gzip": gz, "plain": plain}
    # zstd and LZ4 variants, per record, made by warchest recompress when
    # this build has it.
    help_ = subprocess.run([WARCHEST, "--help"], capture_output=True, text=True).stdout
    if "recompress" in help_:
        for codec, ext in (("zstd", "zst"),):
            p = os.path.join(d, f"rustdocs.warc.{ext}")
            if not os.path.exists(p):
                subprocess.run([WARCHEST, "recompress", gz, "-o", p, "--to", codec], check=True)
            files[codec] = p
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus"))
    ap.add_argument("--smoke", action="store_true", help="one quick pass on a fixture, for CI")
    a = ap.parse_args()
    if a.smoke:
        fx = os.path.join(ROOT, "..", "shared", "fixtures", "pywb", "iana.warc.gz")
        files, runs = {"gzip": fx}, 1
    else:
        files, runs = ensure_corpus(a.corpus), a.runs

    results = {}
    for codec, path in files.items():
        for work in ("skip", "read", "digest"):
            tools = ["warchest"] + (["fastwarc"] if work != "digest" else [])
            for _ in range(runs):
                for tool in tools:  # in turns, so drift hits both alike
                    secs, n = harness(tool, work, path)
                    results.setdefault((codec, work, tool), []).append((secs, n))
    # The floor: libdeflate's bare inflate of the gzip file.
    floor = None
    if "gzip" in files and shutil.which("libdeflate-gunzip"):
        floor = statistics.median(
            timed(["libdeflate-gunzip", "-c", files["gzip"]]) for _ in range(runs)
        )

    print(f"{'file':6} {'work':7} {'warchest':>9} {'fastwarc':>9} {'ratio':>6} records")
    for codec in files:
        for work in ("skip", "read", "digest"):
            w = results.get((codec, work, "warchest"))
            f = results.get((codec, work, "fastwarc"))
            wm = statistics.median(s for s, _ in w)
            fm = statistics.median(s for s, _ in f) if f else None
            ratio = f"{wm / fm:6.2f}" if fm else "     -"
            fms = f"{fm:9.3f}" if fm else "        -"
            print(f"{codec:6} {work:7} {wm:9.3f} {fms} {ratio} {w[0][1]}")
            if f and w[0][1] != f[0][1]:
                print(f"  record counts differ: warchest {w[0][1]}, fastwarc {f[0][1]}", file=sys.stderr)
    if floor is not None:
        print(f"libdeflate-gunzip (inflate floor): {floor:.3f} s")


if __name__ == "__main__":
    main()
