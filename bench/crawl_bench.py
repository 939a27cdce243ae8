#!/usr/bin/env python3
"""Issue 29's crawl row: the crate's generated test web (examples/testweb.rs,
N sites of P pages each, delays 0) crawled in one run by

- warchest crawl (every host mapped with --resolve, --resolve-only), and
- wget --mirror --warc-file (Debian's wget): wget has no --resolve, so it
  runs in a mount namespace of its own (`unshare -rm`) where a hosts file
  made for the run is bound over /etc/hosts: every test host resolves to
  its loopback address without DNS, and nothing else on the machine sees
  the mapping.

Per crawler: wall seconds, pages/s (HTML 200 responses in its WARC files),
CPU seconds (and per URL) and peak RSS (wait4 of the process), URLs it
archived, for warchest the fetches in flight (--status-listen), and
whether every URL wget archived was archived by warchest too. The test
web's CPU seconds over each run are printed beside it (its share of one
core): the server is not the bottleneck when that share stays well under
its two worker threads.

Then the frontier row: a crawl whose frontier holds --frontier queued URLs
(default 1,000,000: hub pages of 10,000 links each, to 100 hosts that
answer after a second so the queue stays full), watched through
--status-listen and stopped with SIGINT once every link is queued; peak
RSS (target: at most 256 MiB) and the most URLs queued at once.

    bench/crawl_bench.py --bin target/release/warchest --testweb target/release/examples/testweb \\
        [--sites 50] [--pages 400] [--workers N] [--frontier 1000000 | 0] [--smoke]
"""
import argparse
import glob
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time


def run_measured(cmd, env=None, cwd=None):
    """Runs cmd: (exit code, wall s, CPU s, peak RSS MiB, stderr text)."""
    t0 = time.monotonic()
    err = tempfile.TemporaryFile()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err.seek(0)
    text = err.read().decode("utf-8", "replace")
    return p.returncode, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, text


class Watched:
    """A child whose end is taken with wait4 (its CPU and peak RSS), polled
    without reaping it early as Popen.poll would."""

    def __init__(self, p):
        self.p, self.ended = p, None

    def running(self):
        if self.ended is None:
            pid, st, ru = os.wait4(self.p.pid, os.WNOHANG)
            if pid != 0:
                self.ended = (st, ru)
        return self.ended is None

    def wait(self):
        if self.ended is None:
            _, st, ru = os.wait4(self.p.pid, 0)
            self.ended = (st, ru)
        return self.ended


def start_watched(cmd):
    """Starts a crawl that serves --status-listen: (Watched, its stderr
    lines so far, the status URL or None, the thread reading the rest)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines, status = [], None
    for line in p.stderr:
        lines.append(line)
        if line.startswith("status on http://"):
            status = line.split()[2]
            break
    rest = threading.Thread(target=lambda: lines.extend(p.stderr), daemon=True)
    rest.start()
    return Watched(p), lines, status, rest


def proc_cpu(pid):
    """CPU seconds of process pid so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def archived(files):
    """(URLs of response records, HTML 200 pages) in WARC files (warcio)."""
    from warcio.archiveiterator import ArchiveIterator

    urls, pages = set(), 0
    for f in files:
        with open(f, "rb") as s:
            for r in ArchiveIterator(s):
                if r.rec_type not in ("response", "revisit"):
                    continue
                urls.add(r.rec_headers.get_header("WARC-Target-URI"))
                h = r.http_headers
                if (r.rec_type == "response" and h is not None
                        and h.get_statuscode() == "200"
                        and (h.get_header("Content-Type") or "").startswith("text/html")):
                    pages += 1
    return urls, pages


class TestWeb:
    """examples/testweb.rs, run until stdin closes."""

    def __init__(self, exe, sites, pages):
        self.p = subprocess.Popen(
            [exe, "--sites", str(sites), "--pages", str(pages), "--no-special"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.resolve, self.seeds = [], []
        for line in self.p.stdout:
            key, _, val = line.strip().partition(" ")
            if key == "resolve":
                host, _, addr = val.partition(":")
                self.resolve.append((host, addr.rsplit(":", 1)[0]))
            elif key == "seed":
                self.seeds.append(val)
                if len(self.seeds) == sites:
                    break

    def cpu(self):
        return proc_cpu(self.p.pid)

    def stop(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def crawl_warchest(exe, web, out, workers, extra=()):
    """The crawl, watched through --status-listen every 0.2 s: besides
    run_measured's figures, the mean and the most URIs in flight (taken
    from the frontier, not yet finished: at most one a host) and the mean
    of workers busy (`hosts_active`: taking, fetching or finishing a
    URI)."""
    import json
    import urllib.request

    cmd = [exe, "crawl", *web.seeds, "-o", out, "--delay-factor", "0", "--min-delay", "0",
           "--max-delay", "0", "--resolve-only", "--workers", str(workers),
           "--status-listen", "127.0.0.1:0", *extra]
    for h, a in web.resolve:
        cmd += ["--resolve", f"{h}:{a}"]
    t0 = time.monotonic()
    w, lines, status, rest = start_watched(cmd)
    samples = []
    while status and w.running():
        try:
            with urllib.request.urlopen(status, timeout=2) as r:
                s = json.load(r)
            if s["counts"]["done"] > 0:
                samples.append((s["counts"]["in_flight"], s["hosts_active"]))
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    st, ru = w.wait()
    wall = time.monotonic() - t0
    rest.join(timeout=10)
    code = os.waitstatus_to_exitcode(st)
    n = max(len(samples), 1)
    flight = (sum(f for f, _ in samples) / n, max((f for f, _ in samples), default=0),
              sum(b for _, b in samples) / n) if samples else None
    return code, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, "".join(lines), flight


def crawl_wget(web, out):
    os.makedirs(out)
    hosts = os.path.join(out, "hosts")
    with open(hosts, "w") as f:
        f.write("127.0.0.1 localhost\n")
        for h, a in web.resolve:
            f.write(f"{a} {h}\n")
    wget = ["wget", "--mirror", "--page-requisites", "--span-hosts", "--domains=test",
            "--no-verbose", "--tries=1", "--timeout=10", "--no-proxy",
            f"--warc-file={out}/wget", "--no-warc-keep-log", "-P", f"{out}/files", *web.seeds]
    script = f'mount --bind "$1" /etc/hosts && shift && exec "$@"'
    cmd = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", hosts,
           *wget]
    return (*run_measured(cmd), None)


class Sink(http.server.ThreadingHTTPServer):
    daemon_threads = True


def sink_handler(links, port, slow):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *a):
            pass

        def do_GET(self):
            host = (self.headers.get("Host") or "").split(":")[0]
            if host.startswith("hub") and self.path.startswith("/hub/"):
                k = int(self.path[5:])
                body = ("<!doctype html><title>hub</title>\n" + "".join(
                    f'<a href="http://sink{j % 100}.test:{port}/u/{k}/{j}">x</a>\n'
                    for j in range(links))).encode()
                ctype = "text/html"
            elif self.path == "/robots.txt":
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            else:
                time.sleep(slow)
                body, ctype = b"leaf\n", "text/plain"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return H


def frontier_row(exe, total, timeout, tmp, extra=()):
    """Peak RSS of a crawl once its frontier holds `total` queued URLs: the
    crawl is watched through --status-listen and interrupted (SIGINT, a
    clean stop) when every hub page's links are queued."""
    import json
    import signal
    import urllib.request

    per = 10_000
    hubs = (total + per - 1) // per
    srv = Sink(("127.0.0.1", 0), None)
    port = srv.server_address[1]
    srv.RequestHandlerClass = sink_handler(min(per, total), port, 1.0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    out = os.path.join(tmp, "frontier")
    # A host a hub: the hubs are seeds, all ready before any sink, so they
    # are fetched first and in parallel (behind one host, each hub waited
    # for a worker free of the sinks' one-second answers: minutes to fill).
    cmd = [exe, "crawl", *[f"http://hub{k}.test:{port}/hub/{k}" for k in range(hubs)],
           "-o", out, "--scope", "any", "--max-hops", "1", "--delay-factor", "0",
           "--min-delay", "0", "--max-delay", "0", "--max-time", str(timeout),
           "--status-listen", "127.0.0.1:0", "--resolve-only", *extra]
    for k in range(hubs):
        cmd += ["--resolve", f"hub{k}.test:127.0.0.1"]
    for s in range(100):
        cmd += ["--resolve", f"sink{s}.test:127.0.0.1"]
    t0 = time.monotonic()
    w, lines, status, rest = start_watched(cmd)
    most, full = 0, None
    while status and w.running():
        try:
            with urllib.request.urlopen(status, timeout=5) as r:
                c = json.load(r)["counts"]
            most = max(most, c["queued"])
            if c["seen"] >= total + hubs:
                full = time.monotonic() - t0
                w.p.send_signal(signal.SIGINT)
                break
        except OSError:
            pass
        time.sleep(0.5)
    st, ru = w.wait()
    wall = time.monotonic() - t0
    rest.join(timeout=10)
    srv.shutdown()
    code = os.waitstatus_to_exitcode(st)
    return code, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, most, full, "".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--testweb", required=True)
    ap.add_argument("--sites", type=int, default=50)
    ap.add_argument("--pages", type=int, default=400)
    ap.add_argument("--frontier", type=int, default=1_000_000,
                    help="URLs of the frontier row (0: no frontier row)")
    ap.add_argument("--workers", type=int, default=0,
                    help="warchest's workers (default: one a host, at least 16)")
    ap.add_argument("--frontier-timeout", type=float, default=900,
                    help="seconds the frontier row may take at most")
    ap.add_argument("--warchest-arg", action="append", default=[],
                    help="one more argument for `warchest crawl` (repeatable), e.g. "
                         "--warchest-arg=--config=FILE")
    ap.add_argument("--smoke", action="store_true",
                    help="a few hosts, a few hundred pages, a 20,000-URL frontier")
    a = ap.parse_args()
    if a.smoke:
        a.sites, a.pages, a.frontier = 4, 60, 20_000
    tmp = tempfile.mkdtemp(prefix="crawl-bench-")
    ok = True
    try:
        web = TestWeb(a.testweb, a.sites, a.pages)
        print(f"test web: {a.sites} hosts x {a.pages} pages (+ an image a page, style sheets)")
        rows, rates = {}, {}
        workers = a.workers or max(16, a.sites)
        for name, fn in [("warchest crawl",
                          lambda: crawl_warchest(a.bin, web, f"{tmp}/w", workers,
                                                 a.warchest_arg)),
                         ("wget --mirror", lambda: crawl_wget(web, f"{tmp}/g"))]:
            c0 = web.cpu()
            code, wall, cpu, rss, err, flight = fn()
            server = web.cpu() - c0
            files = sorted(glob.glob(f"{tmp}/w/archive/*.warc.gz") if name.startswith("warchest")
                           else glob.glob(f"{tmp}/g/*.warc.gz"))
            if code != 0 or not files:
                print(f"{name}: exit {code}, no archive\n{err[-2000:]}", file=sys.stderr)
                ok = False
                continue
            urls, pages = archived(files)
            rows[name] = urls
            rates[name] = (pages / wall, cpu / max(len(urls), 1))
            print(f"{name:15} {pages / wall:9.1f} pages/s  {wall:7.2f} s  CPU {cpu:7.2f} s "
                  f"({1000 * cpu / max(len(urls), 1):6.2f} ms a URL)  "
                  f"peak RSS {rss:7.1f} MiB  URLs {len(urls):6}  pages {pages:6}  "
                  f"| server CPU {server:6.2f} s ({100 * server / wall:4.0f}% of one core)")
            if flight:
                print(f"{'':15} URIs in flight: {flight[0]:.1f} on average, {flight[1]} at most; "
                      f"workers busy {flight[2]:.1f} ({workers} workers, {a.sites} hosts)")
        if len(rates) == 2:
            (wr, wc), (gr, gc) = rates["warchest crawl"], rates["wget --mirror"]
            print(f"warchest / wget: {wr / gr:.2f}x the pages/s (target >= 5x), "
                  f"{wc / gc:.2f}x the CPU seconds a URL")
        if len(rows) == 2:
            missed = sorted(rows["wget --mirror"] - rows["warchest crawl"])
            print(f"every URL wget archived, warchest archived too: "
                  f"{'yes' if not missed else 'NO, ' + str(len(missed)) + ' missed'}")
            for u in missed[:5]:
                print(f"  missed {u}")
            ok = ok and not missed
        web.stop()
        most = None
        if a.frontier > 0:
            code, wall, cpu, rss, most, full, err = frontier_row(a.bin, a.frontier,
                                                                 a.frontier_timeout, tmp,
                                                                 a.warchest_arg)
        if most is None:
            pass
        elif most == 0:
            print(f"frontier row: exit {code}, no status\n{err[-2000:]}", file=sys.stderr)
            ok = False
        else:
            seeded = f"all queued after {full:.1f} s" if full else "not all queued"
            print(f"frontier of {a.frontier} URLs: at most {most} queued at once ({seeded}), "
                  f"{wall:.1f} s, "
                  f"CPU {cpu:.2f} s, peak RSS {rss:.1f} MiB "
                  f"({'within' if rss <= 256 else 'OVER'} the 256 MiB target)")
            ok = ok and most >= a.frontier * 0.99
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
