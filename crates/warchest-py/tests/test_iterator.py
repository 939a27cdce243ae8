"""ArchiveIterator against warcio, record by record, over every WARC
fixture: the same records at the same offsets and lengths, the same WARC
and HTTP headers, the same payload bytes from content_stream()."""

import io
import sys
import threading

import pytest

import warchest
from conftest import FIXTURES, SAMPLES, warc_fixtures

warcio = pytest.importorskip("warcio")
from warcio.archiveiterator import ArchiveIterator as WarcioIterator  # noqa: E402

# Files where warcio and warchest disagree, and why (docs/python.md).
WARCIO_WRONG = {
    # Two header-only records without Content-Length: warcio reads the
    # second as the first's block.
    "invalid-warcfile-lonely-warcinfo-metadata.warc",
}


# Records without Content-Length: warcio reads to the end of the file as
# the block, warchest's reader gives an empty block (and a warning).
NO_CONTENT_LENGTH = {
    "invalid-warcfile-lonely-continuation.warc",
    "invalid-warcfile-lonely-monkeys.warc",
}


# Records whose payload or HTTP head the two read differently, and why.
KNOWN = {
    # "HTTPX/1.1 200 OK": warcio takes any first word as the protocol;
    # warchest sees no HTTP head, so content_stream() is the whole block.
    ("example-extra.warc", 3207): "http",
    # A chunk shorter than its size line: warcio gives the body as stored,
    # warchest the data of the broken chunk.
    ("bad_http_chunked_content.warc", 0): "content",
}


def norm(name, value):
    v = " ".join(value.split())
    if name.lower() == "warc-target-uri":
        # warcio percent-encodes spaces in URIs; warchest gives the URI as
        # written (only without Wget's <...>).
        v = v.replace(" ", "%20")
        while v.startswith("%20"):
            v = v[3:]
    return v


def pairs(h):
    return [(n.strip(), norm(n.strip(), v)) for n, v in h.headers]


def view(it_cls, path, **kw):
    """What an iterator sees: one dict per record."""
    out = []
    with open(path, "rb") as f:
        it = it_cls(f, **kw)
        for rec in it:
            # Content first: warcio's get_record_offset() skips the record.
            r = {
                "content": rec.content_stream().read(),
                "type": rec.rec_type,
                "warc": pairs(rec.rec_headers),
                "http": None,
            }
            r["offset"] = it.get_record_offset()
            if rec.http_headers is not None:
                r["http"] = (
                    rec.http_headers.get_statuscode(),
                    pairs(rec.http_headers),
                )
            r["length"] = it.get_record_length()
            out.append(r)
    return out


def warcio_view(path):
    try:
        return view(WarcioIterator, path, check_digests=False)
    except Exception:  # warcio refuses whole-file gzip and crashes on some damage
        return None


def comparable():
    return [p for p in warc_fixtures() if not p.name.endswith(".lz4") and p.name not in WARCIO_WRONG]


@pytest.mark.parametrize("path", comparable(), ids=lambda p: p.name)
def test_same_records_as_warcio(path):
    ours = view(warchest.ArchiveIterator, path)
    theirs = warcio_view(path)
    if theirs is None:
        # warcio refused the file; warchest must still read records.
        assert ours, path
        return
    assert len(ours) == len(theirs), path
    for o, t in zip(ours, theirs):
        where = f"{path.name} at {t['offset']}"
        assert o["offset"] == t["offset"], where
        # warcio keeps the white space before a value folded onto the
        # next line (`WARC-Type:\r\n\twarcinfo`); the grammar drops it.
        assert o["type"] == t["type"].strip(), where
        assert o["warc"] == t["warc"], where
        known = KNOWN.get((path.name, t["offset"]))
        if known == "http":
            assert o["http"] is None and t["http"] is not None, where
            continue
        assert (o["http"] is None) == (t["http"] is None), where
        if t["http"] is not None:
            assert o["http"][0] == t["http"][0], where
            assert o["http"][1] == t["http"][1], where
        if path.name not in NO_CONTENT_LENGTH and known != "content":
            assert o["content"] == t["content"], where
        if path.suffix in (".gz", ".zst"):
            assert o["length"] == t["length"], where
        else:
            # Uncompressed: warcio leaves the CRLF CRLF after the block out
            # of the length; warchest counts it, as `warchest ls` and the
            # indexes do (the next record starts after it).
            assert 0 <= o["length"] - t["length"] <= 4, where


def test_lonely_header_only_records_are_two():
    path = FIXTURES / "jwat" / "invalid-warcfile-lonely-warcinfo-metadata.warc"
    recs = [r.rec_type for r in warchest.ArchiveIterator(str(path))]
    assert len(recs) == 2


class Pipe:
    """A file object with read() only: no seek, no tell, small reads."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def read(self, n=-1):
        n = min(n if n >= 0 else len(self.data), 777)
        b = self.data[self.pos : self.pos + n]
        self.pos += len(b)
        return b


def test_non_seekable_file_objects_and_paths_agree():
    path = FIXTURES / "pywb" / "iana.warc.gz"
    by_path = [(r.offset, r.rec_type, r.content_stream().read()) for r in warchest.ArchiveIterator(path)]
    piped = [
        (r.offset, r.rec_type, r.content_stream().read())
        for r in warchest.ArchiveIterator(Pipe(path.read_bytes()))
    ]
    assert len(by_path) == 343
    assert by_path == piped


def test_offsets_count_from_where_the_file_was():
    path = FIXTURES / "warcio" / "example.warc.gz"
    offsets = [r.offset for r in warchest.ArchiveIterator(path)]
    with open(path, "rb") as f:
        f.seek(offsets[1])
        again = [r.offset for r in warchest.ArchiveIterator(f)]
    assert again == offsets[1:]


def test_lz4_which_warcio_cannot_read():
    plain = FIXTURES / "resiliparse" / "warcfile.warc.gz"
    lz4 = FIXTURES / "resiliparse" / "warcfile.warc.lz4"
    a = [(r.rec_type, r.rec_headers.get_header("WARC-Record-ID"), r.content_stream().read()) for r in warchest.ArchiveIterator(plain)]
    b = [(r.rec_type, r.rec_headers.get_header("WARC-Record-ID"), r.content_stream().read()) for r in warchest.ArchiveIterator(lz4)]
    assert a and a == b


def test_record_types_and_parse_http():
    path = FIXTURES / "pywb" / "iana.warc.gz"
    types = {r.rec_type for r in warchest.ArchiveIterator(path, record_types=["response"])}
    assert types == {"response"}
    for rec in warchest.ArchiveIterator(path, record_types=["response"], parse_http=False):
        assert rec.http_headers is None
        assert rec.raw_stream.read(5) == b"HTTP/"
        break


def test_raw_stream_keeps_codings_and_content_stream_removes_them():
    path = FIXTURES / "warcio" / "example-iana.org-chunked.warc"
    rec = next(r for r in warchest.ArchiveIterator(path) if r.rec_type == "response")
    assert rec.http_headers.get_header("Transfer-Encoding") == "chunked"
    body = rec.content_stream().read()
    assert b"<html" in body.lower()
    rec2 = next(r for r in warchest.ArchiveIterator(path) if r.rec_type == "response")
    raw = rec2.raw_stream.read()
    assert raw != body and len(raw) > len(body)


def test_stream_of_an_earlier_record_raises():
    it = warchest.ArchiveIterator(SAMPLES / "sample.warc.gz")
    first = next(it)
    next(it)
    with pytest.raises(OSError, match="no longer current"):
        first.content_stream().read()


def test_readline_and_iteration_by_lines():
    path = FIXTURES / "warcio" / "example.warc"
    rec = next(r for r in warchest.ArchiveIterator(path) if r.rec_type == "warcinfo")
    first = rec.content_stream().readline()
    assert first.endswith(b"\n")
    rest = list(rec.content_stream())
    assert all(line.endswith(b"\n") for line in rest[:-1])
    whole = next(r for r in warchest.ArchiveIterator(path) if r.rec_type == "warcinfo").content_stream().read()
    assert first + b"".join(rest) == whole


def test_text_mode_files_are_refused():
    with open(SAMPLES / "sample.warc.gz", "r", encoding="latin-1") as f:
        with pytest.raises(OSError, match="binary"):
            list(warchest.ArchiveIterator(f))


def test_iterators_in_threads_give_what_one_thread_gives():
    # The lock is released while parsing: two iterators on two threads
    # must neither deadlock nor mix their records.
    paths = [FIXTURES / "pywb" / "iana.warc.gz", FIXTURES / "warcio" / "example.warc.gz"]
    want = [[(r.offset, len(r.content_stream().read())) for r in warchest.ArchiveIterator(p)] for p in paths]
    got = [None, None]

    def run(i):
        got[i] = [(r.offset, len(r.content_stream().read())) for r in warchest.ArchiveIterator(Pipe(paths[i].read_bytes()))]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert got == want


def test_arc_records_have_warc_views():
    path = FIXTURES / "pywb" / "example.arc.gz"
    if not path.exists():
        path = next(FIXTURES.rglob("*.arc.gz"))
    recs = list(warchest.ArchiveIterator(path))
    assert recs and all(r.format == "arc" for r in recs)


def test_headers_api():
    rec = next(iter(warchest.ArchiveIterator(SAMPLES / "sample.warc.gz", record_types=["response"])))
    h = rec.rec_headers
    assert h.get_header("warc-type") == "response"
    assert h.get_header("X-Missing", "dflt") == "dflt"
    assert "WARC-Date" in h
    assert h.protocol.startswith("WARC/")
    assert rec.http_headers.get_statuscode() == "200"
    assert rec.http_headers.protocol.startswith("HTTP/")
    assert len(h) == len(h.headers) == len(list(h))


def test_get_header_decodes_encoded_words_when_asked():
    # Issue 19: RFC 2047 encoded words (WARC 1.1 section 4) as written by
    # default, as warcio gives them; decoded with decode=True.
    rec = (
        b"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:1>\r\n"
        b"WARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Target-URI: file:///a\r\n"
        b"X-Title: =?UTF-8?B?Y2Fmw6k=?= au =?UTF-8?Q?lait?=\r\n"
        b"Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nok\r\n\r\n"
    )
    r = next(iter(warchest.ArchiveIterator(io.BytesIO(rec))))
    h = r.rec_headers
    assert h.get_header("X-Title") == "=?UTF-8?B?Y2Fmw6k=?= au =?UTF-8?Q?lait?="
    assert h.get_header("X-Title", decode=True) == "caf\u00e9 au lait"
    assert h.get_all("x-title", decode=True) == ["caf\u00e9 au lait"]
    assert h.get_header("X-Missing", "dflt", decode=True) == "dflt"


def test_read_sizes_add_up():
    path = FIXTURES / "pywb" / "iana.warc.gz"
    whole = [r.content_stream().read() for r in warchest.ArchiveIterator(path, record_types=["response"])]
    for rec, want in zip(warchest.ArchiveIterator(path, record_types=["response"]), whole):
        s = rec.content_stream()
        head = s.read(5)
        line = s.readline()
        one = s.read1(100)
        rest = s.read()
        assert len(head) == min(5, len(want))
        assert len(one) <= 100
        assert head + line + one + rest == want
        assert s.read() == b"" and s.read(10) == b""


@pytest.mark.parametrize("compress", ["gzip", "zstd", "lz4"])
def test_threads_change_nothing(tmp_path, compress):
    # Big enough for members to be decoded ahead on other threads.
    path = tmp_path / "many.warc"
    with warchest.WARCWriter(path, compress=compress) as w:
        for i in range(3000):
            body = (f"record {i} ".encode() * (50 + i % 300))[: 200 + (i * 7919) % 1500]
            w.write_record("resource", f"http://example.com/{i}", payload=body, content_type="text/plain")
    files = [path] + [p for p in warc_fixtures() if p.name.endswith((".gz", ".zst", ".lz4"))]
    for p in files:
        def read(threads):
            return [
                (r.offset, r.length, r.rec_type, r.content_stream().read())
                for r in warchest.ArchiveIterator(p, threads=threads)
            ]
        one = read(1)
        assert read(2) == one, p
        assert read(3) == one, p
    assert len([r for r in warchest.ArchiveIterator(path, threads=2)]) == 3000


# Issue 20: what the per-record fast paths must not change.


def warc_record(rec_type, block, content_length=None, extra=b""):
    n = len(block) if content_length is None else content_length
    return (
        b"WARC/1.1\r\nWARC-Type: " + rec_type + b"\r\nWARC-Record-ID: <urn:uuid:1>\r\n"
        b"WARC-Date: 2024-01-02T03:04:05Z\r\n" + extra + b"Content-Length: " + str(n).encode() + b"\r\n\r\n" + block
    )


HTTP_BLOCK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + b"0123456789" * 30


def test_header_objects_are_made_once_and_types_kept_as_written():
    data = warc_record(b"Response", HTTP_BLOCK, extra=b"WARC-Target-URI: <http://a.example/x>\r\n") + b"\r\n\r\n"
    data += warc_record(b"resource", b"ok", extra=b"WARC-Target-URI: \r\n  file:///b\r\n") + b"\r\n\r\n"
    first, second = list(warchest.ArchiveIterator(io.BytesIO(data)))
    assert first.rec_headers is first.rec_headers
    assert first.http_headers is first.http_headers
    assert second.http_headers is None and second.http_headers is None
    # WARC-Type as written, whatever its case; the standard ones as well.
    assert first.rec_type == "Response" and second.rec_type == "resource"
    assert first.rec_headers.get_header("WARC-Target-URI") == "http://a.example/x"
    assert second.rec_headers.get_header("warc-target-uri") == "file:///b"
    assert first.rec_headers.get_header("X-None") is None
    assert first.rec_headers.headers[0] == ("WARC-Type", "Response")


@pytest.mark.parametrize("make", [lambda b: io.BytesIO(b), lambda b: Pipe(b)], ids=["file", "pipe"])
def test_payload_of_a_file_cut_short(make, tmp_path):
    # Content-Length says 1000, the file ends 300 bytes into the payload:
    # read() gives what there is, as reading it in pieces does.
    data = warc_record(b"response", HTTP_BLOCK, content_length=1000, extra=b"WARC-Target-URI: http://a.example/\r\n")
    body = HTTP_BLOCK.split(b"\r\n\r\n", 1)[1]
    rec = next(iter(warchest.ArchiveIterator(make(data))))
    assert rec.content_stream().read() == body
    rec = next(iter(warchest.ArchiveIterator(make(data))))
    s = rec.content_stream()
    assert s.read(7) + s.read(10_000) + s.read() == body
    path = tmp_path / "cut.warc"
    path.write_bytes(data)
    rec = next(iter(warchest.ArchiveIterator(path)))
    assert rec.raw_stream.read() == body


def test_reads_of_every_size_agree_with_one_read():
    # A payload longer than what is read holding the interpreter lock,
    # and short ones, in pieces and whole.
    big = b"HTTP/1.1 200 OK\r\n\r\n" + bytes(range(256)) * 1200
    data = b""
    for block in (HTTP_BLOCK, big, b"HTTP/1.1 204 No Content\r\n\r\n"):
        data += warc_record(b"response", block, extra=b"WARC-Target-URI: http://a.example/\r\n") + b"\r\n\r\n"
    whole = [r.content_stream().read() for r in warchest.ArchiveIterator(io.BytesIO(data))]
    assert [len(w) for w in whole] == [300, 256 * 1200, 0]
    for size in (1, 1000, 65536, 1 << 20):
        got = []
        for r in warchest.ArchiveIterator(io.BytesIO(data)):
            s = r.content_stream()
            parts = []
            while True:
                b = s.read(size)
                assert len(b) <= size
                if not b:
                    break
                parts.append(b)
            got.append(b"".join(parts))
        assert got == whole, size


class SlowFile(io.BytesIO):
    """A file object whose reads wait a little, holding nothing."""

    def read(self, n=-1):
        import time

        time.sleep(0.001)
        return super().read(min(n, 500) if n is not None and n >= 0 else 500)


def test_stream_read_while_another_thread_iterates_does_not_deadlock():
    # Thread B iterates (holding the reader while its file object's read()
    # waits for the interpreter lock) while thread A reads the current
    # record's stream holding that lock: A must not wait for the reader
    # with it held.
    data = b"".join(
        warc_record(b"response", HTTP_BLOCK, extra=b"WARC-Target-URI: http://a.example/\r\n") + b"\r\n\r\n"
        for _ in range(200)
    )
    it = warchest.ArchiveIterator(SlowFile(data))
    current = [next(it)]
    stop = threading.Event()
    outcomes = []

    def iterate():
        for rec in it:
            current[0] = rec
        stop.set()

    def read():
        while not stop.is_set():
            try:
                outcomes.append(len(current[0].content_stream().read()))
            except OSError as e:
                assert "no longer current" in str(e)
                outcomes.append(None)

    threads = [threading.Thread(target=iterate), threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert outcomes and all(o in (None, 0, 300) for o in outcomes)


def test_offset_and_close_while_another_thread_iterates_do_not_deadlock():
    # get_record_offset() and close() wait for the reader with the
    # interpreter lock released, as every other path does.
    data = b"".join(
        warc_record(b"resource", b"x" * 100, extra=b"WARC-Target-URI: file:///a\r\n") + b"\r\n\r\n"
        for _ in range(300)
    )
    it = warchest.ArchiveIterator(SlowFile(data))
    next(it)
    stop = threading.Event()
    offsets = []

    def iterate():
        for _ in it:
            pass
        stop.set()

    def ask():
        while not stop.is_set():
            try:
                offsets.append(it.get_record_offset())
            except ValueError:  # past the last record
                break

    threads = [threading.Thread(target=iterate), threading.Thread(target=ask)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert offsets and offsets == sorted(offsets)
    it.close()
    assert list(it) == []


def mapped(path):
    with open("/proc/self/maps") as f:
        return str(path) in f.read()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_large_payload_read_lets_a_plain_files_map_go(tmp_path):
    # A plain file by path is mapped; the first payload of 16 KiB or more
    # read whole lets the map go (read calls from there: docs/python.md),
    # and every payload, before and after, is the one a file object gives.
    big = b"HTTP/1.1 200 OK\r\n\r\n" + bytes(range(256)) * 400
    data = b""
    for i in range(30):
        block = big if i == 10 else HTTP_BLOCK
        data += warc_record(b"response", block, extra=b"WARC-Target-URI: http://a.example/\r\n") + b"\r\n\r\n"
    path = tmp_path / "plain.warc"
    path.write_bytes(data)
    want = [r.content_stream().read() for r in warchest.ArchiveIterator(io.BytesIO(data))]
    assert len(want[10]) == 256 * 400
    got, seen = [], []
    for i, r in enumerate(warchest.ArchiveIterator(str(path))):
        got.append(r.content_stream().read())
        seen.append(mapped(path))
    assert got == want
    assert seen[:10] == [True] * 10
    assert seen[10:] == [False] * 20
