//! `warchest derive wat|wet|text` on a small archive of our own holding
//! every record type: the outputs pass warcio and `warchest validate`,
//! every WARC-Refers-To names a source record, the WAT carries Common
//! Crawl's keys per record type (research/derive.md's layouts), the WET
//! text follows Common Crawl's rules, and the text table has its columns.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

use warchest::archive::Reader;
use warchest::warc::RecordType;
use warchest::write::{Body, NewRecord, Writer, WriterOptions};

use crate::common::{python_has, run, warchest};

const PAGE: &[u8] = b"<!DOCTYPE html><html lang=\"fr\"><head><title>Caf\xe9 &amp; th\xe9</title>\
<meta name=\"description\" content=\"Un caf\xe9\"><link rel=\"stylesheet\" href=\"/s.css\">\
<script src=\"/a.js\"></script><script>var x = '</p>';</script><style>p { }</style></head>\
<body><nav><a href=\"/\">Accueil</a></nav><h1>Le caf\xe9</h1>\
<p>Nous servons du caf\xe9 et du th\xe9 tous les jours,\n   du matin au soir, dans une ambiance calme.<br>Bienvenue\xa0!</p>\
<table><tr><td>lundi</td><td>8h</td></tr></table><img src=\"c.png\" alt=\"tasse\"></body></html>";

/// Writes the fixture archive; returns the source record ids by type.
fn fixture_warc(path: &Path) -> Vec<(RecordType, String)> {
    let file = std::fs::File::create(path).unwrap();
    let mut w = Writer::new(file, WriterOptions::default()).unwrap();
    let mut ids = Vec::new();
    let mut put =
        |t: RecordType, uri: Option<&str>, ct: &str, block: &[u8], extra: &[(&str, &str)]| {
            let mut r = NewRecord::new(t);
            if let Some(u) = uri {
                r.set("WARC-Target-URI", u).unwrap();
            }
            r.set("Content-Type", ct).unwrap();
            for (n, v) in extra {
                r.set(n, v).unwrap();
            }
            ids.push((t, r.record_id()));
            w.write(&mut r, Body::Bytes(block)).unwrap();
        };
    put(
        RecordType::Warcinfo,
        None,
        "application/warc-fields",
        b"software: test\r\nisPartOf: derive-test\r\noperator: us\r\n",
        &[("WARC-Filename", "src.warc.gz")],
    );
    put(
        RecordType::Request,
        Some("http://cafe.example/"),
        "application/http; msgtype=request",
        b"GET / HTTP/1.1\r\nHost: cafe.example\r\n\r\n",
        &[],
    );
    let mut response = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=iso-8859-1\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n".to_vec();
    response.extend_from_slice(PAGE);
    put(
        RecordType::Response,
        Some("http://cafe.example/"),
        "application/http; msgtype=response",
        &response,
        &[],
    );
    put(
        RecordType::Metadata,
        Some("http://cafe.example/"),
        "application/warc-fields",
        b"fetchTimeMs: 12\r\noutlink: http://cafe.example/x\r\n",
        &[],
    );
    put(
        RecordType::Response,
        Some("http://cafe.example/c.png"),
        "application/http; msgtype=response",
        b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n\x89PNG",
        &[],
    );
    put(
        RecordType::Resource,
        Some("file:///notes.txt"),
        "text/plain",
        b"Plain   notes\n\n\nsecond line",
        &[],
    );
    put(
        RecordType::Revisit,
        Some("http://cafe.example/"),
        "application/http; msgtype=response",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
        &[(
            "WARC-Profile",
            "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
        )],
    );
    ids
}

struct Rec {
    kind: RecordType,
    fields: Vec<(String, String)>,
    block: Vec<u8>,
}

impl Rec {
    fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_all(path: &Path) -> Vec<Rec> {
    let mut reader = Reader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(mut r) = reader.next_record().unwrap() {
        let kind = r.header().record_type();
        let fields = r
            .header()
            .fields()
            .iter()
            .map(|f| {
                (
                    f.name_str().into_owned(),
                    String::from_utf8_lossy(&f.value()).into_owned(),
                )
            })
            .collect();
        let mut block = Vec::new();
        r.block().read_to_end(&mut block).unwrap();
        out.push(Rec {
            kind,
            fields,
            block,
        });
    }
    out
}

fn check_valid(path: &Path) {
    let out = warchest(&[std::ffi::OsStr::new("validate"), path.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "validate {}: {text}", path.display());
    if python_has("warcio") {
        let o = std::process::Command::new("warcio")
            .arg("check")
            .arg(path)
            .output()
            .expect("warcio");
        assert!(
            o.status.success(),
            "warcio check {}: {}",
            path.display(),
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

/// The keys every HTTP-Request- or HTTP-Response-Metadata object has.
fn http_keys(m: &serde_json::Value, what: &str) {
    for k in [
        "Headers-Length",
        "Entity-Length",
        "Entity-Digest",
        "Entity-Trailing-Slop-Length",
    ] {
        assert!(m[k].is_string(), "{what} {k}");
    }
}

#[test]
fn wet_and_wat_of_every_record_type() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.warc.gz");
    let ids = fixture_warc(&src);
    let source_ids: HashSet<&str> = ids.iter().map(|(_, id)| id.as_str()).collect();
    let wet = dir.path().join("src.warc.wet.gz");
    let wat = dir.path().join("src.warc.wat.gz");
    for (kind, out) in [("wet", &wet), ("wat", &wat)] {
        let (code, _, err) = run(crate::common::bin()
            .args(["-q", "derive", kind])
            .arg(&src)
            .arg("-o")
            .arg(out));
        assert_eq!(code, 0, "derive {kind}: {err}");
        check_valid(out);
    }

    // WET: a warcinfo (with the source's isPartOf and operator), then one
    // conversion record: the HTML response's (not the image, the request,
    // the resource or the revisit).
    let recs = read_all(&wet);
    assert_eq!(recs[0].kind, RecordType::Warcinfo);
    assert_eq!(recs[0].get("WARC-Filename"), Some("src.warc.wet.gz"));
    let info = String::from_utf8_lossy(&recs[0].block);
    for key in [
        "Software-Info: warchest-derive",
        "Extracted-Date: ",
        "isPartOf: derive-test",
        "operator: us",
        "format: WARC File Format 1.0",
    ] {
        assert!(info.contains(key), "{key} in {info}");
    }
    assert_eq!(recs.len(), 2, "one conversion record");
    let conv = &recs[1];
    assert_eq!(conv.kind, RecordType::Conversion);
    let names: Vec<&str> = conv.fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "WARC-Type",
            "WARC-Target-URI",
            "WARC-Date",
            "WARC-Record-ID",
            "WARC-Refers-To",
            "WARC-Block-Digest",
            "WARC-Identified-Content-Language",
            "Content-Type",
            "Content-Length"
        ]
    );
    assert_eq!(conv.get("WARC-Refers-To"), Some(ids[2].1.as_str()));
    assert_eq!(conv.get("WARC-Identified-Content-Language"), Some("fra"));
    assert_eq!(conv.get("Content-Type"), Some("text/plain"));
    // Common Crawl's rules: the title first, a line per block, whitespace
    // (and the no-break space) collapsed, cells on one line, no alt text,
    // no script or style, no blank line, no trailing space.
    assert_eq!(
        String::from_utf8(conv.block.clone()).unwrap(),
        "Café & thé\nAccueil\nLe café\nNous servons du café et du thé tous les jours, du matin au soir, dans une ambiance calme.\nBienvenue !\nlundi 8h"
    );

    // WAT: a warcinfo, then one metadata record per source record.
    let recs = read_all(&wat);
    assert_eq!(recs[0].kind, RecordType::Warcinfo);
    assert_eq!(recs.len(), 1 + ids.len());
    for (rec, (kind, id)) in recs[1..].iter().zip(&ids) {
        assert_eq!(rec.kind, RecordType::Metadata);
        assert_eq!(rec.get("Content-Type"), Some("application/json"));
        let refers = rec.get("WARC-Refers-To").expect("WARC-Refers-To");
        assert_eq!(refers, id);
        assert!(source_ids.contains(refers));
        let v: serde_json::Value = serde_json::from_slice(&rec.block).unwrap();
        let c = &v["Container"];
        assert_eq!(c["Filename"], "src.warc.gz");
        assert_eq!(c["Compressed"], true);
        assert!(c["Offset"].as_str().unwrap().parse::<u64>().is_ok());
        for k in [
            "Deflate-Length",
            "Header-Length",
            "Footer-Length",
            "Inflated-CRC",
            "Inflated-Length",
        ] {
            assert!(
                c["Gzip-Metadata"][k].is_string(),
                "{kind:?}: Gzip-Metadata.{k}"
            );
        }
        let e = &v["Envelope"];
        assert_eq!(e["Format"], "WARC");
        assert_eq!(e["WARC-Header-Metadata"]["WARC-Record-ID"], id.as_str());
        for k in [
            "WARC-Header-Length",
            "Block-Digest",
            "Actual-Content-Length",
        ] {
            assert!(e[k].is_string(), "{kind:?}: Envelope.{k}");
        }
        let p = &e["Payload-Metadata"];
        for k in [
            "Actual-Content-Length",
            "Block-Digest",
            "Trailing-Slop-Length",
        ] {
            assert!(p[k].is_string(), "{kind:?}: Payload-Metadata.{k}");
        }
        match kind {
            RecordType::Warcinfo => {
                assert_eq!(p["Actual-Content-Type"], "application/warc-fields");
                assert_eq!(p["WARC-Info-Metadata"]["isPartOf"], "derive-test");
                assert_eq!(rec.get("WARC-Target-URI"), None);
            }
            RecordType::Request => {
                assert_eq!(
                    p["Actual-Content-Type"],
                    "application/http; msgtype=request"
                );
                let m = &p["HTTP-Request-Metadata"];
                assert_eq!(m["Request-Message"]["Method"], "GET");
                assert_eq!(m["Request-Message"]["Path"], "/");
                assert_eq!(m["Request-Message"]["Version"], "HTTP/1.1");
                assert_eq!(m["Headers"]["Host"], "cafe.example");
                http_keys(m, "request");
            }
            RecordType::Response | RecordType::Revisit => {
                assert_eq!(
                    p["Actual-Content-Type"],
                    "application/http; msgtype=response"
                );
                let m = &p["HTTP-Response-Metadata"];
                assert_eq!(m["Response-Message"]["Status"], "200");
                assert_eq!(m["Response-Message"]["Reason"], "OK");
                http_keys(m, "response");
                if rec.get("WARC-Target-URI") == Some("http://cafe.example/")
                    && *kind == RecordType::Response
                {
                    // A repeated header is an array.
                    assert_eq!(
                        m["Headers"]["Set-Cookie"],
                        serde_json::json!(["a=1", "b=2"])
                    );
                    let h = &m["HTML-Metadata"];
                    assert_eq!(h["Head"]["Title"], "Café & thé");
                    assert_eq!(
                        h["Head"]["Metas"][0],
                        serde_json::json!({"name": "HTML@/lang", "content": "fr"})
                    );
                    assert_eq!(h["Head"]["Metas"][1]["content"], "Un café");
                    assert_eq!(h["Head"]["Link"][0]["path"], "LINK@/href");
                    assert_eq!(h["Head"]["Scripts"][0]["url"], "/a.js");
                    assert_eq!(
                        h["Links"][0],
                        serde_json::json!({"path": "A@/href", "url": "/", "text": "Accueil"})
                    );
                    assert_eq!(
                        h["Links"][1],
                        serde_json::json!({"path": "IMG@/src", "url": "c.png", "alt": "tasse"})
                    );
                } else {
                    assert!(m.get("HTML-Metadata").is_none());
                }
            }
            RecordType::Metadata => {
                assert_eq!(p["Actual-Content-Type"], "application/metadata-fields");
                assert_eq!(
                    p["WARC-Metadata-Metadata"]["Metadata-Records"][0],
                    serde_json::json!({"Name": "fetchTimeMs", "Value": "12"})
                );
            }
            _ => assert!(
                p.get("Actual-Content-Type").is_none(),
                "{kind:?}: envelope only"
            ),
        }
    }
}

#[test]
fn text_rows_as_json_lines_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.warc.gz");
    let ids = fixture_warc(&src);
    let (code, out, err) = run(crate::common::bin()
        .args(["-q", "derive", "text"])
        .arg(&src)
        .args(["-o", "-"]));
    assert_eq!(code, 0, "{err}");
    let rows = crate::serve::json_lines(std::str::from_utf8(&out).unwrap());
    // The HTML response and the text resource.
    assert_eq!(rows.len(), 2);
    let page = &rows[0];
    let keys: Vec<&str> = page
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for k in [
        "url",
        "date",
        "record_id",
        "warc_filename",
        "warc_offset",
        "content_type",
        "language",
        "language_score",
        "title",
        "text",
        "main_text",
    ] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    assert_eq!(page["url"], "http://cafe.example/");
    assert_eq!(page["record_id"], ids[2].1.as_str());
    assert_eq!(page["language"], "fra");
    assert!(page["language_score"].as_f64().unwrap() > 0.5);
    assert_eq!(page["title"], "Café & thé");
    assert_eq!(
        page["main_text"],
        "Le café\nNous servons du café et du thé tous les jours, du matin au soir, dans une ambiance calme.\nBienvenue !\nlundi 8h"
    );
    // The offset locates the record: extract reads it back.
    let offset = page["warc_offset"].as_u64().unwrap().to_string();
    let (code, head, _) = run(crate::common::bin().args(["extract"]).arg(&src).args([
        "--offset",
        &offset,
        "--headers",
    ]));
    assert_eq!(code, 0);
    assert!(String::from_utf8_lossy(&head).contains(ids[2].1.as_str()));
    assert_eq!(rows[1]["text"], "Plain notes\nsecond line");

    let pq = dir.path().join("text.parquet");
    let (code, _, err) = run(crate::common::bin()
        .args(["-q", "derive", "text"])
        .arg(&src)
        .arg("-o")
        .arg(&pq));
    assert_eq!(code, 0, "{err}");
    let file = std::fs::File::open(&pq).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        [
            "url",
            "date",
            "record_id",
            "warc_filename",
            "warc_offset",
            "content_type",
            "language",
            "language_score",
            "languages",
            "title",
            "text",
            "main_text"
        ]
    );
}

#[test]
fn text_columns_asked_for_only() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.warc.gz");
    fixture_warc(&src);
    let lines = |extra: &[&str]| {
        let (code, out, err) = run(crate::common::bin()
            .args(["-q", "derive", "text"])
            .arg(&src)
            .args(["-o", "-"])
            .args(extra));
        assert_eq!(code, 0, "{err}");
        String::from_utf8(out).unwrap()
    };
    let all: Vec<serde_json::Value> = lines(&[])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Only the columns asked for, in the table's order, with the same
    // values as in the full rows.
    let some = lines(&["--columns", "text,url"]);
    assert_eq!(some.lines().count(), all.len());
    for (line, a) in some.lines().zip(&all) {
        // The table's order (serde_json's map would sort the keys).
        assert!(
            line.starts_with(r#"{"url":"#) && line.contains(r#"","text":""#),
            "{line}"
        );
        let s: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(s.as_object().unwrap().len(), 2);
        assert_eq!((&s["url"], &s["text"]), (&a["url"], &a["text"]));
    }
    let lang = lines(&["--columns", "language,main_text"]);
    let first: serde_json::Value = serde_json::from_str(lang.lines().next().unwrap()).unwrap();
    assert_eq!(
        (&first["language"], &first["main_text"]),
        (&all[0]["language"], &all[0]["main_text"])
    );
    // Parquet: the schema is the projection.
    let pq = dir.path().join("text.parquet");
    let (code, _, err) = run(crate::common::bin()
        .args(["-q", "derive", "text", "--columns", "url,warc_offset,title"])
        .arg(&src)
        .arg("-o")
        .arg(&pq));
    assert_eq!(code, 0, "{err}");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&pq).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["url", "warc_offset", "title"]);
    assert_eq!(
        batches.iter().map(|b| b.num_rows()).sum::<usize>(),
        all.len()
    );
    // An unknown column is refused before anything is written.
    let out = dir.path().join("bad.jsonl");
    let (code, _, err) = run(crate::common::bin()
        .args(["derive", "text", "--columns", "url,body"])
        .arg(&src)
        .arg("-o")
        .arg(&out));
    assert_ne!(code, 0);
    assert!(
        err.contains("\"body\"") && err.contains("main_text"),
        "{err}"
    );
    assert!(!out.exists() && !dir.path().join("bad.jsonl.open").exists());
}

#[test]
fn input_without_records_is_an_error_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.warc");
    std::fs::write(&empty, b"").unwrap();
    let out = dir.path().join("out.wet.gz");
    let (code, _, err) = run(crate::common::bin()
        .args(["derive", "wet"])
        .arg(&empty)
        .arg("-o")
        .arg(&out));
    assert_eq!(code, 2, "{err}");
    assert!(!out.exists());
    assert!(!dir.path().join("out.wet.gz.open").exists());
}

/// An input that cannot be read among inputs that can: the others are
/// derived, but the output is not committed (exit 2, `OUT.open` left and
/// named), so it is not taken for the derivative of every input.
#[test]
fn a_failed_input_leaves_the_output_open_not_committed() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.warc");
    fixture_warc(&a);
    let missing = dir.path().join("missing.warc.gz");
    for (kind, name) in [
        ("wet", "out.wet.gz"),
        ("wat", "out.wat.gz"),
        ("text", "out.jsonl"),
        ("text", "out.parquet"),
    ] {
        let out = dir.path().join(name);
        let open = dir.path().join(format!("{name}.open"));
        let (code, _, err) = run(crate::common::bin()
            .args(["derive", kind])
            .arg(&a)
            .arg(&missing)
            .arg("-o")
            .arg(&out));
        assert_eq!(code, 2, "{kind} {name}: {err}");
        assert!(err.contains("missing.warc.gz"), "{kind} {name}: {err}");
        assert!(!out.exists(), "{kind} {name}: committed");
        assert!(open.exists(), "{kind} {name}: no .open left");
        assert!(
            err.contains(&format!("left incomplete as {}", open.display())),
            "{kind} {name}: {err}"
        );
        // The inputs that could be read were derived into it.
        assert!(std::fs::metadata(&open).unwrap().len() > 0, "{kind} {name}");
    }
    // Both inputs readable: committed, exit 0.
    let out = dir.path().join("ok.wet.gz");
    let (code, _, err) = run(crate::common::bin()
        .args(["derive", "wet"])
        .arg(&a)
        .arg(&a)
        .arg("-o")
        .arg(&out));
    assert_eq!(code, 0, "{err}");
    assert!(out.exists() && !dir.path().join("ok.wet.gz.open").exists());
}

/// A response announcing gzip whose body is plain HTML: its text is
/// derived from the bytes as stored (as warcio gives them), and the run
/// says so on stderr; `-w` names the record; a clean archive (gzip that
/// decodes) prints no such line.
#[test]
fn payload_fallbacks_are_counted_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &Path, undecodable: bool| {
        let file = std::fs::File::create(path).unwrap();
        let mut w = Writer::new(file, WriterOptions::default()).unwrap();
        let mut put = |uri: &str, block: &[u8]| {
            let mut r = NewRecord::new(RecordType::Response);
            r.set("WARC-Target-URI", uri).unwrap();
            r.set("Content-Type", "application/http; msgtype=response")
                .unwrap();
            w.write(&mut r, Body::Bytes(block)).unwrap();
        };
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, b"<html><body><p>Clean page</p></body></html>").unwrap();
        put(
            "http://a.example/clean",
            &[&head[..], &gz.finish().unwrap()].concat(),
        );
        if undecodable {
            put(
                "http://a.example/plain",
                &[
                    &head[..],
                    b"<html><body><p>Not gzip at all</p></body></html>",
                ]
                .concat(),
            );
        }
    };
    let bad = dir.path().join("bad.warc.gz");
    let clean = dir.path().join("clean.warc.gz");
    write(&bad, true);
    write(&clean, false);
    let text = |args: &[&str], src: &Path| {
        let (code, out, err) = run(crate::common::bin()
            .args(args)
            .args(["derive", "text"])
            .arg(src)
            .args(["-o", "-"]));
        assert_eq!(code, 0, "{err}");
        let rows = crate::serve::json_lines(std::str::from_utf8(&out).unwrap());
        (out, rows, err)
    };
    let (out, rows, err) = text(&[], &bad);
    // The bytes as stored give the text, as before.
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["text"], "Clean page");
    assert_eq!(rows[1]["text"], "Not gzip at all");
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("not decoded"))
            .collect::<Vec<_>>(),
        [
            "warchest: 1 payload not decoded as its HTTP head says: content coding did not decode, bytes as stored (1); -w lists it"
        ],
        "{err}"
    );
    let (quiet_out, _, quiet_err) = text(&["-q"], &bad);
    assert_eq!(quiet_out, out);
    assert!(!quiet_err.contains("not decoded"), "{quiet_err}");
    let (_, _, listed) = text(&["-w"], &bad);
    let offset = &rows[1]["warc_offset"];
    assert!(
        listed.contains(&format!(
            "warchest: {}: warning: offset {offset}: content-coding-undecoded: payload content coding did not decode, bytes as stored\n",
            bad.display()
        )),
        "{listed}"
    );
    assert!(
        listed.contains("warchest: 1 payload not decoded as its HTTP head says: content coding did not decode, bytes as stored (1)\n"),
        "{listed}"
    );
    let (_, rows, err) = text(&[], &clean);
    assert_eq!(rows.len(), 1);
    assert!(!err.contains("not decoded"), "{err}");
    // The WAT reads every payload: the same count.
    let wat = dir.path().join("bad.wat.gz");
    let (code, _, err) = run(crate::common::bin()
        .args(["derive", "wat"])
        .arg(&bad)
        .arg("-o")
        .arg(&wat));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warchest: 1 payload not decoded as its HTTP head says: content coding did not decode, bytes as stored (1); -w lists it\n"),
        "{err}"
    );
}
