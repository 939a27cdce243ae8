"""Python rows of the benchmark: iterating a corpus through Python, warchest
vs FastWARC 2's Python API vs warcio, and a Spark job counting responses by
status with the warc data source vs cc-pyspark's warcio path.

    python3 bench/python_bench.py [--runs N] [--threads N] [--tools A,B] [--spark] FILE...

Each tool does the same work per record: its type, its target URI, and the
whole payload read (HTTP head parsed, chunking removed). Needs the warchest
wheel installed (a release build: bench/run.sh --python builds it).

Every run of a tool is a fresh interpreter (tools in turns, so load on the
machine falls on all of them alike), which reports the CPU time (user+sys,
all its threads) of its loop alone, without the interpreter's start and
imports; the parent adds the child's wall time and peak RSS (os.wait4).
Ratios are of CPU time against FastWARC's, the figure a loaded machine
still measures. `--threads` is warchest's decoding threads (1, the issue's
row: the calling thread decodes; 0: one per core).

`--callgrind N` counts instructions instead (valgrind's callgrind, the
figure that repeats on a loaded machine): each tool's loop over the first
N records of FILE (a slice cut at a record boundary), minus the same run
over the first record alone (start-up and imports), once each.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def with_warchest(path, threads):
    import warchest

    n = 0
    size = 0
    for rec in warchest.ArchiveIterator(path, threads=threads):
        rec.rec_type
        rec.rec_headers.get_header("WARC-Target-URI")
        size += len(rec.content_stream().read())
        n += 1
    return n, size


def with_fastwarc(path, threads):
    from fastwarc.warc import ArchiveIterator

    n = 0
    size = 0
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f, parse_http=True):
            rec.record_type
            rec.headers.get("WARC-Target-URI")
            size += len(rec.reader.read())
            n += 1
    return n, size


def with_warcio(path, threads):
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    size = 0
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            rec.rec_type
            rec.rec_headers.get_header("WARC-Target-URI")
            size += len(rec.content_stream().read())
            n += 1
    return n, size


def with_warchest_scan(path, threads):
    import warchest

    t = warchest.scan(path, columns=["warc_type", "warc_target_uri", "payload"], include_payload=True)
    n = 0
    size = 0
    for b in t:
        n += b.num_rows
        size += sum(len(x) for x in b.column("payload").to_pylist() if x is not None)
    return n, size


TOOLS = {
    "warchest": with_warchest,
    "warchest-scan": with_warchest_scan,
    "fastwarc": with_fastwarc,
    "warcio": with_warcio,
}


def child(tool, path, threads):
    """One measured run in this interpreter: prints a JSON line."""
    # Imports outside the measurement: a user pays them once per process.
    if tool.startswith("warchest"):
        import warchest  # noqa: F401
    elif tool == "fastwarc":
        import fastwarc.warc  # noqa: F401
    elif tool == "warcio":
        import warcio.archiveiterator  # noqa: F401
    c0 = time.process_time()
    n, size = TOOLS[tool](path, threads)
    cpu = time.process_time() - c0
    print(json.dumps({"records": n, "bytes": size, "cpu": cpu}))


def run_child(tool, path, threads):
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, __file__, "--child", tool, "--threads", str(threads), path],
        stdout=subprocess.PIPE,
    )
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{tool} on {path} failed (exit {p.returncode})")
    r = json.loads(out)
    # ru_maxrss is in KiB on Linux.
    r.update(wall=wall, rss=ru.ru_maxrss / 1024)
    return r


def spark_session():
    import tempfile

    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", tempfile.mkdtemp())
        .getOrCreate()
    )


def spark_warchest(spark, path):
    df = spark.read.format("warc").option("recordTypes", "response").option("columns", "http_status").load(path)
    return sum(r["count"] for r in df.groupBy("http_status").count().collect())


def spark_warcio(spark, path):
    # cc-pyspark's path: one task per file, warcio objects per record,
    # (key, count) pairs reduced.
    def per_file(paths):
        from warcio.archiveiterator import ArchiveIterator

        for p in paths:
            with open(p, "rb") as f:
                for rec in ArchiveIterator(f):
                    if rec.rec_type == "response":
                        yield (rec.http_headers.get_statuscode(), 1)

    rdd = spark.sparkContext.parallelize([path], 1).mapPartitions(per_file).reduceByKey(lambda a, b: a + b)
    return sum(c for _, c in rdd.collect())


def bench_file(path, tools, runs, threads):
    res = {t: [] for t in tools}
    for _ in range(runs):
        for tool in tools:
            res[tool].append(run_child(tool, path, threads))
    print(f"python iteration over {path}, warchest threads={threads} (median of {runs}; s, MiB)")
    print(f"  {'tool':15s} {'cpu':>7s} {'wall':>7s} {'MiB':>5s}  cpu runs")
    base = statistics.median(r["cpu"] for r in res["fastwarc"]) if "fastwarc" in res else None
    for tool, rs in res.items():
        cpu = statistics.median(r["cpu"] for r in rs)
        wall = statistics.median(r["wall"] for r in rs)
        rss = max(r["rss"] for r in rs)
        runs_s = " ".join(f"{r['cpu']:.3f}" for r in rs)
        ratio = f"  {cpu / base:5.2f}x FastWARC cpu" if base else ""
        print(
            f"  {tool:15s} {cpu:7.3f} {wall:7.3f} {rss:5.0f}  [{runs_s}]"
            f"  {rs[-1]['records']} records, {rs[-1]['bytes']} payload bytes{ratio}"
        )


def cut(path, n, out_dir):
    """The first `n` records of `path` (1 when `n` is 1) as a file of their
    own, cut at the next record's stored offset; the slice's path."""
    import warchest

    end = None
    with warchest.ArchiveIterator(path, threads=1) as it:
        for i, _ in enumerate(it):
            if i == n:
                end = it.get_record_offset()
                break
    out = os.path.join(out_dir, f"first{n}{os.path.splitext(path)[1]}")
    with open(path, "rb") as src, open(out, "wb") as dst:
        left = end
        while left is None or left > 0:
            b = src.read(1 << 20 if left is None else min(1 << 20, left))
            if not b:
                break
            dst.write(b)
            if left is not None:
                left -= len(b)
    return out


def instructions(tool, path, threads, out_dir):
    """Instructions callgrind counts for one child run of `tool` on `path`."""
    out = os.path.join(out_dir, f"cg.{tool}.{os.path.basename(path)}")
    p = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__]
        + ["--child", tool, "--threads", str(threads), path],
        capture_output=True,
        text=True,
    )
    m = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        raise SystemExit(f"callgrind of {tool} on {path} failed (exit {p.returncode}): {p.stderr[-2000:]}")
    return int(m.group(1)), json.loads(p.stdout)


def bench_callgrind(path, tools, n, threads):
    with tempfile.TemporaryDirectory() as d:
        one, many = cut(path, 1, d), cut(path, n, d)
        print(f"callgrind, first {n} records of {path}, warchest threads={threads} (instructions of the loop)")
        res = {}
        for tool in tools:
            base, _ = instructions(tool, one, threads, d)
            total, r = instructions(tool, many, threads, d)
            res[tool] = (total - base, base, r)
        ref = res["fastwarc"][0] if "fastwarc" in res else None
        for tool, (loop, base, r) in res.items():
            ratio = f"  {loop / ref:5.2f}x FastWARC" if ref else ""
            print(
                f"  {tool:15s} {loop / 1e6:9.1f} M  (start-up {base / 1e6:.3f} M subtracted)"
                f"  {r['records']} records, {r['bytes']} payload bytes{ratio}"
            )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="warchest's decoding threads (0: one per core)")
    ap.add_argument("--spark", action="store_true", help="add the Spark rows")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--callgrind", type=int, metavar="N", help="instructions of the first N records instead")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.paths[0], args.threads)
        return
    tools = args.tools.split(",")
    if args.callgrind:
        for path in args.paths:
            bench_callgrind(path, tools, args.callgrind, args.threads)
        return
    for path in args.paths:
        bench_file(path, tools, args.runs, args.threads)
    if args.spark:
        path = args.paths[0]
        spark = spark_session()
        rows = {"spark warc source": spark_warchest, "spark warcio (cc-pyspark)": spark_warcio}
        # One warm-up so the session's start-up is not billed to a row.
        spark_warchest(spark, path)
        print(f"spark local[2], responses by status (median of {args.runs}, s)")
        for name, fn in rows.items():
            ts = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                n = fn(spark, path)
                ts.append(time.perf_counter() - t0)
            print(f"  {name:28s} {statistics.median(ts):8.2f}  {n} responses")
        spark.stop()


if __name__ == "__main__":
    main()
