"""ArchiveIterator over a WACZ: the archive files inside (stored in the
ZIP), read in place one after the other, give the records each file gives
on its own, at the same offsets; an archive file deflated in the ZIP (it
could not be read in place) is an error naming it."""

import zipfile

import pytest

import warchest
from conftest import FIXTURES, bare_lf_warc, recovery_warnings

WARCS = [FIXTURES / "pywb" / "example.warc.gz", FIXTURES / "pywb" / "iana.warc.gz"]


def records(source):
    out = []
    it = warchest.ArchiveIterator(source)
    for rec in it:
        out.append(
            (
                rec.rec_headers.get_header("WARC-Record-ID"),
                it.get_record_offset(),
                rec.content_stream().read(),
            )
        )
    return out


def make_wacz(path, compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("datapackage.json", "{}", compress_type=zipfile.ZIP_DEFLATED)
        for w in WARCS:
            z.write(w, f"archive/{w.name}", compress_type=compress)
        z.writestr("pages/pages.jsonl", '{"format": "json-pages-1.0"}\n')


def test_a_wacz_reads_as_its_archive_files(tmp_path):
    wacz = tmp_path / "x.wacz"
    make_wacz(wacz)
    want = []
    for w in WARCS:
        want.extend(records(str(w)))
    got = records(str(wacz))
    assert len(want) > 10
    assert got == want


def test_a_wacz_by_pathlike_with_record_types(tmp_path):
    wacz = tmp_path / "x.wacz"
    make_wacz(wacz)
    it = warchest.ArchiveIterator(wacz, record_types=["response"])
    types = {r.rec_headers.get_header("WARC-Type") for r in it}
    assert types == {"response"}


def test_a_deflated_archive_file_is_an_error(tmp_path):
    wacz = tmp_path / "x.wacz"
    make_wacz(wacz, compress=zipfile.ZIP_DEFLATED)
    with pytest.raises(Exception, match="compressed in the ZIP"):
        warchest.ArchiveIterator(str(wacz))


def test_a_file_that_is_not_a_zip_is_an_error(tmp_path):
    wacz = tmp_path / "x.wacz"
    wacz.write_bytes(b"not a zip file at all")
    with pytest.raises(Exception, match="x.wacz"):
        warchest.ArchiveIterator(str(wacz))


# scan, check and index read a WACZ as ArchiveIterator does: each archive
# file in place, named FILE.wacz#archive/NAME (as `warchest ls x.wacz`
# names it), its offsets its own; not the ZIP's bytes.


def member(wacz, w):
    return f"{wacz}#archive/{w.name}"


def test_scan_reads_a_wacz_as_its_archive_files(tmp_path):
    pytest.importorskip("pyarrow")
    wacz = tmp_path / "x.wacz"
    make_wacz(wacz)
    want = []
    for w in WARCS:
        t, _ = recovery_warnings(lambda: warchest.scan(w, include_payload=True).read_all().to_pylist())
        for r in t:
            r["warc_filename"] = member(wacz, w)
        want.extend(t)
    got, told = recovery_warnings(lambda: warchest.scan(wacz, include_payload=True).read_all().to_pylist())
    assert len(want) > 10
    assert got == want
    assert all(r["error"] is None for r in got)
    # What reading noted names the archive file too.
    assert told and all(t.startswith(member(wacz, WARCS[1]) + ": ") for t in told)
    # Not split: a range from 0 reads it all, any other nothing, as for a
    # compressed file.
    size = wacz.stat().st_size
    assert warchest.split_ranges(wacz, 100) == [(0, size)]
    whole, _ = recovery_warnings(
        lambda: warchest.scan(wacz, include_payload=True, byte_range=(0, size)).read_all().to_pylist()
    )
    assert whole == want
    assert warchest.scan(wacz, byte_range=(100, size)).read_all().num_rows == 0


def test_an_archive_file_named_as_rows_name_it_is_read_alone(tmp_path):
    """The name a row or a warning gives an archive file of a WACZ,
    FILE.wacz#archive/NAME, is read as that archive file alone by every
    call, as `warchest ls FILE.wacz#archive/NAME` reads it (it was taken
    for a file of that name, not found); one the WACZ does not hold is an
    error naming it."""
    pytest.importorskip("pyarrow")
    wacz = tmp_path / "x.wacz"
    make_wacz(wacz)
    w = WARCS[0]
    name = warchest.scan(wacz).read_all()["warc_filename"][0].as_py()
    assert name == member(wacz, w)
    assert records(name) == records(str(w))
    got = warchest.scan(name, include_payload=True).read_all().to_pylist()
    want = warchest.scan(w, include_payload=True).read_all().to_pylist()
    assert [r.pop("warc_filename") for r in got] == [name] * len(want)
    assert [r.pop("warc_filename") for r in want] == [str(w)] * len(got)
    assert got == want and len(got) > 3
    assert [r["offset"] for r in warchest.check(name)] == [r["offset"] for r in warchest.check(w)]
    assert warchest.index(name, tmp_path / "m.cdxj") == warchest.index(w, tmp_path / "w.cdxj")
    assert (tmp_path / "m.cdxj").read_text() == (tmp_path / "w.cdxj").read_text()
    assert [f["file"] for f in warchest.validate(name)["summary"]["files"]] == [name]
    assert warchest.split_ranges(name, 100) == [(0, w.stat().st_size)]
    # derive_text: the WACZ as its archive files, and one alone by name.
    text = lambda src: warchest.derive_text(src, columns=["url", "warc_filename"]).read_all().to_pylist()
    by_wacz, by_file = text(wacz), text(w)
    assert [r["url"] for r in text(name)] == [r["url"] for r in by_file] and by_file
    assert {r["warc_filename"] for r in text(name)} == {name}
    assert len(by_wacz) == len(by_file) + len(text(WARCS[1]))
    gone = f"{wacz}#archive/none.warc.gz"
    with pytest.raises(warchest.ArchiveError, match=f"{wacz}: no archive file archive/none.warc.gz in the WACZ"):
        warchest.ArchiveIterator(gone)
    with pytest.raises(warchest.ArchiveError, match="no archive file archive/none.warc.gz"):
        warchest.check(gone)


def test_check_reads_a_wacz_as_its_archive_files(tmp_path):
    wacz = tmp_path / "x.wacz"
    make_wacz(wacz)
    want = []
    for w in WARCS:
        recs = warchest.check(w)
        assert {r["file"] for r in recs} == {str(w)}
        for r in recs:
            r["file"] = member(wacz, w)
        want.extend(recs)
    got = warchest.check(wacz)
    assert len(want) > 10
    assert got == want


def test_index_reads_a_wacz_as_its_archive_files(tmp_path):
    wacz = tmp_path / "x.wacz"
    make_wacz(wacz)
    # The entries name each archive file by its own name, at its offsets:
    # what indexing the WARC files themselves gives.
    n = warchest.index(wacz, tmp_path / "wacz.cdxj")
    m = warchest.index(WARCS, tmp_path / "warcs.cdxj")
    assert n == m > 10
    assert (tmp_path / "wacz.cdxj").read_text() == (tmp_path / "warcs.cdxj").read_text()


def test_validate_reads_a_wacz_as_its_archive_files(tmp_path):
    """validate() of a WACZ gives the findings and summary of its archive
    files validated together, each named FILE.wacz#archive/NAME (it read
    the ZIP's bytes as one file)."""
    wacz = tmp_path / "x.wacz"
    make_wacz(wacz)
    want = warchest.validate(WARCS)
    names = {str(w): member(wacz, w) for w in WARCS}
    for f in want["findings"]:
        f["file"] = names[f["file"]]
    for f in want["summary"]["files"]:
        f["file"] = names[f["file"]]
    got = warchest.validate(wacz)
    assert len(want["findings"]) > 0
    assert [f["records"] for f in got["summary"]["files"]] == [len(records(str(w))) for w in WARCS]
    assert got == want


def whole_records(path):
    """Each record's WARC headers and block, as read back."""
    return [(r.rec_headers.headers, r.content_stream().read()) for r in warchest.ArchiveIterator(str(path))]


def test_convert_reads_a_wacz_as_its_archive_files(tmp_path):
    """convert() of a WACZ converts its archive files, one after the other,
    into the one output (as `warchest convert x.wacz -o OUT`): a WARC is
    copied record by record, so the output holds the records of its WARC
    files, in order (it read the ZIP's bytes and found no record)."""
    wacz = tmp_path / "x.wacz"
    make_wacz(wacz)
    out = tmp_path / "out.warc.gz"
    report, told = recovery_warnings(lambda: warchest.convert(wacz, out))
    want = [r for w in WARCS for r in whole_records(w)]
    assert len(want) > 10
    assert whole_records(out) == want
    assert report["records_read"] == report["records_written"] == len(want)
    assert report["recoveries"] == 0 and told == []


def test_convert_of_a_wacz_tells_each_archive_files_recoveries(tmp_path):
    """Two archive files read through recoveries: one report counting
    both, and one RecoveryWarning for each, naming it."""
    bare = bare_lf_warc(tmp_path / "bare.warc")
    wacz = tmp_path / "x.wacz"
    with zipfile.ZipFile(wacz, "w") as z:
        z.write(bare, "archive/a.warc")
        z.write(bare, "archive/b.warc")
    report, told = recovery_warnings(lambda: warchest.convert(wacz, tmp_path / "out.warc.gz"))
    assert report["records_read"] == 4 and report["recoveries"] == 4
    assert told == [
        f"{wacz}#archive/{n}: 2 lenient recoveries: bare-lf (2), the first at offset 28" for n in ("a.warc", "b.warc")
    ]


def empty_wacz(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("datapackage.json", "{}")
    return path


@pytest.mark.parametrize(
    "call,error",
    [
        # A scan's error crosses the Arrow C stream: pyarrow raises its own.
        (lambda p, tmp: warchest.scan(p).read_all(), Exception),
        (lambda p, tmp: warchest.check(p), warchest.ArchiveError),
        (lambda p, tmp: warchest.index(p, tmp / "o.cdxj"), warchest.ArchiveError),
        (lambda p, tmp: warchest.ArchiveIterator(p), warchest.ArchiveError),
        (lambda p, tmp: warchest.validate(p), warchest.ArchiveError),
        (lambda p, tmp: warchest.convert(p, tmp / "o.warc.gz"), warchest.ArchiveError),
    ],
    ids=["scan", "check", "index", "iterator", "validate", "convert"],
)
def test_a_wacz_with_no_archive_file_or_a_deflated_one_is_refused(tmp_path, call, error):
    """Not an empty result: a WACZ with nothing under archive/ is refused,
    as the command line refuses it, and an archive file deflated in the
    ZIP (it could not be read in place) names itself."""
    empty = empty_wacz(tmp_path / "e.wacz")
    with pytest.raises(error, match=f"{empty}: .*no archive file"):
        call(empty, tmp_path)
    deflated = tmp_path / "d.wacz"
    make_wacz(deflated, compress=zipfile.ZIP_DEFLATED)
    with pytest.raises(error, match="compressed in the ZIP"):
        call(deflated, tmp_path)
    assert not (tmp_path / "o.cdxj").exists()
    assert not list(tmp_path.glob("o.warc.gz*"))


def test_scan_with_skip_errors_gives_a_bad_wacz_its_error_row(tmp_path):
    pytest.importorskip("pyarrow")
    bad = empty_wacz(tmp_path / "e.wacz")
    t = warchest.scan([bad, WARCS[0]], skip_errors=True).read_all().to_pylist()
    assert t[0]["warc_filename"] == str(bad)
    assert "no archive file" in t[0]["error"]
    assert len(t) == 1 + warchest.scan(WARCS[0]).read_all().num_rows
