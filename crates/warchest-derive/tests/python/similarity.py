"""Similarity of warchest's text to Resiliparse's, page by page.

usage: similarity.py ARCHIVE ROWS.jsonl [--main]

ROWS holds `warchest derive text` rows (record_id, text, main_text). Each
HTML response of ARCHIVE is read with FastWARC and its text extracted with
Resiliparse's extract_plain_text (main_content with --main); the two texts
are compared as word sequences (difflib's ratio: 2 * matches / total),
with list bullets left out and our first line (the title, which Resiliparse
does not give: it starts at <body>) dropped from the whole text. Prints
one line per page and the median last.
"""
import difflib
import json
import statistics
import sys

from fastwarc.warc import ArchiveIterator, WarcRecordType
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str, detect_encoding
from resiliparse.parse.html import HTMLTree

archive, rows_path = sys.argv[1], sys.argv[2]
main = "--main" in sys.argv[3:]
ours = {}
for line in open(rows_path, encoding="utf-8"):
    row = json.loads(line)
    if "html" not in (row.get("content_type") or ""):
        continue
    text = row["main_text"] if main else "\n".join(row["text"].split("\n")[1:] if row.get("title") else row["text"].split("\n"))
    ours[row["record_id"]] = text


def words(s):
    return [w for w in s.split() if w not in ("•",) and not (w.endswith(".") and w[:-1].isdigit())]


ratios = []
with open(archive, "rb") as f:
    for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
        rid = rec.headers.get("WARC-Record-ID")
        if rid not in ours:
            continue
        body = rec.reader.read()
        html = bytes_to_str(body, detect_encoding(body))
        theirs = extract_plain_text(HTMLTree.parse(html), main_content=main)
        a, b = words(ours[rid]), words(theirs)
        if not a and not b:
            r = 1.0
        else:
            r = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
        ratios.append(r)
        print(f"{r:.3f} {rec.headers.get('WARC-Target-URI')}")
print(f"median {statistics.median(ratios):.3f} of {len(ratios)}")
