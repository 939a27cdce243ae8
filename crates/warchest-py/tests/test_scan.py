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
