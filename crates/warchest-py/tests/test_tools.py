"""index, check, validate and convert from Python: the library's tools."""

import json

import pytest

import warchest
from conftest import FIXTURES, SAMPLES, bare_lf_warc, recovery_warnings


def test_check_finds_every_digest_valid_in_the_sample():
    recs = warchest.check(SAMPLES / "sample.warc.gz")
    assert len(recs) == 6
    assert all(r["ok"] for r in recs)
    assert {r["block"]["status"] for r in recs} == {"valid"}


def test_check_reports_a_wrong_digest(tmp_path):
    bad = tmp_path / "bad.warc"
    with warchest.WARCWriter(bad, compress=None) as w:
        w.write_record(
            "resource", "urn:x", payload=b"abc", content_type="text/plain",
            warc_headers={"WARC-Block-Digest": "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
        )
    (rec,) = warchest.check(bad)
    assert not rec["ok"] and rec["block"]["status"] == "invalid"


def test_check_fails_a_record_cut_short(tmp_path):
    whole = tmp_path / "whole.warc"
    with warchest.WARCWriter(whole, compress=None) as w:
        w.write_record("resource", "urn:x", payload=b"x" * 1000, content_type="text/plain")
    data = whole.read_bytes()
    cut = tmp_path / "cut.warc"
    cut.write_bytes(data[:-500])
    (rec,) = warchest.check(whole)
    (cut_rec,), told = recovery_warnings(lambda: warchest.check(cut))
    assert rec["ok"] and not rec["truncated"]
    assert cut_rec["truncated"] and not cut_rec["ok"]
    assert told == [f"{cut}: 1 lenient recovery: truncated-record (1), the first at offset 0"]


def test_validate_reports_findings_with_rules(tmp_path):
    written = tmp_path / "w.warc.gz"
    with warchest.WARCWriter(written) as w:
        w.write_warcinfo("w.warc.gz", {"operator": "tests"})
        w.write_record("resource", "file:///a.txt", payload=b"abc", content_type="text/plain")
    good = warchest.validate(written)
    assert good["summary"]["files"][0]["records"] == 2
    assert not [f for f in good["findings"] if f["severity"] == "error"]
    bad = warchest.validate(FIXTURES / "jwat" / "invalid-warcfile-fields-missing.warc")
    errors = [f for f in bad["findings"] if f["severity"] == "error"]
    assert errors and all(f["rule"] and f["clause"] for f in errors)


def test_validate_raises_for_a_file_it_cannot_read(tmp_path):
    # As check and index do, and as warchest validate fails for it: the
    # file counted unreadable with its reason dropped was silence.
    missing = tmp_path / "missing.warc.gz"
    with pytest.raises(OSError, match="missing.warc.gz"):
        warchest.validate([FIXTURES / "pywb" / "example.warc.gz", missing])


def test_index_formats(tmp_path):
    src = FIXTURES / "pywb" / "example.warc.gz"
    n = warchest.index(src, tmp_path / "a.cdxj")
    lines = (tmp_path / "a.cdxj").read_text().splitlines()
    assert n == len(lines) > 0
    key, ts, js = lines[0].split(" ", 2)
    assert key.startswith("com,example)/") and len(ts) == 14 and json.loads(js)["filename"] == src.name
    pq = pytest.importorskip("pyarrow.parquet")
    warchest.index(src, tmp_path / "a.parquet", format="parquet")
    t = pq.read_table(tmp_path / "a.parquet")
    assert t.num_rows == n and t.column_names[0] == "url_surtkey"
    with pytest.raises(ValueError):
        warchest.index(src, tmp_path / "x", format="nope")


def test_index_refuses_a_file_not_compressed_record_at_a_time(tmp_path):
    # Whole-file gzip: its entries could not address its records, so no
    # index of it is written (as `warchest index` refuses it).
    import gzip

    plain = gzip.decompress((SAMPLES / "sample.warc.gz").read_bytes())
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(plain))
    with pytest.raises(ValueError, match="not compressed record at a time"):
        warchest.index(whole, tmp_path / "w.cdxj")


def test_index_refuses_an_input_with_no_record(tmp_path):
    empty = tmp_path / "empty.warc"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="no WARC, ARC or Web InfoMall record found"):
        warchest.index(empty, tmp_path / "e.cdxj")
    assert not (tmp_path / "e.cdxj").exists()


@pytest.mark.parametrize("content", [b"", b"no archive here\n"], ids=["empty", "junk"])
def test_check_refuses_an_input_with_no_record(tmp_path, content):
    none = tmp_path / "none.warc"
    none.write_bytes(content)
    # Not an empty list: a file with no record is one not read (as `warchest
    # check` exits 2). What the reader recovered from is still said first.
    with pytest.raises(warchest.ArchiveError, match=f"no WARC, ARC or Web InfoMall record found in {none}"):
        recovery_warnings(lambda: warchest.check(none))
    with pytest.raises(warchest.ArchiveError, match="no WARC, ARC or Web InfoMall record found"):
        recovery_warnings(lambda: warchest.index([SAMPLES / "sample.warc.gz", none], tmp_path / "n.cdxj"))
    assert not (tmp_path / "n.cdxj").exists()
    # validate refuses it rather than judging it, as `warchest validate`
    # exits 2 for it: with another file given too.
    with pytest.raises(warchest.ArchiveError, match=f"no WARC, ARC or Web InfoMall record found in {none}"):
        recovery_warnings(lambda: warchest.validate([SAMPLES / "sample.warc.gz", none]))


def test_an_empty_sequence_of_paths_is_refused(tmp_path):
    # No input is not an empty archive (a glob that matched nothing): as
    # every command asks for one file at least, not an empty result.
    out = tmp_path / "e.cdxj"
    for call in (
        lambda: warchest.scan([]),
        lambda: warchest.derive_text([]),
        lambda: warchest.index([], out),
        lambda: warchest.validate([]),
    ):
        with pytest.raises(ValueError, match="no file given"):
            call()
    assert not out.exists()


def test_convert_refuses_an_input_with_no_record(tmp_path):
    empty = tmp_path / "empty.arc"
    empty.write_bytes(b"")
    out = tmp_path / "out.warc.gz"
    # Not a report of 0 records read and an output of none: an input not
    # read, as `warchest convert` refuses it; nothing is left behind.
    with pytest.raises(warchest.ArchiveError, match=f"no WARC, ARC or Web InfoMall record found in {empty}"):
        warchest.convert(empty, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.arc"]


def test_convert_arc_to_warc(tmp_path):
    arc = FIXTURES / "pywb" / "example.arc.gz"
    out = tmp_path / "example.warc.gz"
    report = warchest.convert(arc, out)
    assert report["records_read"] >= 1
    recs = [r.rec_type for r in warchest.ArchiveIterator(out)]
    assert recs[0] == "warcinfo" and "response" in recs
    assert len(recs) == report["records_written"]


BARE_TOLD = "{}: 2 lenient recoveries: bare-lf (2), the first at offset 28"


def test_index_warns_once_for_each_file_read_through_recoveries(tmp_path):
    bad = bare_lf_warc(tmp_path / "bare.warc")
    clean = FIXTURES / "pywb" / "example.warc.gz"
    n, told = recovery_warnings(lambda: warchest.index([clean, bad, bad], tmp_path / "a.cdxj"))
    assert n > 2
    assert told == [BARE_TOLD.format(bad)] * 2
    _, told = recovery_warnings(lambda: warchest.index(clean, tmp_path / "b.cdxj"))
    assert told == []


def test_check_warns_of_records_read_through_recoveries(tmp_path):
    bad = bare_lf_warc(tmp_path / "bare.warc")
    recs, told = recovery_warnings(lambda: warchest.check(bad))
    assert len(recs) == 2
    assert told == [BARE_TOLD.format(bad)]
    _, told = recovery_warnings(lambda: warchest.check(SAMPLES / "sample.warc.gz"))
    assert told == []


def test_convert_counts_and_warns_of_recoveries(tmp_path):
    bad = bare_lf_warc(tmp_path / "bare.warc")
    report, told = recovery_warnings(lambda: warchest.convert(bad, tmp_path / "out.warc.gz"))
    assert report["recoveries"] == 2 and report["records_read"] == 2
    assert told == [BARE_TOLD.format(bad)]
    arc = FIXTURES / "pywb" / "example.arc.gz"
    report, told = recovery_warnings(lambda: warchest.convert(arc, tmp_path / "arc.warc.gz"))
    assert report["recoveries"] == 0 and told == []


def test_convert_and_index_refuse_an_output_that_is_an_input(tmp_path):
    src = tmp_path / "a.warc.gz"
    src.write_bytes((FIXTURES / "pywb" / "example.warc.gz").read_bytes())
    before = src.read_bytes()
    link = tmp_path / "link.warc.gz"
    link.hardlink_to(src)
    for out in [src, tmp_path / "." / "a.warc.gz", link]:
        with pytest.raises(ValueError, match="is the input"):
            warchest.convert(src, out)
        with pytest.raises(ValueError, match="is the input"):
            warchest.index([FIXTURES / "pywb" / "example.warc.gz", src], out)
        assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.warc.gz", "link.warc.gz"]


def test_convert_and_index_write_no_output_when_they_fail(tmp_path):
    good = FIXTURES / "pywb" / "example.warc.gz"
    missing = tmp_path / "missing.warc.gz"
    with pytest.raises(OSError):
        warchest.index([good, missing], tmp_path / "a.cdxj")
    with pytest.raises(OSError):
        warchest.convert(missing, tmp_path / "b.warc.gz")
    # Neither a partial output nor its .open file is left.
    assert list(tmp_path.iterdir()) == []
    # Whole: written under the name, no .open left.
    warchest.index(good, tmp_path / "a.cdxj")
    warchest.convert(good, tmp_path / "b.warc.gz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.cdxj", "b.warc.gz"]
