//! Text extraction against Resiliparse (`extract_plain_text`) on a real
//! crawl (the IANA pages of the pywb fixtures): the median similarity of
//! the words, page by page, is at least 0.9, for the whole text and for
//! the main content (tests/python/similarity.py says how it compares).

use std::io::Write;
use std::process::Command;

use warchest::archive::Reader;
use warchest_derive::derive::{row_json, text_rows};

use crate::common::{fixture, python_has};

fn median(args: &[&str]) -> f64 {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/similarity.py");
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = text.lines().last().unwrap_or_default();
    let m = last
        .strip_prefix("median ")
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok());
    m.unwrap_or_else(|| panic!("no median in {text}"))
}

#[test]
fn similar_to_resiliparse_on_a_real_crawl() {
    if !python_has("resiliparse") {
        return;
    }
    let archive = fixture("pywb/iana.warc.gz");
    let mut reader = Reader::open(&archive).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("rows.jsonl");
    let mut out = std::fs::File::create(&rows).unwrap();
    let summary = text_rows(
        &mut reader,
        "iana.warc.gz",
        |batch| -> Result<(), warchest::Error> {
            for row in &batch {
                writeln!(out, "{}", row_json(row))?;
            }
            Ok(())
        },
    )
    .unwrap();
    assert!(summary.records_out >= 20, "{summary:?}");
    let (archive, rows) = (archive.to_str().unwrap(), rows.to_str().unwrap());
    let whole = median(&[archive, rows]);
    assert!(whole >= 0.9, "whole text: median similarity {whole}");
    let main = median(&[archive, rows, "--main"]);
    assert!(main >= 0.9, "main content: median similarity {main}");
}
