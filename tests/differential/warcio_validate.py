"""Validate a WARC file with warcio: read every record with digest checking
on (`ArchiveIterator(check_digests=True)` raises on a mismatch) and run
`warcio check`'s own logic. Prints one JSON object: the record count, the
record types, and the problems found. Exit status 1 when there are any.
"""
import contextlib
import json
import sys

from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker


class _Args:
    def __init__(self, path):
        self.inputs = [path]
        self.verbose = False


def main(path):
    problems = []
    types = {}
    n = 0
    try:
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, check_digests=True):
                rec.content_stream().read()
                n += 1
                types[rec.rec_type] = types.get(rec.rec_type, 0) + 1
    except Exception as e:  # a digest mismatch or a malformed record
        problems.append(repr(e))
    try:
        # The checker reports on stdout; keep stdout for the JSON line.
        with contextlib.redirect_stdout(sys.stderr):
            status = Checker(_Args(path)).process_all()
        if status != 0:
            problems.append("warcio check reported a problem")
    except Exception as e:
        problems.append("warcio check failed: " + repr(e))
    print(json.dumps({"records": n, "types": types, "problems": problems}))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main(sys.argv[1])
