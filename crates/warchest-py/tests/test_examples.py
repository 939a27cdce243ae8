"""The scripts in examples/, run on the suite's local[2] session."""

import importlib.util
import os
import shutil

import pytest

import warchest
from conftest import FIXTURES, REPO, SAMPLES

pytest.importorskip("pyspark")

PYWB = FIXTURES / "pywb"


def example(name):
    # Not put in sys.modules: Spark then ships the script's functions to
    # its Python workers by value, as it does for a script run directly.
    spec = importlib.util.spec_from_file_location(f"example_{name}", REPO / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cc_index_table(spark, tmp_path):
    paths = [str(PYWB / "iana.warc.gz"), str(PYWB / "example.warc.gz")]
    table = example("cc_index_table").main(spark, str(tmp_path / "index"), paths)
    assert sorted(os.listdir(tmp_path / "index")) == ["example.warc.gz.parquet", "iana.warc.gz.parquet"]
    cols = table.columns
    assert cols[:2] == ["url_surtkey", "url"] and "warc_record_offset" in cols
    want = 0
    for p in paths:
        out = tmp_path / "one.cdxj"
        want += warchest.index(p, out)
    assert table.count() == want
    assert dict(table.dtypes)["warc_record_offset"] == "int"


def test_host_status_counts(spark):
    rows = example("host_status_counts").main(spark, [str(PYWB / "iana.warc.gz")]).collect()
    total = sum(r["count"] for r in rows)
    assert total == warchest.scan(PYWB / "iana.warc.gz", columns=["warc_type"], record_types=["response"]).read_all().num_rows
    assert any(r["host"] == "www.iana.org" and r["http_status"] == 200 for r in rows)


def test_html_text(spark, tmp_path):
    texts = example("html_text").main(spark, str(tmp_path / "text"), [str(PYWB / "iana.warc.gz")]).collect()
    assert len(texts) > 5
    home = [t for t in texts if t["url"].rstrip("/") in ("http://www.iana.org", "https://www.iana.org")]
    assert home and "Internet Assigned Numbers Authority" in home[0]["text"]
    assert all("<script" not in t["text"] for t in texts)


def test_infomall_to_warc(spark, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    page = FIXTURES / "tianwang" / "page.dat"
    for i in range(2):
        shutil.copy(page, src / f"part{i}.dat")
    rows = example("infomall_to_warc").main(spark, str(src), str(tmp_path / "out")).collect()
    assert len(rows) == 2
    for r in rows:
        assert r["records_read"] == 654
        recs = [x.rec_type for x in warchest.ArchiveIterator(r["output"])]
        assert recs[0] == "warcinfo" and recs.count("response") == 654
