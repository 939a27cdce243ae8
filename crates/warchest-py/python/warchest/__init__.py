"""warchest: read, write and index web archives (WARC, ARC, Web InfoMall).

Iterate records the way warcio does::

    from warchest import ArchiveIterator

    with open("crawl.warc.gz", "rb") as f:
        for record in ArchiveIterator(f, record_types=["response"]):
            url = record.rec_headers.get_header("WARC-Target-URI")
            html = record.content_stream().read()

or read whole files as Arrow record batches built in Rust::

    import warchest
    table = warchest.scan("crawl.warc.gz", columns=["warc_target_uri", "http_status"]).read_all()

``spark.read.format("warc").load(...)`` works once the wheel is installed
(the data source is the ``pyspark_warchest`` module).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, Tuple, Union

from ._warchest import (
    ArchiveError,
    ArchiveIterator,
    Record,
    RecordStream,
    StatusAndHeaders,
    WARCWriter,
    __version__,
    columns,
    scan_stream,
    split_ranges,
)
from ._warchest import check_json as _check_json
from ._warchest import convert_json as _convert_json
from ._warchest import index
from ._warchest import validate_json as _validate_json

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "ArchiveError",
    "ArchiveIterator",
    "Record",
    "RecordStream",
    "StatusAndHeaders",
    "WARCWriter",
    "__version__",
    "check",
    "columns",
    "convert",
    "index",
    "scan",
    "scan_stream",
    "split_ranges",
    "validate",
]


def scan(
    paths: Union[PathLike, Sequence[PathLike]],
    columns: Optional[Iterable[str]] = None,
    record_types: Optional[Iterable[str]] = None,
    batch_rows: int = 8192,
    include_payload: bool = False,
    max_payload: int = 32 << 20,
    skip_errors: bool = False,
    strict: bool = False,
    byte_range: Optional[Tuple[int, int]] = None,
) -> "pyarrow.RecordBatchReader":
    """Reads the files at ``paths`` as Arrow record batches, one row per record.

    ``columns`` picks and orders the columns (``warchest.columns()`` lists
    them; by default all but ``payload`` and ``payload_truncated``, which
    ``include_payload=True`` adds). ``record_types`` keeps only those
    WARC-Type values. A batch has at most ``batch_rows`` rows; a payload is
    cut at ``max_payload`` bytes. With ``skip_errors`` a file that cannot
    be read on gives a row whose ``error`` column says why, and the scan
    goes on; otherwise the error is raised.

    ``byte_range=(start, end)`` reads part of one file (``paths`` is then a
    single path): the records from the first record boundary at or after
    ``start`` up to the first at or after ``end``, with offsets in the whole
    file, so the ranges of any split of a file give each record once
    (``split_ranges`` plans them). A compressed file is not split: the range
    starting at 0 gives all of it, any other range nothing.

    The batches are built in Rust and handed over through the Arrow C
    stream interface; this needs pyarrow. ``scan_stream`` takes the same
    arguments and returns the bare stream object (``__arrow_c_stream__``)
    for other Arrow consumers.
    """
    import pyarrow as pa

    stream = scan_stream(
        paths,
        columns=list(columns) if columns is not None else None,
        record_types=list(record_types) if record_types is not None else None,
        batch_rows=batch_rows,
        include_payload=include_payload,
        max_payload=max_payload,
        skip_errors=skip_errors,
        strict=strict,
        byte_range=byte_range,
    )
    return pa.RecordBatchReader.from_stream(stream)


def check(path: PathLike) -> list:
    """Checks every WARC-Block-Digest and WARC-Payload-Digest of a file.

    One dict per record: ``offset``, ``type``, ``record_id``, ``ok`` (no digest
    wrong and the record whole), ``block`` and ``payload`` (``{"status":
    "valid"}``, ``"absent"``, ``"invalid"`` with ``recorded`` and
    ``computed``, ...), ``block_len`` and ``truncated`` (the file ended
    inside the record).
    """
    return json.loads(_check_json(path))


def validate(paths: Union[PathLike, Sequence[PathLike]]) -> dict:
    """Validates files against the WARC specification (and ARC, Web InfoMall).

    Returns ``{"findings": [...], "summary": {...}}``; each finding has
    ``severity``, ``rule``, ``clause``, ``file``, ``offset``, ``record_id`` and
    ``message``, as ``warchest validate --json`` prints them.
    """
    return json.loads(_validate_json(paths))


def convert(source: PathLike, output: PathLike, warc_version: str = "1.1") -> dict:
    """Converts an ARC or Web InfoMall file (or a WARC) to a gzipped WARC.

    Returns what was done: ``records_read``, ``records_written``,
    ``metadata_written``, ``truncated`` and ``skipped``.
    """
    return json.loads(_convert_json(source, output, warc_version))
