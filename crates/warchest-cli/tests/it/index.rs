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

use crate::common;
use common::{fixture_files, fixtures, python_has, warchest};

/// Every WARC and ARC fixture, sorted, with its path relative to fixtures/.
fn archive_fixtures() -> Vec<(String, PathBuf)> {
    let root = fixtures();
    fixture_files(&[
        ".warc",
        ".warc.gz",
        ".warc.lz4",
        ".warc.zst",
        ".warc.gz.bad",
        ".arc",
        ".arc.gz",
    ])
    .into_iter()
    .map(|f| {
        let rel = f
            .strip_prefix(&root)
            .expect("under root")
            .to_string_lossy()
            .into_owned();
        (rel, f)
    })
    .collect()
}

fn is_arc(name: &str) -> bool {
    name.ends_with(".arc") || name.ends_with(".arc.gz")
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
        "jwat/1-1-20110922131213-00000-svc-VirtualBox.arc",
        1368,
        "mime",
        "`dns:` record: the ARC line says `text/dns`; warcio makes every ARC record an HTTP response and, finding no HTTP head, drops the ARC content-type",
    ),
    (
        "jwat/1-1-20110922131213-00000-svc-VirtualBox.arc",
        12499,
        "mime",
        "as above",
    ),
    (
        "jwat/1-1-20110922131213-00000-svc-VirtualBox.arc",
        12611,
        "mime",
        "as above",
    ),
    (
        "jwat/1-1-20110922131213-00000-svc-VirtualBox.arc",
        63553,
        "mime",
        "as above",
    ),
    (
        "jwat/1-1-20110922131213-00000-svc-VirtualBox.arc",
        280142,
        "mime",
        "as above",
    ),
    (
        "pywb/bad.arc",
        134,
        "mime",
        "document not HTTP (Archive-length -1): the ARC line's `text/html`, which warcio drops (as above)",
    ),
    (
        "pywb/bad.arc",
        202,
        "mime",
        "one-byte document `\\n`, not HTTP: the ARC line's `text/plain`, which warcio drops",
    ),
    (
        "pywb/bad.arc",
        202,
        "digest",
        "the document `\\n` is the payload; warcio reads it as an empty HTTP header block and digests nothing",
    ),
    (
        "pywb/bad.arc",
        262,
        "mime",
        "document not HTTP (Archive-length `abc`): the ARC line's `text/html`, which warcio drops",
    ),
    (
        "warcio/bad.arc",
        134,
        "mime",
        "as pywb/bad.arc (the same file)",
    ),
    ("warcio/bad.arc", 202, "mime", "as pywb/bad.arc"),
    ("warcio/bad.arc", 202, "digest", "as pywb/bad.arc"),
    ("warcio/bad.arc", 262, "mime", "as pywb/bad.arc"),
    (
        "warcat/bad_http_chunked_content.warc",
        0,
        "digest",
        "computed payload digest: transfer coding removed (WARC 1.1 5.9); warcio digests the raw chunked bytes",
    ),
];

/// For uncompressed files cdxj-indexer's length stops before the record's
/// closing CRLF CRLF (WARC) or newline (ARC), which the grammars count in
/// the record (and warchest does): the bytes between must be line ends
/// only.
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
    if !python_has("cdxj_indexer") {
        return;
    }
    let all = archive_fixtures();
    let paths: Vec<&Path> = all.iter().map(|(_, p)| p.as_path()).collect();
    let peers = cdxj_indexer(&paths, None);
    let mut seen_failures = BTreeSet::new();
    let mut seen_more = BTreeSet::new();
    let mut seen_fields = BTreeSet::new();
    let mut compared = 0;
    for (name, path) in &all {
        let peer = peers.get(path).expect("peer output");
        let out = warchest(&["index", "--format", "cdxj", path.to_str().expect("path")]);
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("not compressed record at a time") {
            // Whole-file gzip: refused (exit 2, naming recompress), as
            // cdxj-indexer refuses it; a lone file's entries went to
            // standard output before, and the error says how many.
            assert_eq!(out.status.code(), Some(2), "{name}: {err}");
            assert!(err.contains("warchest recompress"), "{name}: {err}");
            assert_eq!(
                refused_on_stdout(&err),
                out.stdout
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .count(),
                "{name}: {err}"
            );
            assert!(peer.error.is_some(), "{name}: cdxj-indexer reads it");
            assert!(PEER_FAILS.iter().any(|(f, _)| f == name), "{name}");
            seen_failures.insert(name.clone());
            continue;
        }
        assert!(out.status.success(), "warchest index {name} failed: {err}");
        let ours: Vec<Line> = String::from_utf8(out.stdout)
            .expect("utf-8")
            .lines()
            .map(Line::parse)
            .collect();
        // No file is skipped: WARC and ARC alike are compared.
        assert!(
            !ours.is_empty() || peer.p.is_empty(),
            "{name}: warchest indexed nothing, cdxj-indexer {}",
            peer.p.len()
        );
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
    assert!(
        all.iter().filter(|(n, _)| is_arc(n)).count() >= 10,
        "ARC fixtures missing"
    );
    let listed: BTreeSet<String> = PEER_FAILS.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(seen_failures, listed, "PEER_FAILS out of date");
    let more: BTreeSet<String> = MORE_RECORDS.iter().map(|(f, _, _)| f.to_string()).collect();
    assert_eq!(seen_more, more, "MORE_RECORDS out of date");
    let fields: BTreeSet<(String, u64, String)> = FIELD_DIVERGENCES
        .iter()
        .map(|(f, o, fld, _)| (f.to_string(), *o, fld.to_string()))
        .collect();
    assert_eq!(seen_fields, fields, "FIELD_DIVERGENCES out of date");
}

/// A CDX line as fields, with the 11-column legend.
fn cdx_fields(line: &str) -> Vec<String> {
    line.split(' ').map(str::to_string).collect()
}

/// pywb's own CDX 11 indexes of its sample archive (fixtures/pywb/cdx),
/// made by the pywb indexer cdxj-indexer replaced. Two conventions changed
/// since, and warchest follows cdxj-indexer: revisits carry the status of
/// their HTTP head (pywb wrote `-`), and a missing media type is `-` (pywb
/// wrote `unk`).
#[test]
fn cdx11_matches_pywb_sample_indexes() {
    let dir = fixtures().join("pywb");
    let cases: &[(&str, &[&str])] = &[
        ("dupes.cdx", &["dupes.warc.gz"]),
        ("example.cdx", &["example.warc.gz"]),
        ("example-extra.cdx", &["example-extra.warc"]),
        ("iana.cdx", &["iana.warc.gz"]),
        ("post-test.cdx", &["post-test.warc.gz"]),
        (
            "url-agnost-example.cdx",
            &[
                "example-url-agnostic-revisit.warc.gz",
                "example-url-agnostic-orig.warc.gz",
            ],
        ),
    ];
    let mut compared = 0;
    for (cdx, warcs) in cases {
        let want = std::fs::read_to_string(dir.join("cdx").join(cdx)).expect("read cdx");
        let mut lines = want.lines();
        assert_eq!(lines.next(), Some(" CDX N b a m s k r M S V g"), "{cdx}");
        let paths: Vec<String> = warcs
            .iter()
            .map(|w| dir.join(w).to_string_lossy().into_owned())
            .collect();
        let mut args = vec!["index", "--format", "cdx"];
        args.extend(paths.iter().map(String::as_str));
        let ours = warchest_ok(&args);
        let mut ours_lines = ours.lines();
        assert_eq!(ours_lines.next(), Some(" CDX N b a m s k r M S V g"));
        let ours: BTreeMap<(String, String), Vec<String>> = ours_lines
            .map(cdx_fields)
            .map(|f| ((f[10].clone(), f[9].clone()), f))
            .collect();
        for line in lines {
            let want = cdx_fields(line);
            assert_eq!(want.len(), 11, "{cdx}: {line}");
            let key = (want[10].clone(), want[9].clone());
            let got = ours
                .get(&key)
                .unwrap_or_else(|| panic!("{cdx}: no entry for {key:?}"));
            for i in [0, 1, 2, 5, 6, 7, 9, 10] {
                assert_eq!(got[i], want[i], "{cdx}: column {i} of {line}");
            }
            match (want[3].as_str(), want[4].as_str()) {
                ("warc/revisit", "-") => {
                    assert_eq!(got[3], "warc/revisit", "{line}");
                    // The revisit's HTTP status, `-` when it has no HTTP head.
                    assert!(
                        got[4] == "-" || got[4].parse::<u16>().is_ok(),
                        "{line}: revisit status {}",
                        got[4]
                    );
                }
                ("unk", s) => assert_eq!((got[3].as_str(), got[4].as_str()), ("-", s), "{line}"),
                (m, s) => assert_eq!((got[3].as_str(), got[4].as_str()), (m, s), "{line}"),
            }
            let (gl, wl): (u64, u64) = (got[8].parse().expect("S"), want[8].parse().expect("S"));
            let off: u64 = want[9].parse().expect("V");
            assert!(
                lengths_agree(&dir.join(&want[10]), off, gl, wl),
                "{cdx}: length of {line}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 100, "compared {compared}");
}

/// CDX 11 and CDX 9 lines equal cdxj-indexer's `-11` and `-9` output on
/// pywb's compressed sample files (cdxj-indexer strips any digest label in
/// CDX mode; these files only have `sha1:` ones).
#[test]
fn cdx11_and_cdx9_match_cdxj_indexer() {
    if !python_has("cdxj_indexer") {
        return;
    }
    let dir = fixtures().join("pywb");
    let files: Vec<PathBuf> = [
        "dupes.warc.gz",
        "example.warc.gz",
        "iana.warc.gz",
        "post-test.warc.gz",
    ]
    .iter()
    .map(|f| dir.join(f))
    .collect();
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    for (flag, format, legend) in [
        ("--cdx11", "cdx", " CDX N b a m s k r M S V g"),
        ("--cdx9", "cdx9", " CDX N b a m s k r V g"),
    ] {
        let peers = cdxj_indexer(&refs, Some(flag));
        for f in &files {
            let out = warchest_ok(&["index", "--format", format, f.to_str().expect("path")]);
            let mut lines = out.lines();
            assert_eq!(lines.next(), Some(legend));
            let ours: Vec<&str> = lines.collect();
            let peer = &peers[f];
            assert!(peer.error.is_none());
            let theirs: Vec<&str> = peer.p.iter().map(|l| l.key.as_str()).collect();
            assert_eq!(ours, theirs, "{flag} {}", f.display());
        }
    }
}

#[test]
fn custom_legend() {
    let f = fixtures().join("pywb/example.warc.gz");
    let out = warchest_ok(&["index", "--fields", "N b V g", f.to_str().expect("path")]);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(" CDX N b V g"));
    assert_eq!(
        lines.next(),
        Some("com,example)/?example=1 20140103030321 333 example.warc.gz")
    );
    let bad = warchest(&["index", "--fields", "N x", f.to_str().expect("path")]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unsupported CDX field"));
}

/// Removes offset and length from CDXJ lines.
fn without_position(cdxj: &str) -> Vec<String> {
    cdxj.lines()
        .map(|l| {
            let mut line = Line::parse(l);
            line.json.remove("offset");
            line.json.remove("length");
            line.json.remove("filename");
            format!("{} {} {}", line.key, line.ts, Value::Object(line.json))
        })
        .collect()
}

/// The index of a file does not depend on how it is compressed, except
/// for offsets and lengths.
#[test]
fn gzip_and_lz4_index_alike() {
    let index_all = |p: PathBuf| warchest_ok(&["index", "--all", p.to_str().expect("path")]);
    for stem in ["resiliparse/warcfile", "resiliparse/block-sized-records"] {
        let gz = index_all(fixtures().join(format!("{stem}.warc.gz")));
        let lz4 = index_all(fixtures().join(format!("{stem}.warc.lz4")));
        assert!(gz.lines().count() >= 3, "{stem}");
        assert_eq!(without_position(&gz), without_position(&lz4), "{stem}");
        assert_ne!(gz, lz4, "{stem}: offsets differ between compressions");
    }
    let plain = index_all(fixtures().join("resiliparse/block-sized-records.warc"));
    let gz = index_all(fixtures().join("resiliparse/block-sized-records.warc.gz"));
    assert_eq!(without_position(&plain), without_position(&gz));
}

/// Many files: the output is the same whatever -j, files in the order
/// given; --sort gives byte order as `LC_ALL=C sort` does, and the same
/// result with a sort budget small enough to spill.
#[test]
fn parallel_output_is_ordered_and_sort_is_bytewise() {
    let files: Vec<String> = archive_fixtures()
        .into_iter()
        .filter(|(n, _)| !is_arc(n) && !n.ends_with(".bad"))
        .map(|(_, p)| p.to_string_lossy().into_owned())
        .collect();
    let run = |extra: &[&str]| {
        let mut args = vec!["index"];
        args.extend_from_slice(extra);
        args.extend(files.iter().map(String::as_str));
        let out = warchest(&args);
        // Some fixtures are damaged: the run reports them and goes on.
        assert!(out.status.code() == Some(0) || out.status.code() == Some(2));
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let one = run(&["-j", "1"]);
    assert_eq!(run(&["-j", "4"]), one);
    let mut concatenated = String::new();
    for f in &files {
        let out = warchest(&["index", f]);
        // A lone file refused as a whole: its entries went out first, and
        // the error says to discard them (none is in a run of several).
        if String::from_utf8_lossy(&out.stderr).contains("not compressed record at a time") {
            continue;
        }
        concatenated.push_str(&String::from_utf8(out.stdout).expect("utf-8"));
    }
    assert_eq!(one, concatenated);

    let sorted = run(&["--sort", "-j", "3"]);
    let mut want: Vec<&str> = one.lines().collect();
    want.sort_unstable();
    want.dedup();
    assert_eq!(sorted.lines().collect::<Vec<_>>(), want);
    assert_eq!(run(&["--sort", "--sort-memory", "0"]), sorted);
    if Command::new("sort").arg("--version").output().is_ok() {
        let mut child = Command::new("sort")
            .env("LC_ALL", "C")
            .arg("-u")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sort");
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(one.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("sort output");
        assert_eq!(String::from_utf8(out.stdout).expect("utf-8"), sorted);
    }
}

#[test]
fn stdin_output_file_and_errors() {
    let f = fixtures().join("pywb/example.warc.gz");
    let data = std::fs::read(&f).expect("read");
    let mut child = Command::new(env!("CARGO_BIN_EXE_warchest"))
        .args(["index", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(&data)
            .expect("write");
    }
    let out = child.wait_with_output().expect("output");
    assert!(out.status.success());
    let via_stdin = String::from_utf8(out.stdout).expect("utf-8");
    let via_file = warchest_ok(&["index", f.to_str().expect("path")]);
    assert_eq!(via_stdin, via_file.replace("\"example.warc.gz\"", "\"-\""));

    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("x.cdxj");
    let printed = warchest_ok(&[
        "index",
        "-o",
        out_path.to_str().expect("path"),
        f.to_str().expect("path"),
    ]);
    assert_eq!(printed, "");
    assert_eq!(std::fs::read_to_string(&out_path).expect("read"), via_file);

    let missing = warchest(&["index", "/nonexistent/x.warc.gz", f.to_str().expect("path")]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/x.warc.gz"));
    // The other file is still indexed.
    assert_eq!(String::from_utf8(missing.stdout).expect("utf-8"), via_file);
}

/// Parquet: pyarrow reads the cc-index columns with their types, one row
/// per entry, in url key order.
#[test]
fn parquet_reads_back_with_pyarrow() {
    if !python_has("pyarrow") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("index.parquet");
    let files = [
        fixtures().join("pywb/iana.warc.gz"),
        fixtures().join("pywb/post-test.warc.gz"),
    ];
    let mut args = vec![
        "index",
        "--format",
        "parquet",
        "-o",
        out.to_str().expect("path"),
    ];
    args.extend(files.iter().map(|f| f.to_str().expect("path")));
    warchest_ok(&args);
    let mut count_args = vec!["index"];
    count_args.extend(files.iter().map(|f| f.to_str().expect("path")));
    let cdxj = warchest_ok(&count_args);
    let mut keys: Vec<String> = cdxj.lines().map(|l| Line::parse(l).key).collect();
    keys.sort();
    let script = r#"
import json, sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
print(json.dumps({
    "schema": [[f.name, str(f.type), f.nullable] for f in t.schema],
    "rows": t.num_rows,
    "keys": t.column("url_surtkey").to_pylist(),
    "first": {k: (str(v) if v is not None else None) for k, v in t.slice(0, 1).to_pylist()[0].items()},
    "compression": pq.ParquetFile(sys.argv[1]).metadata.row_group(0).column(0).compression,
}))
"#;
    let py = Command::new("python3")
        .args(["-c", script, out.to_str().expect("path")])
        .output()
        .expect("python3");
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let v: Value = serde_json::from_slice(&py.stdout).expect("json");
    let schema: Vec<(String, String)> = v["schema"]
        .as_array()
        .expect("schema")
        .iter()
        .map(|f| {
            (
                f[0].as_str().expect("name").to_string(),
                f[1].as_str().expect("type").to_string(),
            )
        })
        .collect();
    let want = [
        ("url_surtkey", "string"),
        ("url", "string"),
        ("url_host_name", "string"),
        ("url_host_tld", "string"),
        ("url_host_2nd_last_part", "string"),
        ("url_host_3rd_last_part", "string"),
        ("url_host_4th_last_part", "string"),
        ("url_host_5th_last_part", "string"),
        ("url_host_registry_suffix", "string"),
        ("url_host_registered_domain", "string"),
        ("url_host_private_suffix", "string"),
        ("url_host_private_domain", "string"),
        ("url_host_name_reversed", "string"),
        ("url_protocol", "string"),
        ("url_port", "int32"),
        ("url_path", "string"),
        ("url_query", "string"),
        ("fetch_time", "timestamp[ms, tz=UTC]"),
        ("fetch_status", "int16"),
        ("fetch_redirect", "string"),
        ("content_digest", "string"),
        ("content_mime_type", "string"),
        ("content_mime_detected", "string"),
        ("content_charset", "string"),
        ("content_languages", "string"),
        ("content_truncated", "string"),
        ("warc_filename", "string"),
        ("warc_record_offset", "int64"),
        ("warc_record_length", "int64"),
        ("warc_segment", "string"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(schema, want);
    assert_eq!(v["rows"].as_u64(), Some(keys.len() as u64));
    let got_keys: Vec<String> = v["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k.as_str().expect("key").to_string())
        .collect();
    assert_eq!(got_keys, keys, "rows in url key order");
    assert_eq!(v["compression"].as_str(), Some("ZSTD"));
    let first = &v["first"];
    assert_eq!(
        first["url_host_registered_domain"].as_str(),
        Some("httpbin.org")
    );
    assert_eq!(first["url_host_tld"].as_str(), Some("org"));
    assert_eq!(first["url_protocol"].as_str(), Some("http"));
    assert_eq!(first["url_path"].as_str(), Some("/post"));
    assert_eq!(first["fetch_status"].as_str(), Some("200"));
    assert_eq!(
        first["content_mime_type"].as_str(),
        Some("application/json")
    );
    assert_eq!(first["warc_filename"].as_str(), Some("post-test.warc.gz"));
    assert!(
        first["fetch_time"]
            .as_str()
            .expect("time")
            .starts_with("2014-06-10")
    );
}

fn sample_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.warc.gz")
}

/// The sample's records in one gzip member, as `DIR/whole.warc.gz`.
fn whole_file_gzip(dir: &std::path::Path) -> PathBuf {
    use std::io::{Read, Write};
    let mut plain = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(sample_path()).unwrap())
        .read_to_end(&mut plain)
        .unwrap();
    let whole = dir.join("whole.warc.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).unwrap();
    std::fs::write(&whole, gz.finish().unwrap()).unwrap();
    whole
}

#[test]
fn whole_file_gzip_is_refused_naming_recompress() {
    // The sample's records in one gzip member.
    let dir = tempfile::tempdir().unwrap();
    let whole = whole_file_gzip(dir.path());
    for format in ["cdxj", "cdx", "json"] {
        let out = warchest(&[
            "index",
            "--format",
            format,
            whole.to_str().unwrap(),
            sample_path().to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("warchest recompress"), "{err}");
        assert!(err.contains("not compressed record at a time"), "{err}");
        // No entry of the whole-file gzip; the other file's entries all.
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(!stdout.contains("whole.warc.gz"), "{stdout}");
        assert!(stdout.contains("sample.warc.gz"), "{stdout}");
    }
    // Once recompressed it indexes.
    let fixed = dir.path().join("fixed.warc.gz");
    warchest_ok(&[
        "recompress",
        whole.to_str().unwrap(),
        "-o",
        fixed.to_str().unwrap(),
    ]);
    warchest_ok(&["index", fixed.to_str().unwrap()]);
}

/// The number of entries a refusal says it left on standard output (0
/// when it says none is written).
fn refused_on_stdout(err: &str) -> usize {
    if err.contains("so none is written") {
        return 0;
    }
    let (_, rest) = err
        .split_once("so the ")
        .unwrap_or_else(|| panic!("no count: {err}"));
    let (n, rest) = rest.split_once(' ').expect("count");
    assert!(
        rest.starts_with(
            "entries of it written to standard output before this was found are to be discarded"
        ),
        "{err}"
    );
    n.parse().expect("count")
}

/// A lone file's lines go straight to the output, not through the 8 MiB
/// spool: a refused lone file leaves no entry in the file `-o` writes or
/// standard output is redirected to (cut back), and on a pipe the error
/// counts the entries already there; a good file's output is what a
/// spooled run gives.
#[test]
fn a_lone_file_goes_straight_to_the_output() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let whole = whole_file_gzip(dir.path());
    let whole = whole.to_str().unwrap();
    for (format, legend) in [("cdxj", ""), ("cdx", " CDX N b a m s k r M S V g\n")] {
        // `-o`: no entry stands, so the file is not written (an index
        // there before is left as it was), no `.open` left.
        let out_path = dir.path().join(format!("whole.{format}"));
        std::fs::write(&out_path, "an index before\n").unwrap();
        let out = warchest(&[
            "index",
            "--format",
            format,
            "-o",
            out_path.to_str().unwrap(),
            whole,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("so none is written"), "{err}");
        assert!(
            err.contains("not written, as no entry of any input"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(&out_path).unwrap(),
            "an index before\n"
        );
        assert!(!dir.path().join(format!("whole.{format}.open")).exists());
        let out = warchest(&["index", "--format", format, whole]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        let lines = String::from_utf8(out.stdout).unwrap();
        let entries = lines.strip_prefix(legend).unwrap().lines().count();
        assert_eq!(refused_on_stdout(&err), entries, "{err}");
        // Refused where it is found, a record or two in: the sample's
        // first record (a warcinfo) is not indexed, so no entry stands.
        assert_eq!(entries, 0, "{err}");
        // Standard output redirected to a file, standard error too (as
        // `> FILE 2>&1`): cut back, the messages after the legend.
        let redirected = dir.path().join(format!("redirected.{format}"));
        let f = std::fs::File::create(&redirected).unwrap();
        let status = common::bin()
            .args(["index", "--format", format, whole])
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(2));
        let text = std::fs::read_to_string(&redirected).unwrap();
        let rest = text.strip_prefix(legend).expect("the legend first");
        assert!(rest.contains("so none is written"), "{text}");
        assert!(
            rest.lines().all(|l| l.starts_with("warchest: ")),
            "no entry, no hole: {text:?}"
        );
    }
    // A good file of more than 8 MiB of CDXJ (the spool's memory): the
    // same lines alone (straight, to standard output and to a file) as
    // spooled beside another file.
    let big = dir.path().join("big.warc");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    let path = "p".repeat(400);
    for i in 0..15_000u32 {
        let block = format!("record {i}\n");
        write!(
            w,
            "WARC/1.1\r\nWARC-Type: resource\r\n\
             WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{i:012x}>\r\n\
             WARC-Date: 2026-01-01T00:00:00Z\r\n\
             WARC-Target-URI: http://example.com/{path}/{i}\r\n\
             Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n{block}\r\n\r\n",
            block.len()
        )
        .unwrap();
    }
    w.into_inner().unwrap().sync_all().unwrap();
    let big = big.to_str().unwrap();
    let alone = warchest_ok(&["index", "-j", "1", big]);
    assert!(alone.len() > 8 << 20, "{} bytes", alone.len());
    assert_eq!(alone.lines().count(), 15_000);
    let out_path = dir.path().join("big.cdxj");
    warchest_ok(&["index", "-j", "1", "-o", out_path.to_str().unwrap(), big]);
    assert!(std::fs::read_to_string(&out_path).unwrap() == alone, "-o");
    let sample = sample_path();
    let both = warchest_ok(&["index", "-j", "1", big, sample.to_str().unwrap()]);
    assert!(both.starts_with(&alone), "spooled: the same lines");
    assert!(
        both[alone.len()..]
            .lines()
            .all(|l| l.contains("sample.warc.gz"))
    );
}

#[cfg(unix)]
#[test]
fn parquet_is_not_written_to_a_terminal() {
    if !python_has("pty") {
        return;
    }
    // Standard output a pseudo-terminal, as in an interactive shell.
    let script = "import os, pty, subprocess, sys\n\
m, s = pty.openpty()\n\
p = subprocess.run(sys.argv[1:], stdout=s, stderr=subprocess.PIPE)\n\
os.close(s)\n\
sys.stderr.write(p.stderr.decode())\n\
sys.exit(p.returncode)\n";
    let out = Command::new("python3")
        .args(["-c", script, common::bin_path()])
        .args(["index", "--format", "parquet"])
        .arg(sample_path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("standard output is a terminal"), "{err}");
    // Redirected, it is written.
    let out = warchest(&[
        "index",
        "--format",
        "parquet",
        sample_path().to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(out.stdout.starts_with(b"PAR1"));
}

/// A WARC record, uncompressed: `typ`, `uri`, `ct` (Content-Type), `block`.
fn warc_record(typ: &str, uri: &str, n: u32, ct: &str, block: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "WARC/1.1\r\nWARC-Type: {typ}\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{n:012}>\r\n\
         WARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Target-URI: {uri}\r\nContent-Type: {ct}\r\n\
         Content-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

/// A lone file refused as a whole on a pipe: its entries stand (the error
/// counts them), so its records whose HTTP head did not parse are told;
/// cut back from a file `-o` writes, none stands and none is told.
#[test]
fn a_refusal_on_a_pipe_tells_the_unparsed_heads_of_its_entries() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let http = "application/http; msgtype=response";
    let gz = |data: &[u8]| {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    };
    // Two records a member each, then four in one member: the refusal
    // comes after some entries have gone to the pipe.
    let mut file = gz(&warc_record(
        "response",
        "http://a.test/1",
        1,
        http,
        b"\x00\x01 not http",
    ));
    let mut rest = Vec::new();
    for n in 2..7 {
        let uri = format!("http://a.test/{n}");
        let r = warc_record("response", &uri, n, http, b"HTTP/1.1 200 OK\r\n\r\nhi");
        if n == 2 {
            file.extend(gz(&r));
        } else {
            rest.extend(r);
        }
    }
    file.extend(gz(&rest));
    let whole = dir.path().join("whole.warc.gz");
    std::fs::write(&whole, file).unwrap();
    let whole = whole.to_str().unwrap();
    let told = "1 record whose HTTP head did not parse";

    let out = warchest(&["index", whole]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let entries = String::from_utf8(out.stdout).unwrap().lines().count();
    assert_eq!(refused_on_stdout(&err), entries, "{err}");
    // Some stand, and the read stopped before the last records.
    assert!((2..6).contains(&entries), "{entries}: {err}");
    assert!(err.contains(told), "{err}");

    let out_path = dir.path().join("whole.cdxj");
    let out = warchest(&["index", "-o", out_path.to_str().unwrap(), whole]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!out_path.exists(), "none stands: not written");
    assert!(!err.contains(told), "{err}");
}

/// `index -o OUT` whose inputs all fail (a mistyped name) writes no OUT
/// and leaves one there before as it was, where it replaced it with an
/// empty index; with one input that can be read, that one's index is
/// written, exit 2 naming the other (the documented rule).
#[test]
fn an_index_of_no_input_read_does_not_replace_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("coll.cdxj");
    std::fs::write(&out_path, "an index before\n").unwrap();
    let missing = dir.path().join("crawl.warc.gz");
    let other = dir.path().join("other.warc.gz");
    for inputs in [vec![&missing], vec![&missing, &other]] {
        let mut args = vec!["index", "-o", out_path.to_str().unwrap()];
        args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
        let out = warchest(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("crawl.warc.gz"), "{err}");
        assert!(
            err.contains("not written, as no entry of any input"),
            "{err}"
        );
        assert!(err.contains("the existing one is left as it was"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&out_path).unwrap(),
            "an index before\n"
        );
        assert!(!dir.path().join("coll.cdxj.open").exists());
    }
    let sample = sample_path();
    let out = warchest(&[
        "index",
        "-o",
        out_path.to_str().unwrap(),
        missing.to_str().unwrap(),
        sample.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("not written"), "{err}");
    let written = std::fs::read_to_string(&out_path).unwrap();
    assert!(written.contains("sample.warc.gz"), "{written}");
}

/// Records whose HTTP head did not parse are indexed as cdxj-indexer
/// indexes them (no status, no mime) and told on stderr by default: their
/// number and the first offset in one line, each offset with -w, nothing
/// with -q; a good file tells nothing; with several files the line names
/// the file of the first.
#[test]
fn index_tells_records_whose_http_head_did_not_parse() {
    let dir = tempfile::tempdir().unwrap();
    let http = "application/http; msgtype=response";
    let good = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhi";
    let mut data = warc_record("response", "http://a.test/1", 1, http, good);
    let first = data.len();
    data.extend(warc_record(
        "response",
        "http://a.test/2",
        2,
        http,
        b"hello world\r\n\r\nhi",
    ));
    let second = data.len();
    data.extend(warc_record(
        "response",
        "http://a.test/3",
        3,
        http,
        b"\x00\x01 not http",
    ));
    data.extend(warc_record("response", "http://a.test/4", 4, http, good));
    let bad = dir.path().join("bad.warc");
    std::fs::write(&bad, &data).unwrap();
    let ok = dir.path().join("ok.warc");
    std::fs::write(
        &ok,
        warc_record("response", "http://a.test/5", 5, http, good),
    )
    .unwrap();
    let (bad_s, ok_s) = (bad.to_str().unwrap(), ok.to_str().unwrap());

    let out = warchest(&["index", bad_s]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    for (i, l) in lines.iter().enumerate() {
        let has_status = l.contains("\"status\"");
        assert_eq!(has_status, i == 0 || i == 3, "{l}");
        assert_eq!(l.contains("\"mime\""), has_status, "{l}");
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim_end(),
        format!(
            "warchest: {bad_s}: 2 records whose HTTP head did not parse: indexed without \
             status and MIME, the first at offset {first}; -w lists them"
        ),
    );

    let out = warchest(&["-w", "index", bad_s]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    for at in [first, second] {
        assert!(
            err.contains(&format!(
                "warchest: {bad_s}: warning: offset {at}: http-head-unparsed: HTTP head did not \
                 parse; indexed without status and MIME"
            )),
            "{err}"
        );
    }
    assert!(
        err.contains("2 records whose HTTP head did not parse"),
        "{err}"
    );
    assert!(!err.contains("-w lists"), "{err}");

    let out = warchest(&["-q", "index", bad_s]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");

    let out = warchest(&["index", ok_s]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");

    let bad2 = dir.path().join("bad2.warc");
    std::fs::write(&bad2, &data).unwrap();
    let bad2_s = bad2.to_str().unwrap();
    let one = format!("{bad_s}: 2 records");
    let several: [(&[&str], &str, String); 4] = [
        (&["index", ok_s, bad_s], &one, String::new()),
        (&["index", "--sort", ok_s, bad_s], &one, String::new()),
        (
            &["index", ok_s, bad_s, bad2_s],
            "4 records",
            format!(" in {bad_s}"),
        ),
        (
            &["index", "--sort", ok_s, bad2_s, bad_s],
            "4 records",
            format!(" in {bad2_s}"),
        ),
    ];
    for (args, told, first_in) in several {
        let out = warchest(args);
        assert!(out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.trim_end(),
            format!(
                "warchest: {told} whose HTTP head did not parse: indexed without status \
                 and MIME, the first{first_in} at offset {first}; -w lists them"
            ),
            "{args:?}"
        );
    }
    // A WACZ of it indexes them so too, and says so.
    let wacz = dir.path().join("bad.wacz");
    let out = warchest(&["wacz", "create", "-o", wacz.to_str().unwrap(), bad_s]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "warchest: bad.warc: 2 records whose HTTP head did not parse: indexed without \
             status and MIME, the first at offset {first}; -w lists them"
        )),
        "{err}"
    );
}

/// `filter` with an HTTP test over a record whose HTTP head does not
/// parse: the test sees no head (the record is not selected by
/// `http:status == 200`), and stderr says so, once per record; a filter
/// with no HTTP test reads no head and says nothing.
#[test]
fn filter_tells_records_whose_http_head_did_not_parse() {
    let dir = tempfile::tempdir().unwrap();
    let http = "application/http; msgtype=response";
    let good = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhi";
    let mut data = warc_record("response", "http://a.test/1", 1, http, good);
    let odd_at = data.len();
    data.extend(warc_record(
        "response",
        "http://a.test/2",
        2,
        http,
        b"no head here",
    ));
    let src = dir.path().join("odd.warc");
    std::fs::write(&src, &data).unwrap();
    let (src_s, out) = (src.to_str().unwrap(), dir.path().join("out.warc"));
    let out_s = out.to_str().unwrap();
    let o = warchest(&["filter", src_s, "-o", out_s, "http:status == 200"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.trim_end(),
        format!(
            "warchest: {src_s}: 1 record whose HTTP head did not parse: the filter's HTTP \
             tests saw none, the first at offset {odd_at}; -w lists it"
        )
    );
    assert_eq!(std::fs::read(&out).unwrap(), &data[..odd_at]);
    let o = warchest(&["-w", "filter", src_s, "-o", out_s, "http:status == 200"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("offset {odd_at}: http-head-unparsed")),
        "{err}"
    );
    let o = warchest(&["filter", src_s, "-o", out_s, "warc-type == \"response\""]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
}

/// `wacz create` writes `OUT.open` and gives it its name once whole: an
/// output that is one of its inputs is refused before anything is
/// written (the input stays whole); a good run leaves no `.open` file;
/// an existing output is replaced (as py-wacz does) only by a whole one,
/// and a run that fails leaves it as it was.
#[test]
fn wacz_create_writes_its_output_whole_and_replaces_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.warc.gz");
    std::fs::copy(sample_path(), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let i = input.to_str().unwrap();
    let out = warchest(&["wacz", "create", "-o", i, i]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is also an input"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), before, "the input is whole");
    let wacz = dir.path().join("a.wacz");
    let w = wacz.to_str().unwrap();
    let out = warchest(&["wacz", "create", "-o", w, i]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(wacz.exists() && !dir.path().join("a.wacz.open").exists());
    let made = std::fs::read(&wacz).unwrap();
    // A run that fails (an input that is no archive) leaves it as it was.
    let junk = dir.path().join("junk.warc");
    std::fs::write(&junk, b"not an archive\n").unwrap();
    let out = warchest(&["wacz", "create", "-o", w, i, junk.to_str().unwrap()]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read(&wacz).unwrap(), made);
}

/// A whole-file gzip (records not each in their own member) cannot be
/// indexed so that its entries address its records: `wacz create`
/// refuses it as `warchest index` does, naming `recompress`, and writes
/// no WACZ.
#[test]
fn wacz_create_refuses_a_file_not_compressed_record_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let whole = whole_file_gzip(dir.path());
    let wacz = dir.path().join("w.wacz");
    let out = warchest(&[
        "wacz",
        "create",
        "-o",
        wacz.to_str().unwrap(),
        whole.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not compressed record at a time"), "{err}");
    assert!(err.contains("warchest recompress"), "{err}");
    assert!(!wacz.exists());
    assert!(!dir.path().join("w.wacz.open").exists());
}

/// `wacz create` reads as every command does: leniently (a header with
/// bare LF line ends is recovered from and counted), and strictly with
/// `--strict`, where the same file is an error and no WACZ is written.
#[test]
fn wacz_create_reads_strictly_with_strict() {
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare.warc");
    std::fs::write(
        &bare,
        "WARC/1.1\nWARC-Type: resource\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\n\
         WARC-Date: 2024-01-02T03:04:05Z\nWARC-Target-URI: http://a.test/\nContent-Type: text/plain\n\
         Content-Length: 2\n\nhi\n\n",
    )
    .unwrap();
    let (b, w) = (bare.to_str().unwrap(), dir.path().join("b.wacz"));
    let out = warchest(&["wacz", "create", "-o", w.to_str().unwrap(), b]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("recover"), "{err}");
    std::fs::remove_file(&w).unwrap();
    let out = warchest(&["--strict", "wacz", "create", "-o", w.to_str().unwrap(), b]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!w.exists());
}

/// `extract --length` reads only the record's stored bytes, whether the
/// file is on its own or inside a WACZ (`FILE.wacz#archive/NAME`): a
/// length shorter than the record gives the same outcome both ways.
#[test]
fn extract_length_is_the_same_in_a_wacz() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("s.warc.gz");
    std::fs::copy(sample_path(), &warc).unwrap();
    let wacz = dir.path().join("s.wacz");
    let out = warchest(&[
        "wacz",
        "create",
        "-o",
        wacz.to_str().unwrap(),
        warc.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let member = format!("{}#archive/s.warc.gz", wacz.display());
    for len in ["40", "100000"] {
        let a = warchest(&[
            "extract",
            warc.to_str().unwrap(),
            "--offset",
            "0",
            "--length",
            len,
        ]);
        let b = warchest(&["extract", &member, "--offset", "0", "--length", len]);
        assert_eq!(a.status.code(), b.status.code(), "length {len}");
        assert_eq!(a.stdout, b.stdout, "length {len}");
    }
    let short = warchest(&["extract", &member, "--offset", "0", "--length", "40"]);
    let whole = warchest(&["extract", &member, "--offset", "0"]);
    assert_ne!(
        (short.status.code(), short.stdout),
        (whole.status.code(), whole.stdout),
        "the length is read"
    );
}
