"""Python rows of the benchmark: iterating a corpus through Python, warchest
vs FastWARC 2's Python API vs warcio, and a Spark job counting responses by
status with the warc data source vs cc-pyspark's warcio path.

    python3 bench/python_bench.py [--runs N] [--spark] FILE.warc.gz

Each tool does the same work per record: its type, its target URI, and the
whole payload read (HTTP head parsed, chunking removed). Needs the warchest
wheel installed (a release build: bench/run.sh --python builds it).
Wall-clock seconds, medians of the runs, tools in turns.
"""

import argparse
import statistics
import sys
import time


def with_warchest(path):
    import warchest

    n = 0
    size = 0
    for rec in warchest.ArchiveIterator(path):
        rec.rec_type
        rec.rec_headers.get_header("WARC-Target-URI")
        size += len(rec.content_stream().read())
        n += 1
    return n, size


def with_fastwarc(path):
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


def with_warcio(path):
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


def with_warchest_scan(path):
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


def spark_session():
    import os
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--spark", action="store_true", help="add the Spark rows")
    ap.add_argument("--tools", default=",".join(TOOLS))
    args = ap.parse_args()
    times = {t: [] for t in args.tools.split(",")}
    counts = {}
    for _ in range(args.runs):
        for tool in times:
            t0 = time.perf_counter()
            counts[tool] = TOOLS[tool](args.path)
            times[tool].append(time.perf_counter() - t0)
    print(f"python iteration over {args.path} (median of {args.runs}, s)")
    base = statistics.median(times["fastwarc"]) if "fastwarc" in times else None
    for tool, ts in times.items():
        m = statistics.median(ts)
        n, size = counts[tool]
        ratio = f"  {base / m:5.2f}x FastWARC" if base else ""
        print(f"  {tool:15s} {m:8.2f}  {n} records, {size} payload bytes{ratio}")
    if args.spark:
        spark = spark_session()
        rows = {"spark warc source": spark_warchest, "spark warcio (cc-pyspark)": spark_warcio}
        # One warm-up so the session's start-up is not billed to a row.
        spark_warchest(spark, args.path)
        print(f"spark local[2], responses by status (median of {args.runs}, s)")
        for name, fn in rows.items():
            ts = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                n = fn(spark, args.path)
                ts.append(time.perf_counter() - t0)
            print(f"  {name:28s} {statistics.median(ts):8.2f}  {n} responses")
        spark.stop()


if __name__ == "__main__":
    main()
