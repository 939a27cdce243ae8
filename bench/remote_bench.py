"""Remote rows of the benchmark (issue 17), measured side by side in one run:

1. scanning an archive from a local S3 server (moto) against the local file
   (`warchest stats`, which reads every record);
2. `warchest fetch` of N index-selected records with -j CONCURRENCY against
   the same records fetched one range request at a time (-j 1), as
   cc-pyspark does, with the peak memory of each.

    python3 bench/remote_bench.py FILE.warc.gz [--records 10000] [-j 64] [--runs 3]

WARCHEST_BIN names the binary (default: the release build in
$CARGO_TARGET_DIR or target/). moto and boto3 come from
tests/requirements.txt. Everything runs on 127.0.0.1.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def timed(cmd, env=None):
    """Seconds and peak RSS (MiB, from /usr/bin/time) of one run; fails
    loudly on a non-zero exit."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss=%M"] + cmd, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(cmd), p.returncode, err[-2000:]))
    peak = [l for l in err.splitlines() if l.startswith("maxrss=")]
    return dt, (int(peak[-1][7:]) / 1024 if peak else float("nan"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("-j", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    wbin = os.environ.get("WARCHEST_BIN", os.path.join(target, "release", "warchest"))
    port = free_port()
    moto = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    sys.exit("moto did not start")
                time.sleep(0.1)
        endpoint = "http://127.0.0.1:%d" % port
        env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench",
                   AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
        import boto3

        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="bench",
                          aws_secret_access_key="bench", region_name="us-east-1")
        s3.create_bucket(Bucket="bench")
        name = os.path.basename(args.file)
        s3.upload_file(args.file, "bench", name)
        url = "s3://bench/" + name
        size = os.path.getsize(args.file)

        rows = []
        local = [timed([wbin, "stats", args.file]) for _ in range(args.runs)]
        remote = [timed([wbin, "stats", url], env) for _ in range(args.runs)]
        lt = statistics.median(t for t, _ in local)
        rt = statistics.median(t for t, _ in remote)
        rows.append(("scan local file (stats)", lt, size / lt / 1e6, max(m for _, m in local)))
        rows.append(("scan from local S3 (stats)", rt, size / rt / 1e6, max(m for _, m in remote)))

        with tempfile.TemporaryDirectory() as tmp:
            idx = subprocess.run([wbin, "index", args.file], stdout=subprocess.PIPE, check=True).stdout
            lines = [l for l in idx.decode().splitlines() if l]
            if not lines:
                sys.exit("no records indexed in " + args.file)
            # N selections, cycling over the file's records (a selection
            # may name a record twice; every fetch is its own request).
            sel = os.path.join(tmp, "sel.cdxj")
            with open(sel, "w") as f:
                for i in range(args.records):
                    f.write(lines[i % len(lines)] + "\n")
            out = []
            for j in (args.j, 1):
                times = []
                mem = 0
                for r in range(args.runs):
                    dest = os.path.join(tmp, "out-%d-%d.warc.gz" % (j, r))
                    t, m = timed([wbin, "-q", "fetch", sel, "--prefix", "s3://bench/", "-j", str(j), "-o", dest], env)
                    times.append(t)
                    mem = max(mem, m)
                t = statistics.median(times)
                out.append(t)
                rows.append(("fetch %d records -j %d" % (args.records, j), t, args.records / t, mem))
        print("| what | median s | rate | peak RSS MiB |")
        print("|---|---|---|---|")
        for what, t, rate, mem in rows:
            unit = "MB/s" if what.startswith("scan") else "records/s"
            print("| %s | %.2f | %.1f %s | %.0f |" % (what, t, rate, unit, mem))
        print()
        print("scan ratio S3/local: %.2fx the local speed" % (lt / rt))
        print("fetch ratio -j %d vs -j 1: %.1fx" % (args.j, out[1] / out[0]))
        json.dump({"scan_ratio": lt / rt, "fetch_ratio": out[1] / out[0]}, sys.stderr)
        print(file=sys.stderr)
    finally:
        moto.kill()
        moto.wait()


if __name__ == "__main__":
    main()
