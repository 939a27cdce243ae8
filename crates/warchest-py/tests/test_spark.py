"""The `warc` Spark data source on local[2]: found with no registration,
one partition per file, scan's schema, options, bad files counted."""

import json

import pytest

import warchest
from conftest import FIXTURES, SAMPLES

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
import pyspark_warchest  # noqa: E402

PYWB = FIXTURES / "pywb"


def test_format_warc_needs_no_registration(spark):
    df = spark.read.format("warc").load(str(PYWB / "*.warc.gz"))
    files = sorted(PYWB.glob("*.warc.gz"))
    assert df.rdd.getNumPartitions() == len(files)
    want = warchest.scan(files, columns=["warc_type"]).read_all().num_rows
    assert df.count() == want
    assert df.columns == [c for c in warchest.columns() if c not in ("payload", "payload_truncated")]


def test_group_by_status_matches_scan(spark):
    iana = PYWB / "iana.warc.gz"
    df = spark.read.format("warc").option("recordTypes", "response").load(str(iana))
    got = {r["http_status"]: r["count"] for r in df.groupBy("http_status").count().collect()}
    t = warchest.scan(iana, columns=["http_status"], record_types=["response"]).read_all()
    want = {}
    for s in t["http_status"].to_pylist():
        want[s] = want.get(s, 0) + 1
    assert got == want and sum(got.values()) > 40


def test_columns_payload_and_several_paths(spark):
    paths = [str(SAMPLES / "sample.warc.gz"), str(PYWB / "example.warc.gz")]
    df = (
        spark.read.format("warc")
        .option("columns", "warc_filename,warc_target_uri,payload")
        .load(paths)
    )
    assert df.columns == ["warc_filename", "warc_target_uri", "payload"]
    rows = df.collect()
    assert {r["warc_filename"] for r in rows} == set(paths)
    want = warchest.scan(paths, columns=["payload"]).read_all()["payload"].to_pylist()
    assert [bytes(r["payload"]) for r in rows] == want


def test_a_users_schema_is_what_the_reader_reads(spark):
    # The Python data source API prunes no columns: a user's .schema(...)
    # (or the columns option) is how a job reads two columns only.
    iana = PYWB / "iana.warc.gz"
    df = spark.read.format("warc").schema("http_status SMALLINT, warc_target_uri STRING").load(str(iana))
    assert df.columns == ["http_status", "warc_target_uri"]
    want = warchest.scan(iana, columns=["http_status", "warc_target_uri"]).read_all().to_pylist()
    assert [r.asDict() for r in df.collect()] == want


def test_bad_files_are_rows_with_an_error(spark, tmp_path):
    missing = str(tmp_path / "gone.warc.gz")
    good = str(SAMPLES / "sample.warc.gz")
    df = spark.read.format("warc").load([good, missing])
    errors = df.where("error IS NOT NULL").collect()
    assert len(errors) == 1 and errors[0]["warc_filename"] == missing
    assert df.where("error IS NULL").count() == 6
    with pytest.raises(Exception):
        spark.read.format("warc").option("failOnError", "true").load([good, missing]).count()


def test_directories_and_manifests(spark, tmp_path):
    manifest = tmp_path / "manifest.txt"
    manifest.write_text(f"{SAMPLES / 'sample.warc.gz'}\n{PYWB / 'example.warc.gz'}\n")
    df = spark.read.format("warc").option("manifest", str(manifest)).load()
    assert df.rdd.getNumPartitions() == 2
    by_dir = spark.read.format("warc").option("filesPerPartition", "100").load(str(FIXTURES / "warcio"))
    assert by_dir.rdd.getNumPartitions() == 1
    assert by_dir.count() > 10


def test_split_size_plans_byte_ranges(spark, tmp_path):
    big = FIXTURES / "warcio" / "example-iana.org-chunked.warc"
    size = big.stat().st_size
    small = [str(PYWB / "example.warc.gz"), str(PYWB / "example2.warc.gz")]
    paths = [str(big)] + small
    split = (
        spark.read.format("warc")
        .option("splitSize", "2000")
        .option("filesPerPartition", "2")
        .load(paths)
    )
    # The uncompressed file in ranges, the two compressed ones together.
    assert split.rdd.getNumPartitions() == -(-size // 2000) + 1
    whole = spark.read.format("warc").option("splitSize", "0").load(paths)
    assert whole.rdd.getNumPartitions() == 3
    key = ["warc_filename", "warc_record_offset", "warc_record_id"]
    got = [tuple(r) for r in split.select(*key).collect()]
    want = [tuple(r) for r in whole.select(*key).collect()]
    assert len(got) > 5 and got == want
    # The default (512 MiB) leaves small files whole.
    assert spark.read.format("warc").load(str(big)).rdd.getNumPartitions() == 1


def test_default_split_size_is_512_mib(tmp_path):
    # A sparse uncompressed file of 1.2 GiB (no disk used): ranges of 512
    # MiB by default, of the size asked for otherwise. Planning reads only
    # the first bytes (the sniff), so nothing of the holes is read.
    big = tmp_path / "big.warc"
    with open(big, "wb") as f:
        f.write(b"WARC/1.1\r\n")
        f.truncate(1200 << 20)
    plan = pyspark_warchest.plan_partitions
    assert [p.byte_range for p in plan({"path": str(big)})] == [
        (0, 512 << 20),
        (512 << 20, 1024 << 20),
        (1024 << 20, 1200 << 20),
    ]
    assert len(plan({"path": str(big), "splitsize": str(128 << 20)})) == 10
    assert [p.byte_range for p in plan({"path": str(big), "splitsize": "0"})] == [None]


def test_a_glob_matching_nothing_is_refused_and_an_empty_directory_is_empty(tmp_path):
    # A glob that matched nothing gave an empty table, which looks like a
    # result; Spark's own sources fail for such a path.
    plan = pyspark_warchest.plan_partitions
    glob = str(tmp_path / "*.warc.gz")
    with pytest.raises(FileNotFoundError, match="no file matches it"):
        plan({"path": glob})
    with pytest.raises(FileNotFoundError, match="no file matches it"):
        plan({"paths": json.dumps([str(SAMPLES / "sample.warc.gz"), glob])})
    (tmp_path / "empty").mkdir()
    assert plan({"path": str(tmp_path / "empty")}) == []


def test_text_mode_gives_the_rows_of_derive_text(spark):
    iana = PYWB / "iana.warc.gz"
    df = spark.read.format("warc").option("mode", "text").load([str(iana), str(PYWB / "example.warc.gz")])
    want = warchest.derive_text([iana, PYWB / "example.warc.gz"]).read_all()
    assert df.columns == want.column_names
    key = ("warc_filename", "warc_offset")
    got = sorted((r.asDict() for r in df.collect()), key=lambda r: tuple(r[k] for k in key))
    exp = sorted(want.to_pylist(), key=lambda r: tuple(r[k] for k in key))
    assert len(got) > 20 and len(got) == len(exp)
    for g, w in zip(got, exp):
        for c in ("url", "warc_offset", "record_id", "language", "title", "text", "main_text"):
            assert g[c] == w[c], (c, g["url"])
        assert abs(g["language_score"] - w["language_score"]) < 1e-6
    home = next(r for r in got if r["url"] == "http://www.iana.org/")
    assert home["language"] == "eng" and home["title"] == "Internet Assigned Numbers Authority"
    # SQL over it, as a corpus builder would: pages per language.
    langs = {r["language"]: r["count"] for r in df.groupBy("language").count().collect()}
    assert sum(langs.values()) == len(exp) and langs.get("eng", 0) > 0


def test_text_mode_columns(spark):
    iana = PYWB / "iana.warc.gz"
    df = spark.read.format("warc").option("mode", "text").option("columns", "title, url").load(str(iana))
    # The table's order, as warchest derive text --columns gives them.
    assert df.columns == ["url", "title"]
    want = warchest.derive_text(iana, columns=["url", "title"]).read_all().to_pylist()
    assert [r.asDict() for r in df.collect()] == want and len(want) >= 20
    # A user's schema of text columns is read alone too.
    df = spark.read.format("warc").option("mode", "text").schema("url STRING, text STRING").load(str(iana))
    assert [r.asDict() for r in df.collect()] == warchest.derive_text(iana, columns=["url", "text"]).read_all().to_pylist()
    with pytest.raises(Exception, match="unknown warc text columns"):
        spark.read.format("warc").option("mode", "text").option("columns", "url,body").load(str(iana)).collect()
    assert list(pyspark_warchest._TEXT_TYPES) == warchest.text_columns()


def test_text_mode_refuses_unknown_modes_and_urls(spark):
    with pytest.raises(Exception, match="unknown warc mode"):
        spark.read.format("warc").option("mode", "FAILFAST").load(str(PYWB / "iana.warc.gz")).collect()
    with pytest.raises(Exception, match="text mode reads local files"):
        spark.read.format("warc").option("mode", "text").load("http://127.0.0.1:9/x.warc.gz").collect()


def test_a_task_reads_on_one_thread_unless_told(monkeypatch):
    # Spark runs a task on each core: a task's scan must not also read a
    # whole uncompressed file in chunks on every core (more CPU for the
    # same job); the `threads` option overrides it (0: every core).
    from pyspark.sql.types import ShortType, StructField, StructType

    seen = []
    real = warchest.scan

    def spy(*args, **kw):
        seen.append(kw.get("threads", "missing"))
        return real(*args, **kw)

    monkeypatch.setattr(warchest, "scan", spy)
    schema = StructType([StructField("http_status", ShortType())])
    part = pyspark_warchest.WarcFiles([str(PYWB / "iana.warc.gz")])
    rows = {}
    for opts in ({}, {"threads": "0"}, {"threads": "2"}):
        r = pyspark_warchest.WarcReader(dict(opts, columns="http_status"), schema)
        rows[opts.get("threads")] = sum(b.num_rows for b in r.read(part))
    assert seen == [1, None, 2]
    assert len(set(rows.values())) == 1 and rows[None] > 40
