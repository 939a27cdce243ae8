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

Paths may be URLs: ``s3://``, ``gs://``, ``az://`` and ``http(s)://``
objects are read by range requests (``ArchiveIterator("s3://bucket/x.warc.gz")``),
and ``fetch`` gets the records an index selects, by range, concurrently.
``ArchiveIterator("x.wacz")`` reads the archive files inside a WACZ, and
so does ``ArchiveIterator("s3://bucket/x.wacz")`` (by range, where they lie);
``scan``, ``check``, ``index``, ``validate`` and ``convert`` take URLs and
WACZ files the same way (their outputs are local paths).

``spark.read.format("warc").load(...)`` works once the wheel is installed
(the data source is the ``pyspark_warchest`` module).
"""

from __future__ import annotations

import json
import os
import warnings
from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._warchest import REMOTE
from ._warchest import (
    ArchiveError,
    ArchiveIterator,
    Record,
    RecordStream,
    RecoveryWarning,
    StatusAndHeaders,
    WARCWriter,
    __version__,
    columns,
    derive_text_stream,
    scan_stream,
    split_ranges,
    text_columns,
)
from ._warchest import check_json as _check_json
from ._warchest import convert_json as _convert_json
from ._warchest import index
from ._warchest import select_parquet as _select_parquet
from ._warchest import validate_json as _validate_json

if REMOTE:
    from ._warchest import fetch_records as _fetch_records
    from ._warchest import fetch_scan_stream as _fetch_scan_stream
    from ._warchest import list_urls as _list_urls

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "ArchiveError",
    "ArchiveIterator",
    "FetchError",
    "REMOTE",
    "Record",
    "RecordStream",
    "RecoveryWarning",
    "StatusAndHeaders",
    "WARCWriter",
    "__version__",
    "check",
    "columns",
    "convert",
    "fetch",
    "index",
    "is_url",
    "list_files",
    "scan",
    "derive_text",
    "scan_stream",
    "select_index",
    "split_ranges",
    "text_columns",
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
    batch_bytes: int = 4 << 20,
    threads: Optional[int] = None,
) -> "pyarrow.RecordBatchReader":
    """Reads the files at ``paths`` as Arrow record batches, one row per record.

    ``columns`` picks and orders the columns (``warchest.columns()`` lists
    them; by default all but ``payload`` and ``payload_truncated``, which
    ``include_payload=True`` adds). ``record_types`` keeps only those
    WARC-Type values. A batch has at most ``batch_rows`` rows and at most
    ``batch_bytes`` bytes of payloads and headers (4 MiB by default), unless
    it is a single record larger than that; a payload is cut at
    ``max_payload`` bytes. Memory stays bounded by these whatever the files
    hold (docs/python.md, "Speed"). A ``.wacz`` (a path or a URL) is read
    as its archive files, as ``ArchiveIterator`` reads it, each named
    ``FILE.wacz#archive/NAME`` (``URL#archive/NAME``) in ``warc_filename``. With ``skip_errors`` a file that cannot
    be read on gives a row whose ``error`` column says why, and the scan
    goes on; otherwise the error is raised. When ``columns`` leave out
    ``error``, no row can say it, so a ``RecoveryWarning`` names the file,
    the offset where reading stopped and the error instead.

    ``byte_range=(start, end)`` reads part of one file (``paths`` is then a
    single path): the records from the first record boundary at or after
    ``start`` up to the first at or after ``end``, with offsets in the whole
    file, so the ranges of any split of a file give each record once
    (``split_ranges`` plans them). A compressed file is not split: the range
    starting at 0 gives all of it, any other range nothing.

    An uncompressed local WARC file read whole is read on ``threads``
    threads (``None``: every core; ``1``: one thread): it is cut into
    chunks whose batches are built in parallel and handed out in file
    order. The rows are exactly those of one thread (a chunk that cannot
    be verified, damaged say, is read sequentially); batches also end
    where a chunk does.

    The batches are built in Rust and handed over through the Arrow C
    stream interface; this needs pyarrow. ``scan_stream`` takes the same
    arguments and returns the bare stream object (``__arrow_c_stream__``)
    for other Arrow consumers (its C stream never calls into Python), with
    what reading noted in its ``warnings`` and ``payload_fallbacks``.

    A ``RecoveryWarning`` tells of each file that needed the lenient reader
    or whose payloads were not decoded as their HTTP head says, as the
    batches after it pass (docs/python.md, "Leniency").
    """
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
        batch_bytes=batch_bytes,
        threads=threads,
    )
    return _telling(stream)


def _telling(stream: Any) -> "pyarrow.RecordBatchReader":
    """A pyarrow reader of ``stream``'s batches that gives a
    ``RecoveryWarning`` for each file as soon as a batch after its end
    passes (or at the end, an error or when the reader is dropped).

    The stream itself never calls into Python: a consumer may read it on a
    thread of its own while another thread holds the interpreter (DuckDB's
    workers do), where taking the interpreter's lock would deadlock. So the
    warnings are given here, in Python, as pyarrow passes the batches on.
    ``scan_stream`` gives the stream bare, its notes read from its
    ``warnings`` and ``payload_fallbacks`` (docs/python.md, "Leniency")."""
    import pyarrow as pa

    inner = pa.RecordBatchReader.from_stream(stream)

    def batches() -> Iterator["pyarrow.RecordBatch"]:
        try:
            for batch in inner:
                _tell(stream)
                yield batch
        finally:
            _tell(stream)

    return pa.RecordBatchReader.from_batches(inner.schema, batches())


def _tell(stream: Any) -> None:
    for told in stream.take_told():
        # Attributed to the line that reads the batches (this function, the
        # generator, then pyarrow's C code before it).
        warnings.warn(told, RecoveryWarning, stacklevel=3)


def check(path: PathLike) -> list:
    """Checks every WARC-Block-Digest and WARC-Payload-Digest of a file.

    ``path`` may be a URL (``s3://``, ``gs://``, ``az://``, ``http(s)://``;
    the object read by range requests, as ``ArchiveIterator`` reads it; one
    that cannot be read raises ``OSError`` naming it). One dict per
    record: ``file`` (``path`` as given, or for a WACZ, local or by URL,
    the archive file inside, ``FILE.wacz#archive/NAME``), ``offset``, ``type``, ``record_id``, ``ok`` (no digest
    wrong and the record whole), ``block`` and ``payload`` (``{"status":
    "valid"}``, ``"absent"``, ``"invalid"`` with ``recorded`` and
    ``computed``, ...), ``block_len`` and ``truncated`` (the file ended
    inside the record). A file read through lenient recoveries gives a
    RecoveryWarning at the end. A file in which no record is found (an
    empty one included) raises ``ArchiveError``, as ``warchest check``
    refuses it.
    """
    return json.loads(_check_json(path))


def validate(paths: Union[PathLike, Sequence[PathLike]]) -> dict:
    """Validates files against the WARC specification (and ARC, Web InfoMall).

    Returns ``{"findings": [...], "summary": {...}}``; each finding has
    ``severity``, ``rule``, ``clause``, ``file``, ``offset``, ``record_id`` and
    ``message``, as ``warchest validate --json`` prints them. A path may
    be a URL, the object read by range requests and named by the URL as
    given. A file or object that cannot be opened or read raises
    ``OSError`` naming it. A
    ``.wacz`` (local or by URL) is validated as its archive files, each
    named ``FILE.wacz#archive/NAME`` in its findings and summary; a WACZ
    with no archive file (or one that cannot be listed) raises
    ``ArchiveError``, as ``check`` refuses it; so does an input in which
    no record is found (empty, or not an archive), as ``warchest validate``
    refuses it (exit 2) rather than judging it.
    """
    return json.loads(_validate_json(paths))


def convert(source: PathLike, output: PathLike, warc_version: str = "1.1") -> dict:
    """Converts an ARC or Web InfoMall file (or a WARC) to a gzipped WARC.

    ``source`` may be a URL (read by range requests, as ``check`` reads
    one); ``output`` is a local path. Returns what was done: ``records_read``, ``records_written``,
    ``metadata_written``, ``truncated``, ``skipped`` and ``recoveries`` (how
    many times the lenient reader recovered; a RecoveryWarning says so too).
    The output is written as ``OUTPUT.open`` and renamed when whole (removed
    on an error); an output that is the source (by any name) is refused
    with ValueError. A source in which no record is found (an empty file
    included) raises ``ArchiveError`` and leaves no output, as ``warchest
    convert`` refuses it. A ``.wacz`` is read as its archive files, all
    converted into the one output (as ``warchest convert x.wacz -o OUT``),
    one report for them all and a RecoveryWarning for each that was read
    through recoveries, naming it ``FILE.wacz#archive/NAME`` (a WACZ by
    URL: ``URL#archive/NAME``); one with no record, or a WACZ with none,
    raises ``ArchiveError``.
    """
    return json.loads(_convert_json(source, output, warc_version))


_URL_SCHEMES = ("s3://", "s3a://", "gs://", "az://", "azure://", "abfs://", "abfss://", "http://", "https://")


def is_url(name: Any) -> bool:
    """Whether ``name`` is a URL warchest reads remotely (``s3://``, ``s3a://``,
    ``gs://``, ``az://``, ``azure://``, ``abfs[s]://``, ``http(s)://``) rather
    than a local path."""
    return isinstance(name, str) and name.lower().startswith(_URL_SCHEMES)


def _need_remote(what: str) -> None:
    if not REMOTE:
        raise OSError(f"{what}: this build of warchest reads local files only (no `remote` feature)")


def list_files(url: str) -> List[Tuple[str, int]]:
    """The objects at ``url`` as ``(url, size)`` pairs, sorted: every object
    under a prefix ending in ``/``; those matching a ``*`` or ``?`` glob in the
    last component (a ``*`` does not cross ``/``); otherwise the object itself
    or, when there is none, the objects under ``url/``. An ``http(s)://`` URL
    is one object (servers cannot be listed)."""
    _need_remote(url)
    return [(u, int(n)) for u, n in _list_urls(url)]


class FetchError(OSError):
    """Rows of ``fetch`` that could not be fetched or read. ``failures`` lists
    them as ``(index, filename, offset, length, message)``; the message names
    the URL (or path) and the offset."""

    def __init__(self, failures: List[Tuple[int, str, int, int, str]], total: int):
        self.failures = failures
        shown = "; ".join(f"row {i}: {m}" for i, _, _, _, m in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(f"{len(failures)} of {total} rows could not be fetched: {shown}{more}")


def _resolve(name: str, prefix: Optional[str]) -> str:
    if not prefix or is_url(name) or os.path.isabs(name):
        return name
    if is_url(prefix):
        return prefix.rstrip("/") + "/" + name.lstrip("/")
    return os.path.join(prefix, name)


def _field(row: Mapping, names: Sequence[str]) -> Any:
    for n in names:
        if n in row:
            return row[n]
    raise KeyError(f"a fetch row needs one of the fields {list(names)}; it has {list(row)}")


_SELECT_KEYS = ("filename", "offset", "length", "url", "urlkey", "timestamp", "mime", "status")


def select_index(
    index: PathLike,
    url_prefix: Optional[str] = None,
    surt_prefix: Optional[str] = None,
    host: Optional[str] = None,
    mime: Optional[str] = None,
    status: Optional[int] = None,
    from_: Optional[str] = None,
    to: Optional[str] = None,
    limit: Optional[int] = None,
) -> List[dict]:
    """The rows of a cc-index Parquet table (Common Crawl's columnar index;
    a path or a URL, read by range requests: the footer and the columns
    needed) that the filters select, as ``warchest fetch`` selects them, in
    the table's order: dicts with ``filename``, ``offset``, ``length``,
    ``url``, ``urlkey``, ``timestamp`` (14 digits), ``mime`` and ``status``,
    which ``fetch`` takes as rows.

    ``url_prefix``, ``surt_prefix``: the URL or SURT key starts with it;
    ``host``: that host or a subdomain; ``mime``, ``status``: equal;
    ``from_``, ``to``: capture time bounds (14 digits or a prefix, which
    covers its whole period); ``limit``: at most that many rows.

    Rows without a usable offset or length (null or negative) cannot be
    fetched: they are passed over and counted, and a ``RecoveryWarning``
    says how many ("cc.parquet: 2 rows without a usable offset or length
    (null or negative) not understood"), as ``warchest fetch`` says it
    (and exits 1)."""
    index = os.fspath(index)
    if not str(index).endswith(".parquet"):
        raise ValueError(f"{index}: select_index reads a cc-index Parquet file (name ending in .parquet)")
    if is_url(index):
        _need_remote("select_index")
    rows = _select_parquet(
        index,
        url_prefix=url_prefix,
        surt_prefix=surt_prefix,
        host=host,
        mime=mime,
        status=status,
        from_=from_,
        to=to,
        limit=limit,
    )
    return [dict(zip(_SELECT_KEYS, r)) for r in rows]


def _index_dir(index: str) -> str:
    """The directory of an index (URL or path), where the files it names
    relative to it are, as ``warchest fetch`` resolves them by default."""
    i = index.rfind("/")
    return index[: i + 1] if i >= 0 else ""


def fetch_rows(rows: Any, prefix: Optional[str] = None) -> List[Tuple[str, int, int]]:
    """``fetch``'s rows as ``(filename, offset, length)`` tuples, ``prefix``
    applied: tuples, mappings or Spark ``Row`` objects with ``filename`` /
    ``warc_filename``, ``offset`` / ``warc_record_offset`` and ``length`` /
    ``warc_record_length``, or a pyarrow ``Table`` / ``RecordBatch`` with
    those columns."""
    if hasattr(rows, "to_pylist") and hasattr(rows, "schema"):
        rows = rows.to_pylist()
    out = []
    for r in rows:
        if hasattr(r, "asDict"):
            r = r.asDict()
        if isinstance(r, Mapping):
            name = _field(r, ("filename", "warc_filename"))
            offset = _field(r, ("offset", "warc_record_offset"))
            length = _field(r, ("length", "warc_record_length"))
        else:
            name, offset, length = r
        if offset is None or length is None or int(offset) < 0 or int(length) < 0:
            raise ValueError(f"fetch row {r!r}: offset and length must be non-negative numbers")
        out.append((_resolve(os.fspath(name), prefix), int(offset), int(length)))
    return out


class FetchedRecords:
    """The records of ``fetch``'s rows (or their bytes), in row order
    (iterate once).
    ``failures`` lists the rows that could not be fetched or read so far, as
    ``(index, filename, offset, length, message)``."""

    def __init__(self, stream: Any, rows: List[Tuple[str, int, int]], on_error: str, raw: bool = False):
        self._raw = raw
        self._stream = stream
        self._rows = rows
        self._on_error = on_error
        self.failures: List[Tuple[int, str, int, int, str]] = []

    def __iter__(self) -> Iterator[Any]:
        for i, it, err in self._stream:
            name, offset, length = self._rows[i]
            if err is not None:
                self.failures.append((i, name, offset, length, err))
                continue
            if self._raw:
                yield it
                continue
            try:
                yield from it
            except (OSError, ArchiveError) as e:
                self.failures.append((i, name, offset, length, str(e)))
        if self.failures and self._on_error == "raise":
            raise FetchError(self.failures, len(self._rows))


def fetch(
    rows: Any,
    prefix: Optional[str] = None,
    concurrency: int = 16,
    arrow: bool = False,
    columns: Optional[Iterable[str]] = None,
    record_types: Optional[Iterable[str]] = None,
    parse_http: bool = True,
    strict: bool = False,
    batch_rows: int = 8192,
    include_payload: bool = False,
    max_payload: int = 32 << 20,
    max_length: int = 1 << 30,
    on_error: str = "raise",
    raw: bool = False,
    max_gap: int = 1 << 20,
    select: Optional[Mapping[str, Any]] = None,
) -> Union[FetchedRecords, "pyarrow.RecordBatchReader"]:
    """The records at ``rows``, each a ``(filename, offset, length)`` range of
    an archive (the columns of a CDX or cc-index selection), fetched by range
    requests, at most ``concurrency`` at once, in row order and byte for byte
    as stored.

    ``filename`` is a URL (``s3://``, ``gs://``, ``az://``, ``http(s)://``) or
    a local path; a relative one is resolved against ``prefix`` (for Common
    Crawl's index: ``"https://data.commoncrawl.org/"`` or
    ``"s3://commoncrawl/"``). ``rows`` may be tuples, mappings or Spark rows
    with ``filename``/``warc_filename``, ``offset``/``warc_record_offset`` and
    ``length``/``warc_record_length``, or a pyarrow table (see ``fetch_rows``).

    By default the result iterates ``Record`` objects as ``ArchiveIterator``
    gives them (``record_types``, ``parse_http``, ``strict`` as there; offsets
    are those in the archive). A row that cannot be fetched or read is
    skipped and the others still come; at the end ``FetchError`` is raised
    listing every such row (URL, offset and why), or with
    ``on_error="skip"`` they are only listed in the result's ``failures``.

    With ``raw=True`` it iterates each row's bytes as stored (a gzip member,
    say: concatenated, they make a new archive), errors as above.

    With ``arrow=True`` the result is a ``pyarrow.RecordBatchReader`` with
    ``scan``'s columns (``columns``, ``include_payload``, ``max_payload``,
    ``batch_rows`` as there); a row that cannot be fetched or read is a row
    whose ``error`` column names the URL and offset (with its
    ``warc_filename`` and ``warc_record_offset`` set) and the others follow,
    as ``scan(..., skip_errors=True)`` does (``on_error`` is for records).
    A row longer than ``max_length`` bytes is refused (reported as above).

    Rows next to each other that lie in the same object at most ``max_gap``
    bytes apart are read with one request (the bytes between them dropped),
    as ``warchest fetch --max-gap`` does; the default, 1 MiB, is
    object_store's coalescing gap, and ``0`` makes one request per row.

    ``rows`` may also be a cc-index Parquet file (a path or URL ending in
    ``.parquet``), as ``warchest fetch`` takes one: its rows that ``select``
    picks (the keyword arguments of ``select_index``: ``{"host":
    "example.com", "status": 200, "limit": 100}``; all rows without it)
    are fetched, the files they name resolved against ``prefix`` or, by
    default, the index's own directory.
    """
    if max_gap < 0:
        raise ValueError(f"max_gap must be 0 or more, not {max_gap!r}")
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    _need_remote("fetch")
    if isinstance(rows, (str, os.PathLike)):
        index = os.fspath(rows)
        rows = select_index(index, **(select or {}))
        if prefix is None:
            prefix = _index_dir(index)
    elif select is not None:
        raise ValueError("fetch: select is for a Parquet index given as rows")
    items = fetch_rows(rows, prefix)
    if arrow:
        stream = _fetch_scan_stream(
            items,
            concurrency=concurrency,
            max_length=max_length,
            columns=list(columns) if columns is not None else None,
            record_types=list(record_types) if record_types is not None else None,
            batch_rows=batch_rows,
            include_payload=include_payload,
            max_payload=max_payload,
            skip_errors=True,
            strict=strict,
            max_gap=max_gap,
        )
        return _telling(stream)
    stream = _fetch_records(
        items,
        concurrency=concurrency,
        max_length=max_length,
        record_types=list(record_types) if record_types is not None else None,
        parse_http=parse_http,
        strict=strict,
        raw=raw,
        max_gap=max_gap,
    )
    return FetchedRecords(stream, items, on_error, raw)


def derive_text(
    paths: Union[PathLike, Sequence[PathLike]],
    columns: Optional[Iterable[str]] = None,
) -> "pyarrow.RecordBatchReader":
    """The text of every page of the archives at ``paths`` (local files; a
    ``.wacz`` as its archive files, each named ``FILE.wacz#archive/NAME``,
    as ``warchest derive text`` reads it), as Arrow record batches: ``url``, ``date``, ``record_id``, ``warc_filename``,
    ``warc_offset``, ``content_type``, ``language`` (ISO 639-3),
    ``language_score``, ``languages``, ``title``, ``text`` (Common Crawl's WET
    layout) and ``main_text`` (without boilerplate), one row per HTML or
    plain-text response, resource or conversion record; what
    ``warchest derive text`` writes (docs/derive.md). Built in Rust on every
    core; needs pyarrow.

    ``columns`` keeps only the named columns (in the table's order), as
    ``warchest derive text --columns``: only those are computed, so
    ``["url", "text"]`` skips the main content and language detection, the
    costliest parts. ``warchest.text_columns()`` lists the names; an
    unknown one is a ``ValueError`` listing them."""
    cols = None if columns is None else [columns] if isinstance(columns, str) else list(columns)
    return _telling(derive_text_stream(paths, cols))
