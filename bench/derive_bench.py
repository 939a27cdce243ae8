"""Derivatives against their peers, in one run (docs/derive.md, docs/performance.md).

usage: derive_bench.py [--smoke] [--limit N] [--sample N] ARCHIVE

- `warchest derive text` (JSON lines) on one core (RAYON_NUM_THREADS=1) and on
  all cores, against FastWARC + Resiliparse loops (one process, and a process
  pool over all cores fed by one FastWARC reader) and trafilatura (one
  process and a pool, on the first --limit pages: it is slow), as HTML
  documents per second. Two like-for-like pairs:
  - the full row: every column (both texts, title, charset, languages)
    against a loop that parses each page once and computes
    `extract_plain_text`, `extract_plain_text(main_content=True)`, the title
    and `resiliparse.parse.lang.detect_fast` (on the main content when it has
    200 characters, else the whole text, as ours);
  - the text row: `derive text --columns url,text` against the loop with
    `extract_plain_text` alone (the loop of earlier runs);
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


def resiliparse_full_count(body):
    """The work of our full row: both texts, the title, the language."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    from resiliparse.parse.html import HTMLTree
    from resiliparse.parse.lang import detect_fast

    tree = HTMLTree.parse(bytes_to_str(body, detect_encoding(body)))
    text = extract_plain_text(tree)
    main = extract_plain_text(tree, main_content=True)
    _ = tree.title
    detect_fast(main if len(main) >= 200 else text)
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
        [sys.executable, "-c",
         "import fastwarc.warc, resiliparse.extract.html2text, resiliparse.parse.lang, trafilatura"],
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
    text_only = ["--columns", "url,text"]
    tt1_, mt1, ct1 = run([BIN, "-q", "derive", "text", *text_only, archive, "-o", rows_path], env=one)
    os.remove(rows_path)
    ttn_, mtn, _ = run([BIN, "-q", "derive", "text", *text_only, archive, "-o", rows_path])
    os.remove(rows_path)
    mb = size / 1e6
    tl, ml, _ = run([BIN, "-q", "ls", archive])
    tw, mw, _ = run([BIN, "-q", "derive", "wet", archive, "-o", os.path.join(tmp, "x.wet.gz")])
    ta, ma, _ = run([BIN, "-q", "derive", "wat", archive, "-o", os.path.join(tmp, "x.wat.gz")])
    for name in ("x.wet.gz", "x.wat.gz"):
        os.remove(os.path.join(tmp, name))
    os.rmdir(tmp)

    # Resiliparse, text only and full: one process, then a pool fed by one
    # reader.
    def one_core(count):
        start, cpu = time.perf_counter(), cpu_now()
        n = sum(count(b) for _, b in html_pages(archive))
        return n, time.perf_counter() - start, cpu_now() - cpu

    def pool_of(count):
        start = time.perf_counter()
        with multiprocessing.Pool(cores) as pool:
            n = sum(pool.imap_unordered(count, (b for _, b in html_pages(archive)), chunksize=16))
        return n, time.perf_counter() - start

    n1, r1, rc1 = one_core(resiliparse_count)
    nf1, rf1, rfc1 = one_core(resiliparse_full_count)
    nn, rn = pool_of(resiliparse_count)
    nfn, rfn = pool_of(resiliparse_full_count)

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
    text1, textn, textc = docs / tt1_, docs / ttn_, docs / ct1
    res1c, resf1c, traf1c = n1 / rc1, nf1 / rfc1, len(timed) / tc1
    print(f"derive bench on {archive} ({mb:.1f} MB, {docs} HTML pages, {cores} cores)"
          f"{' [smoke: debug build, figures mean nothing]' if smoke else ''}")
    print("full: every column (both texts, title, charset, languages); "
          "Resiliparse full: both extract_plain_text calls, title, detect_fast")
    print("text: derive text --columns url,text; Resiliparse text: extract_plain_text alone")
    print(f"{'':40} {'docs/s':>9} {'ours/it':>8} {'docs/CPU s':>11} {'ours/it':>8} {'max RSS':>9}")
    print(f"{'warchest derive text full, 1 core':40} {ours1:9.0f} {'':>8} {ourc:11.0f} {'':>8} {m1:8.0f}M")
    print(f"{'warchest derive text full, all cores':40} {oursn:9.0f} {'':>8} {'':>11} {'':>8} {mn:8.0f}M")
    print(f"{'warchest derive text text, 1 core':40} {text1:9.0f} {'':>8} {textc:11.0f} {'':>8} {mt1:8.0f}M")
    print(f"{'warchest derive text text, all cores':40} {textn:9.0f} {'':>8} {'':>11} {'':>8} {mtn:8.0f}M")
    print(f"{'FastWARC + Resiliparse full, 1 core':40} {nf1 / rf1:9.0f} {ours1 / (nf1 / rf1):7.2f}x "
          f"{resf1c:11.0f} {ourc / resf1c:7.2f}x")
    print(f"{'FastWARC + Resiliparse full, all cores':40} {nfn / rfn:9.0f} {oursn / (nfn / rfn):7.2f}x")
    print(f"{'FastWARC + Resiliparse text, 1 core':40} {n1 / r1:9.0f} {text1 / (n1 / r1):7.2f}x "
          f"{res1c:11.0f} {textc / res1c:7.2f}x")
    print(f"{'FastWARC + Resiliparse text, all cores':40} {nn / rn:9.0f} {textn / (nn / rn):7.2f}x")
    print(f"{f'trafilatura, 1 core ({len(timed)} pages)':40} {len(timed) / tt1:9.0f} "
          f"{ours1 / (len(timed) / tt1):7.2f}x {traf1c:11.0f} {ourc / traf1c:7.2f}x")
    print(f"{f'trafilatura, all cores ({tn_docs} pages)':40} {tn_docs / ttn:9.0f} "
          f"{oursn / (tn_docs / ttn):7.2f}x")
    print(f"derive text / Resiliparse, 1 core, by CPU (target: at least 2, on the like-for-like rows): "
          f"full {ourc / resf1c:.2f}x, text {textc / res1c:.2f}x; "
          f"by wall clock: full {ours1 / (nf1 / rf1):.2f}x, text {text1 / (n1 / r1):.2f}x; "
          f"our full row against their text loop (not like for like): {ourc / res1c:.2f}x")
    print(f"similarity, median of {len(compared)} pages: text to Resiliparse {sim_res:.3f}, "
          f"main content to Resiliparse main_content=True {sim_main:.3f}, "
          f"main content to trafilatura {sim_traf:.3f}")
    print(f"{'':36} {'MB/s':>9} {'ours/ls':>8} {'max RSS':>9}")
    print(f"{'warchest ls':36} {mb / tl:9.1f} {'':>8} {ml:8.0f}M")
    print(f"{'warchest derive wet':36} {mb / tw:9.1f} {tl / tw:7.2f}x {mw:8.0f}M")
    print(f"{'warchest derive wat':36} {mb / ta:9.1f} {tl / ta:7.2f}x {ma:8.0f}M")
    peak = max(m1, mn, mt1, mtn, mw, ma)
    print(f"peak memory of derive: {peak:.0f} MiB (target: at most 256)")


if __name__ == "__main__":
    main()
