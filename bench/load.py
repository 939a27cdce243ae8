#!/usr/bin/env python3
"""Load test of `warchest serve` beside pywb on the same collection (issue 18).

For each server, each row (CDX query, raw `id_` record, rewritten replay) and
each number of concurrent clients (1, 50, 500), `wrk` runs for a few seconds
while 1,000 idle connections are held open to the same server (re-opened as
the server closes them: serve closes idle connections after 10 s). It prints
requests/s, p50 and p99 latency and failed requests (refused connections,
timeouts, non-2xx answers), and exits 1 when the warchest tested (--bin)
failed any request. Everything is on loopback and bounded in time. See
docs/performance.md.

    bench/load.py [--bin PATH] [--old-bin PATH] [--file WARC] [--secs N]
                  [--no-pywb] [--idle N] [--only NAME]

--bin: the warchest to test (default: $CARGO_TARGET_DIR/release/warchest).
--old-bin: another warchest to compare with in the same run (its serve must
print its address as the old one did or as the new one does).
Needs wrk (Debian package) and, for the pywb rows, pywb (`wayback`,
`wb-manager`); uwsgi with gevent when installed (pywb's advice for
deployment), else those rows are left out with a note.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURE = os.path.join(ROOT, "..", "shared", "fixtures", "pywb", "iana.warc.gz")
TS = "20140126200624"
URL = "http://www.iana.org/"
CDX_URL = "http://www.iana.org/_css/2013.1/screen.css"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, secs=120):
    end = time.time() + secs
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


class Idle:
    """Holds `n` idle connections open to a port, re-opening closed ones."""

    def __init__(self, port, n):
        self.port, self.n = port, n
        self.socks = []
        self.reopened = 0
        self.failed = 0
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)

    def open_one(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=0.5)
            s.setblocking(False)
            return s
        except OSError:
            self.failed += 1
            return None

    def run(self):
        while not self.stop:
            alive = []
            for s in self.socks:
                try:
                    if s.recv(1) == b"":
                        s.close()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    continue
                alive.append(s)
            # A server that stops accepting must not stall the test: at
            # most a second of re-opening a round.
            until = time.time() + 1
            while len(alive) < self.n and not self.stop and time.time() < until:
                s = self.open_one()
                if s is None:
                    break
                alive.append(s)
                if len(self.socks) >= self.n:
                    self.reopened += 1
            self.socks = alive
            time.sleep(0.5)

    def __enter__(self):
        # At most 10 s to open them (a server that stops accepting holds
        # each connect until its timeout).
        until = time.time() + 10
        for _ in range(self.n):
            if time.time() > until:
                break
            s = self.open_one()
            if s:
                self.socks.append(s)
        self.t.start()
        return self

    def held(self):
        return len(self.socks)

    def __exit__(self, *a):
        self.stop = True
        self.t.join(5)
        for s in self.socks:
            s.close()


def ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(url, conns, secs):
    threads = 1 if conns < 2 else 2
    try:
        out = subprocess.run(
            ["wrk", f"-t{threads}", f"-c{conns}", f"-d{secs}s", "--timeout", "5s", "--latency", url],
            capture_output=True,
            text=True,
            timeout=secs + 30,
        ).stdout
    except subprocess.TimeoutExpired:
        out = ""
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    lat = dict(
        (p, ms(v, u)) for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    )
    # Failed: refused connections, timeouts and non-2xx/3xx answers. Read
    # and write errors are counted apart: a server that closes each
    # connection after its answer (no keep-alive) makes wrk count them.
    errs = 0
    closed = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errs += int(m.group(1)) + int(m.group(4))
        closed = int(m.group(2)) + int(m.group(3))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errs += int(m.group(1))
    return {
        "rps": float(rps.group(1)) if rps else 0.0,
        "n": int(total.group(1)) if total else 0,
        "p50": lat.get("50"),
        "p99": lat.get("99"),
        "failed": errs,
        "closed": closed,
    }


def start_warchest(binary, warc, work, name):
    db = os.path.join(work, f"{name}.redb")
    p = subprocess.Popen(
        [binary, "serve", warc, "--listen", "127.0.0.1:0", "--poll", "0", "--index-db", db, "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    first = p.stdout.readline()
    # New: "listening on http://A (ui), http://B (replay)"; old: "serving on http://A/".
    m = re.search(r"listening on http://([\d.:]+) \(ui\), http://([\d.:]+) \(replay\)", first)
    if m:
        ui, rp = m.group(1), m.group(2)
    else:
        m = re.search(r"serving on http://([\d.:]+)/", first)
        if not m:
            p.kill()
            raise SystemExit(f"{binary}: unexpected first line {first!r}")
        ui = rp = m.group(1)
    threading.Thread(target=lambda: p.stdout.read(), daemon=True).start()
    return p, ui, rp


def start_pywb(warc, work, uwsgi):
    coll = os.path.join(work, "pywb-uwsgi" if uwsgi else "pywb")
    os.makedirs(coll, exist_ok=True)
    subprocess.run(["wb-manager", "init", "iana"], cwd=coll, check=True, capture_output=True)
    subprocess.run(["wb-manager", "add", "iana", warc], cwd=coll, check=True, capture_output=True)
    port = free_port()
    if uwsgi:
        ini = os.path.join(coll, "uwsgi.ini")
        with open(ini, "w") as f:
            f.write(
                "[uwsgi]\nif-not-env = PORT\nendif =\n"
                f"http-socket = 127.0.0.1:{port}\nmaster = true\nprocesses = 2\n"
                "gevent = 100\ngevent-early-monkey-patch = true\n"
                "module = pywb.apps.wayback\nlisten = 1024\ndisable-logging = true\n"
            )
        cmd = ["uwsgi", ini]
    else:
        cmd = ["wayback", "-p", str(port), "-b", "127.0.0.1"]
    p = subprocess.Popen(cmd, cwd=coll, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_port(port):
        p.kill()
        raise SystemExit(f"pywb ({' '.join(cmd)}) did not start")
    return p, f"127.0.0.1:{port}"


def main():
    ap = argparse.ArgumentParser()
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ap.add_argument("--bin", default=os.path.join(target, "release", "warchest"))
    ap.add_argument("--old-bin")
    ap.add_argument("--file", default=FIXTURE)
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--no-pywb", action="store_true")
    ap.add_argument("--only", help="only the servers whose name contains this")
    a = ap.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed (apt-get install wrk)")
    warc = os.path.abspath(a.file)
    work = tempfile.mkdtemp(prefix="warchest-load-")
    servers = [("warchest", a.bin)]
    if a.old_bin:
        servers.append(("warchest-old", a.old_bin))
    if not a.no_pywb and shutil.which("wayback"):
        servers.append(("pywb wayback", None))
        if shutil.which("uwsgi"):
            servers.append(("pywb uwsgi+gevent", None))
        else:
            print("note: uwsgi is not installed: no pywb uwsgi+gevent rows", flush=True)
    if a.only:
        servers = [s for s in servers if a.only in s[0]]
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.uname().nodename}, "
          f"{os.cpu_count()} cores, file {os.path.basename(warc)}, {a.secs} s a row, "
          f"{a.idle} idle connections held", flush=True)
    bad = 0
    print("| server | row | clients | req/s | p50 ms | p99 ms | requests | failed | read/write errors | idle held |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for name, binary in servers:
        if binary:
            proc, ui, rp = start_warchest(binary, warc, work, name)
            rows = [
                ("cdx", f"http://{ui}/archive/cdx?url={CDX_URL}&output=json&limit=5"),
                ("id_", f"http://{rp}/archive/{TS}id_/{URL}"),
                ("replay", f"http://{rp}/archive/{TS}mp_/{URL}"),
            ]
            port = int(ui.rsplit(":", 1)[1])
        else:
            proc, addr = start_pywb(warc, work, uwsgi="uwsgi" in name)
            rows = [
                ("cdx", f"http://{addr}/iana/cdx?url={CDX_URL}&output=json&limit=5"),
                ("id_", f"http://{addr}/iana/{TS}id_/{URL}"),
                ("replay", f"http://{addr}/iana/{TS}mp_/{URL}"),
            ]
            port = int(addr.rsplit(":", 1)[1])
        try:
            # Warm up (pywb loads its index on first use).
            for _, u in rows:
                wrk(u, 1, 1)
            for row, u in rows:
                for c in (1, 50, 500):
                    with Idle(port, a.idle) as idle:
                        time.sleep(0.5)
                        r = wrk(u, c, a.secs)
                        held = idle.held()
                    f = lambda v: "-" if v is None or r["n"] == 0 else f"{v:.1f}"
                    # No answer at all: wrk counts no errors for connections
                    # that never got one.
                    failed = "all" if r["n"] == 0 else r["failed"]
                    if name == "warchest" and failed != 0:
                        bad += 1
                    print(f"| {name} | {row} | {c} | {r['rps']:.0f} | {f(r['p50'])} | {f(r['p99'])} "
                          f"| {r['n']} | {failed} | {r['closed']} | {held} |", flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
    shutil.rmtree(work, ignore_errors=True)
    # The server tested must answer everything, whatever its speed.
    if bad:
        print(f"{bad} rows of warchest had failed requests", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
