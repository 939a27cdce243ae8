"""pywb replays a crawl: the check every crawl test runs on its WARC files.

    python3 pywb_replay.py [--or-first-page] SEED [SEED...] -- WARC [WARC...]

pywb indexes the files itself (its own indexer, not warchest's CDXJ) and its
WSGI app is driven in process (no `wayback` server to start). For each seed
the crawl archived (its last capture, read with warcio), pywb must answer
its replay with the archived status, and its `id_` replay (the original,
unrewritten) with the archived payload byte for byte (a revisit's from its
original; a 304 revisit's as pywb replays a 3xx revisit: the head alone). With
`--or-first-page`, a crawl holding none of its seeds (a shard whose seeds
are another shard's) is checked on its first HTML response instead. At least one page must be replayed. Prints one
line per page replayed; exits 1 naming what failed.
"""

import os
import sys
import tempfile
from io import BytesIO
from urllib.parse import urlsplit
from wsgiref.util import setup_testing_defaults

from warcio.archiveiterator import ArchiveIterator


def archived(warcs):
    """URL -> (status, payload) of each URL's last capture, as pywb
    replays it, and the URLs of the HTML 200 responses in file order.

    A revisit of identical payload replays its original's payload (found
    by digest among the files); a revisit whose head is a 3xx (a
    server-not-modified 304) replays as that head with no body, as pywb
    does (warcserver/resource/resolvingloader.py)."""
    out, html, payloads = {}, [], {}
    for w in warcs:
        with open(w, "rb") as f:
            for r in ArchiveIterator(f):
                if r.rec_type not in ("response", "revisit") or r.http_headers is None:
                    continue
                url = r.rec_headers.get_header("WARC-Target-URI")
                status = int(r.http_headers.get_statuscode())
                digest = r.rec_headers.get_header("WARC-Payload-Digest")
                if r.rec_type == "response":
                    body = r.content_stream().read()
                    if digest:
                        payloads[digest] = body
                    ct = r.http_headers.get_header("Content-Type") or ""
                    if status == 200 and ct.lower().startswith("text/html"):
                        html.append(url)
                elif 300 <= status < 400:
                    body = b""
                elif digest in payloads:
                    body = payloads[digest]
                else:
                    # The original is not among the files: not checkable.
                    out.pop(url, None)
                    continue
                out[url] = (status, body)
    return out, html


def call(app, path):
    """One GET through the WSGI app: (status, headers, body)."""
    env = {}
    setup_testing_defaults(env)
    env["PATH_INFO"] = path
    env["REQUEST_METHOD"] = "GET"
    env["QUERY_STRING"] = ""
    env["wsgi.input"] = BytesIO()
    got = {}

    def start_response(status, headers, exc_info=None):
        got["status"] = int(status.split()[0])
        got["headers"] = headers

    it = app(env, start_response)
    try:
        body = b"".join(it)
    finally:
        if hasattr(it, "close"):
            it.close()
    return got["status"], got["headers"], body


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    first_page = "--or-first-page" in argv
    argv = [a for a in argv if a != "--or-first-page"]
    i = argv.index("--")
    seeds, warcs = argv[:i], [os.path.abspath(w) for w in argv[i + 1 :]]
    if not warcs:
        sys.exit("no WARC file given")
    records, html = archived(warcs)
    pages = [s for s in seeds if s in records]
    if not pages and first_page:
        pages = html[:1]
    if not pages:
        sys.exit("pywb replay: the crawl holds none of its seeds %s and no HTML page" % seeds)

    from pywb.apps.frontendapp import FrontEndApp
    from pywb.indexer.cdxindexer import write_multi_cdx_index

    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        index = os.path.join(tmp, "index.cdxj")
        write_multi_cdx_index(index, warcs, cdxj=True, sort=True, include_all=False)
        dirs = sorted({os.path.dirname(w) + "/" for w in warcs})
        config = os.path.join(tmp, "config.yaml")
        with open(config, "w") as f:
            f.write("framed_replay: false\ncollections:\n  crawl:\n")
            f.write("    index_paths: %s\n" % index)
            f.write("    archive_paths:\n")
            for d in dirs:
                f.write("      - %s\n" % d)
        os.chdir(tmp)
        app = FrontEndApp(config_file=config)
        for url in pages:
            status, payload = records[url]
            s, _, body = call(app, "/crawl/id_/" + url)
            if s != status or body != payload:
                failed.append(
                    "%s: id_ replay %d, %d bytes; archived %d, %d bytes"
                    % (url, s, len(body), status, len(payload))
                )
                continue
            s, _, body = call(app, "/crawl/" + url)
            if s != status:
                failed.append("%s: replay %d, archived %d" % (url, s, status))
                continue
            print("pywb replays %s: %d, %d bytes" % (url, s, len(payload)))
    if failed:
        sys.exit("pywb replay failed:\n" + "\n".join(failed))


if __name__ == "__main__":
    main(sys.argv[1:])
