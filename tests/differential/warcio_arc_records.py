"""Print what warcio sees in an ARC file, one JSON object per record.

Used by the differential tests: warchest must find the same records at the
same offsets with the same URLs. warcio reads ARC with
`ArchiveIterator(f, arc2warc=True)`, turning each record into a WARC view:
the filedesc record becomes a warcinfo record whose WARC-Filename is the
path after `filedesc://`. When warcio fails part way, the records it read
are printed, then {"failed": "..."}, and the exit status is 3.
"""
import json
import sys

from warcio.archiveiterator import ArchiveIterator


def main(path):
    out = []
    failed = None
    try:
        with open(path, "rb") as f:
            it = ArchiveIterator(f, arc2warc=True, check_digests=False)
            for rec in it:
                h = rec.rec_headers
                out.append({
                    "offset": it.get_record_offset(),
                    "type": rec.rec_type,
                    "target_uri": h.get_header("WARC-Target-URI"),
                    "filename": h.get_header("WARC-Filename"),
                    "date": h.get_header("WARC-Date"),
                })
                rec.content_stream().read()
    except Exception as e:  # warcio raises several kinds on malformed files
        failed = repr(e)
    for r in out:
        print(json.dumps(r))
    if failed is not None:
        print(json.dumps({"failed": failed}))
        sys.exit(3)


if __name__ == "__main__":
    # warcio logs URL fix-ups on stderr; keep stdout for the records.
    main(sys.argv[1])
