"""Which exception a failure met while reading a record's stream raises:
bad bytes are an ArchiveError naming the file and offset, an I/O failure
of the source stays an OSError (docs/python.md, "Leniency")."""

import io
import struct
import zlib

import pytest

import warchest


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
