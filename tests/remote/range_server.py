"""An HTTP server with Range support and fault injection, for the tests of
remote reading (crates/warchest-remote, crates/warchest-cli).

    python3 range_server.py ROOT

serves the files under ROOT on 127.0.0.1 (a free port, printed as the first
line of stdout). GET and HEAD answer ranges (206 with Content-Range).

Control, for the tests:
- POST /_faults with a body of fault names, one per line: the next GET
  requests take them in order (then answer normally). Names: 401, 403,
  500, 503 (that status), hang (no answer at all for STALL seconds, then
  the connection is reset), reset (half the body, then the connection is reset),
  stall (part of the body, then silence for STALL seconds), short (a 206
  whose Content-Length and body are half the range asked for), whole
  (a 200 with the whole file, the range ignored, as a server without
  ranges answers), star (a 206 whose Content-Range has no total:
  "bytes A-B/*"), nocr (a 206 without Content-Range).
- POST /_cut/PATH with a body N: PATH's GET answers never send a byte at
  or past N (the connection is reset there), as an object cut short.
- GET /_count: the number of GET and HEAD requests (but to /_count) so far, as
  "GET HEAD"; POST /_reset_count sets them to zero and empties the log.
- GET /_log: those requests, one a line: "METHOD PATH RANGE" ("-" for no
  Range header).
- GET or HEAD /_loop/a and /_loop/b: each redirects (302) to the other, a
  redirect loop (counted as requests).
- GET or HEAD /_to/PATH: redirects (302) to /PATH, once (counted).
- GET /_agents: the User-Agent values of the GET and HEAD requests so far
  (but to /_count and /_agents), one a line, each once, in the order seen
  ("-" for a request without one).

LATENCY_MS (environment): every GET of a file waits that long before it
answers, as a real store's first byte does (bench/remote_bench.py).
LATENCY_HEAD=1: every HEAD waits that long too, as a real store's does
(off by default, as the rows measured before it were).
RATE_BPS (environment): the bodies of all GETs together go out at that
many bytes a second at most, in pieces of 16 KiB, as from a store short of
rate (its CPU or its link): the requests in flight share it.
"""

import os
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.abspath(sys.argv[1])
STALL = float(os.environ.get("STALL_SECONDS", "5"))
LATENCY = float(os.environ.get("LATENCY_MS", "0")) / 1000
LATENCY_HEAD = os.environ.get("LATENCY_HEAD", "") == "1"
RATE = float(os.environ.get("RATE_BPS", "0"))
PIECE = 16384
# When the shared pipe is next free (time.monotonic()), under PIPE_LOCK.
PIPE = [0.0]
PIPE_LOCK = threading.Lock()
LOCK = threading.Lock()
FAULTS = []
CUTS = {}
COUNT = {"GET": 0, "HEAD": 0}
LOG = []
AGENTS = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode() if n else ""

    def small(self, status, text=""):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.body()
        with LOCK:
            if self.path == "/_faults":
                FAULTS.extend(line.strip() for line in body.splitlines() if line.strip())
            elif self.path.startswith("/_cut/"):
                CUTS[self.path[len("/_cut"):]] = int(body)
            elif self.path == "/_reset_count":
                COUNT["GET"] = COUNT["HEAD"] = 0
                del LOG[:]
            else:
                return self.small(404)
        self.small(200, "ok")

    def file(self):
        path = os.path.normpath(os.path.join(ROOT, self.path.split("?")[0].lstrip("/")))
        if not path.startswith(ROOT + os.sep) or not os.path.isfile(path):
            return None
        return path

    def loop(self):
        # /_loop/a and /_loop/b redirect to each other; /_to/PATH to /PATH.
        if self.path.startswith("/_to/"):
            other = self.path[len("/_to"):]
        elif self.path.startswith("/_loop/"):
            other = "/_loop/b" if self.path.endswith("a") else "/_loop/a"
        else:
            return False
        self.send_response(302)
        self.send_header("Location", other)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def agent(self):
        LOG.append("%s %s %s" % (self.command, self.path, self.headers.get("Range") or "-"))
        ua = self.headers.get("User-Agent") or "-"
        if ua not in AGENTS:
            AGENTS.append(ua)

    def do_HEAD(self):
        with LOCK:
            COUNT["HEAD"] += 1
            self.agent()
        if self.loop():
            return
        if LATENCY > 0 and LATENCY_HEAD:
            time.sleep(LATENCY)
        path = self.file()
        if path is None:
            return self.small(404)
        self.send_response(200)
        self.send_header("Content-Length", str(os.path.getsize(path)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", '"%d"' % os.path.getmtime(path))
        self.send_header("Last-Modified", self.date_time_string(os.path.getmtime(path)))
        self.end_headers()

    def reset(self):
        # SO_LINGER 0: close() sends RST, as a dropped connection does.
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def do_GET(self):
        if self.path == "/_count":
            with LOCK:
                return self.small(200, "%d %d" % (COUNT["GET"], COUNT["HEAD"]))
        if self.path == "/_log":
            with LOCK:
                return self.small(200, "".join(x + "\n" for x in LOG))
        if self.path == "/_agents":
            with LOCK:
                return self.small(200, "".join(a + "\n" for a in AGENTS))
        with LOCK:
            COUNT["GET"] += 1
            self.agent()
        if self.loop():
            return
        if LATENCY > 0:
            time.sleep(LATENCY)
        path = self.file()
        if path is None:
            return self.small(404)
        with LOCK:
            fault = FAULTS.pop(0) if FAULTS else None
            cut = CUTS.get(self.path)
        size = os.path.getsize(path)
        start, end = 0, size - 1
        rng = self.headers.get("Range")
        if fault == "whole":
            rng = None
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            start = int(a) if a else max(0, size - int(b))
            end = min(int(b), size - 1) if (a and b) else end
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        if fault in ("401", "403", "500", "503"):
            return self.small(int(fault), "injected fault")
        if fault == "hang":
            time.sleep(STALL)
            return self.reset()
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(end - start + 1)
        length = len(data)
        if fault == "short":
            data = data[: max(1, len(data) // 2)]
            length = len(data)
        self.send_response(206 if rng else 200)
        self.send_header("Content-Length", str(length))
        if rng and fault != "nocr":
            total = "*" if fault == "star" else str(size)
            self.send_header("Content-Range", "bytes %d-%d/%s" % (start, end, total))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", '"%d"' % os.path.getmtime(path))
        self.send_header("Last-Modified", self.date_time_string(os.path.getmtime(path)))
        self.end_headers()
        if cut is not None and start + len(data) > cut:
            self.wfile.write(data[: max(0, cut - start)])
            return self.reset()
        if fault == "reset":
            self.wfile.write(data[: len(data) // 2])
            return self.reset()
        if fault == "stall":
            self.wfile.write(data[: len(data) // 4])
            self.wfile.flush()
            time.sleep(STALL)
            return self.reset()
        self.send_paced(data)

    def send_paced(self, data):
        # At RATE, each piece takes the shared pipe's next slot and goes
        # out when its slot ends.
        if RATE <= 0:
            return self.wfile.write(data)
        for i in range(0, len(data), PIECE):
            piece = data[i:i + PIECE]
            with PIPE_LOCK:
                now = time.monotonic()
                PIPE[0] = max(now, PIPE[0]) + len(piece) / RATE
                end = PIPE[0]
            time.sleep(max(0.0, end - time.monotonic()))
            self.wfile.write(piece)


class Server(ThreadingHTTPServer):
    # Many clients at once (a concurrent fetch): a longer accept queue.
    request_queue_size = 256

    def handle_error(self, request, client_address):
        # A client that leaves mid-answer (a reader that stops early, a
        # retry that gave up on a stall) is what the tests make happen: not
        # a traceback in the test log, where it hid the failures. Anything
        # else is printed as before.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def main():
    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    # Bounded: a test run that forgets the server does not leave it forever.
    threading.Timer(float(os.environ.get("MAX_SECONDS", "600")), server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
