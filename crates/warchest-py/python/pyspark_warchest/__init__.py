"""The ``warc`` data source for Spark 4 (PySpark's Python Data Source API).

Spark finds it without any registration: at the first data source lookup it
imports every top-level module named ``pyspark_*`` and registers the
``DefaultSource`` it exposes, so once the ``warchest`` wheel is installed
(on the driver and the executors)::

    df = spark.read.format("warc").load("crawl/*.warc.gz")

Options (case-insensitive):

- ``path`` (``load(...)``): a file, a directory (its files, hidden ones and
  ``_*`` left out) or a glob; ``load([a, b])`` takes several. A URL
  (``s3://bucket/prefix/*.warc.gz``, ``gs://``, ``az://``, ``http(s)://``)
  is listed on the driver through warchest's remote source (a prefix
  ending in ``/``, or a ``*`` glob in the last component) and each
  executor reads its objects straight from the store by range requests.
- ``env.NAME``: sets the environment variable ``NAME`` (upper-cased, as
  Spark lower-cases option names) on the driver while planning and in
  each executor before it reads, e.g. ``env.AWS_ENDPOINT_URL`` or
  ``env.AWS_SKIP_SIGNATURE``; for settings the executors' environment
  does not have already (docs/python.md, "Remote archives").
- ``manifest``: a text file listing paths, one a line (cc-pyspark style).
- ``columns``: comma-separated column names (``warchest.columns()``);
  default all but the payload ones.
- ``recordTypes``: comma-separated WARC-Type values to keep (default all).
- ``includePayload``: ``true`` adds ``payload`` and ``payload_truncated``.
- ``maxPayload``: payload bytes kept per record (default 32 MiB).
- ``batchRows``: rows per Arrow batch (default 8192).
- ``batchBytes``: bytes of payloads and headers per Arrow batch (default
  4 MiB; a single larger record is a batch of its own), which bounds an
  executor's memory with ``includePayload``.
- ``filesPerPartition``: files read by one task (default 1).
- ``threads``: threads a task reads with (default 1: Spark already runs a
  task on each core, so a whole uncompressed file is not also read in
  chunks on every core, which costs CPU for wall time; ``0``: every core).
- ``splitSize``: bytes (default 536870912, 512 MiB; Spark's own file
  sources use 128 MiB, ``maxPartitionBytes``, but a partition of a Python
  data source costs far more than one of the JVM's readers: about 0.12 s
  of CPU each, docs/performance-history.md): an uncompressed file larger than this is read
  as several partitions of byte ranges of about this size, each giving
  the records that start in it (``warchest.split_ranges``); ``0`` never
  splits. Compressed files (sniffed from their first bytes) are one
  partition each. A split file's ranges are partitions of their own;
  the other files are grouped ``filesPerPartition`` at a time, in order.
- ``failOnError``: ``true`` fails the job on the first unreadable file;
  by default such a file gives a row whose ``error`` column says why, and
  the job goes on (count them with ``df.where("error IS NOT NULL")``).
- ``strict``: ``true`` makes every deviation from the format an error.
- ``mode``: ``records`` (the default: a row per record, the columns above)
  or ``text``: a row per HTML or plain-text page with the columns of
  ``warchest.derive_text`` (url, date, record id, file and offset, content
  type, language and score, title, text, main-content text), what
  ``warchest derive text`` writes (docs/derive.md). Text mode reads local
  files, whole (one partition per ``filesPerPartition`` files), and fails
  the task on a file it cannot read. ``columns`` works there too, with
  the text table's names (``warchest.text_columns()``, those of
  ``warchest derive text --columns``): ``url,text`` skips the main
  content and language detection.

Spark's Python data sources are given no column pruning: a ``select``
after ``load`` still reads every column of the schema. Name the columns
the job needs with ``columns`` (or a ``.schema(...)`` of them, which the
reader reads alone) so that only those are read or computed.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Dict, Iterator, List, Optional, Tuple

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

__all__ = ["DefaultSource", "WarcDataSource", "expand_paths", "fetch", "plan_partitions"]

# Spark SQL types of the columns warchest.scan gives (Arrow types in
# crates/warchest/src/table.rs; the two must agree).
_SPARK_TYPES: Dict[str, str] = {
    "warc_filename": "STRING",
    "warc_record_offset": "BIGINT",
    "warc_record_length": "BIGINT",
    "warc_type": "STRING",
    "warc_record_id": "STRING",
    "warc_date": "TIMESTAMP",
    "warc_target_uri": "STRING",
    "warc_content_type": "STRING",
    "warc_content_length": "BIGINT",
    "warc_ip_address": "STRING",
    "warc_payload_digest": "STRING",
    "warc_block_digest": "STRING",
    "warc_identified_payload_type": "STRING",
    "warc_truncated": "STRING",
    "warc_headers": "ARRAY<STRUCT<name: STRING, value: STRING>>",
    "http_status": "SMALLINT",
    "http_method": "STRING",
    "http_content_type": "STRING",
    "http_headers": "ARRAY<STRUCT<name: STRING, value: STRING>>",
    "payload": "BINARY",
    "payload_truncated": "BOOLEAN",
    "error": "STRING",
}

_PAYLOAD_COLUMNS = ("payload", "payload_truncated")

# Spark SQL types of warchest.derive_text's columns (Arrow types in
# crates/warchest-derive/src/table.rs; the two must agree). The offset is
# UInt64 there, BIGINT here (Spark has no unsigned type).
_TEXT_TYPES: Dict[str, str] = {
    "url": "STRING NOT NULL",
    "date": "STRING NOT NULL",
    "record_id": "STRING NOT NULL",
    "warc_filename": "STRING NOT NULL",
    "warc_offset": "BIGINT NOT NULL",
    "content_type": "STRING",
    "language": "STRING",
    "language_score": "FLOAT NOT NULL",
    "languages": "STRING NOT NULL",
    "title": "STRING",
    "text": "STRING NOT NULL",
    "main_text": "STRING NOT NULL",
}

_MODES = ("records", "text")


def _mode(options: Dict[str, str]) -> str:
    m = str(options.get("mode") or "records").strip().lower()
    if m not in _MODES:
        raise ValueError(f"unknown warc mode {m!r}; the modes are {', '.join(_MODES)}")
    return m

# Four times Spark's spark.sql.files.maxPartitionBytes (128 MiB): each
# partition of a Python data source pays a round trip to a Python worker
# (the reader unpickled, an Arrow stream set up, the JVM's side of it
# planned and compiled), about 0.12 s of CPU a partition on the bench's
# machine, where a JVM file source pays next to nothing. The Spark row read
# its 738 MB uncompressed file as six 128 MiB partitions and spent 0.85x
# FastWARC's CPU; as two, 0.69x (docs/performance-history.md, "Spark: fewer
# partitions"). Set splitSize lower for more tasks on a large cluster.
_DEFAULT_SPLIT_SIZE = 512 << 20


def _flag(options: Dict[str, str], name: str, default: bool = False) -> bool:
    v = options.get(name.lower())
    if v is None:
        return default
    return str(v).strip().lower() in ("1", "true", "yes", "on")


def _list(options: Dict[str, str], name: str) -> List[str]:
    v = options.get(name.lower())
    if not v:
        return []
    return [x.strip() for x in str(v).split(",") if x.strip()]


def _columns(options: Dict[str, str]) -> List[str]:
    cols = _list(options, "columns")
    if cols:
        unknown = [c for c in cols if c not in _SPARK_TYPES]
        if unknown:
            raise ValueError(
                f"unknown warc columns {unknown}; the columns are {list(_SPARK_TYPES)}"
            )
        return cols
    cols = [c for c in _SPARK_TYPES if c not in _PAYLOAD_COLUMNS]
    if _flag(options, "includePayload"):
        cols.extend(_PAYLOAD_COLUMNS)
    return cols


def _text_columns(options: Dict[str, str]) -> List[str]:
    """The text mode's columns: those of the ``columns`` option, in the
    table's order, checked against ``warchest.text_columns()`` (the list
    ``warchest derive text --columns`` takes); all of them by default."""
    import warchest

    table = warchest.text_columns()
    cols = _list(options, "columns")
    unknown = [c for c in cols if c not in table]
    if unknown:
        raise ValueError(f"unknown warc text columns {unknown}; the columns are {table}")
    return [c for c in table if c in cols] if cols else table


def _is_hidden(name: str) -> bool:
    return name.startswith(".") or name.startswith("_")


def _env_options(options: Dict[str, str]) -> Dict[str, str]:
    """The ``env.NAME`` options as ``{NAME: value}``."""
    return {
        k[len("env.") :].upper(): str(v)
        for k, v in options.items()
        if k.lower().startswith("env.") and len(k) > len("env.")
    }


def _apply_env(env: Optional[Dict[str, str]]) -> None:
    """Sets ``env`` in this process's environment (a remote store's client
    reads its settings from there)."""
    for k, v in (env or {}).items():
        os.environ[k] = v


def _expand(options: Dict[str, str]) -> List[Tuple[str, Optional[int]]]:
    """The files the options name with their sizes when listing gave them."""
    import warchest

    specs: List[str] = []
    if options.get("paths"):
        specs.extend(json.loads(options["paths"]))
    if options.get("path"):
        specs.append(options["path"])
    manifest = options.get("manifest")
    if manifest:
        with open(manifest, encoding="utf-8") as f:
            specs.extend(line.strip() for line in f if line.strip() and not line.startswith("#"))
    if not specs:
        raise ValueError("the warc data source needs a path: load(path) or option('manifest', ...)")
    files: List[Tuple[str, Optional[int]]] = []
    text = _mode(options) == "text"
    for spec in specs:
        if warchest.is_url(spec) and text:
            raise ValueError(
                f"{spec}: the warc source's text mode reads local files "
                "(warchest derive text reads URLs)"
            )
        if warchest.is_url(spec):
            # Listed through the same remote source the executors read
            # with (no POSIX mount needed); a prefix's hidden and _* objects
            # are left out, as for directories.
            before = len(files)
            for url, size in warchest.list_files(spec):
                if url != spec and _is_hidden(url.rstrip("/").rsplit("/", 1)[-1]):
                    continue
                files.append((url, size))
            if len(files) == before:
                # As Spark's own sources fail for a path that does not
                # exist: not an empty table that looks like a result.
                raise FileNotFoundError(f"{spec}: no object found there (the warc data source)")
            continue
        if spec.startswith("file://"):
            spec = spec[len("file://") :]
        if any(c in spec for c in "*?["):
            matches = sorted(glob.glob(spec, recursive=True))
            if not matches:
                raise FileNotFoundError(f"{spec}: no file matches it (the warc data source)")
        else:
            matches = [spec]
        for m in matches:
            if os.path.isdir(m):
                for root, dirs, names in os.walk(m):
                    dirs[:] = sorted(d for d in dirs if not _is_hidden(d))
                    files.extend(
                        (os.path.join(root, n), None) for n in sorted(names) if not _is_hidden(n)
                    )
            else:
                files.append((m, None))
    return files


def expand_paths(options: Dict[str, str]) -> List[str]:
    """The files the options name, in a stable order.

    Spark does not expand globs or list directories for Python data
    sources, so this does: globs (``*``, ``?``, ``[...]``, ``**``), directories
    (recursively, hidden and ``_*`` entries left out, as Spark's file sources
    do), plain files, and the lines of a ``manifest`` file. URLs are listed
    through warchest's remote source (``warchest.list_files``).
    """
    _apply_env(_env_options(options))
    return [f for f, _ in _expand(options)]


class WarcFiles(InputPartition):
    """What one task reads: whole files, or a byte range of one file."""

    def __init__(self, paths: List[str], byte_range: Optional[Tuple[int, int]] = None):
        super().__init__((paths, byte_range))
        self.paths = paths
        self.byte_range = byte_range


def _split_size(options: Dict[str, str]) -> int:
    v = options.get("splitsize")
    if v is None or str(v).strip() == "":
        return _DEFAULT_SPLIT_SIZE
    n = int(str(v).strip())
    if n < 0:
        raise ValueError(f"splitSize must be 0 or more bytes, not {n}")
    return n


def _threads(options: Dict[str, str]) -> Optional[int]:
    """The ``threads`` option: 1 by default (a task per core); 0 or less,
    every core (``warchest.scan``'s ``None``)."""
    n = int(str(options.get("threads", "1")).strip() or "1")
    return n if n > 0 else None


def plan_partitions(options: Dict[str, str]) -> List[WarcFiles]:
    """The partitions the options give: the byte ranges of each uncompressed
    file larger than ``splitSize`` (one partition each), and the other files
    ``filesPerPartition`` at a time, in file order."""
    import warchest

    _apply_env(_env_options(options))
    files = _expand(options)
    per = max(1, int(options.get("filesperpartition", "1")))
    split = _split_size(options)
    if _mode(options) == "text":
        # derive_text reads whole files.
        split = 0
    parts: List[WarcFiles] = []
    group: List[str] = []
    for f, size in files:
        ranges: List[Tuple[int, int]] = []
        if split > 0:
            try:
                if size is None:
                    size = os.path.getsize(f)
                if size > split:
                    # For an object: one small range request to sniff
                    # whether it is compressed.
                    ranges = [tuple(r) for r in warchest.split_ranges(f, split)]
            except OSError:
                # Unreadable: read whole, so that the scan reports it.
                ranges = []
        if len(ranges) > 1:
            if group:
                parts.append(WarcFiles(group))
                group = []
            parts.extend(WarcFiles([f], r) for r in ranges)
            continue
        group.append(f)
        if len(group) == per:
            parts.append(WarcFiles(group))
            group = []
    if group:
        parts.append(WarcFiles(group))
    return parts


class WarcReader(DataSourceReader):
    """Plans one partition per file (or per ``filesPerPartition`` files, or
    per byte range of a large uncompressed file) and reads each with
    ``warchest.scan``, yielding its Arrow batches."""

    def __init__(self, options: Dict[str, str], schema: StructType):
        self.options = options
        self.schema = schema
        self.columns = [f.name for f in schema.fields]

    def partitions(self) -> List[InputPartition]:
        return list(plan_partitions(self.options))

    def read(self, partition: InputPartition) -> Iterator:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        import warchest

        # Spark compares each batch's schema with its own Arrow form of the
        # declared schema (nullability and list item names included).
        _apply_env(_env_options(self.options))
        target = to_arrow_schema(self.schema, timezone="UTC")
        if _mode(self.options) == "text":
            # The declared schema's columns (the `columns` option's, or a
            # user's .schema(...)): only those are computed.
            for batch in warchest.derive_text(partition.paths, columns=self.columns):
                yield pa.RecordBatch.from_arrays(
                    [batch.column(f.name).cast(f.type) for f in target], schema=target
                )
            return
        record_types = _list(self.options, "recordTypes") or None
        reader = warchest.scan(
            partition.paths,
            columns=self.columns,
            record_types=record_types,
            batch_rows=int(self.options.get("batchrows", "8192")),
            max_payload=int(self.options.get("maxpayload", str(32 << 20))),
            skip_errors=not _flag(self.options, "failOnError"),
            strict=_flag(self.options, "strict"),
            byte_range=getattr(partition, "byte_range", None),
            batch_bytes=int(self.options.get("batchbytes", str(4 << 20))),
            threads=_threads(self.options),
        )
        for batch in reader:
            yield pa.RecordBatch.from_arrays(
                [col.cast(f.type) for col, f in zip(batch.columns, target)], schema=target
            )


class DefaultSource(DataSource):
    """``spark.read.format("warc")``: one row per record of WARC, ARC and
    Web InfoMall files, with the columns of ``warchest.scan``."""

    @classmethod
    def name(cls) -> str:
        return "warc"

    def schema(self) -> str:
        if _mode(self.options) == "text":
            for o in ("recordtypes", "includepayload"):
                if o in self.options:
                    raise ValueError(f"the warc source's text mode has no {o!r} option")
            return ", ".join(f"`{c}` {_TEXT_TYPES[c]}" for c in _text_columns(self.options))
        return ", ".join(f"`{c}` {_SPARK_TYPES[c]}" for c in _columns(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return WarcReader(self.options, schema)


WarcDataSource = DefaultSource


def fetch(
    df,
    prefix: Optional[str] = None,
    columns: Optional[List[str]] = None,
    include_payload: bool = False,
    record_types: Optional[List[str]] = None,
    concurrency: int = 16,
    max_payload: int = 32 << 20,
    batch_rows: int = 8192,
    strict: bool = False,
    env: Optional[Dict[str, str]] = None,
    filename: str = "warc_filename",
    offset: str = "warc_record_offset",
    length: str = "warc_record_length",
):
    """The records an index selection names, as a DataFrame with the data
    source's columns: cc-pyspark's index-then-fetch job as one call.

    ``df`` has a row per record to fetch with the columns ``filename``,
    ``offset`` and ``length`` (by default cc-index's ``warc_filename``,
    ``warc_record_offset``, ``warc_record_length``), e.g. a selection of
    Common Crawl's Parquet index. Each partition of ``df`` is fetched on
    its executor with ``warchest.fetch`` (one range request per row, at most
    ``concurrency`` in flight per task), straight from the store; relative
    filenames are resolved against ``prefix`` (``"s3://commoncrawl/"`` or
    ``"https://data.commoncrawl.org/"``). A row that cannot be fetched or
    read gives a row whose ``error`` column names the URL and offset.
    ``columns``, ``include_payload``, ``record_types``, ``max_payload``,
    ``batch_rows`` and ``strict`` are the data source's options; ``env`` is
    set in each executor's environment before it fetches (``env.NAME``).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType

    opts: Dict[str, str] = {"includepayload": "true" if include_payload else "false"}
    if columns:
        opts["columns"] = ",".join(columns)
    cols = _columns(opts)
    ddl = ", ".join(f"`{c}` {_SPARK_TYPES[c]}" for c in cols)
    spark = df.sparkSession
    struct = spark.createDataFrame([], ddl).schema
    selection = df.select(
        F.col(filename).cast(StringType()).alias("filename"),
        F.col(offset).cast(LongType()).alias("offset"),
        F.col(length).cast(LongType()).alias("length"),
    )
    env = dict(env or {})
    record_types = list(record_types) if record_types else None

    def run(rows):
        import warchest

        _apply_env(env)
        # mapInArrow would keep the batches columnar, but PySpark makes it
        # require pandas; rows of the fetched batches need nothing more.
        reader = warchest.fetch(
            ((r[0], r[1], r[2]) for r in rows),
            prefix=prefix,
            concurrency=concurrency,
            arrow=True,
            columns=cols,
            record_types=record_types,
            batch_rows=batch_rows,
            max_payload=max_payload,
            strict=strict,
        )
        for batch in reader:
            for rec in batch.to_pylist():
                yield tuple(rec[c] for c in cols)

    return spark.createDataFrame(selection.rdd.mapPartitions(run), struct)
