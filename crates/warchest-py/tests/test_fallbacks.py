"""A content_stream()'s `fallbacks`: what the lenient payload decoding fell
back on (docs/python.md, "Leniency"). The bytes are warcio's either way."""

import gzip

import pytest

import warchest

TEXT = b"<html>plain text, not compressed</html>\n" * 50


def response(head, body):
    block = b"HTTP/1.1 200 OK\r\n" + head + b"Content-Type: text/html\r\n\r\n" + body
    return (
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:1>\r\n"
        b"WARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Target-URI: http://example.com/\r\n"
        b"Content-Type: application/http; msgtype=response\r\n"
        b"Content-Length: " + str(len(block)).encode() + b"\r\n\r\n" + block + b"\r\n\r\n"
    )


def chunked(body, size=100):
    out = b""
    for i in range(0, len(body), size):
        part = body[i : i + size]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


@pytest.mark.parametrize(
    "head, body, fallbacks",
    [
        # The head says gzip; the body is plain: given as stored, and said.
        (b"Content-Encoding: gzip\r\n", TEXT, ["content-coding-undecoded"]),
        # Decoded as the head says: nothing to say.
        (b"Content-Encoding: gzip\r\n", gzip.compress(TEXT), []),
        (b"Transfer-Encoding: chunked\r\n", chunked(TEXT), []),
        (
            b"Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n",
            chunked(gzip.compress(TEXT)),
            [],
        ),
        # Announced as chunked, not chunked: given whole.
        (b"Transfer-Encoding: chunked\r\n", TEXT, ["not-chunked"]),
        # Both: not chunked, and not compressed either.
        (
            b"Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n",
            TEXT,
            ["not-chunked", "content-coding-undecoded"],
        ),
        # No codings: the block itself.
        (b"", TEXT, []),
    ],
    ids=["undecoded", "gzip", "chunked", "chunked-gzip", "not-chunked", "both", "plain"],
)
@pytest.mark.parametrize("how", ["read", "lines"])
def test_fallbacks(tmp_path, head, body, fallbacks, how):
    path = tmp_path / "a.warc"
    path.write_bytes(response(head, body))
    rec = next(iter(warchest.ArchiveIterator(str(path))))
    stream = rec.content_stream()
    data = stream.read() if how == "read" else b"".join(stream)
    assert data == TEXT
    assert stream.fallbacks == fallbacks
    # The same stream, the same list; read again at its end, unchanged.
    assert rec.content_stream().fallbacks == fallbacks
    assert stream.read() == b""
    assert stream.fallbacks == fallbacks
    # The block as stored decodes nothing, so falls back on nothing.
    assert rec.raw_stream.fallbacks == []


def test_fallbacks_before_reading(tmp_path):
    """Noted as the stream is read: nothing before, complete at its end."""
    path = tmp_path / "a.warc"
    path.write_bytes(response(b"Content-Encoding: gzip\r\n", TEXT))
    stream = next(iter(warchest.ArchiveIterator(str(path)))).content_stream()
    assert stream.fallbacks == []
    stream.read()
    assert stream.fallbacks == ["content-coding-undecoded"]


def test_empty_body_is_no_fallback(tmp_path):
    """A revisit-like empty body under Content-Encoding: gzip comes out the
    same decoded or not: nothing to say."""
    path = tmp_path / "a.warc"
    path.write_bytes(response(b"Content-Encoding: gzip\r\n", b""))
    stream = next(iter(warchest.ArchiveIterator(str(path)))).content_stream()
    assert stream.read() == b""
    assert stream.fallbacks == []
