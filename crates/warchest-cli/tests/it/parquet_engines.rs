//! The Parquet index is readable by the engines users query it with:
//! DuckDB here, besides pyarrow (tests/index.rs); Spark in the Python
//! suite's one Spark session (crates/warchest-py/tests/test_spark_index.py),
//! not a JVM started for one test. pip packages .ci/run installs;
//! WARCHEST_SKIP_PYTHON=1 skips.

use std::path::PathBuf;
use std::process::Command;

use crate::common;
use common::{bin, fixture, python_has};

fn parquet_of_fixtures(dir: &std::path::Path) -> (PathBuf, usize) {
    let iana = fixture("pywb/iana.warc.gz");
    let out = dir.join("index.parquet");
    let st = bin()
        .args(["index", "--format", "parquet", "-o"])
        .arg(&out)
        .arg(&iana)
        .status()
        .expect("run warchest");
    assert!(st.success());
    let cdxj = bin()
        .arg("index")
        .arg(&iana)
        .output()
        .expect("run warchest");
    let rows = String::from_utf8_lossy(&cdxj.stdout).lines().count();
    assert!(rows > 100);
    (out, rows)
}

fn python(script: &str, arg: &std::path::Path) -> String {
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(arg)
        .env("PYSPARK_PYTHON", "python3")
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn duckdb_reads_the_parquet_index() {
    if !python_has("duckdb") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, rows) = parquet_of_fixtures(dir.path());
    let out = python(
        r#"
import duckdb, sys
p = sys.argv[1]
db = duckdb.connect()
one = lambda q: db.execute(q).fetchone()[0]
n = one(f"select count(*) from read_parquet('{p}')")
s = one(f"select count(*) from read_parquet('{p}') where fetch_status = 200 and url_host_registered_domain = 'iana.org'")
ordered = one(f"select bool_and(url_surtkey >= prev) from (select url_surtkey, lag(url_surtkey, 1, '') over () as prev from read_parquet('{p}'))")
print(n, s, ordered)
"#,
        &path,
    );
    let parts: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(parts[0].parse::<usize>().unwrap(), rows);
    assert!(parts[1].parse::<usize>().unwrap() > 0, "{out}");
    assert_eq!(parts[2], "True", "rows in url_surtkey order");
}
