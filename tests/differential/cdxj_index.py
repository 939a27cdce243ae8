"""Index files with cdxj-indexer, in one process, for the differential tests.

For each file argument prints one JSON object: the CDXJ lines cdxj-indexer
writes with -p ("p") and without it ("np": its -p mode digests an already
consumed stream, so computed digests are taken from the plain run), and the
error that stopped it, if any ("error"; the lines before it are kept).
With --cdx11 or --cdx9 first, the legacy CDX layouts are written instead.
"""
import io
import json
import sys

from cdxj_indexer.main import write_cdx_index


def run(path, opts):
    out = io.StringIO()
    err = None
    try:
        write_cdx_index(out, [path], dict(opts))
    except BaseException as e:  # cdxj-indexer stops on malformed files
        err = "%s: %s" % (type(e).__name__, e)
    return out.getvalue().splitlines(), err


def main(args):
    opts = {}
    if args and args[0] in ("--cdx11", "--cdx9"):
        opts[args[0][2:] if args[0] == "--cdx11" else "cdx09"] = True
        args = args[1:]
    for path in args:
        p, err = run(path, dict(opts, post_append=True))
        np, _ = run(path, opts)
        print(json.dumps({"file": path, "p": p, "np": np, "error": err}))


if __name__ == "__main__":
    main(sys.argv[1:])
