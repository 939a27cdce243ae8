"""warchest.derive_text: text rows as Arrow batches, the same rows
`warchest derive text` writes (docs/derive.md)."""

import pytest

import warchest
from conftest import FIXTURES

pa = pytest.importorskip("pyarrow")


def test_text_rows_of_a_real_crawl():
    table = warchest.derive_text(FIXTURES / "pywb" / "iana.warc.gz").read_all()
    assert table.column_names == [
        "url", "date", "record_id", "warc_filename", "warc_offset", "content_type",
        "language", "language_score", "languages", "title", "text", "main_text",
    ]
    rows = table.to_pylist()
    home = next(r for r in rows if r["url"] == "http://www.iana.org/")
    assert home["title"] == "Internet Assigned Numbers Authority"
    assert home["language"] == "eng"
    assert home["text"].startswith("Internet Assigned Numbers Authority\n")
    assert "\n\n" not in home["text"]
    assert 0 < len(home["main_text"]) <= len(home["text"])
    # Offsets locate the records: a scan of the same file agrees.
    scan = warchest.scan(FIXTURES / "pywb" / "iana.warc.gz", columns=["warc_record_offset", "warc_record_id"]).read_all().to_pylist()
    offsets = {r["warc_record_id"]: r["warc_record_offset"] for r in scan}
    assert all(offsets[r["record_id"]] == r["warc_offset"] for r in rows)


def test_urls_are_refused_with_a_pointer_to_the_command():
    with pytest.raises(ValueError, match="derive text"):
        warchest.derive_text("https://example.invalid/x.warc.gz")


def test_columns_project_the_table_as_the_command_does():
    iana = FIXTURES / "pywb" / "iana.warc.gz"
    full = warchest.derive_text(iana).read_all()
    assert warchest.text_columns() == full.column_names
    # Named in any order, given in the table's; the values those of the full row.
    part = warchest.derive_text(iana, columns=["text", "url"]).read_all()
    assert part.column_names == ["url", "text"]
    assert part.to_pylist() == full.select(["url", "text"]).to_pylist()
    assert warchest.derive_text(iana, columns=["title"]).read_all().column_names == ["title"]
    with pytest.raises(ValueError, match=r"unknown column \"body\".*main_text"):
        warchest.derive_text(iana, columns=["url", "body"])
    with pytest.raises(ValueError, match="no column named"):
        warchest.derive_text(iana, columns=[])


def test_a_file_with_no_record_is_an_error(tmp_path):
    # As `warchest derive text` refuses it (exit 2) and scan raises for it:
    # an empty table was silence.
    empty = tmp_path / "empty.warc"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=f"no WARC, ARC or Web InfoMall record found in {empty}"):
        warchest.derive_text(empty).read_all()
