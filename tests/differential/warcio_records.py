"""Print what warcio sees in a WARC file, one JSON object per record.

Used by the differential tests: warchest must find the same records at the
same offsets with the same target URIs. Exit status 3 when warcio refuses
the file (it rejects whole-file gzip) or fails on it (malformed headers).
"""
import json
import sys

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed


def main(path):
    out = []
    try:
        with open(path, "rb") as f:
            it = ArchiveIterator(f, check_digests=False)
            for rec in it:
                h = rec.rec_headers
                out.append({
                    "offset": it.get_record_offset(),
                    "type": rec.rec_type,
                    "target_uri": h.get_header("WARC-Target-URI"),
                    "record_id": h.get_header("WARC-Record-ID"),
                    "content_length": h.get_header("Content-Length"),
                })
                # Read the block so warcio computes the length.
                rec.content_stream().read()
                out[-1]["length"] = it.get_record_length() if hasattr(it, "get_record_length") else None
    except (ArchiveLoadFailed, Exception) as e:  # warcio crashes on some malformed files
        print(json.dumps({"refused": repr(e)}))
        sys.exit(3)
    for r in out:
        print(json.dumps(r))


if __name__ == "__main__":
    main(sys.argv[1])
