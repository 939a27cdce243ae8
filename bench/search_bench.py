"""Full-text search rows (issue 31), bench/run.sh --search: `warchest
search-index` in documents per second (one core and all cores), and the
latency of `warchest search` on the index built, p50 and p99 over a fixed
set of queries, each a process of its own (so the time includes starting
the command and opening the index, as a shell user meets it).

  bench/run.sh --search [--smoke] [--queries N] FILE...
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

WARCHEST = os.environ["WARCHEST_BIN"]


def index(files, out, jobs):
    """Builds the index with `-j jobs` (and as many extraction threads);
    returns (seconds, documents, max RSS in MiB)."""
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, RAYON_NUM_THREADS=str(jobs))
    counts = out + ".json"
    t = time.perf_counter()
    # Output to files, not pipes: a full pipe would stall the child.
    with open(counts, "w") as so, tempfile.TemporaryFile() as errf:
        p = subprocess.Popen(
            [WARCHEST, "-q", "search-index", "--json", "-j", str(jobs), "-o", out, *files],
            stdout=so, stderr=errf, env=env,
        )
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    if status != 0:
        raise RuntimeError(f"search-index failed ({status}): {err[-2000:]}")
    with open(counts) as f:
        docs = json.load(f)["counts"]["documents"]
    os.remove(counts)
    rss = usage.ru_maxrss / 1024
    return wall, docs, rss


def queries(out, n):
    """Words of the titles found (the index's own vocabulary), and the
    same as two-word conjunctions and phrases."""
    p = subprocess.run(
        [WARCHEST, "search", out, "*", "--per-page", "100", "--json"],
        capture_output=True, text=True, check=True,
    )
    words = []
    for h in json.loads(p.stdout)["hits"]:
        for w in re.findall(r"[A-Za-z]{4,}", h["title"]):
            if w.lower() not in words:
                words.append(w.lower())
    words = words or ["example", "domain", "archive"]
    qs = []
    i = 0
    while len(qs) < n:
        a, b = words[i % len(words)], words[(i * 7 + 3) % len(words)]
        qs.append([a, f"{a} {b}", f'"{a} {b}"', f"title:{a}"][i % 4])
        i += 1
    return qs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="a fixture, few queries: the script runs")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="warchest-search-bench-")
    files = a.files
    if a.smoke or not files:
        here = os.path.dirname(os.path.abspath(__file__))
        files = [os.path.join(here, "..", "..", "shared", "fixtures", "pywb", "iana.warc.gz")]
        a.queries = min(a.queries, 20)
    out = os.path.join(tmp, "idx")
    print(f"{'row':32} {'wall':>8} {'docs':>8} {'docs/s':>10} {'max RSS':>9}")
    for jobs in (1, os.cpu_count() or 1):
        wall, docs, rss = index(files, out, jobs)
        print(f"{'search-index -j ' + str(jobs):32} {wall:8.3f} {docs:8d} {docs / wall:10.0f} {rss:8.0f}M")
    lat = []
    for q in queries(out, a.queries):
        t = time.perf_counter()
        subprocess.run([WARCHEST, "search", out, q, "--json"], stdout=subprocess.DEVNULL, check=True)
        lat.append(time.perf_counter() - t)
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print(f"search: {len(lat)} queries, p50 {statistics.median(lat) * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms (a process each)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
