"""ArchiveIterator over a WACZ: the archive files inside (stored in the
ZIP), read in place one after the other, give the records each file gives
on its own, at the same offsets; an archive file deflated in the ZIP (it
could not be read in place) is an error naming it."""

import zipfile

import pytest

import warchest
from conftest import FIXTURES

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
