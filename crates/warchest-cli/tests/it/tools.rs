//! filter, stats, recompress, split and concat end to end: outputs, exit
//! codes, messages, and output that does not depend on `-j`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
use common::bin;

fn fixture(rel: &str) -> String {
    common::fixture(rel).to_string_lossy().into_owned()
}

fn run(cmd: &mut Command) -> (i32, Vec<u8>, String) {
    let out = cmd.stdin(Stdio::null()).output().expect("run warchest");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `recompress --to zstd --train-dict` of `input` into `out` (with `extra`
/// arguments): the file starts with its dictionary frame. Shared by the
/// tests that read such a file (here and in serve.rs).
pub(crate) fn dict_zst(input: &str, out: &Path, extra: &[&str]) -> std::path::PathBuf {
    let (code, _, err) = run(bin()
        .args(["recompress", input, "-o"])
        .arg(out)
        .args(["--to", "zstd", "--train-dict"])
        .args(extra));
    assert_eq!(code, 0, "{err}");
    let head = std::fs::read(out).unwrap();
    assert_eq!(
        &head[..4],
        &0x184D_2A5Du32.to_le_bytes(),
        "dictionary frame first"
    );
    out.to_path_buf()
}

/// `ls --json` of a file: (type, target URI, Content-Length) per record.
fn records(path: &Path) -> Vec<(String, String, u64)> {
    let (code, out, err) = run(bin().arg("ls").arg("--json").arg(path));
    assert_eq!(code, 0, "{err}");
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["type"].as_str().unwrap_or("").to_string(),
                v["target_uri"].as_str().unwrap_or("").to_string(),
                v["content_length"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[test]
fn filter_selects_and_reports_bad_expressions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("html.warc.gz");
    let (code, _, err) = run(bin().args([
        "filter",
        &fixture("pywb/iana.warc.gz"),
        "-o",
        out.to_str().unwrap(),
        r#"warc-type == "response" && http:status == 200 && :content-type =~ "text/html""#,
    ]));
    assert_eq!(code, 0, "{err}");
    let recs = records(&out);
    assert_eq!(recs.len(), 16);
    assert!(recs.iter().all(|r| r.0 == "response"));
    assert!(!dir.path().join("html.warc.gz.open").exists());

    // Plain in, plain out: a well-formed file filtered by "everything" is
    // the same bytes.
    let (code, bytes, err) = run(bin().args([
        "filter",
        &fixture("warcio/example.warc"),
        "-o",
        "-",
        ":length >= 0",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        bytes,
        std::fs::read(fixture("warcio/example.warc")).unwrap()
    );

    // A bad expression: exit 2, the column and what was expected.
    let (code, _, err) = run(bin().args([
        "filter",
        &fixture("warcio/example.warc"),
        "-o",
        "-",
        r#"warc-type = "response""#,
    ]));
    assert_eq!(code, 2);
    assert!(
        err.contains("column 11") && err.contains("did you mean `==`"),
        "{err}"
    );
    let (code, _, err) = run(bin().args(["filter", "-o", "-", "a == 1"]));
    assert_eq!(code, 2);
    assert!(err.contains("then the expression"), "{err}");
}

#[test]
fn stats_json_and_text() {
    let (code, out, err) = run(bin().args(["stats", "--json", &fixture("pywb/iana.warc.gz")]));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["records"], 343);
    assert_eq!(v["by_type"]["response"]["records"], 48);
    assert_eq!(v["by_status"]["200"]["records"], 167);
    assert_eq!(v["by_host"]["www.iana.org"]["records"], 342);
    let (code, out, _) = run(bin().args(["stats", &fixture("pywb/iana.warc.gz")]));
    assert_eq!(code, 0);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("343 records in 1 files"), "{text}");
    assert!(text.contains("www.iana.org"), "{text}");
    // A missing file: reported, the others still counted, exit 2.
    let (code, out, err) = run(bin().args([
        "stats",
        "--json",
        "/nonexistent.warc",
        &fixture("pywb/example.warc.gz"),
    ]));
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent.warc"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["records"], 6);
}

#[test]
fn outputs_do_not_depend_on_jobs() {
    let inputs = [
        fixture("pywb/iana.warc.gz"),
        fixture("resiliparse/warcfile.warc.lz4"),
        fixture("warcio/example.warc"),
        fixture("pywb/example-bad.warc.gz.bad"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    let mut stats = Vec::new();
    for j in ["1", "3"] {
        let out = dir.path().join(format!("all-{j}.warc.gz"));
        let (code, _, err) = run(bin()
            .args(["concat", "-j", j, "-o", out.to_str().unwrap()])
            .args(&inputs));
        assert_eq!(code, 0, "{err}");
        outs.push(std::fs::read(&out).unwrap());
        let (code, s, err) = run(bin().args(["stats", "--json", "-j", j]).args(&inputs));
        assert_eq!(code, 0, "{err}");
        stats.push(s);
    }
    assert_eq!(outs[0], outs[1], "concat -j1 and -j3 differ");
    assert_eq!(stats[0], stats[1], "stats -j1 and -j3 differ");
    let v: serde_json::Value = serde_json::from_slice(&stats[0]).unwrap();
    let all = records(&dir.path().join("all-1.warc.gz"));
    assert_eq!(v["records"], all.len() as u64);
    let mut want = Vec::new();
    for i in &inputs {
        want.extend(records(Path::new(i)));
    }
    assert_eq!(all, want);
}

#[test]
fn recompress_whole_file_gzip_zstd_with_a_trained_dictionary_and_lz4() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fixed.warc.gz");
    let input = fixture("pywb/example-bad.warc.gz.bad");
    let (code, _, err) = run(bin().args(["recompress", &input, "-o", out.to_str().unwrap()]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(records(&out), records(Path::new(&input)));
    // Every record now has an offset and a stored length of its own.
    let (_, ls, _) = run(bin().arg("ls").arg(&out));
    for l in String::from_utf8(ls).unwrap().lines() {
        assert_ne!(l.split('\t').nth(1), Some("-"), "{l}");
    }
    let (code, out_check, _) = run(bin().arg("check").arg(&out));
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out_check));

    let iana = fixture("pywb/iana.warc.gz");
    let zst = dict_zst(&iana, &dir.path().join("iana.warc.zst"), &["--level", "9"]);
    assert_eq!(records(&zst), records(Path::new(&iana)));

    // Several inputs go to a directory, named after them.
    let outdir = dir.path().join("many");
    let (code, _, err) = run(bin().args([
        "recompress",
        "-j",
        "2",
        "--to",
        "none",
        &fixture("resiliparse/warcfile.warc.lz4"),
        &fixture("pywb/example.warc.gz"),
        "-o",
        outdir.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        records(&outdir.join("warcfile.warc")),
        records(Path::new(&fixture("resiliparse/warcfile.warc.lz4")))
    );
    assert!(outdir.join("example.warc").exists());

    // LZ4, one frame per record: the same records, each at its own offset.
    let lz = dir.path().join("iana.warc.lz4");
    let (code, _, err) = run(bin().args([
        "recompress",
        &iana,
        "-o",
        lz.to_str().unwrap(),
        "--to",
        "lz4",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(&std::fs::read(&lz).unwrap()[..4], &[0x04, 0x22, 0x4d, 0x18]);
    assert_eq!(records(&lz), records(Path::new(&iana)));
    let (code, out_check, _) = run(bin().arg("check").arg(&lz));
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out_check));

    // Flags that do not go together.
    for bad in [
        &["--to", "gzip", "--train-dict"][..],
        &["--to", "none", "--level", "3"],
        &["--to", "gzip", "--level", "12"],
        &["--to", "gzip", "--dict", "/nonexistent"],
        &["--to", "lz4", "--level", "3"],
    ] {
        let (code, _, err) = run(bin()
            .args([
                "recompress",
                &iana,
                "-o",
                dir.path().join("x").to_str().unwrap(),
            ])
            .args(bad));
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert!(err.starts_with("warchest: "), "{err}");
    }
}

/// `ls --json` of a file: (type, 14-digit date) per record.
fn types_and_dates(path: &Path) -> Vec<(String, String)> {
    let (code, out, err) = run(bin().arg("ls").arg("--json").arg(path));
    assert_eq!(code, 0, "{err}");
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let date: String = v["date"]
                .as_str()
                .unwrap_or("")
                .chars()
                .filter(char::is_ascii_digit)
                .take(14)
                .collect();
            (v["type"].as_str().unwrap_or("").to_string(), date)
        })
        .collect()
}

#[test]
fn split_then_concat() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("parts");
    let input = fixture("pywb/iana.warc.gz");
    let split = || {
        run(bin().args([
            "split",
            &input,
            "--max-size",
            "150KB",
            "-o",
            parts.to_str().unwrap(),
            "--prefix",
            "IANA",
            "--host",
            "crawl01",
        ]))
    };
    let (code, out, err) = split();
    assert_eq!(code, 0, "{err}");
    let listed = String::from_utf8(out).unwrap();
    let mut names = Vec::new();
    let mut dates = BTreeSet::new();
    let mut added = 0;
    for (i, l) in listed.lines().enumerate() {
        let c: Vec<&str> = l.split('\t').collect();
        let p = Path::new(c[0]);
        let size: u64 = c[1].parse().unwrap();
        let n: u64 = c[2].parse().unwrap();
        let recs = types_and_dates(p);
        assert_eq!(recs.len() as u64, n, "{l}");
        // Every file opens with a warcinfo record: the input's in the
        // first, a new one in the others.
        assert_eq!(recs[0].0, "warcinfo", "{l}");
        if i > 0 {
            added += 1;
        }
        // Named with the date of its own first record.
        let first = if i == 0 { &recs[0].1 } else { &recs[1].1 };
        assert_eq!(
            p.file_name().unwrap().to_str().unwrap(),
            format!("IANA-{first}-{i:05}-crawl01.warc.gz")
        );
        dates.insert(first.clone());
        assert_eq!(std::fs::metadata(p).unwrap().len(), size);
        assert!(size <= 150_000 || n <= 2, "{l}");
        names.push(p.to_path_buf());
    }
    assert!(names.len() >= 4, "{listed}");
    assert!(dates.len() > 1, "every file named with one date: {listed}");
    let joined = dir.path().join("joined.warc.gz");
    let (code, _, err) = run(bin()
        .args(["concat", "-o", joined.to_str().unwrap()])
        .args(&names));
    assert_eq!(code, 0, "{err}");
    // The input's records, in order, and the warcinfo records added.
    let mut got = records(&joined);
    let before = got.len();
    let mut seen_first = false;
    got.retain(|r| {
        if r.0 != "warcinfo" {
            return true;
        }
        let keep = !seen_first;
        seen_first = true;
        keep
    });
    assert_eq!(before - got.len(), added);
    assert_eq!(got, records(Path::new(&input)));
    // The validator accepts the parts, new warcinfo records included.
    let (code, out, err) = run(bin().arg("validate").args(&names));
    assert_eq!(code, 0, "{}{err}", String::from_utf8_lossy(&out));
    // Existing files are not replaced without --force.
    let (code, _, err) = split();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exists; --force replaces it"), "{err}");
    let (code, _, err) = run(bin().args([
        "split",
        &input,
        "--max-size",
        "150KB",
        "-o",
        parts.to_str().unwrap(),
        "--prefix",
        "IANA",
        "--host",
        "crawl01",
        "--force",
    ]));
    assert_eq!(code, 0, "{err}");
    // A size that does not parse.
    let (code, _, err) = run(bin().args(["split", &input, "--max-size", "1XB", "-o", "x"]));
    assert_eq!(code, 2);
    assert!(err.contains("unknown unit"), "{err}");
}

#[test]
fn help_has_an_example() {
    for cmd in ["filter", "stats", "recompress", "split", "concat"] {
        let (code, out, _) = run(bin().args([cmd, "--help"]));
        assert_eq!(code, 0);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(&format!("warchest {cmd} ")), "{cmd}: {text}");
        assert!(text.contains("-j, --jobs"), "{cmd}");
    }
}

#[test]
fn stdin_works_for_filter_and_stats() {
    use std::io::Write;
    let data = std::fs::read(fixture("pywb/example.warc.gz")).unwrap();
    let mut child = bin()
        .args([
            "filter",
            "-",
            "-o",
            "-",
            "--to",
            "none",
            r#":type == "response""#,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("WARC-Type: response").count(), 2, "{text}");
    assert!(!text.contains("WARC-Type: request"));
}

#[test]
fn a_truncated_record_is_not_copied_and_exits_1() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.warc");
    let whole = b"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:x:1>\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
    let cut = b"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:x:2>\r\nContent-Length: 100\r\n\r\nshort";
    let mut child = bin()
        .args([
            "recompress",
            "-",
            "--to",
            "none",
            "-o",
            out.to_str().unwrap(),
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(whole).unwrap();
    stdin.write_all(cut).unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("-: offset ")
            && err.contains("<urn:x:2>")
            && err.contains("5 of its 100 bytes"),
        "{err}"
    );
    // The whole record is there, complete; the file got its final name.
    assert_eq!(std::fs::read(&out).unwrap(), whole);
}

/// `ls --json` of a file: (offset, WARC-Record-ID) per record.
fn offsets_and_ids(path: &Path) -> Vec<(u64, String)> {
    let (code, out, err) = run(bin().arg("ls").arg("--json").arg(path));
    assert_eq!(code, 0, "{err}");
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["offset"].as_u64().unwrap(),
                v["record_id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A `.warc.zst` with a trained dictionary (its dictionary frame first):
/// every record extracts at its own offset, the same bytes as the record of
/// the same WARC-Record-ID extracted from the original. Reading at an offset
/// loads the file's dictionary first, as a full read does.
#[test]
fn recompress_train_dict_extract_at_every_offset() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("pywb/iana.warc.gz");
    let zst = dict_zst(&src, &dir.path().join("dict.warc.zst"), &[]);

    let original: std::collections::HashMap<String, u64> = offsets_and_ids(Path::new(&src))
        .into_iter()
        .map(|(o, id)| (id, o))
        .collect();
    let listed = offsets_and_ids(&zst);
    assert_eq!(listed.len(), original.len());
    assert!(listed.len() > 2);
    for (offset, id) in &listed {
        let (code, got, err) = run(bin()
            .arg("extract")
            .arg(&zst)
            .arg("--offset")
            .arg(offset.to_string()));
        assert_eq!(code, 0, "offset {offset} ({id}): {err}");
        // The original is one gzip member a record: the member at its
        // offset, inflated, is the record `extract` gives (read here in
        // process: a second process a record doubled the test's time).
        let mut member = std::fs::File::open(&src).unwrap();
        std::io::Seek::seek(&mut member, std::io::SeekFrom::Start(original[id])).unwrap();
        let mut want = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(member), &mut want).unwrap();
        assert_eq!(got, want, "record {id} at offset {offset}");
    }
}
