//! `warchest validate`: output, exit codes, flags.

use std::process::Command;

use crate::common;
use common::{fixture, warchest};

fn path(rel: &str) -> String {
    fixture(rel).to_string_lossy().into_owned()
}

#[test]
fn valid_file_exits_zero_with_a_summary() {
    let f = path("jwat/valid-warcfile-non-warc-headers.warc");
    let o = warchest(&["validate", &f]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(": VALID: 1 records (warc); 0 errors"), "{out}");
}

#[test]
fn invalid_file_exits_one_and_names_rule_and_clause() {
    let f = path("jwat/invalid-warcfile-duplicate-fields.warc");
    let o = warchest(&["validate", &f]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("error [warc.field.repeated] WARC-Date appears 2 times (1.1 §5.1, 1.0 §5.1)"),
        "{out}"
    );
    assert!(out.contains("INVALID"), "{out}");
}

#[test]
fn strict_makes_warnings_fail() {
    // Only a warning: warcinfo Content-Type application/octet.
    let f = path("jwat/invalid-warcfile-contenttype-warcinfo-recommended.warc");
    assert_eq!(warchest(&["validate", &f]).status.code(), Some(0));
    assert_eq!(
        warchest(&["validate", "--strict", &f]).status.code(),
        Some(1)
    );
}

#[test]
fn unreadable_file_exits_two_and_the_others_are_validated() {
    let good = path("jwat/valid-warcfile-non-warc-headers.warc");
    let o = warchest(&["validate", "/nonexistent/x.warc", &good]);
    assert_eq!(o.status.code(), Some(2));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("x.warc: UNREADABLE"), "{out}");
    assert!(out.contains("non-warc-headers.warc: VALID"), "{out}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("x.warc"));
}

#[test]
fn json_lines_findings_files_total() {
    let a = path("pywb/example-url-agnostic-orig.warc.gz");
    let b = path("pywb/example-url-agnostic-revisit.warc.gz");
    let o = warchest(&["validate", "--json", &a, &b]);
    assert_eq!(o.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "file").count(), 2);
    assert_eq!(kinds.last(), Some(&"total"));
    let f = lines
        .iter()
        .find(|l| l["rule"] == "warc.date.precision")
        .expect("a date finding");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["offset"], 0);
    assert!(f["clause"].as_str().unwrap().contains("5.4"));
    assert!(f["record_id"].as_str().unwrap().starts_with("<urn:uuid:"));
    // Given together, the revisit's WARC-Refers-To resolves.
    assert!(lines.iter().all(|l| l["rule"] != "warc.reference.missing"));
    let total = lines.last().unwrap();
    assert_eq!(total["files"], 2);
    assert_eq!(total["valid"], false);
    assert_eq!(total["by_rule"]["warc.date.precision"], 2);
}

#[test]
fn spec_and_forbid_extensions() {
    let f = path("warcio/example.warc");
    let o = warchest(&[
        "validate",
        "--json",
        "--spec",
        "1.1",
        "--forbid-extensions",
        &f,
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    // WARC/1.0 records judged as 1.1.
    assert!(
        out.contains("\"rule\":\"warc.version.not-requested\""),
        "{out}"
    );
    // The uri-agnostic profile is an extension.
    assert!(out.contains("\"rule\":\"extension.value\""), "{out}");
    let bad = warchest(&["validate", "--spec", "2.0", &f]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn list_rules_prints_the_table() {
    let o = warchest(&["validate", "--list-rules"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("| rule | severity |"), "{out}");
    assert!(out.contains("| `warc.record-id.duplicate` | error |"));
    let o = warchest(&["validate", "--list-rules", "--json"]);
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().next().unwrap()).unwrap();
    assert!(first["id"].is_string() && first["clause"].is_string());
}

#[test]
fn arc_and_infomall_are_validated() {
    let o = warchest(&["validate", &path("tianwang/page.dat")]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("654 records (infomall)"));
    let o = warchest(&["validate", &path("pywb/example.arc")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("arc.version-block.length"));
}

/// On one CPU the records are checked on the reading thread; the findings
/// and their order are the same as with two threads.
#[test]
fn one_cpu_gives_the_same_findings() {
    let f = path("pywb/example-extra.warc");
    let two = warchest(&["validate", "--json", &f]);
    let one = Command::new("taskset")
        .args([
            "-c",
            "0",
            env!("CARGO_BIN_EXE_warchest"),
            "validate",
            "--json",
            &f,
        ])
        .output();
    let Ok(one) = one else {
        eprintln!("taskset not found: the one-CPU path is not exercised here");
        return;
    };
    assert_eq!(one.status.code(), two.status.code());
    assert!(!two.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&one.stdout),
        String::from_utf8_lossy(&two.stdout)
    );
}

#[test]
fn the_shipped_samples_validate() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples");
    let files = crate::common::files_in(&dir);
    assert!(!files.is_empty());
    for f in files {
        let out = crate::common::warchest(&[std::ffi::OsStr::new("validate"), f.as_os_str()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}{}",
            f.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
