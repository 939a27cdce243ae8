"""Shared fixtures of the Python suite: the fixture files and one Spark
session (local[2], UI off, loopback only) for the whole run."""

import os
import shutil
import tempfile
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO.parent / "shared" / "fixtures"
SAMPLES = REPO / "samples"


def bare_lf_warc(path):
    """A WARC of two records whose headers end their lines in LF alone: two
    `bare-lf` recoveries, the first at offset 28."""
    recs = []
    for i in range(2):
        body = b"hello %d" % i
        recs.append(
            b"WARC/1.1\nWARC-Type: resource\nWARC-Target-URI: http://b.example/%d\n"
            b"Content-Length: %d\n\n" % (i, len(body)) + body + b"\r\n\r\n"
        )
    path.write_bytes(b"".join(recs))
    return path


def response_warc(path, block):
    """A WARC of one response record whose block is `block`, at `path`."""
    path.write_bytes(
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://o.example/\r\n"
        b"Content-Type: application/http; msgtype=response\r\n"
        b"Content-Length: %d\r\n\r\n" % len(block) + block + b"\r\n\r\n"
    )
    return path


def recovery_warnings(fn):
    """What `fn()` returns, and the messages of the RecoveryWarnings it gave."""
    import warchest

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in seen if issubclass(w.category, warchest.RecoveryWarning)]


def warc_fixtures():
    """Every WARC in the shared fixtures (any compression)."""
    out = []
    for p in sorted(FIXTURES.rglob("*")):
        name = p.name
        if p.is_file() and (".warc" in name) and not name.endswith((".cdx", ".cdxj")):
            out.append(p)
    assert len(out) > 40, f"fixtures not found under {FIXTURES}"
    return out


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the run: starting one costs 10-30 s."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("Spark tests need a Java runtime (java on PATH or JAVA_HOME)")
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYTHON", "") or __import__("sys").executable)
    tmp = tempfile.mkdtemp(prefix="warchest-spark-")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("warchest-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.sql.warehouse.dir", os.path.join(tmp, "warehouse"))
        .config("spark.local.dir", os.path.join(tmp, "local"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    shutil.rmtree(tmp, ignore_errors=True)
