"""Python rows of the benchmark: iterating a corpus through Python, warchest
vs FastWARC 2's Python API vs warcio; fetching index-selected records from
an S3 server, warchest.fetch vs a boto3 loop; and a Spark job counting
responses by status and MIME type with the warc data source vs the
cc-pyspark way (FastWARC, or warcio, in mapPartitions).

    python3 bench/python_bench.py [--runs N] [--threads N] [--tools A,B]
        [--fetch N] [--fetch-runs N] [--spark] [--spark-only] [--spark-runs N]
        FILE...

Each tool does the same work per record: its type, its target URI, and the
whole payload read (HTTP head parsed, chunking removed). Needs the warchest
wheel installed (a release build: bench/run.sh --python builds it).

`warchest-scan` is the columnar path: `scan` to Arrow with payloads, the
payload column read as Arrow data (its lengths summed by pyarrow.compute,
as DuckDB or polars would read it), not turned into a Python object per
record; on `--threads` threads as the iterator (1 by default, as FastWARC
reads). `warchest-scan-chunked` is the same with the scan's default
threads: an uncompressed file is read in chunks on every core (less wall
time, more CPU); a compressed one on one thread either way.

`--fetch N` (needs the wheel's `remote` feature, which bench/run.sh
--python builds when --fetch or --spark is given): N records chosen
across FILE (every k-th), fetched from a local S3 server (the one
bench/remote_bench.py starts: s3rver from npm, or moto) by
`warchest.fetch(rows, prefix="s3://bench/", raw=True)` into a file, against
a boto3 `get_object` loop with a Range per record (cc-pyspark's
fetch_process_warc_records), each in its own process: wall, CPU, RSS, and
the bytes checked equal.

`--spark`: local[2], one task per file; each job counts response records
by (HTTP status, MIME type) three ways over the same files, locally and
from the S3 server: `spark.read.format("warc")` (the MIME type taken from
http_content_type in SQL), FastWARC in mapPartitions (cc-pyspark's
FastWARC path: the file opened locally, or downloaded from S3 with
boto3's download_fileobj to a temporary file, as cc-pyspark does) and
warcio the same way. Rows give wall time and the CPU of the JVM and its
Python workers (the process tree under the driver, from /proc), that
CPU by part (the Python workers, the JVM's JIT compiler threads, its
other threads), the fixed cost of a job (the same jobs over the first 10
records of the first file) and the per-record work without it. The
counts must agree. Several files let local[2] use both cores (one
compressed file is one task).

Before each run its input is dropped from the page cache and read back
(bench/pagecache.py; --keep-cache only reads it). Every run of a tool is
a fresh interpreter (tools in turns, so load on the machine falls on all
of them alike), which reports the CPU time (user+sys,
all its threads) of its loop alone, without the interpreter's start and
imports, and its peak RSS (VmHWM) and the minor page faults of its loop
(`faults`: fresh pages touched, the first touch of the memory a tool's
loop holds at its peak; docs/performance-history.md, "Python rows, 29 November");
the parent adds the child's wall time.
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
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pagecache

# --keep-cache: each input is only read before a run, not dropped first.
KEEP_CACHE = False


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
    import pyarrow.compute as pc

    import warchest

    # `threads` as for the iterator: 1 (the row's default) reads on the
    # calling thread, as FastWARC does; `warchest-scan-chunked` is the
    # scan's own default (an uncompressed file in chunks on every core).
    t = warchest.scan(path, columns=["warc_type", "warc_target_uri", "payload"], threads=threads or None)
    n = 0
    size = 0
    for b in t:
        n += b.num_rows
        size += pc.sum(pc.binary_length(b.column("payload"))).as_py() or 0
    return n, size


def with_warchest_scan_chunked(path, threads):
    return with_warchest_scan(path, 0)


TOOLS = {
    "warchest": with_warchest,
    "warchest-scan": with_warchest_scan,
    "warchest-scan-chunked": with_warchest_scan_chunked,
    "fastwarc": with_fastwarc,
    "warcio": with_warcio,
}


def peak_rss():
    """This process's peak RSS in MiB since its exec (VmHWM). Not the
    parent's ru_maxrss from wait4: Linux starts that at the RSS of the
    process that forked the child, so a large parent (pyarrow imported, a
    table read) would show in every row."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("no VmHWM in /proc/self/status")


def child(tool, path, threads):
    """One measured run in this interpreter: prints a JSON line."""
    # Imports outside the measurement: a user pays them once per process.
    if tool.startswith("warchest"):
        import warchest  # noqa: F401
    if tool.startswith("warchest-scan"):
        import pyarrow.compute  # noqa: F401
    elif tool == "fastwarc":
        import fastwarc.warc  # noqa: F401
    elif tool == "warcio":
        import warcio.archiveiterator  # noqa: F401
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    c0 = time.process_time()
    n, size = TOOLS[tool](path, threads)
    cpu = time.process_time() - c0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    print(json.dumps({"records": n, "bytes": size, "cpu": cpu, "rss": peak_rss(), "faults": faults}))


def run_child(tool, path, threads):
    pagecache.settle([path], drop=not KEEP_CACHE)
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, __file__, "--child", tool, "--threads", str(threads), path],
        stdout=subprocess.PIPE,
    )
    out = p.stdout.read()
    _, status, _ = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{tool} on {path} failed (exit {p.returncode})")
    r = json.loads(out)
    r.update(wall=wall)
    return r


def spark_session(java_opts=None):
    """local[2] with Spark's defaults; `java_opts`: extra options of the
    driver JVM (in local mode also the executor), applied to every job
    alike (the labelled row of a setting users of short jobs make)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = SparkSession.builder
    if java_opts:
        b = b.config("spark.driver.extraJavaOptions", java_opts)
    return (
        b.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.warehouse.dir", tempfile.mkdtemp())
        .getOrCreate()
    )


def mime(value):
    """The MIME type of a Content-Type value, as every Spark row takes it."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return value.split(";", 1)[0].strip().lower()


def spark_warchest(spark, paths, s3):
    from pyspark.sql import functions as F

    r = spark.read.format("warc").option("recordTypes", "response").option("columns", "http_status,http_content_type")
    if s3 is not None:
        for k, v in s3.spark_env().items():
            r = r.option("env." + k, v)
    df = r.load(list(paths))
    m = F.lower(F.trim(F.split(F.col("http_content_type"), ";").getItem(0)))
    rows = df.groupBy(F.col("http_status").cast("int").alias("s"), m.alias("m")).count().collect()
    return {(r["s"], r["m"]): r["count"] for r in rows}


def _open_input(path, s3conf):
    """A local file, or cc-pyspark's S3 path: the object downloaded with
    boto3 into a temporary file, then read from there."""
    if s3conf is None:
        return open(path, "rb")
    import boto3

    endpoint, key, secret, region = s3conf
    c = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name=region)
    bucket, name = path[len("s3://") :].split("/", 1)
    tmp = tempfile.TemporaryFile()
    c.download_fileobj(bucket, name, tmp)
    tmp.seek(0)
    return tmp


def spark_fastwarc(spark, paths, s3):
    # cc-pyspark's FastWARC path: one task per file, the records of one
    # type parsed with their HTTP head, (key, 1) pairs reduced.
    s3conf = s3.conf() if s3 is not None else None

    def per_file(it):
        from fastwarc.warc import ArchiveIterator, WarcRecordType

        for p in it:
            with _open_input(p, s3conf) as f:
                for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
                    h = rec.http_headers
                    yield ((h.status_code if h is not None else None, mime(h.get("Content-Type") if h is not None else None)), 1)

    rdd = spark.sparkContext.parallelize(list(paths), len(paths)).mapPartitions(per_file)
    return dict(rdd.reduceByKey(lambda a, b: a + b).collect())


def spark_warcio(spark, paths, s3):
    # cc-pyspark's warcio path, as above.
    s3conf = s3.conf() if s3 is not None else None

    def per_file(it):
        from warcio.archiveiterator import ArchiveIterator

        for p in it:
            with _open_input(p, s3conf) as f:
                for rec in ArchiveIterator(f):
                    if rec.rec_type != "response":
                        continue
                    h = rec.http_headers
                    status = h.get_statuscode() if h is not None else None
                    status = int(status) if status and status.isdigit() else None
                    yield ((status, mime(h.get_header("Content-Type") if h is not None else None)), 1)

    rdd = spark.sparkContext.parallelize(list(paths), len(paths)).mapPartitions(per_file)
    return dict(rdd.reduceByKey(lambda a, b: a + b).collect())


def _tree_cpu(root, server=None):
    """CPU seconds (user+sys, reaped children included) of the processes
    under `root`, not `root` itself, by part: `python` (the Python
    workers), `jit` (the JVM's JIT compiler threads, C1 and C2), `jvm`
    (the JVM's other threads) and `server` (the process `server` and its
    own: the S3 server the bench started, also under `root`, whose work is
    not the executors' and is left out of the job's CPU)."""
    tick = os.sysconf("SC_CLK_TCK")
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1 : st.rindex(")")]
        fields = st[st.rindex(")") + 2 :].split()
        kids.setdefault(int(fields[1]), []).append((int(d), comm, sum(int(x) for x in fields[11:15])))
    total = {"python": 0, "jit": 0, "jvm": 0, "server": 0}
    todo = [(root, False)]
    while todo:
        parent, side = todo.pop()
        for pid, comm, ticks in kids.get(parent, []):
            s = side or pid == server
            if s:
                total["server"] += ticks
            elif comm == "java":
                jit = _jit_ticks(pid)
                total["jit"] += jit
                total["jvm"] += ticks - jit
            else:
                total["python"] += ticks
            todo.append((pid, s))
    return {k: v / tick for k, v in total.items()}


def _jit_ticks(pid):
    """CPU ticks of the JIT compiler threads of the JVM `pid`."""
    n = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                st = f.read()
        except OSError:
            continue
        if "CompilerThre" in st[st.index("(") + 1 : st.rindex(")")]:
            fields = st[st.rindex(")") + 2 :].split()
            n += int(fields[11]) + int(fields[12])
    return n


SPARK_JOBS = {
    "warc source": spark_warchest,
    "FastWARC in mapPartitions (cc-pyspark)": spark_fastwarc,
    "warcio in mapPartitions": spark_warcio,
}
FASTWARC_JOB = "FastWARC in mapPartitions (cc-pyspark)"


def _spark_runs(spark, jobs, files, store, runs, server):
    """Medians over `runs` of each job in turn: wall, then CPU by part
    (`_tree_cpu`)."""
    res = {}
    for _ in range(runs):
        for name, fn in jobs.items():
            c0, t0 = _tree_cpu(os.getpid(), server), time.perf_counter()
            fn(spark, files, store)
            wall = time.perf_counter() - t0
            c1 = _tree_cpu(os.getpid(), server)
            res.setdefault(name, []).append(dict({k: c1[k] - c0[k] for k in c1}, wall=wall))
    return {k: {f: statistics.median(r[f] for r in v) for f in v[0]} for k, v in res.items()}


def _cpu(r):
    return r["python"] + r["jit"] + r["jvm"]


def bench_spark(paths, runs, s3, fixed_records=10, java_opts=None):
    """The Spark rows: each job over the files, locally and from S3, then
    over a file of the first `fixed_records` records of the first file:
    the cost a job pays whatever it reads (planning, the JVM's JIT
    compiling the job's code, task start-up), printed apart so that the
    work per record can be compared without it."""
    spark = spark_session(java_opts)
    label = f", JVM options {java_opts!r} (NOT Spark's defaults; every job alike)" if java_opts else ""
    tiny_dir = tempfile.mkdtemp(prefix="py-bench-spark-")
    tiny = cut(paths[0], fixed_records, tiny_dir)
    places = [("local", list(paths), [tiny], None)]
    if s3 is not None:
        s3.s3.client().upload_file(tiny, s3.bucket, os.path.basename(tiny))
        places.append((f"S3 ({s3.kind})", [s3.url(p) for p in paths], [s3.url(tiny)], s3))
    try:
        for where, files, small, store in places:
            # One warm-up each, so that the session's start-up and the first
            # imports in the Python workers are billed to no row.
            want = None
            for name, fn in SPARK_JOBS.items():
                got = fn(spark, files, store)
                if want is None:
                    want = got
                elif got != want:
                    diff = {k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)}
                    raise SystemExit(f"spark {name} ({where}) counts differ from the warc source's: {sorted(diff.items(), key=str)[:10]}")
            server = store.s3.proc.pid if store is not None and store.s3.proc is not None else None
            med = _spark_runs(spark, SPARK_JOBS, files, store, runs, server)
            # Three runs at least: a job over a few records takes a second.
            fixed = _spark_runs(spark, SPARK_JOBS, small, store, max(runs, 3), server)
            print(f"spark local[2], responses by status and MIME type, {len(files)} files from {where}{label} (median of {runs}; s)")
            extra = " (cpu: the JVM and Python workers; server: the S3 server's)" if server else ""
            print(f"  {'job':40s} {'wall':>7s} {'cpu':>7s}  ratio of cpu, of wall to FastWARC's{extra}")
            fw = med[FASTWARC_JOB]
            for name, r in med.items():
                # From S3 the server's CPU is the job's too (ranges against
                # one GET a file): the ratio of CPU with the server's.
                srv = f"  server {r['server']:5.2f} s, cpu+server {(_cpu(r) + r['server']) / (_cpu(fw) + fw['server']):5.2f}x" if server else ""
                print(f"  {name:40s} {r['wall']:7.2f} {_cpu(r):7.2f}  {_cpu(r) / _cpu(fw):5.2f}x cpu {r['wall'] / fw['wall']:5.2f}x wall  {sum(want.values())} responses{srv}")
            print("  cpu by part: Python workers, the JVM's JIT compiler threads, the JVM's other threads")
            for name, r in med.items():
                print(f"  {name:40s} python {r['python']:5.2f}  jit {r['jit']:5.2f}  jvm {r['jvm']:5.2f}")
            print(f"  fixed cost per job: the same jobs over the first {fixed_records} records of {os.path.basename(paths[0])} (median of {max(runs, 3)})")
            for name, r in fixed.items():
                print(f"  {name:40s} {r['wall']:7.2f} {_cpu(r):7.2f}  python {r['python']:5.2f}  jit {r['jit']:5.2f}  jvm {r['jvm']:5.2f}")
            per = {k: _cpu(med[k]) - _cpu(fixed[k]) for k in med}
            print("  per-record work (cpu of the files less the fixed cost), ratio to FastWARC's:")
            for name in med:
                print(f"  {name:40s} {per[name]:7.2f}  {per[name] / per[FASTWARC_JOB]:5.2f}x")
    finally:
        spark.stop()
        shutil.rmtree(tiny_dir, ignore_errors=True)


def fetch_child(tool, sel, out):
    """One fetch run in this interpreter (the S3 settings in the
    environment): prints a JSON line."""
    with open(sel) as f:
        rows = [tuple(json.loads(line)) for line in f]
    c0 = time.process_time()
    n = size = 0
    with open(out, "wb") as w:
        if tool == "warchest-fetch":
            import warchest

            for data in warchest.fetch(rows, prefix="s3://%s/" % os.environ["BENCH_BUCKET"], raw=True):
                w.write(data)
                n += 1
                size += len(data)
        else:
            import boto3

            c = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name=os.environ["AWS_REGION"])
            for name, off, length in rows:
                r = c.get_object(Bucket=os.environ["BENCH_BUCKET"], Key=name, Range="bytes=%d-%d" % (off, off + length - 1))
                data = r["Body"].read()
                if len(data) != length:
                    raise SystemExit("short record at %d" % off)
                w.write(data)
                n += 1
                size += len(data)
    print(json.dumps({"records": n, "bytes": size, "cpu": time.process_time() - c0, "rss": peak_rss()}))


def bench_fetch(path, n, runs, s3):
    """warchest.fetch of `n` records of `path` from the S3 server against
    the boto3 loop; the bytes fetched compared."""
    import warchest

    t = warchest.scan(path, columns=["warc_record_offset", "warc_record_length"]).read_all()
    recs = [(o, l) for o, l in zip(t["warc_record_offset"].to_pylist(), t["warc_record_length"].to_pylist()) if l]
    if not recs:
        raise SystemExit(f"no record of {path} has its own length (a gzip member each)")
    step = max(1, len(recs) // n)
    name = os.path.basename(path)
    chosen = [(name,) + recs[(i * step) % len(recs)] for i in range(n)]
    with tempfile.TemporaryDirectory(prefix="py-fetch-") as d:
        sel = os.path.join(d, "sel.jsonl")
        with open(sel, "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in chosen))
        env = dict(s3.env, BENCH_BUCKET=s3.bucket)
        res = {}
        outs = {}
        for _ in range(runs):
            for tool in ("warchest-fetch", "boto3-loop"):
                outs[tool] = os.path.join(d, tool + ".out")
                t0 = time.perf_counter()
                p = subprocess.Popen([sys.executable, __file__, "--fetch-child", tool, "--fetch-out", outs[tool], sel], stdout=subprocess.PIPE, env=env)
                out = p.stdout.read()
                _, status, _ = os.wait4(p.pid, 0)
                if os.waitstatus_to_exitcode(status) != 0:
                    raise SystemExit(f"{tool} failed")
                r = json.loads(out)
                r.update(wall=time.perf_counter() - t0)
                res.setdefault(tool, []).append(r)
        with open(outs["warchest-fetch"], "rb") as a, open(outs["boto3-loop"], "rb") as b:
            if a.read() != b.read():
                raise SystemExit("warchest.fetch's bytes differ from boto3's")
    print(f"python fetch of {n} records of {path} from {s3.kind} (median of {runs}; s, MiB)")
    bw = statistics.median(r["wall"] for r in res["boto3-loop"])
    for tool, rs in res.items():
        w = statistics.median(r["wall"] for r in rs)
        c = statistics.median(r["cpu"] for r in rs)
        print(f"  {tool:15s} cpu {c:7.3f} wall {w:7.3f} {max(r['rss'] for r in rs):5.0f} MiB  {n / w:8.0f} records/s  {bw / w:5.1f}x the boto3 loop's throughput")


def bench_file(path, tools, runs, threads):
    res = {t: [] for t in tools}
    for _ in range(runs):
        for tool in tools:
            res[tool].append(run_child(tool, path, threads))
    print(f"python iteration over {path}, warchest threads={threads} (median of {runs}; s, MiB)")
    print(f"  {'tool':21s} {'cpu':>7s} {'wall':>7s} {'MiB':>5s} {'faults':>7s}  cpu runs")
    base = statistics.median(r["cpu"] for r in res["fastwarc"]) if "fastwarc" in res else None
    for tool, rs in res.items():
        cpu = statistics.median(r["cpu"] for r in rs)
        wall = statistics.median(r["wall"] for r in rs)
        rss = max(r["rss"] for r in rs)
        faults = statistics.median(r["faults"] for r in rs)
        runs_s = " ".join(f"{r['cpu']:.3f}" for r in rs)
        ratio = f"  {cpu / base:5.2f}x FastWARC cpu" if base else ""
        print(
            f"  {tool:21s} {cpu:7.3f} {wall:7.3f} {rss:5.0f} {faults:7.0f}  [{runs_s}]"
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
    ap.add_argument("--spark-only", action="store_true", help="only the Spark rows")
    ap.add_argument("--fetch", type=int, metavar="N", help="add the fetch row: N records from an S3 server")
    ap.add_argument("--fetch-runs", type=int, help="runs of the fetch row (default --runs)")
    ap.add_argument("--spark-runs", type=int, help="runs of the Spark rows (default --runs)")
    ap.add_argument("--spark-java-opts", metavar="OPTS", help="extra driver JVM options for every Spark job, e.g. -XX:TieredStopAtLevel=1 (a labelled row, not the primary one)")
    ap.add_argument("--spark-local", action="store_true", help="the Spark rows over local files only (no S3 server)")
    ap.add_argument("--server", choices=["s3rver", "moto"], help="the S3 server (as bench/remote_bench.py)")
    ap.add_argument("--fetch-child", help=argparse.SUPPRESS)
    ap.add_argument("--fetch-out", help=argparse.SUPPRESS)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--callgrind", type=int, metavar="N", help="instructions of the first N records instead")
    ap.add_argument("--keep-cache", action="store_true",
                    help="leave each input in the page cache as it is (by default it is dropped and read back before each run: bench/pagecache.py)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    global KEEP_CACHE
    KEEP_CACHE = args.keep_cache
    if args.child:
        child(args.child, args.paths[0], args.threads)
        return
    if args.fetch_child:
        fetch_child(args.fetch_child, args.paths[0], args.fetch_out)
        return
    tools = args.tools.split(",")
    if args.callgrind:
        for path in args.paths:
            bench_callgrind(path, tools, args.callgrind, args.threads)
        return
    if not args.spark_only:
        for path in args.paths:
            bench_file(path, tools, args.runs, args.threads)
    if not (args.fetch or args.spark or args.spark_only):
        return
    if args.spark_local and not args.fetch:
        bench_spark(args.paths, args.spark_runs or args.runs, None, java_opts=args.spark_java_opts)
        return
    with tempfile.TemporaryDirectory(prefix="py-bench-s3-") as tmp:
        s3 = Store(args, args.paths, tmp)
        try:
            if args.fetch:
                bench_fetch(args.paths[0], args.fetch, args.fetch_runs or args.runs, s3)
            if args.spark or args.spark_only:
                bench_spark(args.paths, args.spark_runs or args.runs, None if args.spark_local else s3, java_opts=args.spark_java_opts)
        finally:
            s3.close()


class Store:
    """The S3 server bench/remote_bench.py starts, with every file of the
    run uploaded to its bucket."""

    def __init__(self, args, paths, tmp):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from remote_bench import BUCKET, S3

        ns = argparse.Namespace(bucket=BUCKET, endpoint=None, s3s_fs=None, server=args.server)
        self.s3 = S3(ns, paths[0], tmp)
        for p in paths[1:]:
            self.s3.client().upload_file(p, self.s3.bucket, os.path.basename(p))
        self.bucket, self.kind, self.env = self.s3.bucket, self.s3.kind, self.s3.env

    def url(self, path):
        return "s3://%s/%s" % (self.bucket, os.path.basename(path))

    def spark_env(self):
        keys = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ALLOW_HTTP")
        return {k: self.env[k] for k in keys if k in self.env}

    def conf(self):
        return (self.s3.endpoint, self.s3.key, self.s3.secret, "us-east-1")

    def close(self):
        self.s3.close()


if __name__ == "__main__":
    main()
