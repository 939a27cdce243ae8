"""WARCWriter: what it writes, read back by warcio and by warchest."""

import io

import pytest

import warchest

warcio = pytest.importorskip("warcio")
from warcio.archiveiterator import ArchiveIterator as WarcioIterator  # noqa: E402


@pytest.mark.parametrize("compress", ["gzip", None, "zstd", "lz4"])
def test_written_records_read_back(tmp_path, compress):
    path = tmp_path / "out.warc"
    with warchest.WARCWriter(path, compress=compress) as w:
        info = w.write_warcinfo("out.warc", {"operator": "tests"})
        resp = w.write_record(
            "response",
            "http://example.com/",
            payload=b"<html>hi</html>",
            http_headers=[("Content-Type", "text/html"), ("Content-Length", "15")],
            http_statusline="HTTP/1.1 200 OK",
        )
        res = w.write_record("resource", "file:///a.txt", payload=io.BytesIO(b"abc"), content_type="text/plain")
    assert info["offset"] == 0 and resp["offset"] == info["length"]
    recs = list(warchest.ArchiveIterator(path))
    assert [r.rec_type for r in recs] == ["warcinfo", "response", "resource"]
    assert [r.offset for r in recs] == [info["offset"], resp["offset"], res["offset"]]
    if compress not in ("zstd", "lz4"):
        with open(path, "rb") as f:
            seen = []
            for rec in WarcioIterator(f, check_digests="raise"):
                seen.append((rec.rec_type, rec.content_stream().read()))
        assert seen[1] == ("response", b"<html>hi</html>")
        assert seen[2] == ("resource", b"abc")


def test_writes_to_file_objects():
    buf = io.BytesIO()
    w = warchest.WARCWriter(buf)
    w.write_record("resource", "urn:x", payload=b"data", content_type="text/plain", warc_headers={"X-Note": "1"})
    w.close()
    recs = list(warchest.ArchiveIterator(io.BytesIO(buf.getvalue())))
    assert recs[0].rec_headers.get_header("X-Note") == "1"


def test_bad_arguments():
    with pytest.raises(ValueError):
        warchest.WARCWriter(io.BytesIO(), compress="rar")
    w = warchest.WARCWriter(io.BytesIO())
    with pytest.raises(ValueError):
        w.write_record("response", "http://a/", http_headers=[("A\r\nB", "x")])
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.write_record("resource", "urn:y", payload=b"")


def test_a_path_that_cannot_be_created_is_named(tmp_path):
    # As open() raises it: the OSError subclass of its errno, with the name.
    with pytest.raises(IsADirectoryError) as e:
        warchest.WARCWriter(tmp_path)
    assert e.value.filename == str(tmp_path)
    with pytest.raises(FileNotFoundError, match="no-such-dir"):
        warchest.WARCWriter(tmp_path / "no-such-dir" / "x.warc.gz")
