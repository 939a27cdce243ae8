#!/usr/bin/env python3
"""Issue 30's comparison: a JS-built local site captured three ways, in one
run, then each archive checked by `warchest qa` (replayed in warchest serve):

- warchest capture --browser (the crawler's --browser once it is on main);
- the brozzler way: warcprox (pip) as the recording proxy, Chromium driven
  through it by this script (one headless Chromium a page, --browsers at once);
- wget --mirror --warc-file.

Prints, per way: pages a minute, peak memory (the largest process, from
/usr/bin/time or getrusage), resources the replay needed that the archive
lacks, and QA's screenshot and text scores where the archive holds a
screenshot (only warchest's does: the others have no capture to compare
with, so their rows show what is missing only). See docs/performance.md.

    bench/browser_bench.py --bin target/release/warchest [--pages 40] [--tabs 2] [--smoke]
"""
import argparse
import http.server
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,800",
]


def page(i, n):
    """Page i of n: images, JSON and the next links all named by script only."""
    nxt = [(i + 1) % n, (i * 7 + 3) % n]
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>page {i}</title>
<style>body{{font:14px sans-serif;margin:8px}}img{{width:64px;height:64px;margin:2px}}</style></head>
<body><h1 id="h">page {i}</h1><div id="c"></div><div style="height:1600px"></div>
<img loading="lazy" src="/img/lazy-{i}.svg">
<script>
fetch('/api/{i}.json').then(r=>r.json()).then(d=>{{document.getElementById('h').textContent=d.title;}});
for (let k=0;k<4;k++){{const im=new Image();im.src='/img/'+({i}*4+k)+'.svg';document.getElementById('c').appendChild(im);}}
for (const p of {nxt}){{const a=document.createElement('a');a.href='/p/'+p+'.html';a.textContent=' next '+p;document.body.appendChild(a);}}
</script></body></html>""".encode()


def svg(k):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64">'
            f'<rect width="64" height="64" fill="hsl({k * 37 % 360},60%,50%)"/></svg>').encode()


class Site(http.server.ThreadingHTTPServer):
    def __init__(self, n):
        self.n = n
        # 127.0.0.2: warcprox refuses 127.0.0.1 and ::1 exactly.
        super().__init__(("127.0.0.2", 0), Handler)

    def url(self, i):
        return f"http://127.0.0.2:{self.server_address[1]}/p/{i}.html"


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        p = self.path.split("?")[0]
        n = self.server.n
        body, ctype = None, "text/html; charset=utf-8"
        if p == "/" or p == "/index.html":
            body = page(0, n)
        elif p.startswith("/p/") and p.endswith(".html"):
            body = page(int(p[3:-5]) % n, n)
        elif p.startswith("/api/"):
            body, ctype = json.dumps({"title": f"built {p}"}).encode(), "application/json"
        elif p.startswith("/img/"):
            k = p[5:-4].replace("lazy-", "")
            body, ctype = svg(int(k) if k.isdigit() else 0), "image/svg+xml"
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def timed(cmd, **kw):
    """Runs cmd; (seconds, peak RSS in MiB of its largest process)."""
    t = time.monotonic()
    if os.path.exists("/usr/bin/time"):
        r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stderr=subprocess.PIPE, text=True, **kw)
        peak = int((r.stderr.strip().splitlines() or ["0"])[-1] or 0) / 1024
    else:
        r = subprocess.run(cmd, **kw)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return time.monotonic() - t, peak, r.returncode


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


WARCPROX = "warcprox==2.13.1"


def warcprox_bin():
    """warcprox in a virtualenv of its own (it pins cryptography<46, which
    the suite's pyOpenSSL refuses, so it is not in tests/requirements.txt)."""
    venv = os.path.join(os.path.expanduser("~"), ".cache", "warchest-bench", "warcprox")
    exe = os.path.join(venv, "bin", "warcprox")
    if not os.path.exists(exe):
        try:
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", WARCPROX], check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"could not install {WARCPROX} in {venv}: {e}")
            return None
    return exe


def warcprox_way(site, urls, out, tabs, chromium):
    """warcprox as the proxy, a headless Chromium per page through it."""
    warcprox = warcprox_bin()
    if not warcprox:
        return None
    port = free_port()
    os.makedirs(out, exist_ok=True)
    proxy = subprocess.Popen(
        [warcprox, "-b", "127.0.0.1", "-p", str(port), "-d", out, "-z",
         "--certs-dir", os.path.join(out, "certs"), "-c", os.path.join(out, "ca.pem")],
        # warcprox writes its dedup and stats databases in its working
        # directory.
        cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0.0
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        t = time.monotonic()
        lock = threading.Lock()
        todo = list(urls)

        def worker():
            nonlocal peak
            while True:
                with lock:
                    if not todo:
                        return
                    u = todo.pop()
                with tempfile.TemporaryDirectory() as prof:
                    _, p, _ = timed([chromium] + CHROMIUM_FLAGS + [
                        f"--user-data-dir={prof}", f"--proxy-server=http://127.0.0.1:{port}",
                        "--proxy-bypass-list=<-loopback>", "--ignore-certificate-errors",
                        "--virtual-time-budget=8000", "--dump-dom", u],
                        stdout=subprocess.DEVNULL, timeout=60)
                with lock:
                    peak = max(peak, p)

        ts = [threading.Thread(target=worker) for _ in range(tabs)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        took = time.monotonic() - t
    finally:
        proxy.terminate()
        proxy.wait(30)
    return took, peak


def qa(bin_, out, report):
    r = subprocess.run([bin_, "-q", "qa", out, "-o", report, "--json", "--page-timeout", "40"],
                       stdout=subprocess.PIPE, text=True)
    try:
        s = json.loads(r.stdout)
    except ValueError:
        return None
    reps = s["reports"]

    def mean(k):
        v = [x[k] for x in reps if x[k] is not None]
        return sum(v) / len(v) if v else None
    return {
        "pages": s["pages"], "good": s["good"],
        "missing": sum(len(x["missing"]) for x in reps),
        "replayed": sum(x["replayed"] for x in reps),
        "screenshot": mean("screenshot_match"), "text": mean("text_match"),
    }


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--bin", default=os.environ.get("WARCHEST_BIN", "target/release/warchest"))
    a.add_argument("--pages", type=int, default=40)
    a.add_argument("--tabs", type=int, default=2)
    a.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    a.add_argument("--smoke", action="store_true", help="2 pages, 1 tab: that the script runs")
    o = a.parse_args()
    if o.smoke:
        o.pages, o.tabs = 2, 1
    site = Site(o.pages)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    urls = [site.url(i) for i in range(o.pages)]
    work = tempfile.mkdtemp(prefix="browser-bench-")
    rows = []
    try:
        out = os.path.join(work, "warchest")
        took, peak, rc = timed([o.bin, "-q", "capture", "--browser", *urls, "-o", out,
                                "--browsers", str(o.tabs), "--chromium", o.chromium, "--no-media"])
        rows.append(("warchest --browser", took, peak, out))
        out = os.path.join(work, "warcprox")
        r = warcprox_way(site, urls, out, o.tabs, o.chromium)
        if r:
            rows.append(("warcprox + Chromium", r[0], r[1], out))
        else:
            print("warcprox could not be installed: row skipped")
        out = os.path.join(work, "wget")
        os.makedirs(out)
        took, peak, rc = timed(["wget", "-q", "--mirror", "-e", "robots=off", "-P", out,
                                "--warc-file", os.path.join(out, "site"), site.url(0)],
                               stdout=subprocess.DEVNULL)
        rows.append(("wget --mirror", took, peak, out))
        print(f"{o.pages} JS-built pages, {o.tabs} tabs")
        print(f"{'way':22} {'pages/min':>9} {'peak MiB':>8} {'QA good':>7} {'missing':>7} {'replayed':>8} {'pixels':>7} {'text':>6}")
        for name, took, peak, out in rows:
            q = qa(o.bin, out, out + "-qa") or {}
            f = lambda v: "-" if v is None else f"{v:.3f}"
            print(f"{name:22} {o.pages / took * 60:9.1f} {peak:8.0f} {q.get('good', 0):>3}/{q.get('pages', 0):<3} "
                  f"{q.get('missing', '-'):>7} {q.get('replayed', '-'):>8} {f(q.get('screenshot')):>7} {f(q.get('text')):>6}")
    finally:
        site.shutdown()
        if os.environ.get("BENCH_KEEP"):
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
