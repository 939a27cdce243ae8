"""The Parquet index (Common Crawl's cc-index columns) read by Spark.

It was a test of the CLI's Rust suite (parquet_engines.rs) that started a
Spark JVM of its own; here it uses the suite's one session (conftest.py),
which saves that start (docs/testing.md, "Running time"). The index is
written by the same writer (warchest-index) as `warchest index --format
parquet`."""

from conftest import FIXTURES

import warchest


def test_spark_reads_the_parquet_index(spark, tmp_path):
    iana = FIXTURES / "pywb" / "iana.warc.gz"
    rows = warchest.index(iana, tmp_path / "index.cdxj")
    assert rows > 100
    warchest.index(iana, tmp_path / "index.parquet", format="parquet")
    df = spark.read.parquet(str(tmp_path / "index.parquet"))
    assert df.count() == rows
    assert df.filter("fetch_status = 200").count() > 0
    assert df.columns[:3] == ["url_surtkey", "url", "url_host_name"]
