//! `warchest index` against cdxj-indexer 1.5 (pip; the index pywb replays
//! from) on every WARC and ARC fixture, against the CDX files of pywb's
//! sample archive, and between compressions of the same records.
//!
//! Set WARCHEST_SKIP_PYTHON=1 to skip the comparisons with Python tools
//! where they are missing; CI never sets it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

fn fixtures() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    assert!(dir.is_dir(), "fixtures not found at {}", dir.display());
    dir.canonicalize().expect("fixtures dir")
}

/// Every WARC and ARC fixture, sorted, with its path relative to fixtures/.
fn archive_fixtures() -> Vec<(String, PathBuf)> {
    let exts = [
        ".warc",
        ".warc.gz",
        ".warc.lz4",
        ".warc.zst",
        ".warc.gz.bad",
        ".arc",
        ".arc.gz",
    ];
    let root = fixtures();
    let mut out = Vec::new();
    for sub in std::fs::read_dir(&root).expect("read fixtures") {
        let sub = sub.expect("entry").path();
        if !sub.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sub).expect("read dir") {
            let f = f.expect("entry").path();
            let name = f
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string();
            if f.is_file() && exts.iter().any(|e| name.ends_with(e)) {
                let rel = f
                    .strip_prefix(&root)
                    .expect("under root")
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, f));
            }
        }
    }
    out.sort();
    out
}

fn is_arc(name: &str) -> bool {
    name.ends_with(".arc") || name.ends_with(".arc.gz")
}

fn python_ok(module: &str) -> bool {
    if std::env::var_os("WARCHEST_SKIP_PYTHON").is_some() {
        return false;
    }
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "python3 with {module} is needed (pip install cdxj-indexer pyarrow), or set WARCHEST_SKIP_PYTHON=1"
    );
    true
}

fn warchest(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_warchest"))
        .args(args)
        .output()
        .expect("run warchest")
}

fn warchest_ok(args: &[&str]) -> String {
    let out = warchest(args);
    assert!(
        out.status.success(),
        "warchest {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A CDXJ line, parsed.
#[derive(Debug, Clone)]
struct Line {
    key: String,
    ts: String,
    json: Map<String, Value>,
}

impl Line {
    fn parse(l: &str) -> Line {
        let mut parts = l.splitn(3, ' ');
        let key = parts.next().expect("key").to_string();
        let ts = parts.next().expect("timestamp").to_string();
        let json = serde_json::from_str(parts.next().expect("json")).expect("json object");
        Line { key, ts, json }
    }

    fn get(&self, k: &str) -> Option<String> {
        self.json
            .get(k)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    }

    fn offset(&self) -> u64 {
        self.get("offset").expect("offset").parse().expect("number")
    }

    /// The digest without a `sha1:` label (pywb's form, which warchest
    /// writes; cdxj-indexer keeps the label).
    fn digest(&self) -> Option<String> {
        self.get("digest").map(|d| match d.get(..5) {
            Some(l) if l.eq_ignore_ascii_case("sha1:") => d[5..].to_string(),
            _ => d,
        })
    }
}

struct Peer {
    p: Vec<Line>,
    np: Vec<Line>,
    error: Option<String>,
}

/// cdxj-indexer (with -p and without) on every file, in one Python process.
fn cdxj_indexer(files: &[&Path], legacy: Option<&str>) -> BTreeMap<PathBuf, Peer> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/differential/cdxj_index.py"
    );
    let mut cmd = Command::new("python3");
    cmd.arg(script);
    if let Some(l) = legacy {
        cmd.arg(l);
    }
    let out = cmd.args(files).output().expect("run python3");
    assert!(
        out.status.success(),
        "cdxj_index.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parse_all = |v: &Value| -> Vec<Line> {
        v.as_array()
            .expect("array")
            .iter()
            .filter_map(|l| l.as_str())
            .filter(|l| legacy.is_none() || !l.starts_with(" CDX"))
            .map(|l| {
                if legacy.is_some() {
                    // Legacy lines are kept whole in `key`.
                    Line {
                        key: l.to_string(),
                        ts: String::new(),
                        json: Map::new(),
                    }
                } else {
                    Line::parse(l)
                }
            })
            .collect()
    };
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json");
            let file = PathBuf::from(v["file"].as_str().expect("file"));
            let peer = Peer {
                p: parse_all(&v["p"]),
                np: parse_all(&v["np"]),
                error: v["error"].as_str().map(str::to_string),
            };
            (file, peer)
        })
        .collect()
}

/// Files cdxj-indexer stops on; the entries it wrote before stopping are
/// compared, warchest may index more.
const PEER_FAILS: &[(&str, &str)] = &[
    (
        "jwat/invalid-arcfile-record-then-garbage.arc",
        "garbage after the last ARC record",
    ),
    (
        "jwat/invalid-warcfile-fields-empty.warc",
        "empty mandatory fields; warcio then reads a block as a header",
    ),
    (
        "jwat/invalid-warcfile-fields-invalidformat.warc",
        "malformed field values; warcio then reads a block as a header",
    ),
    (
        "jwat/invalid-warcfile-lonely-request-response-resource-conversion.warc",
        "records without WARC-Target-URI",
    ),
    (
        "jwat/invalid-warcfile-lonely-revisit.warc",
        "a revisit without WARC-Target-URI",
    ),
    (
        "jwat/invalid-warcfile-record-then-garbage.warc",
        "garbage after the last record",
    ),
    (
        "pywb/example-bad.warc.gz.bad",
        "whole-file gzip, which warcio refuses",
    ),
    (
        "warcio/example-bad.warc.gz.bad",
        "whole-file gzip, which warcio refuses",
    ),
    (
        "warcio/example-bad-non-chunked.warc.gz",
        "a record whose gzip member ends early",
    ),
    (
        "warcio/example-wrong-chunks.warc.gz",
        "a record whose gzip member ends early",
    ),
    (
        "resiliparse/block-sized-records.warc.lz4",
        "warcio does not read LZ4",
    ),
    ("resiliparse/warcfile.warc.lz4", "warcio does not read LZ4"),
];

/// Records warchest indexes and cdxj-indexer does not (cdxj-indexer is wrong
/// by the spec; see docs/indexing.md): (file, how many, why).
const MORE_RECORDS: &[(&str, usize, &str)] = &[
    (
        "jwat/invalid-warcfile-lonely-warcinfo-metadata.warc",
        1,
        "two records without Content-Length: warcio reads the second as the first's block",
    ),
    (
        "jwat/valid-warcfile-fields-metainfo.warc",
        1,
        "WARC-Type folded onto a continuation line: warcio does not unfold it",
    ),
    (
        "jwat/valid-warcfile-upper-lower-case.warc",
        2,
        "WARC-Type in upper case: cdxj-indexer compares record types case-sensitively",
    ),
];

/// Fields where warchest follows the spec and cdxj-indexer does not:
/// (file, offset, field, why).
const FIELD_DIVERGENCES: &[(&str, u64, &str, &str)] = &[
    (
        "pywb/example-extra.warc",
        3207,
        "mime",
        "status line `HTTPX/1.1 200 OK` is not HTTP; warcio does not check the protocol",
    ),
    ("pywb/example-extra.warc", 3207, "status", "as above"),
    (
        "warcat/bad_http_chunked_content.warc",
        0,
        "digest",
        "computed payload digest: transfer coding removed (WARC 1.1 5.9); warcio digests the raw chunked bytes",
    ),
];

/// For uncompressed files cdxj-indexer's length stops before the record's
/// closing CRLF CRLF, which the WARC grammar counts in the record (and
/// warchest does): the bytes between must be line ends only.
fn lengths_agree(path: &Path, offset: u64, ours: u64, theirs: u64) -> bool {
    if ours == theirs {
        return true;
    }
    let compressed = [".gz", ".bad", ".lz4", ".zst"]
        .iter()
        .any(|e| path.to_string_lossy().ends_with(e));
    if compressed || ours < theirs {
        return false;
    }
    let data = std::fs::read(path).expect("read");
    let (a, b) = ((offset + theirs) as usize, (offset + ours) as usize);
    b <= data.len() && b - a <= 4 && data[a..b].iter().all(|&c| c == b'\r' || c == b'\n')
}

#[test]
fn cdxj_matches_cdxj_indexer_on_every_fixture() {
    if !python_ok("cdxj_indexer") {
        return;
    }
    let all = archive_fixtures();
    let paths: Vec<&Path> = all.iter().map(|(_, p)| p.as_path()).collect();
    let peers = cdxj_indexer(&paths, None);
    let mut skipped = Vec::new();
    let mut seen_failures = BTreeSet::new();
    let mut seen_more = BTreeSet::new();
    let mut seen_fields = BTreeSet::new();
    let mut compared = 0;
    for (name, path) in &all {
        let peer = peers.get(path).expect("peer output");
        let ours: Vec<Line> =
            warchest_ok(&["index", "--format", "cdxj", path.to_str().expect("path")])
                .lines()
                .map(Line::parse)
                .collect();
        if ours.is_empty() && !peer.p.is_empty() {
            // warchest does not read ARC yet: only ARC may be skipped.
            assert!(
                is_arc(name),
                "{name}: warchest indexed nothing, cdxj-indexer {}",
                peer.p.len()
            );
            skipped.push(name.clone());
            continue;
        }
        match PEER_FAILS.iter().find(|(f, _)| f == name) {
            Some(_) => {
                assert!(
                    peer.error.is_some(),
                    "{name}: cdxj-indexer no longer fails: update PEER_FAILS"
                );
                seen_failures.insert(name.clone());
            }
            None => assert!(
                peer.error.is_none(),
                "{name}: cdxj-indexer failed: {:?}",
                peer.error
            ),
        }
        let by_offset: BTreeMap<u64, &Line> = ours.iter().map(|l| (l.offset(), l)).collect();
        if !peer.p.is_empty() {
            // Records share offsets only in whole-file gzip, which
            // cdxj-indexer refuses.
            assert_eq!(
                by_offset.len(),
                ours.len(),
                "{name}: two entries at one offset"
            );
        }
        let peer_np: BTreeMap<u64, &Line> = peer.np.iter().map(|l| (l.offset(), l)).collect();
        for theirs in &peer.p {
            let off = theirs.offset();
            let Some(o) = by_offset.get(&off) else {
                panic!("{name}: no entry at offset {off} where cdxj-indexer has {theirs:?}");
            };
            let mut diverges = |field: &str| {
                let hit = FIELD_DIVERGENCES
                    .iter()
                    .any(|(f, at, fld, _)| f == name && *at == off && *fld == field);
                if hit {
                    seen_fields.insert((name.clone(), off, field.to_string()));
                }
                hit
            };
            let ctx = format!("{name} @{off}");
            assert_eq!(o.key, theirs.key, "{ctx}: url key");
            assert_eq!(o.ts, theirs.ts, "{ctx}: timestamp");
            for f in ["url", "filename", "requestBody", "method"] {
                assert_eq!(o.json.get(f), theirs.json.get(f), "{ctx}: {f}");
            }
            for f in ["mime", "status"] {
                if o.get(f) != theirs.get(f) {
                    assert!(
                        diverges(f),
                        "{ctx}: {f}: ours {:?}, cdxj-indexer {:?}",
                        o.get(f),
                        theirs.get(f)
                    );
                }
            }
            // cdxj-indexer -p digests an already consumed stream when it
            // computes a missing digest; its plain run has the real value.
            let their_digest = peer_np.get(&off).map_or(theirs.digest(), |l| l.digest());
            if o.digest() != their_digest {
                assert!(
                    diverges("digest"),
                    "{ctx}: digest: ours {:?}, cdxj-indexer {:?}",
                    o.digest(),
                    their_digest
                );
            }
            let ol: u64 = o.get("length").expect("length").parse().expect("number");
            let tl: u64 = theirs
                .get("length")
                .expect("length")
                .parse()
                .expect("number");
            assert!(
                lengths_agree(path, off, ol, tl),
                "{ctx}: length ours {ol}, cdxj-indexer {tl}"
            );
            compared += 1;
        }
        let extra = ours.len() - peer.p.len();
        if extra > 0 && peer.error.is_none() {
            let Some((_, n, _)) = MORE_RECORDS.iter().find(|(f, _, _)| f == name) else {
                panic!("{name}: {extra} more entries than cdxj-indexer");
            };
            assert_eq!(extra, *n, "{name}: extra entries");
            seen_more.insert(name.clone());
        }
    }
    assert!(compared >= 250, "compared only {compared} entries");
    assert!(skipped.iter().all(|n| is_arc(n)));
    let listed: BTreeSet<String> = PEER_FAILS
        .iter()
        .map(|(f, _)| f.to_string())
        .filter(|f| !skipped.contains(f))
        .collect();
    assert_eq!(seen_failures, listed, "PEER_FAILS out of date");
    let more: BTreeSet<String> = MORE_RECORDS.iter().map(|(f, _, _)| f.to_string()).collect();
    assert_eq!(seen_more, more, "MORE_RECORDS out of date");
    let fields: BTreeSet<(String, u64, String)> = FIELD_DIVERGENCES
        .iter()
        .map(|(f, o, fld, _)| (f.to_string(), *o, fld.to_string()))
        .collect();
    assert_eq!(seen_fields, fields, "FIELD_DIVERGENCES out of date");
}
