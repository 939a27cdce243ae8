"""Nothing a read recovers from goes unsaid (docs/python.md, "Leniency"):
`scan`, `derive_text`, Arrow `fetch` and the iterator give a
RecoveryWarning for each file that needed the lenient reader or whose
payloads were not decoded as their HTTP head says, and `scan_stream`'s
object lists them (`warnings`, `payload_fallbacks` and their counts)
without ever calling into Python from its C stream."""

import warnings

import pyarrow as pa
import pytest

import warchest
from conftest import FIXTURES, bare_lf_warc, recovery_warnings, response_warc

IANA = FIXTURES / "pywb" / "iana.warc.gz"
CLEAN = FIXTURES / "pywb" / "example.warc.gz"


def test_recovery_warning_is_a_user_warning():
    assert issubclass(warchest.RecoveryWarning, UserWarning)


def test_scan_warns_of_a_files_recoveries_and_its_stream_lists_them(tmp_path):
    bad = bare_lf_warc(tmp_path / "bare.warc")
    paths = [str(CLEAN), str(bad), str(CLEAN)]
    table, told = recovery_warnings(lambda: warchest.scan(paths).read_all())
    assert table.num_rows > 2
    # One warning, for the one file that needed the lenient reader. The
    # reader notes a record's bare line ends once, where it saw the first.
    assert told == [f"{bad}: 2 lenient recoveries: bare-lf (2), the first at offset 28"]
    # The bare stream says nothing itself (its C stream never calls into
    # Python) and keeps it all.
    stream = warchest.scan_stream(paths)
    same, told = recovery_warnings(lambda: pa.RecordBatchReader.from_stream(stream).read_all())
    assert told == [] and same.num_rows == table.num_rows
    assert stream.take_told() == [f"{bad}: 2 lenient recoveries: bare-lf (2), the first at offset 28"]
    assert stream.take_told() == []
    assert stream.warning_counts == {"bare-lf": 2}
    ws = stream.warnings
    assert len(ws) == 2 and {w["file"] for w in ws} == {str(bad)}
    assert {"kind", "offset", "record", "record_id", "message"} <= set(ws[0])
    assert stream.payload_fallbacks == [] and stream.payload_fallback_counts == {}


def test_a_warning_comes_with_the_batch_after_its_file(tmp_path):
    bad = bare_lf_warc(tmp_path / "bare.warc")
    reader = warchest.scan([str(bad), str(CLEAN)])
    first, told = recovery_warnings(reader.read_next_batch)
    assert first.num_rows == 2 and told == []
    # The clean file's batch comes after the damaged file ended.
    _, told = recovery_warnings(reader.read_next_batch)
    assert len(told) == 1 and told[0].startswith(str(bad))


def test_scan_warns_of_payloads_given_as_stored():
    _, told = recovery_warnings(lambda: warchest.scan(str(IANA), include_payload=True).read_all())
    assert told == [
        f"{IANA}: 25 payloads not decoded as their HTTP head says: "
        "announced as chunked but not chunked (25)"
    ]
    stream = warchest.scan_stream(str(IANA), include_payload=True)
    pa.RecordBatchReader.from_stream(stream).read_all()
    assert stream.payload_fallback_counts == {"not-chunked": 25}
    listed = stream.payload_fallbacks
    assert len(listed) == 25
    assert all(p["file"] == str(IANA) and p["fallbacks"] == ["not-chunked"] for p in listed)
    # Offsets of records, in file order.
    offsets = [p["offset"] for p in listed]
    assert offsets == sorted(offsets) and len(set(offsets)) == 25
    # Without a payload column nothing is decoded, so nothing falls back.
    _, told = recovery_warnings(lambda: warchest.scan(str(IANA), columns=["http_status"]).read_all())
    assert told == []


def test_scan_warns_of_rows_whose_http_head_did_not_parse(tmp_path):
    """A response whose block holds no HTTP head: its HTTP columns are
    null, and the scan says so (as the index does of its entry)."""
    odd = response_warc(tmp_path / "odd.warc", b"no HTTP head here")
    table, told = recovery_warnings(lambda: warchest.scan(str(odd), columns=["http_status"]).read_all())
    assert table.column("http_status").to_pylist() == [None]
    assert told == [
        f"{odd}: 1 record whose HTTP head did not parse: their HTTP columns are null, "
        "the first at offset 0"
    ]
    stream = warchest.scan_stream(str(odd), columns=["http_status"])
    pa.RecordBatchReader.from_stream(stream).read_all()
    assert stream.unparsed_heads == [{"file": str(odd), "offset": 0}]
    assert stream.unparsed_head_count == 1
    # No HTTP column: no head is read, none is missed.
    _, told = recovery_warnings(lambda: warchest.scan(str(odd), columns=["warc_target_uri"]).read_all())
    assert told == []


def test_a_clean_file_gives_no_warning():
    _, told = recovery_warnings(lambda: warchest.scan(str(CLEAN), include_payload=True).read_all())
    assert told == []
    _, told = recovery_warnings(lambda: list(warchest.ArchiveIterator(str(CLEAN))))
    assert told == []


def test_an_error_filter_ends_the_scan_with_the_warning(tmp_path):
    bad = bare_lf_warc(tmp_path / "bare.warc")
    with warnings.catch_warnings():
        warnings.simplefilter("error", warchest.RecoveryWarning)
        with pytest.raises(warchest.RecoveryWarning, match="bare-lf"):
            warchest.scan(str(bad)).read_all()


def test_the_iterator_warns_once_at_its_end(tmp_path):
    bad = bare_lf_warc(tmp_path / "bare.warc")
    it = warchest.ArchiveIterator(str(bad))
    records, told = recovery_warnings(lambda: [r.rec_type for r in it])
    assert records == ["resource", "resource"]
    assert len(told) == 1 and told[0] == "2 lenient recoveries: bare-lf (2), the first at offset 28", told
    # Asked again at the end: no second warning.
    _, again = recovery_warnings(lambda: list(it))
    assert again == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", warchest.RecoveryWarning)
        with pytest.raises(warchest.RecoveryWarning, match="bare-lf"):
            list(warchest.ArchiveIterator(str(bad)))
    # Strict: an error, not a recovery.
    with pytest.raises(warchest.ArchiveError):
        list(warchest.ArchiveIterator(str(bad), strict=True))


def test_derive_text_warns_of_payloads_given_as_stored():
    table, told = recovery_warnings(lambda: warchest.derive_text(str(IANA)).read_all())
    assert table.num_rows > 0
    assert told == [
        f"{IANA}: 16 payloads not decoded as their HTTP head says: "
        "announced as chunked but not chunked (16)"
    ]
    stream = warchest.derive_text_stream(str(IANA))
    pa.RecordBatchReader.from_stream(stream).read_all()
    assert stream.payload_fallback_counts == {"not-chunked": 16}


def test_derive_text_warns_of_texts_with_bytes_replaced(tmp_path):
    """A text whose bytes its charset does not decode is said, as `warchest
    derive text` says it."""
    bad = response_warc(
        tmp_path / "bad.warc",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nbad \xff\xfe bytes",
    )
    table, told = recovery_warnings(lambda: warchest.derive_text(str(bad)).read_all())
    assert table.num_rows == 1
    assert told == [
        f"{bad}: texts: 1 with bytes their charset does not decode (replaced with U+FFFD)"
    ]


def test_fetch_as_arrow_warns_once_at_its_end(tmp_path):
    t = warchest.scan(str(IANA), columns=["warc_record_offset", "warc_record_length"]).read_all()
    rows = [(str(IANA), o, n) for o, n in zip(*(c.to_pylist() for c in t.columns))]
    reader, told = recovery_warnings(
        lambda: warchest.fetch(rows, arrow=True, include_payload=True).read_all()
    )
    assert reader.num_rows == len(rows)
    assert told == [
        f"{IANA}: 25 payloads not decoded as their HTTP head says: "
        "announced as chunked but not chunked (25)"
    ]
    # Records of two files: one warning for the whole fetch.
    copy = tmp_path / "iana-copy.warc.gz"
    copy.write_bytes(IANA.read_bytes())
    both = rows + [(str(copy), o, n) for _, o, n in rows]
    _, told = recovery_warnings(lambda: warchest.fetch(both, arrow=True, include_payload=True).read_all())
    assert told == [
        "2 files: 50 payloads not decoded as their HTTP head says: "
        "announced as chunked but not chunked (50)"
    ]


def spark_task_rows(paths):
    """The rows the Spark source's reader gives in one task over `paths`
    (columns `warc_target_uri` alone, as a `.schema(...)` asks), and the
    RecoveryWarnings it gave."""
    pytest.importorskip("pyspark")
    import pyspark_warchest
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField("warc_target_uri", StringType())])
    reader = pyspark_warchest.WarcReader({"columns": "warc_target_uri"}, schema)
    part = pyspark_warchest.WarcFiles([str(p) for p in paths])
    return recovery_warnings(lambda: sum(b.num_rows for b in reader.read(part)))


def test_the_spark_sources_reader_warns_in_its_task(tmp_path):
    bad = bare_lf_warc(tmp_path / "bare.warc")
    n, told = spark_task_rows([CLEAN, bad])
    assert n > 2
    assert len(told) == 1 and told[0].startswith(f"{bad}: 2 lenient recoveries: bare-lf (2)")


def cut_warc(path):
    """A WARC of a whole record and one cut short, which a strict read
    fails on: the path and the cut record's offset."""
    whole = response_warc(path, b"HTTP/1.1 200 OK\r\n\r\nok").read_bytes()
    cut = response_warc(path, b"HTTP/1.1 200 OK\r\n\r\n0123456789").read_bytes()
    path.write_bytes(whole + cut[:-10])
    return path, len(whole)


UNSEEN = "1 error skipped (skip_errors): the columns leave out `error`, so no row says it; the first:"


def test_an_error_skipped_is_told_when_the_columns_leave_out_error(tmp_path):
    """skip_errors gives a failed file its error row; without an `error`
    column that row is nulls, so a RecoveryWarning names the file, the
    offset where reading stopped and the error. With the column the row
    says it, and no warning repeats it."""
    cut, at = cut_warc(tmp_path / "cut.warc")
    missing = tmp_path / "missing.warc"
    paths = [str(cut), str(CLEAN), str(missing)]
    kw = dict(skip_errors=True, strict=True)
    t, told = recovery_warnings(lambda: warchest.scan(paths, columns=["warc_target_uri"], **kw).read_all())
    rows = t["warc_target_uri"].to_pylist()
    assert None in rows and len(rows) > 3
    assert len(told) == 2
    # Each names its file once (the error's own text after the count).
    assert told[0].startswith(f"{cut}: {UNSEEN} offset {at} ")
    assert "input ends inside a record" in told[0]
    assert told[1].startswith(f"{missing}: {UNSEEN} ")
    assert [t.count(str(p)) for t, p in zip(told, [cut, missing])] == [1, 1]
    # With the column, the rows say it; the stream lists them either way.
    with_error, told = recovery_warnings(
        lambda: warchest.scan(paths, columns=["warc_target_uri", "error"], **kw).read_all()
    )
    assert told == []
    errors = [e for e in with_error["error"].to_pylist() if e is not None]
    assert any(str(missing) in e for e in errors) and any(f"offset {at}" in e for e in errors)
    stream = warchest.scan_stream(paths, columns=["warc_target_uri"], **kw)
    pa.RecordBatchReader.from_stream(stream).read_all()
    assert stream.skipped_error_count == 2
    assert [(e["file"], e["offset"]) for e in stream.skipped_errors] == [(str(cut), at), (str(missing), 0)]
    assert all(e["message"].startswith(e["file"]) for e in stream.skipped_errors)
    assert len(stream.take_told()) == 2
    # A filter that makes it an error ends the scan with it.
    with warnings.catch_warnings():
        warnings.simplefilter("error", warchest.RecoveryWarning)
        with pytest.raises(warchest.RecoveryWarning, match="error skipped"):
            warchest.scan(paths, columns=["warc_target_uri"], **kw).read_all()


def test_fetch_as_arrow_tells_errors_skipped_once_at_its_end(tmp_path):
    size = CLEAN.stat().st_size
    rows = [(str(CLEAN), size - 5, 100), (str(tmp_path / "gone.warc.gz"), 0, 10)]
    t, told = recovery_warnings(lambda: warchest.fetch(rows, arrow=True, columns=["warc_target_uri"]).read_all())
    assert t.num_rows == 2
    assert len(told) == 1
    assert told[0].startswith("2 files: 2 errors skipped (skip_errors): the columns leave out `error`")
    assert f"offset {size - 5}" in told[0]
    _, told = recovery_warnings(lambda: warchest.fetch(rows, arrow=True).read_all())
    assert told == []


def test_the_spark_source_tells_an_error_skipped_without_its_error_column(tmp_path):
    missing = tmp_path / "missing.warc"
    n, told = spark_task_rows([CLEAN, missing])
    assert n > 2
    assert len(told) == 1 and told[0].startswith(f"{missing}: {UNSEEN} ")
    assert told[0].count(str(missing)) == 1


def test_duckdb_reads_a_scan_on_its_threads(tmp_path):
    # scan()'s reader gives its warnings from a Python generator: DuckDB
    # reads it on worker threads, two queries at once from two Python
    # threads, without a deadlock, and the warning still comes.
    import threading

    import duckdb

    bad = bare_lf_warc(tmp_path / "bare.warc")
    counts, errors = [], []

    def query():
        try:
            r = warchest.scan([str(CLEAN), str(bad), str(IANA)], columns=["warc_type"])
            counts.append(duckdb.connect().sql("select count(*) from r").fetchall()[0][0])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def both():
        threads = [threading.Thread(target=query) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "a query hung"

    _, told = recovery_warnings(both)
    assert errors == []
    assert len(counts) == 2 and counts[0] == counts[1] and counts[0] > 2
    assert told.count(f"{bad}: 2 lenient recoveries: bare-lf (2), the first at offset 28") == 2
