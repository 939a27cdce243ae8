"""Derivatives against their peers, in one run (docs/derive.md, docs/performance.md).

usage: derive_bench.py [--smoke] [--limit N] [--sample N] ARCHIVE

- `warchest derive text` (JSON lines) on one core (RAYON_NUM_THREADS=1) and on
  all cores, against a FastWARC + Resiliparse `extract_plain_text` loop (one
  process, and a process pool over all cores fed by one FastWARC reader) and
  trafilatura (one process and a pool, on the first --limit pages: it is
  slow), as HTML documents per second;
- the median similarity (words, difflib's ratio, as
  crates/warchest-derive/tests/it/resiliparse.rs, on each text's first
  MAX_WORDS words) on the first --sample pages: our text against
  Resiliparse's, our main content against Resiliparse's
  `main_content=True` and against trafilatura's;
- `warchest derive wet` and `derive wat` as MB/s of input, against `warchest ls`;
- the peak memory (max RSS) of each warchest run.

Every one-core row is also given in documents per CPU second (user + sys,
the process and its children): on a machine others use, that ratio holds
where the wall clock's does not. The target (`derive text` at least 2x
Resiliparse on one core) is read from the CPU ratio.

Every peer must be importable: a missing one is an error, not a skipped row.
"""
import difflib
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.environ["WARCHEST_BIN"]


def run(args, env=None):
    """Runs a command; returns (seconds, max RSS in MiB, CPU seconds)."""
    # stderr to a file, not a pipe: a full pipe would stall the child.
    with tempfile.TemporaryFile() as errf:
        start = time.perf_counter()
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=errf, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        secs = time.perf_counter() - start
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    if status != 0:
        sys.exit(f"{' '.join(args)}: exit {status}: {err[-2000:]}")
    return secs, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def cpu_now():
    """CPU seconds (user + sys) of this process and its reaped children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def html_pages(archive):
    """(record id, payload) of each HTML response, read by FastWARC."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    with open(archive, "rb") as f:
        for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
            if "html" in (rec.http_content_type or ""):
                yield rec.headers.get("WARC-Record-ID"), rec.reader.read()


def resiliparse_text(body, main_content=False):
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(bytes_to_str(body, detect_encoding(body)))
    return extract_plain_text(tree, main_content=main_content)


def resiliparse_count(body):
    resiliparse_text(body)
    return 1


def trafilatura_text(body):
    import trafilatura

    return trafilatura.extract(body.decode("utf-8", "replace")) or ""


def words(s):
    return [w for w in s.split() if w != "•"]


# Words compared at most, from each text's start: difflib's matcher is
# quadratic at worst, and one page of the Rust documentation holds a
# million words (5,000 keep a comparison under a fifth of a second).
MAX_WORDS = 5000


def ratio(a, b):
    a, b = words(a)[:MAX_WORDS], words(b)[:MAX_WORDS]
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def median(xs):
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def main():
    args = sys.argv[1:]
    smoke = "--smoke" in args
    # trafilatura takes about half a CPU second a page of the Rust
    # documentation: 50 pages timed on one core, 100 in the pool (and
    # compared) keep the run within minutes.
    limit = 20 if smoke else 50
    sample = 20 if smoke else 100
    for flag in ("--limit", "--sample"):
        if flag in args:
            i = args.index(flag)
            value = int(args.pop(i + 1))
            args.pop(i)
            if flag == "--limit":
                limit = value
            else:
                sample = value
    archive = [a for a in args if not a.startswith("--")][-1]
    # The peers checked first, in a process of their own: a missing one
    # fails the run before anything is timed, and this process stays small
    # until warchest's runs are done (a child's max RSS on Linux counts
    # its parent's at the fork).
    subprocess.run(
        [sys.executable, "-c", "import fastwarc.warc, resiliparse.extract.html2text, trafilatura"],
        check=True,
    )

    size = os.path.getsize(archive)
    cores = os.cpu_count() or 1
    tmp = tempfile.mkdtemp(prefix="warchest-derive-bench-")
    rows_path = os.path.join(tmp, "rows.jsonl")
    one = dict(os.environ, RAYON_NUM_THREADS="1")

    t1, m1, c1 = run([BIN, "-q", "derive", "text", archive, "-o", rows_path], env=one)
    docs = 0
    ours = {}
    with open(rows_path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if "html" in (r.get("content_type") or ""):
                docs += 1
                if len(ours) < sample:
                    # Resiliparse starts at <body>: our title line aside.
                    text = r["text"]
                    if r.get("title") and "\n" in text:
                        text = text.split("\n", 1)[1]
                    ours[r["record_id"]] = (text, r["main_text"])
    os.remove(rows_path)
    tn, mn, _ = run([BIN, "-q", "derive", "text", archive, "-o", rows_path])
    os.remove(rows_path)
    mb = size / 1e6
    tl, ml, _ = run([BIN, "-q", "ls", archive])
    tw, mw, _ = run([BIN, "-q", "derive", "wet", archive, "-o", os.path.join(tmp, "x.wet.gz")])
    ta, ma, _ = run([BIN, "-q", "derive", "wat", archive, "-o", os.path.join(tmp, "x.wat.gz")])
    for name in ("x.wet.gz", "x.wat.gz"):
        os.remove(os.path.join(tmp, name))
    os.rmdir(tmp)

    # Resiliparse: one process, then a pool fed by one reader.
    start, cpu = time.perf_counter(), cpu_now()
    n1 = sum(resiliparse_count(b) for _, b in html_pages(archive))
    r1, rc1 = time.perf_counter() - start, cpu_now() - cpu
    start = time.perf_counter()
    with multiprocessing.Pool(cores) as pool:
        nn = sum(pool.imap_unordered(resiliparse_count, (b for _, b in html_pages(archive)), chunksize=16))
    rn = time.perf_counter() - start

    # The pages compared, and trafilatura's timed subset.
    subset = []
    for rid, body in html_pages(archive):
        subset.append((rid, body))
        if len(subset) >= max(limit, sample):
            break
    timed = [b for _, b in subset[:limit]]
    start, cpu = time.perf_counter(), cpu_now()
    for b in timed:
        trafilatura_text(b)
    tt1, tc1 = time.perf_counter() - start, cpu_now() - cpu
    start = time.perf_counter()
    with multiprocessing.Pool(cores) as pool:
        traf_texts = pool.map(trafilatura_text, [b for _, b in subset[:sample]], chunksize=4)
    ttn = time.perf_counter() - start
    tn_docs = min(len(subset), sample)

    compared = [(rid, b, t) for (rid, b), t in zip(subset, traf_texts) if rid in ours]
    sim_res = median(ratio(ours[rid][0], resiliparse_text(b)) for rid, b, _ in compared)
    sim_main = median(ratio(ours[rid][1], resiliparse_text(b, True)) for rid, b, _ in compared)
    sim_traf = median(ratio(ours[rid][1], t) for rid, _, t in compared)


    ours1, oursn = docs / t1, docs / tn
    ourc = docs / c1
    res1c, traf1c = n1 / rc1, len(timed) / tc1
    print(f"derive bench on {archive} ({mb:.1f} MB, {docs} HTML pages, {cores} cores)"
          f"{' [smoke: debug build, figures mean nothing]' if smoke else ''}")
    print(f"{'':36} {'docs/s':>9} {'ours/it':>8} {'docs/CPU s':>11} {'ours/it':>8} {'max RSS':>9}")
    print(f"{'warchest derive text, 1 core':36} {ours1:9.0f} {'':>8} {ourc:11.0f} {'':>8} {m1:8.0f}M")
    print(f"{'warchest derive text, all cores':36} {oursn:9.0f} {'':>8} {'':>11} {'':>8} {mn:8.0f}M")
    print(f"{'FastWARC + Resiliparse, 1 core':36} {n1 / r1:9.0f} {ours1 / (n1 / r1):7.2f}x "
          f"{res1c:11.0f} {ourc / res1c:7.2f}x")
    print(f"{'FastWARC + Resiliparse, all cores':36} {nn / rn:9.0f} {oursn / (nn / rn):7.2f}x")
    print(f"{f'trafilatura, 1 core ({len(timed)} pages)':36} {len(timed) / tt1:9.0f} "
          f"{ours1 / (len(timed) / tt1):7.2f}x {traf1c:11.0f} {ourc / traf1c:7.2f}x")
    print(f"{f'trafilatura, all cores ({tn_docs} pages)':36} {tn_docs / ttn:9.0f} "
          f"{oursn / (tn_docs / ttn):7.2f}x")
    print(f"derive text / Resiliparse, 1 core, by CPU: {ourc / res1c:.2f}x (target: at least 2); "
          f"by wall clock: {ours1 / (n1 / r1):.2f}x")
    print(f"similarity, median of {len(compared)} pages: text to Resiliparse {sim_res:.3f}, "
          f"main content to Resiliparse main_content=True {sim_main:.3f}, "
          f"main content to trafilatura {sim_traf:.3f}")
    print(f"{'':36} {'MB/s':>9} {'ours/ls':>8} {'max RSS':>9}")
    print(f"{'warchest ls':36} {mb / tl:9.1f} {'':>8} {ml:8.0f}M")
    print(f"{'warchest derive wet':36} {mb / tw:9.1f} {tl / tw:7.2f}x {mw:8.0f}M")
    print(f"{'warchest derive wat':36} {mb / ta:9.1f} {tl / ta:7.2f}x {ma:8.0f}M")
    peak = max(m1, mn, mw, ma)
    print(f"peak memory of derive: {peak:.0f} MiB (target: at most 256)")


if __name__ == "__main__":
    main()
