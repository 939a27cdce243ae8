"""Which exception a failure met while reading a record's stream raises:
bad bytes are an ArchiveError naming the file and offset, an I/O failure
of the source stays an OSError; without strict, what the lenient reader
recovered from is in the iterator's `warnings` and `warning_counts`
(docs/python.md, "Leniency")."""

import collections
import io
import struct
import zipfile
import zlib

import pytest

import warchest
from conftest import FIXTURES, warc_fixtures


def warc_record(rec_type, block):
    return (
        b"WARC/1.1\r\nWARC-Type: " + rec_type + b"\r\nWARC-Record-ID: <urn:uuid:1>\r\n"
        b"WARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Target-URI: file:///a\r\n"
        b"Content-Length: " + str(len(block)).encode() + b"\r\n\r\n" + block + b"\r\n\r\n"
    )


def gzip_member(parts):
    """One gzip member of the parts joined, and where in it each part's
    deflate data ends. A full flush after each part ends it on a byte
    boundary, so the byte after it starts a new deflate block."""
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    body, ends = b"", []
    for part in parts:
        body += c.compress(part) + c.flush(zlib.Z_FULL_FLUSH)
        ends.append(len(header) + len(body))
    body += c.flush()
    data = b"".join(parts)
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return header + body + trailer, ends


# Compressible but not uniform: deflate codes it with Huffman blocks.
PAYLOAD = b"".join(b"line %d of the payload\n" % i for i in range(400_000))


def corrupt_warc_gz(path):
    """A .warc.gz of two records, one gzip member each, the second's
    deflate data damaged megabytes into its block (well past the bytes
    read with its header), and that member's stored offset."""
    first, _ = gzip_member([warc_record(b"resource", b"ok")])
    rec = warc_record(b"resource", PAYLOAD)
    cut = len(rec) // 2
    member, ends = gzip_member([rec[:cut], rec[cut:]])
    member = bytearray(member)
    # The first byte of a deflate block: BFINAL 1, BTYPE 11, a block type
    # deflate reserves, so inflating must fail there.
    member[ends[0]] = 0xFF
    path.write_bytes(first + bytes(member))
    return len(first)


def test_corrupt_member_while_reading_a_stream_is_an_archive_error(tmp_path):
    path = tmp_path / "damaged.warc.gz"
    offset = corrupt_warc_gz(path)
    it = warchest.ArchiveIterator(path, strict=True)
    assert next(it).content_stream().read() == b"ok"
    rec = next(it)
    assert rec.offset == offset
    stream = rec.content_stream()
    # The header and the block's start decode: the damage is met by the
    # stream, not by the iterator.
    assert stream.read(1000) == PAYLOAD[:1000]
    with pytest.raises(warchest.ArchiveError) as e:
        stream.read()
    # ArchiveError is a ValueError, not an OSError: the exact class, not a
    # bare OSError with the archive's message.
    assert e.type is warchest.ArchiveError
    assert issubclass(warchest.ArchiveError, ValueError)
    assert not isinstance(e.value, OSError)
    msg = str(e.value)
    assert "damaged.warc.gz" in msg, msg
    assert f"offset {offset}" in msg, msg


class FailingFile(io.BytesIO):
    """A file whose reads fail once `fail_at` bytes have been read."""

    def __init__(self, data, fail_at):
        super().__init__(data)
        self.fail_at = fail_at

    def read(self, n=-1):
        if self.tell() >= self.fail_at:
            raise OSError("the disk went away")
        return super().read(n)


def test_io_failure_while_reading_a_stream_stays_an_os_error():
    # Uncompressed, larger than the reader's 1 MiB reads of a file object:
    # the failure comes while the stream reads the block.
    data = warc_record(b"resource", PAYLOAD)
    stream = next(warchest.ArchiveIterator(FailingFile(data, 2 << 20))).content_stream()
    assert stream.read(1000) == PAYLOAD[:1000]
    with pytest.raises(OSError) as e:
        stream.read()
    assert not isinstance(e.value, warchest.ArchiveError)
    assert "the disk went away" in str(e.value)


def kinds(it):
    return [(w["kind"], w["offset"], w["record"]) for w in it.warnings]


def counts_match(it):
    """warning_counts counts what warnings lists (fewer than 1000 here)."""
    ws = it.warnings
    assert len(ws) < 1000
    assert it.warning_counts == dict(collections.Counter(w["kind"] for w in ws))


@pytest.mark.parametrize("threads", [0, 1])
def test_lenient_damaged_member_is_counted(tmp_path, threads):
    path = tmp_path / "damaged.warc.gz"
    offset = corrupt_warc_gz(path)
    it = warchest.ArchiveIterator(path, threads=threads)
    assert next(it).content_stream().read() == b"ok"
    assert it.warnings == []
    stream = next(it).content_stream()
    body = stream.read()
    # The block ends early with what decoded, no exception...
    assert 1000 < len(body) < len(PAYLOAD)
    assert PAYLOAD.startswith(body)
    # ...and it says so before the next record is asked for: the member's
    # damage at its start (no record: the decoder knows members) and the
    # record cut short.
    assert sorted(kinds(it), key=str) == [
        ("damaged-member", offset, None),
        ("truncated-record", offset, 1),
    ]
    damaged = next(w for w in it.warnings if w["kind"] == "damaged-member")
    assert "corrupt deflate data" in damaged["message"]
    truncated = next(w for w in it.warnings if w["kind"] == "truncated-record")
    assert truncated["record_id"] == "<urn:uuid:1>"
    assert f"ends after {len(body)} block bytes" in truncated["message"]
    assert list(it) == []
    assert it.warning_counts == {"damaged-member": 1, "truncated-record": 1}
    counts_match(it)


def test_damaged_member_before_an_intact_one(tmp_path):
    # Decoding resumes at the next member, which starts a record: the
    # damaged record's Content-Length is reported as not met there.
    first, _ = gzip_member([warc_record(b"resource", b"ok")])
    rec = warc_record(b"resource", PAYLOAD)
    member, ends = gzip_member([rec[: len(rec) // 2], rec[len(rec) // 2 :]])
    member = bytearray(member)
    member[ends[0]] = 0xFF
    last, _ = gzip_member([warc_record(b"resource", b"last")])
    path = tmp_path / "middle.warc.gz"
    path.write_bytes(first + bytes(member) + last)
    it = warchest.ArchiveIterator(path, threads=1)
    got = [(r.offset, r.content_stream().read()[:4]) for r in it]
    assert got == [(0, b"ok"), (len(first), PAYLOAD[:4]), (len(first) + len(member), b"last")]
    assert sorted(kinds(it), key=str) == [
        ("bad-content-length", len(first), 1),
        ("damaged-member", len(first), None),
    ]
    counts_match(it)


def bare_lf_and_garbage():
    """A plain WARC: a record, garbage, then a record with a header line
    ending in LF alone; where the garbage starts and where that LF is."""
    a = warc_record(b"resource", b"one")
    garbage = b"not a record\r\n"
    b = warc_record(b"resource", b"two").replace(b"WARC-Type: resource\r\n", b"WARC-Type: resource\n")
    return a + garbage + b, len(a), len(a) + len(garbage) + b.index(b"resource\n") + len(b"resource")


def test_plain_warc_bare_lf_and_garbage_are_counted(tmp_path):
    data, garbage_at, line_at = bare_lf_and_garbage()
    path = tmp_path / "bare-lf.warc"
    path.write_bytes(data)
    for source in (path, io.BytesIO(data)):
        it = warchest.ArchiveIterator(source)
        assert [r.content_stream().read() for r in it] == [b"one", b"two"]
        assert kinds(it) == [("skipped-bytes", garbage_at, None), ("bare-lf", line_at, 1)]
        assert it.warning_counts == {"skipped-bytes": 1, "bare-lf": 1}
    with pytest.raises(warchest.ArchiveError):
        list(warchest.ArchiveIterator(path, strict=True))


def test_only_the_first_thousand_are_kept_all_are_counted(tmp_path):
    rec = warc_record(b"resource", b"x").replace(b"WARC-Type: resource\r\n", b"WARC-Type: resource\n")
    path = tmp_path / "many.warc"
    path.write_bytes(rec * 1200)
    it = warchest.ArchiveIterator(path)
    assert sum(1 for _ in it) == 1200
    assert it.warning_counts == {"bare-lf": 1200}
    ws = it.warnings
    assert len(ws) == 1000
    # The first thousand, in order.
    assert [w["record"] for w in ws] == list(range(1000))


@pytest.mark.parametrize(
    "name", ["warcio/example.warc.gz", "warcat/at.warc", "resiliparse/warcfile.warc.lz4"]
)
def test_clean_fixture_has_no_warnings(name):
    it = warchest.ArchiveIterator(FIXTURES / name)
    n = sum(len(r.content_stream().read()) >= 0 for r in it)
    assert n > 1
    assert it.warnings == []
    assert it.warning_counts == {}


def test_fixture_with_garbage_names_it():
    # pywb's example.warc: bytes between two records, and a record whose
    # block is not followed by CRLF CRLF.
    it = warchest.ArchiveIterator(FIXTURES / "pywb" / "example.warc")
    assert sum(1 for _ in it) == 6
    assert it.warning_counts == {"bad-trailer": 1, "skipped-bytes": 1}
    counts_match(it)


@pytest.mark.parametrize("path", warc_fixtures(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_counts_match_warnings_on_every_fixture(path):
    it = warchest.ArchiveIterator(path)
    for r in it:
        r.content_stream().read()
    counts_match(it)
    for w in it.warnings:
        assert set(w) == {"kind", "offset", "record", "record_id", "message"}
        assert w["message"]


def test_wacz_keeps_the_warnings_of_each_archive_file(tmp_path):
    # Trailing garbage is found when the first file's reader looks past its
    # last record, in the same step that moves on to the next file.
    first = warc_record(b"resource", b"one") + b"junk at the end\r\n"
    second, garbage_at, line_at = bare_lf_and_garbage()
    wacz = tmp_path / "x.wacz"
    with zipfile.ZipFile(wacz, "w") as z:
        z.writestr("datapackage.json", "{}")
        z.writestr("archive/a.warc", first)
        z.writestr("archive/b.warc", second)
    it = warchest.ArchiveIterator(wacz)
    assert [r.content_stream().read() for r in it] == [b"one", b"one", b"two"]
    # Offsets are each file's own.
    assert [k for k, _, _ in kinds(it)] == ["trailing-garbage", "skipped-bytes", "bare-lf"]
    assert kinds(it)[0][1] == len(first) - len(b"junk at the end\r\n")
    assert kinds(it)[1:] == [("skipped-bytes", garbage_at, None), ("bare-lf", line_at, 1)]
