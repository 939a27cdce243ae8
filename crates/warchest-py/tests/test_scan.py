"""scan(): Arrow batches built in Rust, against what ArchiveIterator sees."""

import io

import pytest

import warchest
from conftest import FIXTURES, SAMPLES

pa = pytest.importorskip("pyarrow")

IANA = FIXTURES / "pywb" / "iana.warc.gz"


def test_rows_match_the_iterator():
    table = warchest.scan(IANA).read_all()
    it = warchest.ArchiveIterator(IANA)
    want = []
    for rec in it:
        status = rec.http_headers.get_statuscode() if rec.http_headers and rec.rec_type != "request" else None
        want.append(
            (
                rec.offset,
                rec.rec_type,
                rec.rec_headers.get_header("WARC-Target-URI"),
                int(status) if status else None,
                it.get_record_length(),
            )
        )
    got = list(
        zip(
            table["warc_record_offset"].to_pylist(),
            table["warc_type"].to_pylist(),
            table["warc_target_uri"].to_pylist(),
            table["http_status"].to_pylist(),
            table["warc_record_length"].to_pylist(),
        )
    )
    assert len(got) == 343
    assert got == want
    assert set(table["warc_filename"].to_pylist()) == {str(IANA)}
    assert table["error"].null_count == len(table)


def test_default_schema():
    reader = warchest.scan(SAMPLES / "sample.warc.gz")
    names = reader.schema.names
    assert names == [c for c in warchest.columns() if c not in ("payload", "payload_truncated")]
    s = reader.schema
    assert s.field("warc_date").type == pa.timestamp("us", tz="UTC")
    assert s.field("http_status").type == pa.int16()
    assert s.field("warc_headers").type.value_type == pa.struct([pa.field("name", pa.string(), False), pa.field("value", pa.string(), False)])
    rows = reader.read_all().to_pylist()
    resp = next(r for r in rows if r["warc_type"] == "response")
    assert resp["http_status"] == 200
    assert {"name": "WARC-Type", "value": "response"} in resp["warc_headers"]
    assert any(h["name"].lower() == "content-type" for h in resp["http_headers"])
    assert resp["warc_date"].year == 2026


def test_columns_record_types_and_payload():
    t = warchest.scan(
        IANA, columns=["warc_target_uri", "payload", "payload_truncated"], record_types=["response"]
    ).read_all()
    assert t.column_names == ["warc_target_uri", "payload", "payload_truncated"]
    want = [r.content_stream().read() for r in warchest.ArchiveIterator(IANA, record_types=["response"])]
    assert t["payload"].to_pylist() == want
    assert not any(t["payload_truncated"].to_pylist())


def test_max_payload_cuts_and_says_so():
    t = warchest.scan(IANA, columns=["payload", "payload_truncated"], record_types=["response"], max_payload=100).read_all()
    lengths = [len(p) for p in t["payload"].to_pylist()]
    assert max(lengths) == 100
    assert any(t["payload_truncated"].to_pylist())


def test_batches_are_bounded_by_rows():
    batches = list(warchest.scan(IANA, batch_rows=50))
    assert [b.num_rows for b in batches] == [50] * 6 + [43]


def test_several_files_and_bad_ones():
    missing = FIXTURES / "no-such-file.warc.gz"
    with pytest.raises(Exception):
        warchest.scan([SAMPLES / "sample.warc.gz", missing]).read_all()
    t = warchest.scan([SAMPLES / "sample.warc.gz", missing, IANA], skip_errors=True).read_all()
    errors = [r for r in t.to_pylist() if r["error"] is not None]
    assert len(errors) == 1
    assert errors[0]["warc_filename"] == str(missing)
    assert len(t) == 6 + 1 + 343


def test_unknown_column_is_refused():
    with pytest.raises(ValueError, match="unknown column"):
        warchest.scan(IANA, columns=["nope"])


def test_stream_is_taken_once():
    s = warchest.scan_stream(IANA)
    pa.RecordBatchReader.from_stream(s).read_all()
    with pytest.raises(RuntimeError, match="already taken"):
        pa.RecordBatchReader.from_stream(s)


# pywb's example.warc has a record whose Content-Length is 3 bytes short:
# no boundary confirms before its last record, and the first range reads on.
PLAIN = [FIXTURES / "warcio" / "example-iana.org-chunked.warc", FIXTURES / "pywb" / "example.warc"]


def plain_warc(path, records=40):
    """An uncompressed WARC whose payloads hold lines like record starts."""
    with open(path, "wb") as f, warchest.WARCWriter(f, compress=None) as w:
        for i in range(records):
            body = (b"WARC/1.0\r\nContent-Length: 3\r\n\r\nabc\r\n" * (i % 4)) + b"x" * (i * 7)
            w.write_record("resource", f"http://e.example/{i}", body, content_type="text/plain")
    return path


@pytest.mark.parametrize("path", PLAIN + ["generated"], ids=lambda p: getattr(p, "name", p))
def test_byte_ranges_together_equal_the_whole_scan(path, tmp_path):
    if path == "generated":
        path = plain_warc(tmp_path / "gen.warc")
    whole = warchest.scan(path, include_payload=True).read_all()
    assert whole.num_rows > 2
    size = path.stat().st_size
    for split in (37, 500, 3000):
        ranges = warchest.split_ranges(path, split)
        assert len(ranges) == -(-size // split)
        assert ranges[0][0] == 0 and ranges[-1][1] == size
        parts = [warchest.scan(path, include_payload=True, byte_range=r).read_all() for r in ranges]
        got = pa.concat_tables(parts)
        assert got.num_rows == whole.num_rows
        assert got.equals(whole), split


def test_a_range_gives_the_records_that_start_in_it(tmp_path):
    path = plain_warc(tmp_path / "gen.warc")
    offsets = warchest.scan(path, columns=["warc_record_offset"]).read_all()["warc_record_offset"].to_pylist()
    assert len(offsets) == 40
    start, end = offsets[5] - 1, offsets[9] + 1
    got = warchest.scan(path, columns=["warc_record_offset"], byte_range=(start, end)).read_all()
    # Offsets in the whole file, of the records starting in [start, end).
    assert got["warc_record_offset"].to_pylist() == offsets[5:10]


def test_compressed_files_are_not_split():
    size = IANA.stat().st_size
    assert warchest.split_ranges(IANA, 1000) == [(0, size)]
    assert warchest.scan(IANA, columns=["warc_type"], byte_range=(0, 10)).read_all().num_rows == 343
    assert warchest.scan(IANA, columns=["warc_type"], byte_range=(10, size)).read_all().num_rows == 0


def test_byte_range_takes_one_path():
    with pytest.raises(ValueError):
        warchest.scan([IANA, IANA], byte_range=(0, 10))
    with pytest.raises(ValueError):
        warchest.scan(IANA, byte_range=(10, 0))


def test_batches_are_bounded_by_bytes_and_keep_the_rows():
    cols = ["warc_record_offset", "warc_target_uri", "http_status", "payload", "payload_truncated"]
    whole = warchest.scan(IANA, columns=cols).read_all()
    bound = 20000
    batches = list(warchest.scan(IANA, columns=cols, batch_bytes=bound))
    sizes = [sum(len(p) for p in b.column("payload").to_pylist() if p) for b in batches]
    # Only a single record larger than the bound makes a batch pass it.
    assert all(b.num_rows == 1 or s <= bound for b, s in zip(batches, sizes)), list(zip(sizes, [b.num_rows for b in batches]))
    assert any(b.num_rows == 1 and s > bound for b, s in zip(batches, sizes)), "no record larger than the bound"
    assert len(batches) > 5 and max(b.num_rows for b in batches) > 5
    assert pa.Table.from_batches(batches, schema=whole.schema).equals(whole)
    # The rows bound still holds beside the bytes one.
    assert max(b.num_rows for b in warchest.scan(IANA, columns=cols, batch_rows=3)) == 3


_PEAK = r"""
import sys
import pyarrow, warchest

def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key))

# The peak so far (imports) forgotten: VmHWM restarts from the current RSS.
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = status("VmRSS:")
n = size = 0
for b in warchest.scan(sys.argv[1], columns=["payload"], batch_bytes=int(sys.argv[2]), batch_rows=1 << 20, threads=int(sys.argv[3])):
    n += b.num_rows
    size += b.column("payload").nbytes
print(n, size, (status("VmHWM:") - base) >> 10)
"""


def test_peak_memory_follows_batch_bytes(tmp_path):
    import subprocess
    import sys

    # 64 resources of 1 MiB: 64 MiB of payloads in one plain file.
    path = tmp_path / "big.warc"
    body = bytes(range(256)) * 4096
    with open(path, "wb") as f:
        for i in range(64):
            f.write(
                b"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:%08d-0000-0000-0000-000000000000>\r\n"
                b"WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Target-URI: http://a.example/%d\r\n"
                b"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % (i, i, len(body))
            )
            f.write(body)
            f.write(b"\r\n\r\n")

    def peak(batch_bytes, threads=1):
        out = subprocess.run(
            [sys.executable, "-c", _PEAK, str(path), str(batch_bytes), str(threads)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        n, size, mib = (int(x) for x in out)
        assert n == 64 and size >= 64 << 20
        return mib

    try:
        # Batches of 4 MiB: a few alive at once (the one held, the one
        # being built) beside the reader's buffers, whatever the file holds.
        small = peak(4 << 20)
        # The check can fail: one batch of everything holds all 64 MiB.
        big = peak(1 << 30)
        # Read in chunks on two threads: a few chunks in flight, each
        # holding at most about one batch.
        chunked = peak(4 << 20, threads=2)
    finally:
        path.unlink()
    assert small <= 40, f"peak grew {small} MiB with 4 MiB batches"
    assert big >= 64, f"peak grew only {big} MiB with one 64 MiB batch"
    assert chunked <= 64, f"peak grew {chunked} MiB with 4 MiB batches on two threads"


def test_threads_give_the_rows_of_one_thread(tmp_path, monkeypatch):
    # Plain fixtures end to end, damage included, and a generated file
    # whose payloads hold lines like record starts; tiny chunks forced.
    path = tmp_path / "all.warc"
    gen = plain_warc(tmp_path / "gen.warc")
    path.write_bytes(b"".join(p.read_bytes() for p in PLAIN + [gen] + PLAIN))
    monkeypatch.setenv("WARCHEST_PLAIN_CHUNK", "300")
    for kw in ({}, {"include_payload": True, "skip_errors": True}, {"batch_rows": 3, "batch_bytes": 2000}):
        one = list(warchest.scan(path, threads=1, **kw))
        two = list(warchest.scan(path, threads=2, **kw))
        whole = pa.Table.from_batches(one)
        assert whole.num_rows > 50
        assert pa.Table.from_batches(two, schema=whole.schema).equals(whole), kw
        # Read in chunks: batches end where chunks do.
        assert len(two) > len(one), kw
        assert max(b.num_rows for b in two) <= kw.get("batch_rows", 8192)


def test_a_file_with_no_record_is_an_error_not_an_empty_table(tmp_path):
    # As every command and the other calls refuse it: an empty file, or
    # one that is not an archive, is an input not read, not zero records.
    empty = tmp_path / "empty.warc"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.warc"
    junk.write_bytes(b"not an archive\n" * 100)
    for path in (empty, junk):
        said = f"no WARC, ARC or Web InfoMall record found in {path}"
        with pytest.raises(ValueError, match=said):
            list(warchest.scan(path))
        rows = warchest.scan(path, skip_errors=True, columns=["error"]).read_all().to_pylist()
        assert rows == [{"error": said}]
