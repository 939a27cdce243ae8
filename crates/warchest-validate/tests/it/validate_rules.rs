//! `validate` on records made for one rule each: the rules no fixture
//! breaks, and the cross-record and container checks.

use std::collections::BTreeSet;
use std::io::Write;

use warchest_validate::{Finding, Options, Severity, SpecVersion, Validator, rules};

/// Validates several in-memory files together.
fn run_files(files: &[(&str, &[u8])], opts: Options) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut v = Validator::new(opts);
    for (name, data) in files {
        v.validate_reader(name, *data, &mut |f| findings.push(f))
            .expect("in-memory input reads");
    }
    v.finish(&mut |f| findings.push(f));
    findings
}

fn run(data: &[u8]) -> Vec<Finding> {
    run_files(&[("t.warc", data)], Options::default())
}

fn ids(f: &[Finding]) -> BTreeSet<&'static str> {
    f.iter().map(|f| f.rule).collect()
}

/// A WARC record with `fields` (name, value) and `block`; Content-Length
/// is added unless given.
fn record(version: &str, fields: &[(&str, &str)], block: &[u8]) -> Vec<u8> {
    let mut r = format!("WARC/{version}\r\n").into_bytes();
    for (n, v) in fields {
        r.extend(format!("{n}: {v}\r\n").as_bytes());
    }
    if !fields
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
    {
        r.extend(format!("Content-Length: {}\r\n", block.len()).as_bytes());
    }
    r.extend(b"\r\n");
    r.extend(block);
    r.extend(b"\r\n\r\n");
    r
}

const WARCINFO_BLOCK: &[u8] = b"software: test\r\nformat: WARC File Format 1.1\r\n";

fn warcinfo(version: &str, id: &str) -> Vec<u8> {
    record(
        version,
        &[
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", id),
            ("WARC-Date", "2024-01-02T03:04:05Z"),
            ("Content-Type", "application/warc-fields"),
        ],
        WARCINFO_BLOCK,
    )
}

/// A well-formed 1.1 resource record.
fn resource(id: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut f = vec![
        ("WARC-Type", "resource"),
        ("WARC-Record-ID", id),
        ("WARC-Date", "2024-01-02T03:04:05Z"),
        ("WARC-Target-URI", "file:///a.txt"),
        ("Content-Type", "text/plain"),
    ];
    f.extend_from_slice(extra);
    record("1.1", &f, b"hello")
}

fn file(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn a_clean_file_has_no_finding() {
    let data = file(&[
        warcinfo("1.1", "<urn:uuid:1>"),
        resource("<urn:uuid:2>", &[]),
    ]);
    let f = run(&data);
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn every_finding_carries_its_rule_clause_and_place() {
    let data = file(&[warcinfo("1.1", "<urn:uuid:1>"), resource("<zaphod>", &[])]);
    let f = run(&data);
    let bad = f
        .iter()
        .find(|f| f.rule == "warc.record-id.syntax")
        .expect("record id finding");
    assert_eq!(bad.severity, Severity::Error);
    assert_eq!(bad.clause, rules::RECORD_ID_SYNTAX.clause);
    assert_eq!(bad.file, "t.warc");
    assert_eq!(
        bad.offset,
        Some(warcinfo("1.1", "<urn:uuid:1>").len() as u64)
    );
    assert_eq!(bad.record_id.as_deref(), Some("<zaphod>"));
    assert!(bad.message.contains("scheme"), "{}", bad.message);
}

#[test]
fn non_utf8_header_bytes() {
    // The record of jwat/invalid-warcfile-encoding-headers.warc.gz as it
    // was crawled: Big5 bytes in WARC-Target-URI.
    let uri = b"https://ecorp.chinatrust.com.tw/cts/static/ag_stockdiv_cash_history.jsp?comName=\xa4o\xa4Q";
    let mut data = warcinfo("1.0", "<urn:uuid:1>");
    let mut r = b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:2>\r\nWARC-Date: 2014-11-02T11:55:24Z\r\nContent-Type: text/plain\r\nWARC-Target-URI: ".to_vec();
    r.extend(uri);
    r.extend(b"\r\nContent-Length: 1\r\n\r\nx\r\n\r\n");
    data.extend(r);
    let got = ids(&run(&data));
    assert!(got.contains("warc.header.utf8"), "{got:?}");
    assert!(got.contains("warc.uri.syntax"), "{got:?}");
}

#[test]
fn control_characters_in_values() {
    let data = file(&[
        warcinfo("1.1", "<urn:uuid:1>"),
        resource("<urn:uuid:2>", &[("X-Note", "a\x07b")]),
    ]);
    assert_eq!(ids(&run(&data)), ["warc.header.control-char"].into());
}

/// Issue 19: an RFC 2047 encoded word that cannot be decoded is a
/// finding; a good one, and `=?` in a URI, are not.
#[test]
fn malformed_encoded_words() {
    let good = file(&[
        warcinfo("1.1", "<urn:uuid:1>"),
        resource(
            "<urn:uuid:2>",
            &[
                ("X-Title", "=?UTF-8?B?Y2Fmw6k=?="),
                ("X-Link", "see http://a.example/?q=?x"),
            ],
        ),
    ]);
    assert!(run(&good).is_empty(), "{:#?}", run(&good));
    for bad in [
        "=?UTF-8?B?Y2Fmw6k!?=",
        "=?UTF-8?X?abc?=",
        "x =?UTF-8?Q?caf",
        "=?no-such-charset?Q?x?=",
    ] {
        let data = file(&[
            warcinfo("1.1", "<urn:uuid:1>"),
            resource("<urn:uuid:2>", &[("X-Title", bad)]),
        ]);
        let f = run(&data);
        assert_eq!(ids(&f), ["warc.header.encoded-word"].into(), "{bad}");
        assert!(f[0].message.contains("X-Title"), "{:?}", f[0].message);
    }
}

#[test]
fn dates_by_version() {
    let with_date = |v: &str, d: &str| {
        let r = record(
            v,
            &[
                ("WARC-Type", "warcinfo"),
                ("WARC-Record-ID", "<urn:uuid:1>"),
                ("WARC-Date", d),
                ("Content-Type", "application/warc-fields"),
            ],
            WARCINFO_BLOCK,
        );
        ids(&run(&r))
    };
    // Sub-second precision: 1.1 only.
    assert!(with_date("1.1", "2024-01-02T03:04:05.123456Z").is_empty());
    assert_eq!(
        with_date("1.0", "2024-01-02T03:04:05.123Z"),
        ["warc.date.precision"].into()
    );
    // Reduced precision: an info in 1.1, an error in 1.0.
    assert_eq!(
        with_date("1.1", "2024-01"),
        ["warc.date.reduced-precision"].into()
    );
    assert_eq!(with_date("1.0", "2024-01"), ["warc.date.precision"].into());
    // Offsets, impossible days, more than 9 fraction digits.
    for bad in [
        "2009-03-05T08:43:19-0800",
        "2009-03-65T08:43:19Z",
        "2024-01-02T03:04:05.1234567890Z",
    ] {
        assert_eq!(with_date("1.1", bad), ["warc.date.syntax"].into(), "{bad}");
    }
    assert_eq!(
        with_date("1.1", "2024-01-02t03:04:05z"),
        ["warc.date.lowercase"].into()
    );
}

#[test]
fn target_uri_brackets_by_version() {
    let with_uri = |v: &str, u: &str| {
        let r = record(
            v,
            &[
                ("WARC-Type", "resource"),
                ("WARC-Record-ID", "<urn:uuid:2>"),
                ("WARC-Date", "2024-01-02T03:04:05Z"),
                ("WARC-Target-URI", u),
                ("Content-Type", "text/plain"),
            ],
            b"x",
        );
        let mut data = warcinfo(v, "<urn:uuid:1>");
        data.extend(r);
        ids(&run(&data))
    };
    assert_eq!(with_uri("1.1", "<http://a/>"), ["warc.uri.brackets"].into());
    assert_eq!(
        with_uri("1.0", "<http://a/>"),
        ["warc.uri.brackets-1.0"].into()
    );
    assert!(with_uri("1.0", "http://a/").is_empty());
    assert_eq!(with_uri("1.1", "http://a/b c"), ["warc.uri.syntax"].into());
}

#[test]
fn spec_option_judges_every_record_by_one_version() {
    let data = file(&[
        warcinfo("1.0", "<urn:uuid:1>"),
        resource("<urn:uuid:2>", &[]),
    ]);
    let opts = Options {
        spec: Some(SpecVersion::V1_1),
        ..Options::default()
    };
    let f = run_files(&[("t.warc", &data)], opts);
    let not = f
        .iter()
        .filter(|f| f.rule == "warc.version.not-requested")
        .count();
    assert_eq!(not, 1, "{f:#?}");
}

#[test]
fn extensions_are_reported_only_when_forbidden() {
    let data = file(&[
        warcinfo("1.1", "<urn:uuid:1>"),
        resource(
            "<urn:uuid:2>",
            &[("WARC-Protocol", "http/1.1"), ("WARC-Truncated", "budget")],
        ),
    ]);
    assert_eq!(ids(&run(&data)), ["warc.truncated.unknown"].into());
    let opts = Options {
        forbid_extensions: true,
        ..Options::default()
    };
    let f = run_files(&[("t.warc", &data)], opts);
    assert_eq!(ids(&f), ["extension.field", "extension.value"].into());
}

#[test]
fn field_matrix() {
    let data = file(&[
        warcinfo("1.1", "<urn:uuid:1>"),
        record(
            "1.1",
            &[
                ("WARC-Type", "warcinfo"),
                ("WARC-Record-ID", "<urn:uuid:3>"),
                ("WARC-Date", "2024-01-02T03:04:05Z"),
                ("Content-Type", "application/warc-fields"),
                // Shall not on warcinfo.
                ("WARC-Target-URI", "http://a/"),
                ("WARC-Concurrent-To", "<urn:uuid:1>"),
                // Not defined on warcinfo.
                ("WARC-Warcinfo-ID", "<urn:uuid:1>"),
            ],
            WARCINFO_BLOCK,
        ),
        resource("<urn:uuid:2>", &[("WARC-Filename", "x.warc")]),
    ]);
    let f = run(&data);
    let not: Vec<_> = f
        .iter()
        .filter(|f| f.rule == "warc.field.not-allowed")
        .map(|f| f.message.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(
        not,
        ["WARC-Concurrent-To", "WARC-Target-URI", "WARC-Filename"]
    );
    assert!(ids(&f).contains("warc.field.unexpected"));
    // And the other way: what a type requires.
    let cont = record(
        "1.1",
        &[
            ("WARC-Type", "continuation"),
            ("WARC-Record-ID", "<urn:uuid:9>"),
            ("WARC-Date", "2024-01-02T03:04:05Z"),
        ],
        b"x",
    );
    let missing: Vec<_> = run(&cont)
        .into_iter()
        .filter(|f| f.rule == "warc.field.missing-for-type")
        .map(|f| f.message)
        .collect();
    assert_eq!(missing.len(), 3, "{missing:?}");
}

#[test]
fn revisit_profiles() {
    let revisit = |v: &str, profile: &str, extra: &[(&str, &str)], block: &[u8]| {
        let mut f = vec![
            ("WARC-Type", "revisit"),
            ("WARC-Record-ID", "<urn:uuid:5>"),
            ("WARC-Date", "2024-01-02T03:04:05Z"),
            ("WARC-Target-URI", "http://a/"),
            ("WARC-Profile", profile),
            ("Content-Type", "application/http; msgtype=response"),
        ];
        f.extend_from_slice(extra);
        let mut data = warcinfo(v, "<urn:uuid:1>");
        data.extend(record(v, &f, block));
        ids(&run(&data))
    };
    let ipd11 = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
    // No payload digest, a block without WARC-Truncated, nothing named.
    assert_eq!(
        revisit("1.1", ipd11, &[], head),
        [
            "warc.revisit.payload-digest",
            "warc.revisit.recommended-field",
            "warc.revisit.truncated"
        ]
        .into()
    );
    // Everything the profile asks for.
    let full = [
        (
            "WARC-Payload-Digest",
            "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
        ),
        ("WARC-Truncated", "length"),
        ("WARC-Refers-To", "<urn:uuid:1>"),
        ("WARC-Refers-To-Target-URI", "http://a/"),
        ("WARC-Refers-To-Date", "2024-01-01T00:00:00Z"),
    ];
    let got = revisit("1.1", ipd11, &full, head);
    // The warcinfo it names has neither that URI nor that date.
    assert_eq!(got, ["warc.revisit.refers-to-mismatch"].into());
    // The 1.0 profile in a 1.1 record; an unknown profile.
    let ipd10 = "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest";
    assert!(revisit("1.1", ipd10, &full, head).contains("warc.profile.version"));
    assert_eq!(
        revisit("1.1", "http://example.org/mine", &[], b""),
        ["warc.profile.unknown"].into()
    );
}

#[test]
fn references_across_files() {
    let a = file(&[
        warcinfo("1.1", "<urn:uuid:1>"),
        resource("<urn:uuid:2>", &[("WARC-Warcinfo-ID", "<urn:uuid:10>")]),
    ]);
    let b = file(&[
        warcinfo("1.1", "<urn:uuid:10>"),
        resource("<urn:uuid:2>", &[("WARC-Concurrent-To", "<urn:uuid:404>")]),
        resource("<urn:uuid:3>", &[("WARC-Warcinfo-ID", "<urn:uuid:2>")]),
    ]);
    let f = run_files(&[("a.warc", &a), ("b.warc", &b)], Options::default());
    let got: Vec<_> = f.iter().map(|f| (f.rule, f.file.as_str())).collect();
    assert_eq!(
        got,
        [
            // <urn:uuid:2> is in both files.
            ("warc.record-id.duplicate", "b.warc"),
            // A Warcinfo-ID naming a resource record.
            ("warc.reference.wrong-type", "b.warc"),
            // Nothing has <urn:uuid:404>.
            ("warc.reference.missing", "b.warc"),
        ],
        "{f:#?}"
    );
    // The forward reference of a.warc to b.warc's warcinfo resolved.
    assert!(f.iter().all(|f| f.file != "a.warc"));
    let dup = &f[0];
    assert!(dup.message.contains("a.warc"), "{}", dup.message);
}

#[test]
fn capture_event_dates() {
    let req = record(
        "1.1",
        &[
            ("WARC-Type", "request"),
            ("WARC-Record-ID", "<urn:uuid:2>"),
            ("WARC-Date", "2024-01-02T03:04:06Z"),
            ("WARC-Target-URI", "http://a/"),
            ("WARC-IP-Address", "127.0.0.1"),
            ("WARC-Concurrent-To", "<urn:uuid:3>"),
            ("Content-Type", "application/http; msgtype=request"),
        ],
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    );
    let resp = record(
        "1.1",
        &[
            ("WARC-Type", "response"),
            ("WARC-Record-ID", "<urn:uuid:3>"),
            ("WARC-Date", "2024-01-02T03:04:05Z"),
            ("WARC-Target-URI", "http://a/"),
            ("WARC-IP-Address", "127.0.0.1"),
            ("Content-Type", "application/http; msgtype=response"),
        ],
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
    );
    let data = file(&[warcinfo("1.1", "<urn:uuid:1>"), req, resp]);
    assert_eq!(ids(&run(&data)), ["warc.concurrent.date"].into());
}

/// A segmented record: the first segment and its continuations, with the
/// given (number, block, total length) each.
fn segments(parts: &[(u64, &[u8], Option<u64>)], uri_of_last: &str) -> Vec<u8> {
    let mut out = warcinfo("1.1", "<urn:uuid:1>");
    for (i, (n, block, total)) in parts.iter().enumerate() {
        let id = format!("<urn:uuid:s{n}-{i}>");
        let uri = if i + 1 == parts.len() {
            uri_of_last
        } else {
            "http://a/"
        };
        let ns = n.to_string();
        let ts = total.map(|t| t.to_string());
        let mut f: Vec<(&str, &str)> = vec![
            ("WARC-Record-ID", id.as_str()),
            ("WARC-Date", "2024-01-02T03:04:05Z"),
            ("WARC-Target-URI", uri),
            ("WARC-Segment-Number", ns.as_str()),
        ];
        if *n == 1 {
            f.push(("WARC-Type", "resource"));
            f.push(("Content-Type", "text/plain"));
        } else {
            f.push(("WARC-Type", "continuation"));
            f.push(("WARC-Segment-Origin-ID", "<urn:uuid:s1-0>"));
        }
        if let Some(t) = &ts {
            f.push(("WARC-Segment-Total-Length", t.as_str()));
        }
        out.extend(record("1.1", &f, block));
    }
    out
}

#[test]
fn continuation_chains() {
    // Complete and right.
    let ok = segments(
        &[(1, b"abc", None), (2, b"de", None), (3, b"f", Some(6))],
        "http://a/",
    );
    assert!(run(&ok).is_empty(), "{:#?}", run(&ok));
    // The total does not add up.
    let sum = segments(&[(1, b"abc", None), (2, b"de", Some(9))], "http://a/");
    assert_eq!(ids(&run(&sum)), ["warc.segment.total-length"].into());
    // A gap, and the total on a segment that is not the last.
    let gap = segments(
        &[(1, b"abc", None), (2, b"de", Some(5)), (4, b"f", Some(6))],
        "http://a/",
    );
    assert_eq!(
        ids(&run(&gap)),
        ["warc.segment.chain", "warc.segment.total-length"].into()
    );
    // Two segments numbered 2, and another URI on the last.
    let dup = segments(
        &[(1, b"abc", None), (2, b"de", None), (2, b"f", Some(6))],
        "http://b/",
    );
    assert_eq!(
        ids(&run(&dup)),
        ["warc.segment.duplicate-number", "warc.segment.target-uri"].into()
    );
}

#[test]
fn empty_and_unknown_files() {
    assert_eq!(ids(&run(b"")), ["warc.file.empty"].into());
    assert_eq!(
        ids(&run(b"<html>not an archive</html>\n")),
        ["file.trailing-garbage", "file.unknown-format"].into()
    );
}

/// A file that opens but cannot be read (a directory, on Linux) is an
/// error naming it, and counted unreadable: the read's error named none.
#[test]
fn a_file_that_cannot_be_read_is_an_error_naming_it() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v = Validator::new(Options::default());
    let e = v
        .validate_path(dir, &mut |_| {})
        .expect_err("a directory is not read");
    assert!(e.to_string().contains(&dir.display().to_string()), "{e}");
    let summary = v.finish(&mut |_| {});
    assert!(summary.files[0].unreadable);
}

fn gzip_member(data: &[u8], tweak: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    let mut m = e.finish().unwrap();
    tweak(&mut m);
    m
}

#[test]
fn gzip_container() {
    let a = warcinfo("1.1", "<urn:uuid:1>");
    let b = resource("<urn:uuid:2>", &[]);
    // Record at a time and clean.
    let good = [gzip_member(&a, |_| {}), gzip_member(&b, |_| {})].concat();
    assert!(run(&good).is_empty(), "{:#?}", run(&good));
    // Both records in one member.
    let whole = gzip_member(&[a.clone(), b.clone()].concat(), |_| {});
    assert_eq!(ids(&run(&whole)), ["gzip.record-at-a-time"].into());
    // A wrong CRC32; an undefined OS and XFL (reported once for the file).
    let crc = [
        gzip_member(&a, |m| {
            let n = m.len();
            m[n - 8] ^= 0xff;
        }),
        gzip_member(&b, |m| {
            m[8] = 7;
            m[9] = 42;
        }),
    ]
    .concat();
    assert_eq!(
        ids(&run(&crc)),
        [
            "container.member.checksum",
            "gzip.header.os",
            "gzip.header.xfl"
        ]
        .into()
    );
    // Record a's block split over two members, b in a member of its own:
    // every record starts a member, a's continues into the next one.
    let split = a.len() - 10;
    let spans = [
        gzip_member(&a[..split], |_| {}),
        gzip_member(&a[split..], |_| {}),
        gzip_member(&b, |_| {}),
    ]
    .concat();
    let got = run(&spans);
    assert_eq!(ids(&got), ["gzip.record-at-a-time"].into(), "{got:#?}");
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0].offset, Some(0), "{got:#?}");
    // The header split over two members.
    let head = [
        gzip_member(&a[..10], |_| {}),
        gzip_member(&a[10..], |_| {}),
        gzip_member(&b, |_| {}),
    ]
    .concat();
    let got = run(&head);
    assert_eq!(ids(&got), ["gzip.record-at-a-time"].into(), "{got:#?}");
    assert_eq!(got.len(), 1, "{got:#?}");
    // A plain record with a gzip member appended.
    let mixed = [a.clone(), gzip_member(&b, |_| {})].concat();
    let got = run(&mixed);
    assert_eq!(ids(&got), ["gzip.record-at-a-time"].into(), "{got:#?}");
    assert_eq!(got.len(), 1, "{got:#?}");
    // Records sharing a member are counted once, not again as spanning.
    let shared = [
        gzip_member(&a, |_| {}),
        gzip_member(&[b.clone(), b[..20].to_vec()].concat(), |_| {}),
        gzip_member(&b[20..], |_| {}),
    ]
    .concat();
    let got = run(&shared);
    assert!(
        got.iter()
            .filter(|f| f.rule == "gzip.record-at-a-time")
            .count()
            == 1,
        "{got:#?}"
    );
    // The input cut inside the second member.
    let mut cut = good.clone();
    cut.truncate(good.len() - 20);
    let got = ids(&run(&cut));
    assert!(got.contains("container.member.truncated"), "{got:?}");
}

#[test]
fn zstd_container() {
    let a = warcinfo("1.1", "<urn:uuid:1>");
    let b = resource("<urn:uuid:2>", &[]);
    let mut c = zstd::bulk::Compressor::new(3).unwrap();
    c.include_checksum(true).unwrap();
    let good = [c.compress(&a).unwrap(), c.compress(&b).unwrap()].concat();
    assert!(run(&good).is_empty(), "{:#?}", run(&good));
    // Record a's block split over two frames.
    let split = a.len() - 10;
    let spans = [
        c.compress(&a[..split]).unwrap(),
        c.compress(&a[split..]).unwrap(),
        c.compress(&b).unwrap(),
    ]
    .concat();
    let got = run(&spans);
    assert_eq!(
        ids(&got),
        ["zstd.frame.multiple-records"].into(),
        "{got:#?}"
    );
    // No checksums, and both records in one frame.
    let mut c = zstd::bulk::Compressor::new(3).unwrap();
    c.include_checksum(false).unwrap();
    let one = c.compress(&[a.clone(), b.clone()].concat()).unwrap();
    let f = run(&one);
    assert_eq!(
        ids(&f),
        ["zstd.frame.checksum", "zstd.frame.multiple-records"].into()
    );
}

fn lz4_frame(data: &[u8]) -> Vec<u8> {
    let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn lz4_container() {
    let a = warcinfo("1.1", "<urn:uuid:1>");
    let b = resource("<urn:uuid:2>", &[]);
    let good = [lz4_frame(&a), lz4_frame(&b)].concat();
    let got = run(&good);
    assert_eq!(ids(&got), ["lz4.nonstandard"].into(), "{got:#?}");
    // Both records in one frame: the second starts inside it.
    let one = lz4_frame(&[a.clone(), b.clone()].concat());
    let got = run(&one);
    assert_eq!(
        ids(&got),
        ["lz4.frame.multiple-records", "lz4.nonstandard"].into(),
        "{got:#?}"
    );
    let f = got
        .iter()
        .find(|f| f.rule == "lz4.frame.multiple-records")
        .unwrap();
    assert_eq!(f.offset, Some(0), "{got:#?}");
    assert!(f.message.contains("1 of 2 records"), "{got:#?}");
    // Record a's block split over two frames: every record starts one.
    let split = a.len() - 10;
    let spans = [
        lz4_frame(&a[..split]),
        lz4_frame(&a[split..]),
        lz4_frame(&b),
    ]
    .concat();
    let got = run(&spans);
    assert_eq!(
        ids(&got),
        ["lz4.frame.multiple-records", "lz4.nonstandard"].into(),
        "{got:#?}"
    );
    assert!(
        got.iter()
            .any(|f| f.message.contains("start an LZ4 frame but continue")),
        "{got:#?}"
    );
}

fn infomall(head: &str, data: &[u8]) -> Vec<u8> {
    let mut r = head.as_bytes().to_vec();
    r.push(b'\n');
    r.extend(data);
    r.push(b'\n');
    r
}

#[test]
fn infomall_rules() {
    let ok = infomall(
        "version: 1.0\nurl: http://a/\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nip: 1.2.3.4\nlength: 2\n",
        b"hi",
    );
    assert!(run(&ok).is_empty(), "{:#?}", run(&ok));
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(b"HTTP/1.1 200 OK\r\n\r\nhello").unwrap();
    let z = z.finish().unwrap();
    let bad = [
        // CR line ends, an upper-case name, no ip, unzip-length on plain data.
        infomall(
            "version:1.0\r\nURL: http://a/\r\ndate: Tue, 28 Feb 2006 05:42:09 GMT\r\nunzip-length: 2\r\nlength: 2\r\n",
            b"hi",
        ),
        // Compressed data whose unzip-length is wrong, version not first,
        // length not last, a date that is not RFC 822.
        infomall(
            &format!(
                "url: http://b/\nversion: 1.0\ndate: 2006-02-28\nip: unknown\nlength: {}\nunzip-length: 3\n",
                z.len()
            ),
            &z,
        ),
    ]
    .concat();
    assert_eq!(
        ids(&run(&bad)),
        [
            "infomall.date.syntax",
            "infomall.ip",
            "infomall.length.last",
            "infomall.name.lowercase",
            "infomall.property.syntax",
            "infomall.unzip-length",
            "infomall.version.first",
        ]
        .into()
    );
}

#[test]
fn infomall_head_without_blank_line() {
    let good = |url: &str| {
        infomall(
            &format!(
                "version: 1.0\nurl: {url}\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nip: 1.2.3.4\nlength: 2\n"
            ),
            b"hi",
        )
    };
    // The first head runs into the next record's `version:` line; the
    // records after it are read and checked (the last has no ip).
    let data = [
        b"version: 1.0\nurl: http://a/\n".to_vec(),
        good("http://b/"),
        infomall(
            "version: 1.0\nurl: http://c/\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nlength: 2\n",
            b"hi",
        ),
    ]
    .concat();
    let mut findings = Vec::new();
    let mut v = Validator::new(Options::default());
    v.validate_reader("t.infomall", &data[..], &mut |f| findings.push(f))
        .expect("in-memory input reads");
    let summary = v.finish(&mut |f| findings.push(f));
    assert_eq!(
        ids(&findings),
        ["infomall.ip", "infomall.record.syntax"].into(),
        "{findings:#?}"
    );
    let syntax: Vec<_> = findings
        .iter()
        .filter(|f| f.rule == "infomall.record.syntax")
        .collect();
    assert_eq!(syntax.len(), 1, "{findings:#?}");
    assert_eq!(syntax[0].offset, Some(0), "{findings:#?}");
    assert_eq!(summary.records(), 3);
    // A head that never ends (more lines than a head may have): skipped
    // up to the next record, which is read.
    let endless = [
        b"version: 1.0\n".to_vec(),
        b"x-a: b\n".repeat(1500),
        good("http://b/"),
    ]
    .concat();
    let mut findings = Vec::new();
    let mut v = Validator::new(Options::default());
    v.validate_reader("t.infomall", &endless[..], &mut |f| findings.push(f))
        .expect("in-memory input reads");
    let summary = v.finish(&mut |f| findings.push(f));
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].rule, "infomall.record.syntax");
    assert_eq!(summary.records(), 2);
}

#[test]
fn arc_v2_offsets() {
    let vb = "2 0 test\nURL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length\n";
    let first = format!(
        "filedesc://t.arc 0.0.0.0 20240102030405 text/plain 200 - - 0 t.arc {}\n{vb}\n",
        vb.len()
    );
    let at = first.len();
    let rec = |offset: usize| {
        format!("http://a/ 1.2.3.4 20240102030405 text/html 200 - - {offset} t.arc 2\nhi\n")
    };
    let good = format!("{first}{}", rec(at));
    assert!(
        run(good.as_bytes()).is_empty(),
        "{:#?}",
        run(good.as_bytes())
    );
    let bad = format!("{first}{}", rec(at + 1));
    assert_eq!(ids(&run(bad.as_bytes())), ["arc.header.offset"].into());
}

#[test]
fn docs_hold_the_rule_table() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/validation.md"),
    )
    .expect("docs/validation.md");
    assert!(
        doc.contains(&rules::markdown_table()),
        "docs/validation.md is out of date: paste `warchest validate --list-rules` into it"
    );
}

/// An HTTP response block whose head declares `declared` body bytes,
/// followed by `body`.
fn http_response(declared: usize, body: &[u8]) -> Vec<u8> {
    let mut b = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {declared}\r\n\r\n"
    )
    .into_bytes();
    b.extend_from_slice(body);
    b
}

/// A response record of `block`, with the segment fields given.
fn response(id: &str, extra: &[(&str, &str)], block: &[u8]) -> Vec<u8> {
    let mut f = vec![
        ("WARC-Type", "response"),
        ("WARC-Record-ID", id),
        ("WARC-Date", "2024-01-02T03:04:05Z"),
        ("WARC-Target-URI", "http://a/"),
        ("WARC-IP-Address", "192.0.2.1"),
        ("Content-Type", "application/http; msgtype=response"),
    ];
    f.extend_from_slice(extra);
    record("1.1", &f, block)
}

#[test]
fn http_content_length_of_a_first_segment() {
    // The first segment of a response holds 4 of its 10 body bytes; the
    // continuation holds the other 6: partial by design, not a finding.
    let first = http_response(10, b"abcd");
    let total = (first.len() + 6).to_string();
    let seg = file(&[
        warcinfo("1.1", "<urn:uuid:1>"),
        response("<urn:uuid:s1>", &[("WARC-Segment-Number", "1")], &first),
        record(
            "1.1",
            &[
                ("WARC-Type", "continuation"),
                ("WARC-Record-ID", "<urn:uuid:s2>"),
                ("WARC-Date", "2024-01-02T03:04:05Z"),
                ("WARC-Target-URI", "http://a/"),
                ("WARC-Segment-Origin-ID", "<urn:uuid:s1>"),
                ("WARC-Segment-Number", "2"),
                ("WARC-Segment-Total-Length", &total),
            ],
            b"efghij",
        ),
    ]);
    let found = run(&seg);
    assert!(
        !ids(&found).contains("warc.http.content-length"),
        "{found:#?}"
    );
    assert!(found.is_empty(), "{found:#?}");
    // The same head on an unsegmented record is still wrong.
    let whole = file(&[
        warcinfo("1.1", "<urn:uuid:1>"),
        response("<urn:uuid:r>", &[], &first),
    ]);
    assert_eq!(ids(&run(&whole)), ["warc.http.content-length"].into());
}

/// An info made on every record is reported once per file, at its first
/// record, with the count; also when the records are judged on a thread of
/// their own and the count spans several hand-overs (256 records each).
#[test]
fn repeated_infos_are_counted_once_per_file() {
    let rec = |i: usize| {
        record(
            "1.0",
            &[
                ("WARC-Type", "resource"),
                ("WARC-Record-ID", &format!("<urn:uuid:{i:08}>")),
                ("WARC-Date", "2024-01-02T03:04:05Z"),
                ("WARC-Target-URI", "<file:///a.txt>"),
                ("Content-Type", "text/plain"),
            ],
            b"hello",
        )
    };
    let a = file(&[warcinfo("1.0", "<urn:uuid:a>"), rec(1), rec(2)]);
    let b = file(&(0..600).map(|i| rec(1000 + i)).collect::<Vec<_>>());
    for threads in [1, 2] {
        let opts = Options {
            threads,
            ..Options::default()
        };
        let mut findings = Vec::new();
        let mut v = Validator::new(opts);
        v.validate_reader("a.warc", &a[..], &mut |f| findings.push(f))
            .unwrap();
        v.validate_reader("b.warc", &b[..], &mut |f| findings.push(f))
            .unwrap();
        let summary = v.finish(&mut |f| findings.push(f));
        let infos: Vec<&Finding> = findings
            .iter()
            .filter(|f| f.rule == rules::URI_BRACKETS_1_0.id)
            .collect();
        assert_eq!(infos.len(), 2, "threads {threads}: {infos:#?}");
        assert_eq!(infos[0].file, "a.warc");
        assert_eq!(infos[0].record_id.as_deref(), Some("<urn:uuid:00000001>"));
        assert!(
            infos[0]
                .message
                .ends_with("(2 times in the file; the first is shown)"),
            "{}",
            infos[0].message
        );
        assert_eq!(infos[1].file, "b.warc");
        assert_eq!(infos[1].offset, Some(0));
        assert_eq!(infos[1].record_id.as_deref(), Some("<urn:uuid:00001000>"));
        assert!(
            infos[1]
                .message
                .starts_with("WARC-Target-URI is written inside <...>")
                && infos[1]
                    .message
                    .ends_with("(600 times in the file; the first is shown)"),
            "{}",
            infos[1].message
        );
        assert_eq!(summary.infos(), 2);
        assert_eq!(summary.by_rule.get(rules::URI_BRACKETS_1_0.id), Some(&2));
    }
}

/// The Content-Type rules compare media types and msgtype with ASCII case
/// ignored and show them lower-cased.
#[test]
fn content_type_http_and_warcinfo_messages() {
    let resp = |id: &str, ct: &str| {
        record(
            "1.1",
            &[
                ("WARC-Type", "response"),
                ("WARC-Record-ID", id),
                ("WARC-Date", "2024-01-02T03:04:05Z"),
                ("WARC-Target-URI", "HTTPS://a/"),
                ("WARC-IP-Address", "127.0.0.1"),
                ("Content-Type", ct),
            ],
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
        )
    };
    let info = record(
        "1.1",
        &[
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", "<urn:uuid:1>"),
            ("WARC-Date", "2024-01-02T03:04:05Z"),
            ("Content-Type", " Text/Plain ; charset=utf-8"),
        ],
        WARCINFO_BLOCK,
    );
    let data = file(&[
        info,
        resp("<urn:uuid:2>", "APPLICATION/HTTP; MsgType=RESPONSE"),
        resp("<urn:uuid:3>", "Application/Http; msgtype=Request"),
        resp("<urn:uuid:4>", "Text/HTML"),
        resp("<urn:uuid:5>", "application/http"),
    ]);
    let found = run(&data);
    let msgs: Vec<(&str, Option<&str>, &str)> = found
        .iter()
        .filter(|f| f.rule.starts_with("warc.content-type"))
        .map(|f| (f.rule, f.record_id.as_deref(), f.message.as_str()))
        .collect();
    assert_eq!(
        msgs,
        [
            (
                "warc.content-type.warcinfo",
                Some("<urn:uuid:1>"),
                "the warcinfo record's Content-Type is text/plain, not application/warc-fields"
            ),
            (
                "warc.content-type.http",
                Some("<urn:uuid:3>"),
                "the response record's Content-Type says msgtype=request"
            ),
            (
                "warc.content-type.http",
                Some("<urn:uuid:4>"),
                "the response record of an http(s) URI has Content-Type text/html, not application/http; msgtype=response"
            ),
        ]
    );
}
