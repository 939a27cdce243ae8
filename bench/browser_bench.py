#!/usr/bin/env python3
"""Issue 30's comparison: a JS-built local site captured three ways, in one
run, then each archive checked by `warchest qa` (replayed in warchest serve):

- warchest crawl --browser from the first page (the links are built by
  script, so only a browser reaches the others), and warchest capture
  --browser given every page's URL;
- the brozzler way: warcprox (pip) as the recording proxy, Chromium driven
  through it by this script over the DevTools protocol (a browser a tab,
  its tab reused page after page as brozzler's are, --tabs at once), each
  page given warchest's own behaviours (the same scripts, read from
  crates/warchest-browser/src/js: load, network idle of 500 ms, screenshot,
  text, scroll passes with network idle while the page grows, media,
  idle, links) and its screenshot written to warcprox as brozzler writes
  its own. Like for like: until 28 November 2026 it ran `chromium --dump-dom
  --virtual-time-budget=8000` a page (no scroll, no idle, no screenshot
  or text, virtual time fast-forwarding the page's timers);
- wget --mirror --warc-file.

warchest's rows are timed whole (start to files closed). The warcprox row
is timed from its proxy listening to its last page done (warcprox is a
service that outlives a crawl); its whole run, with the proxy's start and
its WARC closed as it exits (about 1.5 s and 3 s), is printed beside it,
with the response records it wrote (a run of it that lost records says
so here before QA does).

Prints, per way: pages a minute, CPU seconds a page (user + sys of the
way's processes), peak memory (the proportional set size,
PSS, of every process the way ran, summed and sampled every 100 ms: the
tool, its proxy and all of Chromium's processes, shared pages counted
once), resources the replay needed that the archive
lacks, and QA's screenshot and text scores. warchest's archives hold their
own screenshots and texts of the live pages; the other two have none, so
warchest capture's (urn:view:, urn:text:, taken live) are copied next to
theirs as the reference their replay is scored against. See
docs/performance.md.

    bench/browser_bench.py --bin target/release/warchest [--pages 40] [--tabs 2] [--smoke]
"""
import argparse
import base64
import fcntl
import http.client
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


def tree_pss_kib(root):
    """The summed PSS (KiB) of root's descendants, root excluded (this
    script, whose thread serves the site)."""
    parent = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            pass

    def under(p):
        for _ in range(64):
            p = parent.get(p, 0)
            if p == root:
                return True
            if p <= 1:
                return False
        return False
    total = 0
    for p in parent:
        if p != root and under(p):
            try:
                with open(f"/proc/{p}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            total += int(line.split()[1])
                            break
            except OSError:
                pass
    return total


class Peak:
    """Samples the PSS of this script's child processes every 100 ms."""

    def __init__(self):
        self.peak = 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        me = os.getpid()
        while not self.stop.is_set():
            self.peak = max(self.peak, tree_pss_kib(me))
            self.stop.wait(0.1)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.t.join()

    def mib(self):
        return self.peak / 1024


def cpu_children():
    """CPU seconds (user + sys) of this script's finished children and
    theirs: a way's CPU is the difference around it (a loaded machine
    changes wall time far more than CPU time)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, **kw):
    """Runs cmd; (seconds, peak memory in MiB, exit code, CPU seconds):
    the sampled PSS of it and its descendants, or its own peak RSS when
    larger (a process too short for the samples)."""
    t = time.monotonic()
    c = cpu_children()
    with Peak() as pk:
        p = subprocess.Popen(cmd, **kw)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    took = time.monotonic() - t
    return took, max(pk.mib(), ru.ru_maxrss / 1024), p.returncode, cpu_children() - c


def reference(bin_, capture_dir, out):
    """The screenshots and texts warchest's browser took of the live pages
    (urn:view:, urn:text:), copied into out/reference.warc.gz: QA then
    scores another tool's archive against the live pages."""
    warcs = sorted(os.path.join(capture_dir, f) for f in os.listdir(capture_dir)
                   if f.endswith(".warc.gz"))
    subprocess.run([bin_, "-q", "filter", *warcs, "-o", os.path.join(out, "reference.warc.gz"),
                    'warc-type == "resource" && :uri =~ "urn:(view|text):.*"'], check=True)


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


JS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "warchest-browser", "src", "js")


def js(name, **consts):
    """One of warchest's behaviour scripts, its constants filled in: the
    warcprox way runs the very same behaviours."""
    with open(os.path.join(JS, name)) as f:
        text = f.read()
    for k, v in consts.items():
        text = text.replace(k, str(v))
    return text


class PipeBrowser:
    """A headless Chromium driven over the DevTools protocol on a pipe
    (--remote-debugging-pipe: fds 3 and 4, messages ended by NUL), so that
    this script needs no WebSocket package; one tab, reused page after
    page, as brozzler's browsers navigate theirs."""

    def __init__(self, chromium, flags):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # The browser reads commands on fd 3 and writes on fd 4. The
        # child's ends are moved above 10 first (closed at exec), so that
        # putting one on 3 cannot overwrite the other.
        hi_r = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10)
        hi_w = fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_r)
        os.close(from_w)

        def fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)
        self.p = subprocess.Popen(
            [chromium] + flags + ["--remote-debugging-pipe", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=fds)
        os.close(hi_r)
        os.close(hi_w)
        self.w = os.fdopen(to_w, "wb", buffering=0)
        self.r = os.fdopen(from_r, "rb", buffering=0)
        self.next = 0
        self.cv = threading.Condition()
        self.answers = {}
        self.inflight = set()
        self.last = time.monotonic()
        self.loaded = False
        self.session = None
        threading.Thread(target=self.read, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for m in ["Page.enable", "Network.enable", "Runtime.enable"]:
            self.call(m, {}, self.session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}, self.session)

    def read(self):
        buf = b""
        while True:
            chunk = self.r.read(1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                m = json.loads(msg)
                with self.cv:
                    if "id" in m:
                        self.answers[m["id"]] = m
                    elif m.get("sessionId") == self.session and self.session:
                        meth, p = m.get("method"), m.get("params", {})
                        if meth == "Network.requestWillBeSent" and p["request"]["url"].startswith("http"):
                            self.inflight.add(p["requestId"])
                            self.last = time.monotonic()
                        elif meth in ("Network.loadingFinished", "Network.loadingFailed"):
                            self.inflight.discard(p["requestId"])
                            self.last = time.monotonic()
                        elif meth == "Page.loadEventFired":
                            self.loaded = True
                    self.cv.notify_all()
        with self.cv:
            self.answers[None] = True
            self.cv.notify_all()

    def call(self, method, params, session=None, timeout=30):
        with self.cv:
            self.next += 1
            i = self.next
        m = {"id": i, "method": method, "params": params}
        if session:
            m["sessionId"] = session
        self.w.write(json.dumps(m).encode() + b"\0")
        end = time.monotonic() + timeout
        with self.cv:
            while i not in self.answers:
                if None in self.answers or not self.cv.wait(max(0, end - time.monotonic())):
                    raise RuntimeError(f"{method}: no answer")
            a = self.answers.pop(i)
        if "error" in a:
            raise RuntimeError(f"{method}: {a['error']}")
        return a.get("result", {})

    def eval(self, expr, timeout=30):
        r = self.call("Runtime.evaluate", {"expression": expr, "awaitPromise": True,
                                           "returnByValue": True, "userGesture": True},
                      self.session, timeout)
        return r.get("result", {}).get("value")

    def wait(self, ready, bound):
        end = time.monotonic() + bound
        with self.cv:
            while not ready() and time.monotonic() < end:
                self.cv.wait(min(0.05, max(0.0, end - time.monotonic())))

    def idle(self, quiet=0.5, bound=10):
        self.wait(lambda: not self.inflight and time.monotonic() - self.last >= quiet, bound)

    def page(self, url, proxy_port):
        """What warchest does a page: load (30 s), network idle (500 ms
        quiet, 10 s at most), screenshot and text, scroll to the end with
        idle after each pass while the page grows (15 s), media, idle,
        the rendered DOM's links; the screenshot is written to warcprox as
        brozzler writes its own (WARCPROX_WRITE_RECORD)."""
        with self.cv:
            self.loaded = False
        self.call("Page.navigate", {"url": url}, self.session)
        self.wait(lambda: self.loaded, 30)
        self.idle()
        png = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"}, self.session)["data"])
        self.eval(js("text.js", MAX_CHARS=1 << 20))
        self.eval("document.title")
        end = time.monotonic() + 15
        while time.monotonic() < end:
            left = int((end - time.monotonic()) * 1000)
            r = self.eval(js("scroll.js", MAX_MS=left)) or {}
            if not r.get("bottom"):
                break
            with self.cv:
                self.last = time.monotonic()
            self.idle(bound=min(10, end - time.monotonic()))
            if (self.eval("Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)") or 0) <= r.get("height", 0):
                break
        self.eval("window.scrollTo(0, 0)")
        if self.eval(js("media.js")):
            with self.cv:
                self.last = time.monotonic()
        self.idle()
        self.eval(js("links.js", MAX_LINKS=10000))
        c = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=30)
        c.request("WARCPROX_WRITE_RECORD", "screenshot:" + url, body=png,
                  headers={"Content-Type": "image/png", "WARC-Type": "resource"})
        c.getresponse().read()
        c.close()

    def close(self):
        try:
            self.call("Browser.close", {}, timeout=5)
        except RuntimeError:
            pass
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def warcprox_way(site, urls, out, tabs, chromium):
    """warcprox as the proxy, Chromium driven through it by this script:
    one browser a tab, each running warchest's behaviours a page (see
    PipeBrowser.page), as brozzler drives its browsers through warcprox."""
    warcprox = warcprox_bin()
    if not warcprox:
        return None
    port = free_port()
    os.makedirs(out, exist_ok=True)
    t = time.monotonic()
    proxy = subprocess.Popen(
        [warcprox, "-b", "127.0.0.1", "-p", str(port), "-d", out, "-z",
         "--certs-dir", os.path.join(out, "certs"), "-c", os.path.join(out, "ca.pem")],
        # warcprox writes its dedup and stats databases in its working
        # directory.
        cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = cpu_children()
    pk = Peak().__enter__()
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        listening = time.monotonic() - t
        lock = threading.Lock()
        todo = list(urls)
        failed = []

        def worker():
            with tempfile.TemporaryDirectory() as prof:
                b = PipeBrowser(chromium, CHROMIUM_FLAGS + [
                    f"--user-data-dir={prof}", f"--proxy-server=http://127.0.0.1:{port}",
                    "--proxy-bypass-list=<-loopback>", "--ignore-certificate-errors",
                    "--mute-audio", "--autoplay-policy=no-user-gesture-required"])
                try:
                    while True:
                        with lock:
                            if not todo:
                                return
                            u = todo.pop(0)
                        try:
                            b.page(u, port)
                        except (RuntimeError, OSError) as e:
                            failed.append(f"{u}: {e}")
                finally:
                    b.close()

        ts = [threading.Thread(target=worker) for _ in range(tabs)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        # The row's time: from the proxy listening to the last page done,
        # as brozzler runs warcprox, a service that outlives a crawl.
        # warchest's runs are timed whole (start to files closed), so the
        # whole of this way (the proxy's start, and its WARC closed as it
        # exits) is printed beside it.
        pages_done = time.monotonic() - t
        proxy.terminate()
        proxy.wait(60)
        whole = time.monotonic() - t
        took = pages_done - listening
        print(f"warcprox way: proxy listening after {listening:.1f} s, pages done after {pages_done:.1f} s, "
              f"archive closed after {whole:.1f} s ({len(urls) / whole * 60:.1f} pages/min whole); "
              f"{responses(out)} response records")
        for f in failed:
            print("warcprox way:", f)
    finally:
        if proxy.poll() is None:
            proxy.terminate()
            proxy.wait(30)
        pk.__exit__()
    return took, pk.mib(), cpu_children() - c


def responses(out):
    """Response records in the WARC files under out (warcprox's own
    count, so that a run whose archive lost records says so)."""
    import gzip
    n = 0
    for f in os.listdir(out):
        if ".warc" in f:
            try:
                with gzip.open(os.path.join(out, f)) if f.endswith(".gz") else open(os.path.join(out, f), "rb") as r:
                    n += sum(1 for line in r if line.rstrip() == b"WARC-Type: response")
            except (OSError, EOFError):
                pass
    return n


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
        # The crawl: from the first page, the rest reached by the links the
        # pages' scripts build (robots.txt is read: the site has none).
        crawl = os.path.join(work, "crawl")
        # --host-parallel: the site's pages in every tab at once, as
        # Browsertrix's workers and the warcprox way below load them.
        took, peak, rc, cpu = timed([o.bin, "-q", "crawl", urls[0], "-o", crawl, "--browser",
                                "--browsers", str(o.tabs), "--host-parallel", str(o.tabs),
                                "--chromium", o.chromium,
                                "--max-pages", str(o.pages), "--resolve-only",
                                "--min-delay", "0", "--max-delay", "0", "--delay-factor", "0"])
        with open(os.path.join(crawl, "pages", "pages.jsonl")) as f:
            crawled = sum(1 for _ in f) - 1
        if rc != 0 or crawled != o.pages:
            print(f"warchest crawl --browser: exit {rc}, {crawled} of {o.pages} pages")
        rows.append(("warchest crawl --browser", took, peak, cpu, os.path.join(crawl, "archive"), crawled))
        out = os.path.join(work, "warchest")
        took, peak, rc, cpu = timed([o.bin, "-q", "capture", "--browser", *urls, "-o", out,
                                "--browsers", str(o.tabs), "--chromium", o.chromium, "--no-media"])
        rows.append(("warchest capture --browser", took, peak, cpu, out, o.pages))
        live = out
        out = os.path.join(work, "warcprox")
        r = warcprox_way(site, urls, out, o.tabs, o.chromium)
        if r:
            reference(o.bin, live, out)
            rows.append(("warcprox + Chromium", r[0], r[1], r[2], out, o.pages))
        else:
            print("warcprox could not be installed: row skipped")
        out = os.path.join(work, "wget")
        os.makedirs(out)
        took, peak, rc, cpu = timed(["wget", "-q", "--mirror", "-e", "robots=off", "-P", out,
                                "--warc-file", os.path.join(out, "site"), site.url(0)],
                               stdout=subprocess.DEVNULL)
        reference(o.bin, live, out)
        # Its pages: what it saved (it follows no link a script builds),
        # so that its rate counts the pages it did get.
        got = sum(1 for _, _, fs in os.walk(out) for f in fs if f.endswith(".html"))
        rows.append(("wget --mirror", took, peak, cpu, out, max(got, 1)))
        print(f"{o.pages} JS-built pages, {o.tabs} tabs")
        print(f"{'way':26} {'pages/min':>9} {'CPU s/pg':>8} {'peak MiB':>8} {'QA good':>7} {'missing':>7} {'replayed':>8} {'pixels':>7} {'text':>6}")
        for name, took, peak, cpu, out, pages in rows:
            q = qa(o.bin, out, out + "-qa") or {}
            f = lambda v: "-" if v is None else f"{v:.3f}"
            print(f"{name:26} {pages / took * 60:9.1f} {cpu / max(pages, 1):8.2f} {peak:8.0f} {q.get('good', 0):>3}/{q.get('pages', 0):<3} "
                  f"{q.get('missing', '-'):>7} {q.get('replayed', '-'):>8} {f(q.get('screenshot')):>7} {f(q.get('text')):>6}")
    finally:
        site.shutdown()
        if os.environ.get("BENCH_KEEP"):
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
