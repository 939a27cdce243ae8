//! `validate` on every fixture: JWAT's `valid-*` files have no error, its
//! `invalid-*` files break the rule their name says, and for every other
//! file the exact set of rules found is pinned, each with why the bytes
//! really break it.

use crate::common;

use std::collections::BTreeSet;

use warchest_validate::{Options, Report, Severity, validate_files};

fn report(rel: &str) -> Report {
    validate_files(&[common::fixture(rel)], &Options::default())
}

fn rule_ids(rel: &str) -> BTreeSet<&'static str> {
    report(rel).rule_ids()
}

fn errors(r: &Report) -> Vec<String> {
    r.findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.to_string())
        .collect()
}

// ---- JWAT's valid files: no error (warnings are allowed) ----

macro_rules! valid {
    ($name:ident, $file:literal) => {
        #[test]
        fn $name() {
            let r = report(concat!("jwat/", $file));
            assert!(r.summary.records() > 0);
            assert_eq!(errors(&r), Vec::<String>::new());
            assert!(r.summary.files[0].is_valid());
        }
    };
}

valid!(
    valid_contenttype_continuation,
    "valid-warcfile-contenttype-continuation.warc"
);
valid!(
    valid_duplicate_concurrentto,
    "valid-warcfile-duplicate-concurrentto.warc"
);
valid!(
    valid_fields_continuation,
    "valid-warcfile-fields-continuation.warc"
);
valid!(valid_fields_metainfo, "valid-warcfile-fields-metainfo.warc");
valid!(valid_fields_warcinfo, "valid-warcfile-fields-warcinfo.warc");
valid!(
    valid_non_warc_headers,
    "valid-warcfile-non-warc-headers.warc"
);
valid!(
    valid_upper_lower_case,
    "valid-warcfile-upper-lower-case.warc"
);
valid!(valid_utf8, "valid-warcfile-utf8.warc");

#[test]
fn valid_files_are_all_covered() {
    let dir = common::fixture("jwat");
    let n = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("valid-")
        })
        .count();
    assert_eq!(n, 8, "a valid-* fixture was added: give it a test above");
}

// ---- JWAT's invalid files: the rule their name says ----

macro_rules! invalid {
    ($name:ident, $file:literal, $rule:literal) => {
        #[test]
        fn $name() {
            let r = report(concat!("jwat/", $file));
            let ids = r.rule_ids();
            assert!(ids.contains($rule), "{} lacks {}: {ids:?}", $file, $rule);
            // Not clean: it fails `--strict` at least.
            assert!(!r.summary.files[0].is_clean());
        }
    };
}

// Five records without Content-Type (warcinfo, request, response,
// metadata, resource...): 5.6 says they should have one.
invalid!(
    invalid_contenttype_recommended,
    "invalid-warcfile-contenttype-recommended.warc",
    "warc.content-type.missing"
);
// warcinfo with Content-Type application/octet (6.2 recommends warc-fields).
invalid!(
    invalid_contenttype_warcinfo_recommended,
    "invalid-warcfile-contenttype-warcinfo-recommended.warc",
    "warc.content-type.warcinfo"
);
// Digests with no value, no algorithm, no colon ("sha1:    ",
// "    :2WAX...", "monkeypowah!").
invalid!(
    invalid_digest_fields,
    "invalid-warcfile-digest-fields.warc",
    "warc.digest.syntax"
);
// Every mandatory field and Content-Type, WARC-Filename twice.
invalid!(
    invalid_duplicate_fields,
    "invalid-warcfile-duplicate-fields.warc",
    "warc.field.repeated"
);
// Every field present with an empty value.
invalid!(
    invalid_fields_empty,
    "invalid-warcfile-fields-empty.warc",
    "warc.field.empty"
);
// "blue monday", "<zaphod>", "a.b.c.d", "gif\image", "very lengthy" ...
invalid!(
    invalid_fields_invalidformat_date,
    "invalid-warcfile-fields-invalidformat.warc",
    "warc.date.syntax"
);
invalid!(
    invalid_fields_invalidformat_id,
    "invalid-warcfile-fields-invalidformat.warc",
    "warc.record-id.syntax"
);
invalid!(
    invalid_fields_invalidformat_ip,
    "invalid-warcfile-fields-invalidformat.warc",
    "warc.ip.syntax"
);
invalid!(
    invalid_fields_invalidformat_media,
    "invalid-warcfile-fields-invalidformat.warc",
    "warc.media-type.syntax"
);
invalid!(
    invalid_fields_invalidformat_int,
    "invalid-warcfile-fields-invalidformat.warc",
    "warc.integer.syntax"
);
invalid!(
    invalid_fields_invalidformat_uri,
    "invalid-warcfile-fields-invalidformat.warc",
    "warc.uri.syntax"
);
// All twenty fields with nothing after the colon: the four mandatory ones
// count as missing.
invalid!(
    invalid_fields_missing,
    "invalid-warcfile-fields-missing.warc",
    "warc.field.missing-mandatory"
);
// A continuation record with only WARC-Type: no WARC-Segment-Origin-ID,
// WARC-Segment-Number, WARC-Target-URI.
invalid!(
    invalid_lonely_continuation,
    "invalid-warcfile-lonely-continuation.warc",
    "warc.field.missing-for-type"
);
// WARC-Type: monkeys.
invalid!(
    invalid_lonely_monkeys,
    "invalid-warcfile-lonely-monkeys.warc",
    "warc.type.unknown"
);
// request, response, resource, conversion with only WARC-Type: no
// WARC-Target-URI (and no mandatory fields).
invalid!(
    invalid_lonely_request_response_resource_conversion,
    "invalid-warcfile-lonely-request-response-resource-conversion.warc",
    "warc.field.missing-for-type"
);
// A revisit with only WARC-Type: no WARC-Profile.
invalid!(
    invalid_lonely_revisit,
    "invalid-warcfile-lonely-revisit.warc",
    "warc.field.missing-for-type"
);
// warcinfo and metadata with only WARC-Type: no WARC-Record-ID, WARC-Date,
// Content-Length.
invalid!(
    invalid_lonely_warcinfo_metadata,
    "invalid-warcfile-lonely-warcinfo-metadata.warc",
    "warc.field.missing-mandatory"
);
// One record, then "The monkeys are a coming!" and more.
invalid!(
    invalid_record_then_garbage,
    "invalid-warcfile-record-then-garbage.warc",
    "file.trailing-garbage"
);
// A continuation numbered 1.
invalid!(
    invalid_segment_number_continuation,
    "invalid-warcfile-segment-number-continuation.warc",
    "warc.segment.number"
);
// A response (a first segment) numbered 2.
invalid!(
    invalid_segment_number_response,
    "invalid-warcfile-segment-number-response.warc",
    "warc.segment.number"
);
// An ARC record, then a cut-off header line "http://www.bt.dk/node/100".
invalid!(
    invalid_arc_record_then_garbage,
    "invalid-arcfile-record-then-garbage.arc",
    "file.trailing-garbage"
);

#[test]
fn invalid_lonely_files_name_the_missing_fields() {
    let msgs: Vec<String> = report("jwat/invalid-warcfile-lonely-revisit.warc")
        .findings
        .into_iter()
        .filter(|f| f.rule == "warc.field.missing-for-type")
        .map(|f| f.message)
        .collect();
    assert_eq!(
        msgs,
        [
            "a revisit record shall have WARC-Target-URI",
            "a revisit record shall have WARC-Profile"
        ]
    );
}

/// `invalid-warcfile-encoding-headers.warc.gz` is, in JWAT, a file whose
/// WARC-Target-URIs hold raw Big5 bytes (its test expects two errors, one
/// per such record). In the copy in ../shared/fixtures those bytes read
/// `?`: `comName=?o?Q??%C2%A7?`, where `o` and `Q` are the ASCII trail
/// bytes of Big5 characters whose lead bytes were replaced. What is left is
/// a valid URI, and the file breaks no rule; the rule the name describes
/// is tested on the record with its bytes restored
/// (`validate_rules.rs`, `non_utf8_header_bytes`).
#[test]
fn invalid_encoding_headers_lost_its_bytes() {
    let r = report("jwat/invalid-warcfile-encoding-headers.warc.gz");
    assert_eq!(r.summary.records(), 4);
    assert_eq!(r.rule_ids(), BTreeSet::new());
    let data = std::fs::read(common::fixture(
        "jwat/invalid-warcfile-encoding-headers.warc.gz",
    ))
    .unwrap();
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&data[..]), &mut text)
        .unwrap();
    let needle = b"comName=?o?Q??%C2%A7?";
    let at = text
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the URI of the second record");
    let line_start = text[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line_end = at + text[at..].iter().position(|&b| b == b'\n').unwrap_or(0);
    assert!(text[line_start..line_end].is_ascii());
}

// ---- Every other fixture: the exact set of rules, each explained ----

macro_rules! exact {
    ($name:ident, $file:literal, [$($rule:literal),* $(,)?]) => {
        #[test]
        fn $name() {
            let want: BTreeSet<&str> = [$($rule),*].into_iter().collect();
            assert_eq!(rule_ids($file), want, "{}", $file);
        }
    };
}

exact!(
    jwat_virtualbox_arc,
    "jwat/1-1-20110922131213-00000-svc-VirtualBox.arc",
    []
);
exact!(jwat_small_bnf_arc, "jwat/small_BNF.arc", []);
exact!(
    jwat_arc_dashed_fields,
    "jwat/test-arc-1.0-dashed-fields.arc",
    [
        // "filedesc:// - - - 76": "-" is neither a media type (the filedesc
        // line) nor is "html" (the record's Content-type field).
        "arc.header.content-type",
        // "-" for the Archive-date of the filedesc line.
        "arc.header.date",
        // Its lines end in CR LF, not LF.
        "arc.header.fields",
        // "-" for the IP-address.
        "arc.header.ip",
        // Each block is followed by CR LF (the version block), or by 80
        // more bytes of spaces (the record holds 4350 bytes, not 4270).
        "arc.record.trailer",
        // 76 counts "1 0 InternetArchive\r\n" and the field line without
        // its CR LF.
        "arc.version-block.length",
        // The 80 bytes after the record's 4270.
        "file.trailing-garbage",
    ]
);
exact!(
    jwat_arc_invalid_fields,
    "jwat/test-arc-1.0-invalid-fields.arc",
    [
        // "gif\\image" and "html".
        "arc.header.content-type",
        // "blue_monday".
        "arc.header.date",
        // CR LF line ends.
        "arc.header.fields",
        // "a.b.c.d".
        "arc.header.ip",
        // "one".
        "arc.header.length",
        // "filedesc://horsy|\\hello": '|' and '\' are not URI characters.
        "arc.header.url",
        // CR LF after the version block; spaces after the record.
        "arc.record.trailer",
        // The 80 bytes the record's length does not count.
        "file.trailing-garbage",
    ]
);
exact!(
    jwat_test_utf8,
    "jwat/test-utf8.warc",
    [
        // WARC/0.17.
        "warc.version.draft",
    ]
);
exact!(
    pywb_bad_arc,
    "pywb/bad.arc",
    [
        // 201404010000000000: 18 digits.
        "arc.header.date",
        // Archive-length -1 (the version block and a record) and abc.
        "arc.header.length",
    ]
);
exact!(
    pywb_dupes,
    "pywb/dupes.warc.gz",
    [
        // http request and response records without WARC-IP-Address.
        "warc.ip-address.recommended",
        // WARC/1.0 revisits with the 0.18 profile URI
        // http://netpreserve.org/warc/0.18/revisit/identical-payload-digest.
        "warc.profile.unknown",
    ]
);
exact!(
    pywb_example_bad,
    "pywb/example-bad.warc.gz.bad",
    [
        // One gzip member holds all six records.
        "gzip.record-at-a-time",
        // Requests and responses without WARC-IP-Address.
        "warc.ip-address.recommended",
        // The 0.18 revisit profile in a 1.0 record.
        "warc.profile.unknown",
        // WARC-Warcinfo-ID <urn:uuid:e9f7f74b-...>: no such record in the file.
        "warc.reference.missing",
    ]
);
exact!(
    pywb_example_extra,
    "pywb/example-extra.warc",
    [
        // The response whose status line reads "HTTPX/1.1 200 OK" is not
        // HTTP, so its payload is the whole block, not what the digest is of.
        "warc.digest.payload-mismatch",
        // "HTTPX/1.1 200 OK".
        "warc.http.not-http",
        // No WARC-IP-Address on the http records.
        "warc.ip-address.recommended",
        // The 0.18 revisit profile.
        "warc.profile.unknown",
        // The first three records appear again with the same ids.
        "warc.record-id.duplicate",
        // Blocks followed by "\r\n" only, or by "\n\r\n\r\n".
        "warc.record.trailer",
        // WARC-Warcinfo-ID <urn:uuid:fbd6cf0a-...> is in no record.
        "warc.reference.missing",
        // It starts with a response.
        "warc.warcinfo.first",
    ]
);
exact!(
    pywb_url_agnostic_orig,
    "pywb/example-url-agnostic-orig.warc.gz",
    [
        // WARC/1.0 with WARC-Date 2014-03-04T05:14:21.000Z.
        "warc.date.precision",
        // The warcinfo's Content-Length 243 counts its CRLF CRLF: its
        // member ends with no trailer after the block.
        "warc.record.trailer",
    ]
);
exact!(
    pywb_url_agnostic_revisit,
    "pywb/example-url-agnostic-revisit.warc.gz",
    [
        // 2014-03-04T19:23:21.000Z in a 1.0 record.
        "warc.date.precision",
        // .../warc/1.0/revisit/uri-agnostic-identical-payload-digest is no
        // profile of the specification.
        "warc.profile.unknown",
        // The warcinfo counts its trailer in Content-Length, as in -orig.
        "warc.record.trailer",
        // WARC-Refers-To names the response of the -orig file.
        "warc.reference.missing",
    ]
);
exact!(
    pywb_wget_1_14,
    "pywb/example-wget-1-14.warc.gz",
    [
        // Wget's FEXTRA "sl" field: 10 bytes "sl" + two 4-byte sizes, no
        // subfield LEN.
        "gzip.header.extra",
        // Two resource records (Wget's log and manifest) with the same
        // <urn:uuid:305cda53-...>.
        "warc.record-id.duplicate",
    ]
);
exact!(
    pywb_wpull,
    "pywb/example-wpull.warc.gz",
    [
        // The response (23:50:46) is concurrent to its request (23:50:45).
        "warc.concurrent.date",
        // The warcinfo names itself in WARC-Warcinfo-ID.
        "warc.field.unexpected",
    ]
);
exact!(
    pywb_example_arc,
    "pywb/example.arc",
    [
        // 75 does not count the LF of "URL IP-address ... Archive-length".
        "arc.version-block.length",
    ]
);
exact!(
    pywb_example_arc_gz,
    "pywb/example.arc.gz",
    ["arc.version-block.length"]
);
exact!(
    pywb_example_warc,
    "pywb/example.warc",
    [
        // The request at 4061 says Content-Length 320 but holds 327 bytes:
        // 7 bytes ("m\r\n\r\n\r\n") are left before the next record...
        "file.garbage",
        // ...which follows no CRLF CRLF.
        "warc.record.trailer",
        "warc.ip-address.recommended",
        // The 0.18 revisit profile.
        "warc.profile.unknown",
        // WARC-Warcinfo-ID of a warcinfo that is not in the file.
        "warc.reference.missing",
    ]
);
exact!(
    pywb_example_warc_gz,
    "pywb/example.warc.gz",
    [
        "warc.ip-address.recommended",
        "warc.profile.unknown",
        "warc.reference.missing"
    ]
);
exact!(
    pywb_example2,
    "pywb/example2.warc.gz",
    [
        // The request has no WARC-IP-Address.
        "warc.ip-address.recommended",
    ]
);
exact!(
    pywb_httpbin_resource,
    "pywb/httpbin-resource.warc.gz",
    [
        // A lone resource record.
        "warc.warcinfo.first",
    ]
);
exact!(
    pywb_iana,
    "pywb/iana.warc.gz",
    [
        // Requests and responses without WARC-IP-Address.
        "warc.ip-address.recommended",
        // 123 revisits with the 0.18 profile in 1.0 records.
        "warc.profile.unknown",
    ]
);
exact!(
    pywb_missing_status_text,
    "pywb/missing-status-text.warc",
    [
        "warc.ip-address.recommended",
        // The block ends "\r\r\n" lines and is followed by "\r\r\n\r", then
        // two more line-end bytes at the end of the file.
        "warc.record.trailer",
        // WARC-Warcinfo-ID of an absent warcinfo.
        "warc.reference.missing",
        "warc.warcinfo.first",
    ]
);
exact!(
    pywb_post_test,
    "pywb/post-test.warc.gz",
    ["warc.ip-address.recommended", "warc.warcinfo.first"]
);
exact!(
    resiliparse_block_sized,
    "resiliparse/block-sized-records.warc",
    [
        // Blocks of 16229 bytes without Content-Type...
        "warc.content-type.missing",
        // ...in records of WARC-Type "unknown".
        "warc.type.unknown",
        "warc.warcinfo.first",
    ]
);
exact!(
    resiliparse_block_sized_gz,
    "resiliparse/block-sized-records.warc.gz",
    [
        "warc.content-type.missing",
        "warc.type.unknown",
        "warc.warcinfo.first"
    ]
);
exact!(
    resiliparse_block_sized_lz4,
    "resiliparse/block-sized-records.warc.lz4",
    [
        // LZ4 frames.
        "lz4.nonstandard",
        "warc.content-type.missing",
        "warc.type.unknown",
        "warc.warcinfo.first",
    ]
);
exact!(
    resiliparse_warcfile_gz,
    "resiliparse/warcfile.warc.gz",
    [
        // Every gzip member says OS 19, which RFC 1952 does not define.
        "gzip.header.os",
    ]
);
exact!(
    resiliparse_warcfile_lz4,
    "resiliparse/warcfile.warc.lz4",
    ["lz4.nonstandard"]
);
exact!(tianwang_page_dat, "tianwang/page.dat", []);
exact!(
    warcat_at,
    "warcat/at.warc",
    [
        // A chunked response whose payload digest is of the chunked bytes.
        "warc.digest.payload-chunked",
        // Two records with <urn:uuid:1145332f-...>.
        "warc.record-id.duplicate",
    ]
);
exact!(
    warcat_at_gz,
    "warcat/at.warc.gz",
    [
        // Written by Wget: its FEXTRA "sl" field.
        "gzip.header.extra",
        "warc.digest.payload-chunked",
        "warc.record-id.duplicate",
    ]
);
exact!(
    warcat_bad_http_chunked,
    "warcat/bad_http_chunked_content.warc",
    ["warc.reference.missing", "warc.warcinfo.first"]
);
exact!(
    warcat_c1_warcinfo,
    "warcat/c1_warcinfo.warc",
    ["warc.version.draft"]
);
exact!(
    warcat_long_url,
    "warcat/long_url.warc",
    ["warc.reference.missing", "warc.warcinfo.first"]
);
exact!(
    warcat_not_utf8_http_header,
    "warcat/not_utf8_http_header.warc",
    // The non-UTF-8 bytes are in the HTTP head, which WARC leaves alone.
    ["warc.reference.missing", "warc.warcinfo.first"]
);
exact!(
    warcio_bad_arc,
    "warcio/bad.arc",
    ["arc.header.date", "arc.header.length"]
);
exact!(
    warcio_bad_non_chunked,
    "warcio/example-bad-non-chunked.warc.gz",
    [
        // One member for all records.
        "gzip.record-at-a-time",
        // The response's block digest is not of its block.
        "warc.digest.block-mismatch",
        "warc.ip-address.recommended",
        // uri-agnostic-identical-payload-digest.
        "warc.profile.unknown",
    ]
);
exact!(
    warcio_example_bad,
    "warcio/example-bad.warc.gz.bad",
    [
        "gzip.record-at-a-time",
        "warc.ip-address.recommended",
        "warc.profile.unknown",
        "warc.reference.missing",
    ]
);
exact!(
    warcio_example_digest,
    "warcio/example-digest.warc",
    [
        // sha1:1112H3S6...: '1' is not base32.
        "warc.digest.syntax",
        // base64 values with '/' and '=' padding.
        "warc.digest.token",
        "warc.ip-address.recommended",
        // The four records share one id.
        "warc.record-id.duplicate",
        // WARC-Concurrent-To <urn:uuid:a9c51e3e-...>, absent.
        "warc.reference.missing",
        "warc.warcinfo.first",
    ]
);
exact!(
    warcio_iana_chunked,
    "warcio/example-iana.org-chunked.warc",
    ["warc.digest.payload-chunked", "warc.ip-address.recommended"]
);
exact!(
    warcio_example_resource,
    "warcio/example-resource.warc.gz",
    []
);
exact!(
    warcio_space_in_target_uri,
    "warcio/example-space-in-target-uri.warc.gz",
    [
        // file:///example with spaces.png
        "warc.uri.syntax",
    ]
);
exact!(
    warcio_space_in_url_arc,
    "warcio/example-space-in-url.arc",
    [
        // The URL's spaces make 9 fields...
        "arc.header.fields",
        // ...and it is no URI.
        "arc.header.url",
        // Its lines end in LF where the length counted CR LF: 1579 of 1591
        // bytes are there.
        "arc.record.truncated",
        "arc.version-block.length",
    ]
);
exact!(
    warcio_trunc,
    "warcio/example-trunc.warc",
    [
        // The response at 1197 was cut: 6 bytes of it are left between
        // records, its digests no longer match, and its HTTP
        // Content-Length (606) is more than the 604 body bytes left.
        "file.garbage",
        "warc.digest.block-mismatch",
        "warc.digest.payload-mismatch",
        "warc.http.content-length",
        "warc.ip-address.recommended",
        "warc.record.trailer",
    ]
);
exact!(
    warcio_wget_bad_target_uri,
    "warcio/example-wget-bad-target-uri.warc.gz",
    [
        "gzip.header.os",
        // Wget's WARC-Target-URI: <http://...> (the 1.0 grammar's form).
        "warc.uri.brackets-1.0",
    ]
);
exact!(
    warcio_wrong_chunks,
    "warcio/example-wrong-chunks.warc.gz",
    [
        // The second record starts inside the first's member.
        "gzip.record-at-a-time",
        "warc.digest.block-mismatch",
        // HTTP Content-Length 1271, 1270 bytes of body.
        "warc.http.content-length",
        // "\n" after the block, then four extra line-end bytes.
        "warc.record.trailer",
        "warc.warcinfo.first",
    ]
);
exact!(
    warcio_example_arc,
    "warcio/example.arc",
    ["arc.version-block.length"]
);
exact!(
    warcio_example_arc_gz,
    "warcio/example.arc.gz",
    ["arc.version-block.length"]
);
exact!(
    warcio_example_warc,
    "warcio/example.warc",
    ["warc.ip-address.recommended", "warc.profile.unknown"]
);
exact!(
    warcio_example_warc_gz,
    "warcio/example.warc.gz",
    [
        "gzip.header.os",
        "warc.ip-address.recommended",
        "warc.profile.unknown"
    ]
);
exact!(
    warcio_post_test,
    "warcio/post-test.warc.gz",
    ["warc.ip-address.recommended", "warc.warcinfo.first"]
);

/// Every fixture has a test in this file (the cdx/ and cdxj/ indexes are
/// not archives).
#[test]
fn every_fixture_is_covered() {
    let me = include_str!("validate_fixtures.rs");
    let root = common::fixtures();
    let mut missing = Vec::new();
    for sub in std::fs::read_dir(&root).unwrap() {
        let sub = sub.unwrap().path();
        if !sub.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sub).unwrap() {
            let f = f.unwrap().path();
            if !f.is_file() || f.extension().is_some_and(|e| e == "md") {
                continue;
            }
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if !me.contains(&format!("\"{rel}\"")) && !me.contains(&format!("\"{name}\"")) {
                missing.push(rel);
            }
        }
    }
    assert_eq!(missing, Vec::<String>::new());
}

#[test]
fn related_files_resolve_each_other() {
    // The revisit's WARC-Refers-To names the original response.
    let both = validate_files(
        &[
            common::fixture("pywb/example-url-agnostic-orig.warc.gz"),
            common::fixture("pywb/example-url-agnostic-revisit.warc.gz"),
        ],
        &Options::default(),
    );
    assert!(!both.rule_ids().contains("warc.reference.missing"));
}

/// The findings of `validate_path` with `threads`, as text, in order.
fn findings_with(path: &std::path::Path, threads: usize) -> Vec<String> {
    let opts = Options {
        threads,
        ..Options::default()
    };
    validate_files(&[path], &opts)
        .findings
        .iter()
        .map(|f| f.to_string())
        .collect()
}

/// A gzip WARC of many small members, big enough for the parallel
/// decoder's jobs, with a corrupted CRC32 in one member and garbage
/// between two others: what threads must not change.
fn many_members(dir: &std::path::Path) -> std::path::PathBuf {
    use warchest::warc::RecordType;
    use warchest::write::{Body, Compression, NewRecord, Writer, WriterOptions};
    let opts = WriterOptions {
        compression: Compression::Gzip(1),
        ..Default::default()
    };
    let mut w = Writer::new(Vec::new(), opts).unwrap();
    let mut rng = common::Rng(7);
    let mut ends = Vec::new();
    for i in 0..3000u64 {
        let mut r = NewRecord::new(RecordType::Resource);
        r.set("WARC-Target-URI", format!("http://example.com/{i}"))
            .unwrap();
        r.set("Content-Type", "application/octet-stream").unwrap();
        let body: Vec<u8> = (0..200 + rng.below(900))
            .map(|_| rng.next() as u8)
            .collect();
        w.write(&mut r, Body::Bytes(&body)).unwrap();
        ends.push(w.position() as usize);
    }
    let mut data = w.finish().unwrap();
    // The CRC32 of the member ending at ends[1000] (the trailer's first 4 bytes).
    data[ends[1000] - 8] ^= 0x55;
    // Garbage after the member ending at ends[2000].
    let cut = ends[2000];
    let mut out = data[..cut].to_vec();
    out.extend_from_slice(b"not a gzip member\r\n");
    out.extend_from_slice(&data[cut..]);
    let path = dir.join("many-members.warc.gz");
    std::fs::write(&path, out).unwrap();
    path
}

/// Threads change nothing: every archive fixture, and a generated file
/// with damage between parallel jobs, gives the same findings validated
/// on one, two and three threads.
#[test]
fn threads_change_no_finding() {
    let dir = std::env::temp_dir().join(format!("warchest-vthreads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let generated = many_members(&dir);
    let mut files = common::fixture_files(&[".warc", ".warc.gz", ".arc", ".arc.gz", ".gz.bad"]);
    files.push(generated.clone());
    for f in &files {
        let one = findings_with(f, 1);
        assert_eq!(findings_with(f, 2), one, "{}", f.display());
        assert_eq!(findings_with(f, 3), one, "{}", f.display());
    }
    // The damage was seen: the bad CRC32 and the garbage.
    let found = findings_with(&generated, 2);
    assert!(found.iter().any(|f| f.contains("CRC")), "{found:#?}");
    assert!(found.len() >= 2, "{found:#?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A gzip WARC of HTTP responses, one member each, many enough for the
/// parallel decoder's jobs: right digests, a wrong block digest every 7th,
/// a wrong payload digest every 11th, a chunked body every 13th.
fn responses(dir: &std::path::Path) -> std::path::PathBuf {
    use warchest::digest::{Algorithm, Digest, Hasher};
    use warchest::warc::RecordType;
    use warchest::write::{Body, Compression, NewRecord, Writer, WriterOptions};
    let opts = WriterOptions {
        compression: Compression::Gzip(1),
        ..Default::default()
    };
    let sha1 =
        |b: &[u8]| Digest::new(Algorithm::Sha1, &Hasher::digest(Algorithm::Sha1, b)).to_string();
    let mut w = Writer::new(Vec::new(), opts).unwrap();
    let mut rng = common::Rng(11);
    for i in 0..2000u64 {
        let mut r = NewRecord::new(RecordType::Response);
        r.set("WARC-Target-URI", format!("http://example.com/{i}"))
            .unwrap();
        r.set("Content-Type", "application/http; msgtype=response")
            .unwrap();
        let payload: Vec<u8> = (0..100 + rng.below(3000))
            .map(|_| b'a' + (rng.next() % 26) as u8)
            .collect();
        let mut block = if i % 13 == 0 {
            let mut b = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            b.extend_from_slice(format!("{:x}\r\n", payload.len()).as_bytes());
            b.extend_from_slice(&payload);
            b.extend_from_slice(b"\r\n0\r\n\r\n");
            b
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n".to_vec()
        };
        if i % 13 != 0 {
            block.extend_from_slice(&payload);
        }
        let bd = if i % 7 == 3 {
            sha1(b"other")
        } else {
            sha1(&block)
        };
        let pd = if i % 11 == 5 {
            sha1(b"other")
        } else {
            sha1(&payload)
        };
        r.set("WARC-Block-Digest", bd).unwrap();
        r.set("WARC-Payload-Digest", pd).unwrap();
        w.write(&mut r, Body::Bytes(&block)).unwrap();
    }
    let path = dir.join("responses.warc.gz");
    std::fs::write(&path, w.finish().unwrap()).unwrap();
    path
}

/// The block and payload SHA-1s hashed by the decoder's jobs (two or more
/// threads) give the digest findings hashing on one thread gives, and
/// the jobs did hash them.
#[test]
fn digests_hashed_by_the_decoding_jobs_give_the_same_findings() {
    let dir = std::env::temp_dir().join(format!("warchest-vjobdig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = responses(&dir);
    let one = findings_with(&path, 1);
    let count = |rule: &str| one.iter().filter(|f| f.contains(rule)).count();
    assert_eq!(
        count("[warc.digest.block-mismatch]"),
        2000 / 7 + 1,
        "{one:#?}"
    );
    assert_eq!(
        count("[warc.digest.payload-mismatch]"),
        2000 / 11 + 1,
        "{one:#?}"
    );
    assert_eq!(findings_with(&path, 2), one);
    assert_eq!(findings_with(&path, 3), one);
    // The jobs computed them: the members served from jobs carry them.
    use warchest::codec::Source as _;
    let dopts = warchest::codec::DecoderOptions {
        threads: 2,
        member_digests: true,
        ..Default::default()
    };
    let f = std::fs::File::open(&path).unwrap();
    let shared = f.try_clone().unwrap();
    let dec = warchest::codec::Decoder::new_seekable_threaded(f, Some(shared), dopts).unwrap();
    let mut reader = warchest::archive::Reader::from_source(dec, Default::default()).unwrap();
    let (mut records, mut hashed) = (0, 0);
    while let Some(rec) = reader.next_record().unwrap() {
        records += 1;
        hashed += usize::from(rec.source().member_digests().is_some());
        rec.finish().unwrap();
    }
    assert_eq!(records, 2000);
    assert!(hashed > 1000, "{hashed} of {records}");
    std::fs::remove_dir_all(&dir).unwrap();
}
