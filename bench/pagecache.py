"""The page cache's state every timed run starts from (bench.py,
python_bench.py).

Each input is dropped from the page cache and read back whole before a
run, so that the run finds it held as a read from disk leaves it
(readahead's large folios), the same on every run. How a file came into
the cache moves the plain rows by up to a third, for every tool: FastWARC
read the plain corpus in 0.128 s as `gzip -dc`'s small writes left it,
0.093 s dropped and read back (docs/performance-history.md, round fifteen). The
read back also matters by itself: this machine's kernel pages out memory
not touched for a few seconds (a DAMON `pageout` scheme), and a run that
found part of its input on disk would time the disk (a plain `ls` took
0.295 s of wall time for 0.152 s of CPU that way). With `drop` false the
files are only read (`--keep-cache`).
"""

import os


def settle(paths, drop=True):
    """Reads each file of `paths` whole, after dropping it from the page
    cache when `drop` (its written pages synced first: dirty pages are not
    dropped)."""
    buf = bytearray(1 << 20)
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            if drop:
                os.fsync(f.fileno())
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            while f.readinto(buf):
                pass
