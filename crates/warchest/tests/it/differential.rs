//! Differential tests against warcio (installed with pip by .ci/run): on every
//! WARC fixture, warchest finds the same records, at the same offsets, with
//! the same types, ids and target URIs.
//!
//! Set WARCHEST_SKIP_PYTHON=1 to skip where Python or warcio is missing; CI
//! never sets it.

use crate::common;

use std::process::Command;

use serde_json::Value;
use warchest::warc::Reader;

fn warcio_view(path: &std::path::Path) -> Option<Vec<Value>> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/differential/warcio_records.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .arg(path)
        .output()
        .expect("run python3");
    if out.status.code() == Some(3) {
        return None;
    }
    assert!(
        out.status.success(),
        "warcio failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect(),
    )
}

/// Files where warcio is wrong, with warchest's own record count and why.
const WARCIO_WRONG: &[(&str, usize, &str)] = &[(
    "invalid-warcfile-lonely-warcinfo-metadata.warc",
    2,
    "two header-only records without Content-Length: warcio reads the second as the first's block",
)];

#[test]
fn records_offsets_ids_and_uris_match_warcio() {
    if !common::python_has("warcio") {
        return;
    }
    let mut compared = 0;
    for path in common::warc_fixtures() {
        // warcio cannot read LZ4.
        if path.to_string_lossy().ends_with(".lz4") {
            continue;
        }
        let mut reader = Reader::open(&path).expect("open");
        let mut ours = Vec::new();
        while let Some(rec) = reader.next_record().expect("lenient read succeeds") {
            let h = rec.header();
            ours.push((
                rec.location().offset,
                h.record_type_str().map(|s| s.into_owned()),
                h.record_id().map(|s| s.into_owned()),
                h.target_uri().map(|s| s.into_owned()),
            ));
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some((_, n, why)) = WARCIO_WRONG.iter().find(|(f, _, _)| *f == name) {
            assert_eq!(ours.len(), *n, "{name}: {why}");
            continue;
        }
        let Some(theirs) = warcio_view(&path) else {
            // warcio refuses whole-file gzip; warchest reads it.
            assert!(!ours.is_empty(), "{}", path.display());
            continue;
        };
        assert_eq!(
            ours.len(),
            theirs.len(),
            "record count of {}",
            path.display()
        );
        for (o, t) in ours.iter().zip(&theirs) {
            // warcio keeps the white space of values that begin on a
            // continuation line; the grammar makes it part of the folding.
            let s = |k: &str| t[k].as_str().map(|v| v.trim().to_string());
            assert_eq!(
                o.0,
                t["offset"].as_u64().unwrap(),
                "offset in {}",
                path.display()
            );
            assert_eq!(o.1, s("type"), "type at {} in {}", o.0, path.display());
            assert_eq!(o.2, s("record_id"), "id at {} in {}", o.0, path.display());
            // warcio percent-encodes spaces in URIs (also the one left by
            // folding); warchest gives the URI as written.
            let uri = s("target_uri").map(|u| {
                u.trim_start_matches("%20")
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            });
            let ours = o.3.as_ref().map(|u| u.replace(' ', "%20"));
            assert_eq!(ours, uri, "target URI at {} in {}", o.0, path.display());
        }
        compared += 1;
    }
    assert!(compared > 40, "only {compared} files compared");
}
