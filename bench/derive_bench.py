"""Derivatives against their peers, in one run (docs/derive.md, docs/performance.md).

usage: derive_bench.py [--smoke] [--limit N] ARCHIVE

- `warchest derive text` (JSON lines) on one core (RAYON_NUM_THREADS=1) and on
  all cores, against a FastWARC + Resiliparse extract_plain_text loop (one
  process, and a process pool over all cores) and trafilatura (one core, on
  the first --limit pages: it is slow), as documents per second;
- the median similarity of Resiliparse's and trafilatura's texts to ours
  (words, difflib's ratio; tests/python/similarity.py does the same check);
- `warchest derive wet` and `derive wat` as MB/s of input, against `warchest ls`;
- the peak memory (max RSS) of each warchest run.
"""
import difflib
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.environ["WARCHEST_BIN"]


def run(args, env=None):
    """Runs a command; returns (seconds, max RSS in MiB)."""
    start = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    secs = time.perf_counter() - start
    err = p.stderr.read().decode(errors="replace")
    if status != 0:
        sys.exit(f"{' '.join(args)}: exit {status}: {err}")
    return secs, usage.ru_maxrss / 1024


def pages(archive):
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    out = []
    with open(archive, "rb") as f:
        for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
            ct = rec.http_content_type or ""
            if "html" in ct:
                out.append((rec.headers.get("WARC-Record-ID"), rec.reader.read()))
    return out


def resiliparse_text(body):
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse(bytes_to_str(body, detect_encoding(body))))


def resiliparse_loop(archive):
    """FastWARC reading and Resiliparse extraction, as users write it."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    n = 0
    with open(archive, "rb") as f:
        for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
            if "html" in (rec.http_content_type or ""):
                resiliparse_text(rec.reader.read())
                n += 1
    return n


def words(s):
    return [w for w in s.split() if w != "•"]


def ratio(a, b):
    a, b = words(a), words(b)
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def main():
    args = sys.argv[1:]
    smoke = "--smoke" in args
    limit = 200
    if "--limit" in args:
        limit = int(args[args.index("--limit") + 1])
    archive = [a for a in args if not a.startswith("--") and not a.isdigit()][-1]
    size = os.path.getsize(archive)
    tmp = tempfile.mkdtemp()
    rows_path = os.path.join(tmp, "rows.jsonl")
    one = dict(os.environ, RAYON_NUM_THREADS="1")

    t1, m1 = run([BIN, "-q", "derive", "text", archive, "-o", rows_path], env=one)
    ours = {}
    for line in open(rows_path, encoding="utf-8"):
        r = json.loads(line)
        if "html" in (r.get("content_type") or ""):
            text = r["text"].split("\n", 1)[1] if r.get("title") and "\n" in r["text"] else r["text"]
            ours[r["record_id"]] = (text, r["main_text"])
    os.remove(rows_path)
    tn, mn = run([BIN, "-q", "derive", "text", archive, "-o", rows_path])
    docs = len(ours)

    start = time.perf_counter()
    n = resiliparse_loop(archive)
    r1 = time.perf_counter() - start
    bodies = pages(archive)
    start = time.perf_counter()
    with multiprocessing.Pool() as pool:
        theirs = pool.map(resiliparse_text, [b for _, b in bodies], chunksize=16)
    rn = time.perf_counter() - start
    sim_res = statistics.median(ratio(ours[i][0], t) for (i, _), t in zip(bodies, theirs) if i in ours)

    traf = None
    try:
        import trafilatura

        subset = bodies[: 20 if smoke else limit]
        start = time.perf_counter()
        texts = [trafilatura.extract(b.decode("utf-8", "replace")) or "" for _, b in subset]
        tt = time.perf_counter() - start
        sim_traf = statistics.median(ratio(ours[i][1], t) for (i, _), t in zip(subset, texts) if i in ours)
        traf = (len(subset) / tt, sim_traf)
    except ImportError:
        pass

    mb = size / 1e6
    tl, ml = run([BIN, "-q", "ls", archive])
    tw, mw = run([BIN, "-q", "derive", "wet", archive, "-o", os.path.join(tmp, "x.wet.gz")])
    ta, ma = run([BIN, "-q", "derive", "wat", archive, "-o", os.path.join(tmp, "x.wat.gz")])

    print(f"derive bench on {archive} ({mb:.1f} MB, {docs} HTML pages){' [smoke]' if smoke else ''}")
    print(f"{'':34} {'docs/s':>9} {'ratio':>7} {'similarity':>11} {'max RSS':>9}")
    print(f"{'warchest derive text, 1 core':34} {docs / t1:9.0f} {'':>7} {'':>11} {m1:8.0f}M")
    print(f"{'warchest derive text, all cores':34} {docs / tn:9.0f} {'':>7} {'':>11} {mn:8.0f}M")
    print(f"{'FastWARC + Resiliparse, 1 core':34} {n / r1:9.0f} {(docs / t1) / (n / r1):6.2f}x {sim_res:11.3f}")
    print(f"{'Resiliparse, all cores (pool)':34} {len(bodies) / rn:9.0f} {(docs / tn) / (len(bodies) / rn):6.2f}x")
    if traf:
        print(f"{'trafilatura, 1 core (main text)':34} {traf[0]:9.0f} {(docs / t1) / traf[0]:6.2f}x {traf[1]:11.3f}")
    print(f"{'':34} {'MB/s':>9} {'vs ls':>7}")
    print(f"{'warchest ls':34} {mb / tl:9.1f} {'':>7} {'':>11} {ml:8.0f}M")
    print(f"{'warchest derive wet':34} {mb / tw:9.1f} {tl / tw:6.2f}x {'':>11} {mw:8.0f}M")
    print(f"{'warchest derive wat':34} {mb / ta:9.1f} {tl / ta:6.2f}x {'':>11} {ma:8.0f}M")


if __name__ == "__main__":
    main()
