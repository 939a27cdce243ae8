//! The `warchest` binary on ARC and Web InfoMall files: ls, check,
//! convert (both ways) and recover.

use std::process::Output;

use crate::common;
use common::{fixture, warchest};

macro_rules! run {
    ($($a:expr),* $(,)?) => {
        warchest(&[$(std::ffi::OsStr::new(&$a)),*])
    };
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn ls_reads_infomall_and_arc() {
    let page = fixture("tianwang/page.dat");
    let o = run!("ls", page);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 654);
    let first: Vec<&str> = out.lines().next().unwrap().split('\t').collect();
    assert_eq!(
        first,
        [
            "0",
            "13431",
            "response",
            "2006-02-28T05:42:09Z",
            "http://address.6318.cn/",
            "application/http; msgtype=response",
            "62485"
        ]
    );
    let o = run!("ls", "--json", fixture("warcio/example.arc.gz"));
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["type"], "metadata");
    assert_eq!(lines[0]["target_uri"], "filedesc://live-web-example.arc.gz");
    assert_eq!(lines[1]["offset"], 171);
    assert_eq!(lines[1]["length"], 856);
}

#[test]
fn check_on_arc_has_no_digests_to_fail() {
    let o = run!("check", fixture("jwat/small_BNF.arc"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("6 records"), "{}", stdout(&o));
}

#[test]
fn convert_both_ways_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("page.warc.gz");
    let o = run!("convert", fixture("tianwang/page.dat"), "-o", warc);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("654 records read, 655 written"),
        "{}",
        stderr(&o)
    );
    let o = run!("check", warc);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("655 records; block digests 655 valid"),
        "{}",
        stdout(&o)
    );
    let back = dir.path().join("back.dat");
    let o = run!("convert", warc, "-o", back, "--to", "infomall", "--json");
    assert!(o.status.success(), "{}", stderr(&o));
    let rep: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(rep["records_written"], 654);
    assert_eq!(rep["skipped"]["warcinfo"], 1);
    let o = run!("ls", back);
    assert_eq!(stdout(&o).lines().count(), 654);
    // WARC 1.0, uncompressed, from an ARC.
    let w10 = dir.path().join("bnf.warc");
    let o = run!(
        "convert",
        fixture("jwat/small_BNF.arc"),
        "-o",
        w10,
        "--version",
        "1.0"
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read(&w10).unwrap().starts_with(b"WARC/1.0\r\n"));
    // A truncated record is a problem found (exit 1), still converted.
    let o = run!(
        "convert",
        fixture("warcio/example-space-in-url.arc"),
        "-o",
        dir.path().join("s.warc")
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 truncated"), "{}", stderr(&o));
}

#[test]
fn recover_reports_damage() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = std::fs::read(fixture("tianwang/page.dat")).unwrap();
    for x in &mut data[500_000..500_100] {
        *x = 0;
    }
    data.truncate(2_000_000);
    let damaged = dir.path().join("damaged.dat");
    std::fs::write(&damaged, &data).unwrap();
    let out = dir.path().join("saved.dat");
    let o = run!("recover", damaged, "-o", out);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("damaged bytes"), "{err}");
    assert!(err.contains("lost:"), "{err}");
    let n = stdout(&run!("ls", out)).lines().count();
    assert!((400..654).contains(&n), "{n}");
    let o = run!(
        "recover",
        damaged,
        "-o",
        dir.path().join("s2.dat"),
        "--json"
    );
    let rep: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(rep["records_written"], n);
    assert_eq!(rep["format"], "infomall");
    // A clean file: exit 0, same bytes.
    let clean = dir.path().join("clean.dat");
    let o = run!("recover", fixture("tianwang/page.dat"), "-o", clean);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&clean).unwrap(),
        std::fs::read(fixture("tianwang/page.dat")).unwrap()
    );
}
