"""Remote rows of the benchmark (issue 17), measured side by side in one run
on 127.0.0.1:

1. scan: `warchest ls -j N` of the archive from a local S3 server against
   the same of the local file (target: at least 0.8x the local speed);
2. fetch: `warchest fetch -j 64` of N index-selected records from the S3
   server, with its default --max-gap (records less than 1 MiB apart in an
   object read with one request) and with `--max-gap 0` (one request per
   record), against the same records fetched one range request at a time,
   sequentially, as cc-pyspark does (boto3 `get_object` with `Range` in a
   Python loop), and against `warchest fetch -j 1` (target: at least 10x
   the cc-pyspark way), with each run's peak RSS;
3. latency: the same fetch (--max-gap 0: a request per record) from
   tests/remote/range_server.py answering every request, HEAD too, after
   LATENCY ms (a real store's first byte), -j 64 against -j 1: what concurrency buys
   where requests wait.

The scan rows of issue 33 (the parallel engine on a remote source) are
`ls -j 1` and `ls -j 2` over HTTP (nginx) and over the S3 server against
the local file (target: at most 1.10x its time), and `ls -j 2` from
range_server.py answering every request (HEAD too) after LATENCY ms
against the same server at 0 ms (target: at most 1.10x: the blocks fetched ahead hide the
latency). --scan-only measures these alone (no fetch rows); run it on the
plain corpus file too (rustdocs.warc: read in chunks) besides the gzip one.
--smoke: one run of each scan row on a fixture with moto (checks the
script, measures nothing). --before BIN runs each scan row with a second
binary too (the build before a change), alternately with WARCHEST_BIN, and
prints after / before of time and CPU.

    python3 bench/remote_bench.py /work/corpus/rustdocs.warc.gz \\
        [--s3s-fs PATH] [--records 10000] [-j 64] [--runs 3] \\
        [--latency-ms 20] [--latency-records 500] \\
        [--endpoint URL [--bucket NAME]]

--endpoint runs the S3 rows against an external S3-compatible store
instead of a local server, with the credentials of the environment
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION); the archive is
uploaded to --bucket (default "bench") unless an object of its size is there.

The S3 server (--server) is s3rver by default (Node, from the npm registry,
installed once under ~/.cache/warchest-bench; it streams ranges from its
files and answers requests concurrently), or moto's (Python; it copies the
whole object on every GET, about 230 ms on the corpus, and answers one
request at a time, so with it the rows measure moto), or s3s-fs when
--s3s-fs or $S3S_FS names it (a Rust S3 server over a
directory, `cargo install s3s-fs --version 0.14.1 --features binary --root
DIR`; but 0.14.1 took 0.75-1.4 s for a 10 kB range of the 190 MB corpus
file, its time following the object's size, so it cannot serve these rows
on the corpus). The rows name the server. WARCHEST_BIN
names the binary (default: the release build in $CARGO_TARGET_DIR or
target/). boto3 and moto come from tests/requirements.txt. With moto on the
190 MB corpus, `--records 100 --runs 1` takes about two minutes (each GET
costs moto about 230 ms there). Prints a Markdown table, then each ratio with
its target.
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUCKET = "bench"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, what, proc, limit=60):
    deadline = time.time() + limit
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None:
                sys.exit("%s exited (%d) before answering" % (what, proc.returncode))
            if time.time() > deadline:
                sys.exit("%s did not start in %d s" % (what, limit))
            time.sleep(0.1)


class Nginx:
    """nginx (Debian's nginx-light) serving the archive's directory on
    127.0.0.1 with sendfile: an HTTP server whose own CPU per byte is
    next to nothing, so that the scan rows over it show the client's
    speed where the S3 server's single Node thread bounds the S3 rows."""

    def __init__(self, exe, archive, tmp):
        self.port = free_port()
        root = os.path.dirname(os.path.abspath(archive))
        conf = os.path.join(tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(
                "daemon off; worker_processes 1; pid %s/nginx.pid; error_log %s/nginx.err;\n"
                "events { worker_connections 256; }\n"
                "http { access_log off; sendfile on; client_body_temp_path %s;\n"
                "  server { listen 127.0.0.1:%d; root %s; } }\n"
                % (tmp, tmp, tmp, self.port, root))
        self.proc = subprocess.Popen([exe, "-c", conf, "-p", tmp],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, "nginx", self.proc)
        self.url = "http://127.0.0.1:%d/%s" % (self.port, os.path.basename(archive))

    def close(self):
        # SIGTERM: nginx's master stops its worker, which SIGKILL would
        # leave running, orphaned, on its port.
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def timed(cmd, env=None, stdout=subprocess.DEVNULL):
    """Seconds, peak RSS (MiB, from /usr/bin/time) and CPU seconds of one
    run; exits loudly on a non-zero exit."""
    return timed_more(cmd, env, stdout)[:3]


def timed_more(cmd, env=None, stdout=subprocess.DEVNULL):
    """`timed`, then the run's minor page faults and the remote blocks'
    stats line (WARCHEST_REMOTE_STATS, when the run printed one) as a dict:
    `budget` and `held` (MiB of blocks: the budget reached, the most held
    at once), `waits` (reads that waited for their block) and `waited_ms`."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss=%M cpu=%U+%S minflt=%R"] + cmd, env=env,
                       stdout=stdout, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(cmd), p.returncode, err[-2000:]))
    line = [l for l in err.splitlines() if l.startswith("maxrss=")][-1]
    rss, cpu, flt = line.split()
    u, s = cpu[4:].split("+")
    stats = None
    m = re.search(r"remote blocks of .*budget reached (\d+) bytes.* (\d+) bytes held at most, "
                  r"(\d+) reads waited ([0-9.]+) ms", err)
    if m:
        stats = {"budget": int(m.group(1)) / 2**20, "held": int(m.group(2)) / 2**20,
                 "waits": int(m.group(3)), "waited_ms": float(m.group(4))}
    return dt, int(rss[7:]) / 1024, float(u) + float(s), int(flt[7:]), stats


def server_cpu(pid):
    """CPU seconds (user + system) a server has used so far: the process
    `pid` and its children (nginx's worker), from /proc; None where /proc
    cannot tell (not Linux)."""
    if pid is None or not os.path.exists("/proc/%d/stat" % pid):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        # The fields after the command's closing parenthesis: state, ppid, ...
        f = st[st.rindex(")") + 2:].split()
        if int(d) == pid or int(f[1]) == pid:
            total += int(f[11]) + int(f[12])
    return total / tick


def s3rver_bin():
    """s3rver 3 from the npm registry, installed once under ~/.cache."""
    d = os.environ.get("S3RVER_DIR", os.path.expanduser("~/.cache/warchest-bench/s3rver"))
    exe = os.path.join(d, "node_modules", ".bin", "s3rver")
    if not os.path.exists(exe):
        subprocess.run(["npm", "install", "--silent", "--prefix", d, "s3rver@3"], check=True)
    return exe


class S3:
    """A local S3 server with the archive in bucket BUCKET."""

    def __init__(self, args, archive, tmp):
        self.name = os.path.basename(archive)
        self.bucket = args.bucket
        if args.endpoint:
            self.external(args, archive)
            return
        self.port = free_port()
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self.key, self.secret = "bench", "benchsecret"
        exe = args.s3s_fs or os.environ.get("S3S_FS")
        server = args.server or ("s3s-fs" if exe else "s3rver" if shutil.which("npm") else "moto")
        self.kind = server
        upload = True
        if server == "s3s-fs":
            if not exe:
                sys.exit("--server s3s-fs needs --s3s-fs PATH or $S3S_FS")
            # s3s-fs serves a directory: a bucket is a directory, an object
            # a file in it (the archive linked in, not copied).
            root = os.path.join(tmp, "s3root")
            os.makedirs(os.path.join(root, self.bucket))
            dest = os.path.join(root, self.bucket, self.name)
            try:
                os.link(archive, dest)
            except OSError:
                shutil.copyfile(archive, dest)
            upload = False
            self.proc = subprocess.Popen(
                [exe, "--host", "127.0.0.1", "--port", str(self.port),
                 "--access-key", self.key, "--secret-key", self.secret, root],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elif server == "s3rver":
            # s3rver (npm registry): a Node S3 server over a directory that
            # streams ranges from the file; it checks signatures against
            # its own fixed key pair.
            self.key = self.secret = "S3RVER"
            root = os.path.join(tmp, "s3rver")
            os.makedirs(root)
            self.proc = subprocess.Popen(
                [s3rver_bin(), "-d", root, "-a", "127.0.0.1", "-p", str(self.port), "--silent",
                 "--configure-bucket", self.bucket],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.kind, self.proc)
        if upload:
            c = self.client()
            if server == "moto":
                c.create_bucket(Bucket=self.bucket)
            c.upload_file(archive, self.bucket, self.name)
        self.env = dict(os.environ, AWS_ENDPOINT_URL=self.endpoint, AWS_ACCESS_KEY_ID=self.key,
                        AWS_SECRET_ACCESS_KEY=self.secret, AWS_REGION="us-east-1",
                        AWS_ALLOW_HTTP="true")

    def external(self, args, archive):
        """An S3-compatible store at --endpoint, its credentials from the
        environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION):
        the archive is uploaded to --bucket unless an object of its size is
        there already."""
        self.proc = None
        self.endpoint = args.endpoint.rstrip("/")
        self.kind = self.endpoint
        self.key = os.environ.get("AWS_ACCESS_KEY_ID", "")
        self.secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
        if not self.key or not self.secret:
            sys.exit("--endpoint needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
        self.region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        c = self.client()
        try:
            have = c.head_object(Bucket=self.bucket, Key=self.name)["ContentLength"]
        except Exception:
            have = None
        if have != os.path.getsize(archive):
            c.upload_file(archive, self.bucket, self.name)
        self.env = dict(os.environ, AWS_ENDPOINT_URL=self.endpoint, AWS_REGION=self.region)
        if self.endpoint.startswith("http://"):
            self.env["AWS_ALLOW_HTTP"] = "true"

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.key,
                            aws_secret_access_key=self.secret,
                            region_name=getattr(self, "region", "us-east-1"))

    def pid(self):
        """The local server's process id (None for an external store)."""
        return None if self.proc is None else self.proc.pid

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


# The cc-pyspark way: one get_object with a Range per record, in order, in
# a Python loop (CCIndexWarcSparkJob.fetch_process_warc_records), the
# records appended to one file. Run as its own process for its RSS.
BOTO3_LOOP = r"""
import json, sys, boto3
endpoint, bucket, sel, out, key, secret, region = sys.argv[1:8]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                  aws_secret_access_key=secret, region_name=region)
n = 0
with open(out, "wb") as w:
    for line in open(sel):
        j = json.loads(line.split(" ", 2)[2])
        off, length = int(j["offset"]), int(j["length"])
        r = s3.get_object(Bucket=bucket, Key=j["filename"],
                          Range="bytes=%d-%d" % (off, off + length - 1))
        data = r["Body"].read()
        if len(data) != length:
            sys.exit("short record at %d" % off)
        w.write(data)
        n += 1
print(n)
"""


class Rows(list):
    """The rows, each also printed to stderr when measured, so that an
    interrupted run still shows what it measured. A row is (what, seconds,
    rate, peak MiB, CPU s, server CPU s or None, extras): extras, for the
    scan rows, hold the median minor faults (`minflt`) and, over a URL, the
    remote blocks' stats (`timed_more`), else None."""

    def append(self, row):
        row = tuple(row) + (None,) * (7 - len(row))
        super().append(row)
        what, t, rate, mem, cpu, srv, extra = row
        print("measured: %s: %.2f s, %s, %.0f MiB, %.2f CPU s%s%s"
              % (what, t, rate, mem, cpu, "" if srv is None else ", server %.2f CPU s" % srv,
                 "" if extra is None else ", %s" % extra_text(extra)),
              file=sys.stderr, flush=True)


def extra_text(extra):
    """The extras of a row, one cell: minor faults, then the blocks (MiB
    of budget reached and held at most; reads that waited, how long)."""
    if extra is None:
        return "-"
    out = "%d faults" % extra["minflt"]
    if extra.get("budget") is not None:
        out += "; blocks %.0f/%.0f MiB, %d waits %.0f ms" % (
            extra["budget"], extra["held"], extra["waits"], extra["waited_ms"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("-j", type=int, default=64)
    ap.add_argument("--scan-jobs", default="1,2",
                    help="the -j values of the scan rows (default 1,2)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--server", choices=["s3rver", "moto", "s3s-fs"],
                    help="the S3 server (default: s3rver when npm is here, else moto)")
    ap.add_argument("--s3s-fs", help="the s3s-fs binary")
    ap.add_argument("--endpoint", help="an external S3-compatible store's URL to run the S3 rows "
                    "against instead of a local server (credentials from AWS_ACCESS_KEY_ID, "
                    "AWS_SECRET_ACCESS_KEY, AWS_REGION; the archive is uploaded to --bucket "
                    "unless there)")
    ap.add_argument("--bucket", default=BUCKET, help="the bucket (default %s)" % BUCKET)
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx",
                    help="nginx, for scan rows over plain HTTP beside the S3 rows "
                    "(skipped when absent; Debian's nginx-light)")
    ap.add_argument("--latency-ms", type=float, default=20)
    ap.add_argument("--latency-records", type=int, default=500)
    ap.add_argument("--scan-only", action="store_true",
                    help="the scan rows only (issue 33), no fetch rows")
    ap.add_argument("--before", metavar="BIN",
                    help="a second warchest (the build before a change): each scan row runs it "
                    "alternately with WARCHEST_BIN, --runs times each, and prints after / before")
    ap.add_argument("--smoke", action="store_true",
                    help="one run of the scan rows with moto (checks the script)")
    args = ap.parse_args()
    if args.smoke:
        args.scan_only, args.runs, args.server = True, 1, "moto"
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    wbin = os.environ.get("WARCHEST_BIN", os.path.join(target, "release", "warchest"))
    if not os.path.exists(wbin):
        sys.exit("no %s: build it (cargo build --release -p warchest-cli) or set WARCHEST_BIN" % wbin)
    size = os.path.getsize(args.file)
    rows = Rows()
    ratios = []
    with tempfile.TemporaryDirectory(prefix="remote-bench-") as tmp:
        s3 = S3(args, args.file, tmp)
        web = None
        try:
            url = "s3://%s/%s" % (s3.bucket, s3.name)
            # 1. Scans (and over plain HTTP from nginx, when it is here).
            web = Nginx(args.nginx, args.file, tmp) if args.nginx and os.path.exists(args.nginx) else None
            if web is None:
                # Said, not passed over in silence: the table then lacks
                # the HTTP rows of issue 33.
                print("remote_bench: no nginx at %s: the rows over plain HTTP are skipped "
                      "(apt-get install nginx-light, or --nginx PATH)" % (args.nginx or "(none)"),
                      file=sys.stderr)
            for j in [int(x) for x in args.scan_jobs.split(",") if x]:
                ls = ["ls", "-j", str(j)]
                lt = scan_row(args, wbin, "scan local file (ls -j %d)" % j, ls + [args.file],
                              None, size, rows, ratios)
                rt = scan_row(args, wbin, "scan from %s (ls -j %d)" % (s3.kind, j), ls + [url],
                              s3.env, size, rows, ratios, server=s3.pid())
                cpu_floor(rows, ratios, "scan from %s (ls -j %d)" % (s3.kind, j), lt)
                ratios.append(("scan -j %d: S3 / local speed" % j, lt / rt, 0.8))
                ratios.append(("scan -j %d: S3 (%s) / local time" % (j, s3.kind), rt / lt, ("<=", 1.10)))
                if web is not None:
                    ht = scan_row(args, wbin, "scan from nginx over HTTP (ls -j %d)" % j,
                                  ls + [web.url], None, size, rows, ratios, server=web.proc.pid)
                    cpu_floor(rows, ratios, "scan from nginx over HTTP (ls -j %d)" % j, lt)
                    ratios.append(("scan -j %d: HTTP (nginx) / local speed" % j, lt / ht, None))
                    ratios.append(("scan -j %d: HTTP (nginx) / local time" % j, ht / lt, ("<=", 1.10)))
                    memory_lines(rows, ratios, "scan from nginx over HTTP (ls -j %d)" % j,
                                 "scan local file (ls -j %d)" % j)
            scan_latency(args, wbin, size, rows, ratios)
            if args.scan_only:
                return report(rows, ratios)

            # 2. Fetch N index-selected records.
            idx = subprocess.run([wbin, "index", args.file], stdout=subprocess.PIPE,
                                 check=True).stdout.decode()
            lines = [l for l in idx.splitlines() if l]
            if not lines:
                sys.exit("no records indexed in " + args.file)
            # Every k-th record, so that the selection spans the file, as a
            # query's does; cycled when the file has fewer records.
            step = max(1, len(lines) // args.records)
            chosen = [lines[(i * step) % len(lines)] for i in range(args.records)]
            sel = os.path.join(tmp, "sel.cdxj")
            with open(sel, "w") as f:
                f.write("\n".join(chosen) + "\n")
            n = args.records
            out = os.path.join(tmp, "out.warc.gz")

            def fetch(j, env, prefix, runs, extra=()):
                def one():
                    if os.path.exists(out):
                        os.unlink(out)
                    return timed([wbin, "-q", "fetch", sel, "--prefix", prefix, "-j", str(j),
                                  "-o", out] + list(extra), env)
                rs = [one() for _ in range(runs)]
                return (statistics.median(r[0] for r in rs), max(r[1] for r in rs),
                        statistics.median(r[2] for r in rs))

            prefix = "s3://%s/" % s3.bucket
            # Without coalescing first: one request per record, as before
            # --max-gap existed; then the default (ranges less than 1 MiB
            # apart read with one request).
            gt, gm, gc = fetch(args.j, s3.env, prefix, args.runs, ["--max-gap", "0"])
            rows.append(("fetch %d records -j %d --max-gap 0 from %s" % (n, args.j, s3.kind), gt,
                         "%.0f records/s" % (n / gt), gm, gc))
            ft, fm, fc = fetch(args.j, s3.env, prefix, args.runs)
            rows.append(("fetch %d records -j %d (default --max-gap) from %s" % (n, args.j, s3.kind),
                         ft, "%.0f records/s" % (n / ft), fm, fc))
            st, sm, sc = fetch(1, s3.env, prefix, 1)
            rows.append(("fetch %d records -j 1 from %s" % (n, s3.kind), st,
                         "%.0f records/s" % (n / st), sm, sc))
            bout = os.path.join(tmp, "boto3.warc.gz")
            bt, bm, bc = timed([sys.executable, "-c", BOTO3_LOOP, s3.endpoint, s3.bucket, sel, bout,
                                 s3.key, s3.secret, getattr(s3, "region", "us-east-1")])
            rows.append(("cc-pyspark way: boto3 get_object loop, %d records" % n, bt,
                         "%.0f records/s" % (n / bt), bm, bc))
            # The same bytes both ways (after fetch's warcinfo record).
            with open(bout, "rb") as a, open(out, "rb") as b:
                want, got = a.read(), b.read()
            if not got.endswith(want):
                sys.exit("fetch's records differ from boto3's")
            ratios.append(("fetch -j %d / cc-pyspark way (throughput)" % args.j, bt / ft, 10))
            ratios.append(("fetch -j %d --max-gap 0 / cc-pyspark way (throughput)" % args.j,
                           bt / gt, None))
            ratios.append(("fetch -j %d / fetch -j 1 (throughput)" % args.j, st / ft, None))
        finally:
            s3.close()
            if web is not None:
                web.close()

        # 3. With latency per request.
        srv = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tests/remote/range_server.py"),
             os.path.dirname(os.path.abspath(args.file))],
            stdout=subprocess.PIPE, env=dict(os.environ, LATENCY_MS=str(args.latency_ms),
                                             LATENCY_HEAD="1", MAX_SECONDS="600"))
        try:
            port = int(srv.stdout.readline())
            m = args.latency_records
            lsel = os.path.join(tmp, "lsel.cdxj")
            with open(lsel, "w") as f:
                f.write("\n".join(chosen[:m]) + "\n")
            base = "http://127.0.0.1:%d/" % port
            res = {}
            for j in (args.j, 1):
                if os.path.exists(out):
                    os.unlink(out)
                # One request per record: these rows measure what
                # concurrency buys where each request waits (coalesced, the
                # 500 records would be one request).
                res[j] = timed([wbin, "-q", "fetch", lsel, "--prefix", base, "-j", str(j),
                                "--max-gap", "0", "-o", out])
                t, mem, cpu = res[j]
                rows.append(("fetch %d records -j %d --max-gap 0, %g ms a request (range_server.py)"
                             % (m, j, args.latency_ms), t, "%.0f records/s" % (m / t), mem, cpu))
            ratios.append(("latency %g ms: fetch -j %d / -j 1 (throughput)" % (args.latency_ms, args.j),
                           res[1][0] / res[args.j][0], None))
        finally:
            srv.kill()
            srv.wait()

    report(rows, ratios)


def scan_latency(args, wbin, size, rows, ratios):
    """`ls -j N` (the last --scan-jobs) from range_server.py at 0 ms and at
    --latency-ms a request: the second within 1.10x of the first when the
    blocks fetched ahead hide the latency."""
    j = [int(x) for x in args.scan_jobs.split(",") if x][-1]
    res = {}
    for ms in (0, args.latency_ms):
        srv = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tests/remote/range_server.py"),
             os.path.dirname(os.path.abspath(args.file))],
            # Every request waits, HEAD too, as a real store's does.
            stdout=subprocess.PIPE,
            env=dict(os.environ, LATENCY_MS=str(ms), LATENCY_HEAD="1", MAX_SECONDS="600"))
        try:
            port = int(srv.stdout.readline())
            url = "http://127.0.0.1:%d/%s" % (port, os.path.basename(args.file))
            res[ms] = scan_row(args, wbin, "scan from range_server.py, %g ms a request (ls -j %d)"
                               % (ms, j), ["ls", "-j", str(j), url], None, size, rows, ratios,
                               server=srv.pid)
        finally:
            srv.kill()
            srv.wait()
    ratios.append(("scan -j %d: %g ms a request / 0 ms (time)" % (j, args.latency_ms),
                   res[args.latency_ms] / res[0], ("<=", 1.10)))
    for ms in (0, args.latency_ms):
        memory_lines(rows, ratios, "scan from range_server.py, %g ms a request (ls -j %d)" % (ms, j),
                     "scan local file (ls -j %d)" % j)


def memory_lines(rows, ratios, what, local):
    """Issue 33's memory lines for the row `what`: its peak RSS (at most
    64 MiB) and its peak above the local file's row `local` (aim: at most
    8 MiB: what the remote parts add)."""
    row = next((r for r in rows if r[0] == what), None)
    loc = next((r for r in rows if r[0] == local), None)
    if row is None:
        return
    ratios.append(("%s: peak RSS" % what, row[3], ("MiB", 64)))
    if loc is not None:
        ratios.append(("%s: peak RSS above the local file's" % what, row[3] - loc[3], ("MiB", 8)))


def cpu_floor(rows, ratios, what, local):
    """For the row `what`, whose server ran on the same cores: the client's
    and the server's CPU seconds spread over every core, against the local
    file's time. Over 1.10 the row cannot meet its target on this machine
    whatever the client does (unless the client's own CPU falls)."""
    row = next((r for r in rows if r[0] == what), None)
    if row is None or row[5] is None:
        return
    cores = os.cpu_count() or 1
    ratios.append(("%s: (client + server CPU) / %d cores / local time (a floor)" % (what, cores),
                   (row[4] + row[5]) / cores / local, None))


def scan_row(args, wbin, what, cmd, env, size, rows, ratios, server=None):
    """The row `what`: the median of --runs runs of `wbin CMD` (its time
    returned), with the CPU the server (process id `server`, when given)
    used during each run. With --before, that binary runs alternately with
    `wbin` (after, before, after, ...: a loaded machine moves both alike),
    its row follows, and the ratios after / before of time and CPU are
    printed."""
    progs = [(what, wbin)] + ([(what + ", before", args.before)] if args.before else [])
    runs = [[] for _ in progs]
    # The remote blocks' stats line (budget reached, blocks held, waits).
    env = dict(env if env is not None else os.environ, WARCHEST_REMOTE_STATS="1")
    for _ in range(args.runs):
        for k, (_, p) in enumerate(progs):
            c0 = server_cpu(server)
            r = timed_more([p] + cmd, env)
            c1 = server_cpu(server)
            runs[k].append(r + ((c1 - c0) if c0 is not None and c1 is not None else None,))
    got = []
    for (label, _), rs in zip(progs, runs):
        t, mem, cpu = (statistics.median(r[0] for r in rs), max(r[1] for r in rs),
                       statistics.median(r[2] for r in rs))
        srv = [r[5] for r in rs if r[5] is not None]
        extra = {"minflt": statistics.median(r[3] for r in rs)}
        stats = [r[4] for r in rs if r[4] is not None]
        if stats:
            # Budget and blocks held: the most in any run (as the peak
            # RSS); waits: the median run's.
            extra["budget"] = max(x["budget"] for x in stats)
            extra["held"] = max(x["held"] for x in stats)
            extra["waits"] = statistics.median(x["waits"] for x in stats)
            extra["waited_ms"] = statistics.median(x["waited_ms"] for x in stats)
        got.append((t, cpu))
        rows.append((label, t, "%.0f MB/s" % (size / t / 1e6), mem, cpu,
                     statistics.median(srv) if srv else None, extra))
    if args.before:
        (t, cpu), (bt, bcpu) = got
        # A fixture's rows may take no measurable CPU: no ratio (nan).
        ratios.append(("%s: after / before (time)" % what, t / bt if bt else float("nan"), None))
        ratios.append(("%s: after / before (CPU)" % what, cpu / bcpu if bcpu else float("nan"),
                       None))
    return got[0][0]


def report(rows, ratios):
    print("| row | median s | rate | peak RSS MiB | CPU s | server CPU s | faults; remote blocks |")
    print("|---|---|---|---|---|---|---|")
    for what, t, rate, mem, cpu, srv, extra in rows:
        print("| %s | %.2f | %s | %.0f | %.2f | %s | %s |"
              % (what, t, rate, mem, cpu, "-" if srv is None else "%.2f" % srv,
                 extra_text(extra)))
    print()
    for what, r, goal in ratios:
        if goal is None:
            print("- %s: %.2fx" % (what, r))
        elif isinstance(goal, tuple) and goal[0] == "MiB":
            print("- %s: %.0f MiB (at most %g MiB: %s)" % (what, r, goal[1],
                                                           "met" if r <= goal[1] else "NOT met"))
        elif isinstance(goal, tuple):
            print("- %s: %.2fx (target <= %gx: %s)" % (what, r, goal[1],
                                                       "met" if r <= goal[1] else "NOT met"))
        else:
            print("- %s: %.2fx (target >= %gx: %s)" % (what, r, goal, "met" if r >= goal else "NOT met"))
    json.dump({w: r for w, r, _ in ratios}, sys.stderr)
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
