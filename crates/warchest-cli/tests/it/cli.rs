//! The `warchest` binary end to end: output, exit codes, messages.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common;
use common::{bin, fixture};

fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.warc.gz")
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("run warchest");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ls_lists_every_record() {
    let (code, out, err) = run(bin().arg("ls").arg(sample()));
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6);
    let cols: Vec<&str> = lines[1].split('\t').collect();
    assert_eq!(cols[0], "359");
    assert_eq!(cols[2], "response");
    assert_eq!(cols[4], "http://example.com/");
    assert_eq!(cols[6], "192");
    // Offsets and lengths chain: each record starts where the last ended.
    let mut next = 0u64;
    for l in &lines {
        let c: Vec<&str> = l.split('\t').collect();
        assert_eq!(c[0].parse::<u64>().unwrap(), next);
        next += c[1].parse::<u64>().unwrap();
    }
    assert_eq!(next, std::fs::metadata(sample()).unwrap().len());
}

/// `-H` starts each line with its file's name and a tab, on one thread and
/// in chunks alike; the columns after it are the lines without `-H`.
#[test]
fn ls_with_filename_names_each_line_s_file() {
    let dir = tempfile::tempdir().unwrap();
    // An uncompressed file read in chunks at -j 2 (the chunk size forced
    // small), beside the gzip sample.
    let plain = dir.path().join("plain.warc");
    let (code, _, err) = run(bin()
        .args(["convert", "--compression", "none", "-o"])
        .arg(&plain)
        .arg(sample()));
    assert_eq!(code, 0, "{err}");
    let (s, p) = (sample().display().to_string(), plain.display().to_string());
    let (_, bare, _) = run(bin().args(["ls", &s, &p]));
    for jobs in ["1", "2"] {
        let (code, out, err) = run(bin()
            .args(["ls", "-H", "-j", jobs, &s, &p])
            .env("WARCHEST_PLAIN_CHUNK", "300"));
        assert_eq!(code, 0, "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), bare.lines().count(), "{out}");
        for (l, b) in lines.iter().zip(bare.lines()) {
            let (name, rest) = l.split_once('\t').unwrap();
            assert!(name == s || name == p, "{l}");
            assert_eq!(rest, b);
        }
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with(&format!("{p}\t")))
                .count(),
            6
        );
    }
}

#[test]
fn ls_json_and_stdin() {
    let mut child = bin()
        .args(["ls", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let data = std::fs::read(fixture("pywb/example.warc.gz")).unwrap();
    child.stdin.take().unwrap().write_all(&data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let recs: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 6);
    assert_eq!(recs[1]["offset"], 333);
    assert_eq!(recs[1]["length"], 1043);
    assert_eq!(recs[1]["type"], "response");
    assert_eq!(recs[1]["target_uri"], "http://example.com?example=1");
    assert_eq!(recs[1]["file"], "-");
}

#[test]
fn extract_payload_headers_and_record() {
    let s = sample();
    let (code, out, _) =
        run(bin()
            .arg("extract")
            .arg(&s)
            .args(["--offset", "359", "--payload", "--decode"]));
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "<!doctype html><title>Hello</title><h1>Hello, archive</h1>\n"
    );
    let (code, out, _) = run(bin()
        .arg("extract")
        .arg(&s)
        .args(["--offset", "359", "--headers"]));
    assert_eq!(code, 0);
    assert!(
        out.starts_with("WARC/1.1\r\nWARC-Type: response\r\n"),
        "{out}"
    );
    assert!(out.contains("\r\n\r\nHTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.ends_with("Transfer-Encoding: chunked\r\n\r\n"), "{out}");
    let out = bin()
        .arg("extract")
        .arg(&s)
        .args(["--offset", "1671"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        out.stdout
            .ends_with(b"A plain text file archived as a resource record.\n\r\n\r\n")
    );
    // The extracted record is itself a valid WARC.
    let mut child = bin()
        .args(["check", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let checked = child.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
}

#[test]
fn extract_at_a_wrong_offset_fails_naming_it() {
    let (code, _, err) = run(bin().arg("extract").arg(sample()).args(["--offset", "360"]));
    assert_eq!(code, 2);
    assert!(
        err.contains("sample.warc.gz") && err.contains("360"),
        "{err}"
    );
}

#[test]
fn check_exit_codes() {
    let (code, out, _) = run(bin().arg("check").arg(sample()));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("6 records") && out.trim_end().ends_with("OK"),
        "{out}"
    );
    let (code, out, _) = run(bin()
        .arg("check")
        .arg(fixture("warcio/example-digest.warc")));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("payload digest") && out.contains("FAILED"),
        "{out}"
    );
    let (code, _, err) = run(bin().args(["check", "/nonexistent/x.warc"]));
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/x.warc"), "{err}");
    // A bad file among good ones: the run goes on, the worst outcome wins.
    let (code, out, _) = run(bin().arg("check").arg("/nonexistent/y.warc").arg(sample()));
    assert_eq!(code, 2);
    assert!(out.contains("sample.warc.gz: 6 records"), "{out}");
}

#[test]
fn check_json_summary() {
    let (code, out, _) = run(bin()
        .arg("check")
        .arg("--json")
        .arg(fixture("warcio/example-iana.org-chunked.warc")));
    assert_eq!(code, 0);
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["summary"]["payload_valid_raw_chunked"], 1);
    assert_eq!(last["ok"], true);
}

#[test]
fn strict_errors_name_file_and_offset_and_warnings_are_printed() {
    let f = fixture("pywb/example.warc");
    let (code, _, err) = run(bin().arg("--strict").arg("ls").arg(&f));
    assert_eq!(code, 2);
    assert!(
        err.contains("example.warc") && err.contains("offset 4764"),
        "{err}"
    );
    let (code, out, err) = run(bin().arg("-w").arg("ls").arg(&f));
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 6);
    assert!(
        err.contains("warning") && err.contains("bad-trailer") && err.contains("offset 4764"),
        "{err}"
    );
}

#[test]
fn broken_pipe_is_not_an_error() {
    // About 1.5 MB of output: far more than a pipe buffer holds.
    let f = fixture("pywb/iana.warc.gz");
    let mut child = bin()
        .arg("ls")
        .args(std::iter::repeat_n(&f, 40))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Both streams closed by the reader (`warchest ls a b 2>&1 | head`): the
/// summary and errors written after that are lost, not a panic (exit 101
/// before): the command ends with its own exit status.
#[test]
fn a_closed_standard_error_is_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.warc");
    std::fs::write(&junk, "not an archive\n".repeat(50)).unwrap();
    let f = fixture("pywb/iana.warc.gz");
    for args in [
        vec!["ls".to_string()],
        vec!["stats".to_string()],
        vec!["check".to_string()],
        vec!["validate".to_string()],
    ] {
        let mut child = bin()
            .args(&args)
            .arg(&junk)
            .args(std::iter::repeat_n(&f, 20))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Closed before the command has written a line of either.
        drop(child.stdout.take());
        drop(child.stderr.take());
        let status = child.wait().unwrap();
        // 2 for the junk file not read, or 0 where the closed standard
        // output ended the command first (as a reader going away does).
        assert!(matches!(status.code(), Some(0 | 2)), "{args:?}: {status:?}");
    }
}

/// A standard output that cannot be written (a full disk) fails the run,
/// naming it: only a closed pipe is taken as the reader gone.
#[test]
fn a_standard_output_that_cannot_be_written_fails_the_run() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["convert", "--json", "-o"])
        .arg(dir.path().join("c.warc.gz"))
        .arg(fixture("pywb/example.warc.gz"))
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("warchest: stdout: "), "{err}");
}

/// Issue 19: RFC 2047 encoded words (WARC 1.1 section 4). `ls --json`
/// gives the decoded values beside the raw ones, `extract --headers
/// --decode-words` prints them decoded (plain `--headers` stays as
/// stored), and `validate` reports one that cannot be decoded.
#[test]
fn encoded_words_are_decoded_where_values_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let rec = |title: &str| {
        format!(
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:6a3e1c52-4f0e-4b7e-9a51-0d5a3c2e9b10>\r\n\
WARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Target-URI: file:///a\r\nX-Title: {title}\r\n\
Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nok\r\n\r\n"
        )
    };
    let good = dir.path().join("good.warc");
    std::fs::write(&good, rec("=?UTF-8?B?Y2Fmw6k=?= au =?UTF-8?Q?lait?=")).unwrap();
    let (code, out, err) =
        crate::common::run(crate::common::bin().args(["ls", "--json"]).arg(&good));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["decoded"]["X-Title"], "caf\u{e9} au lait", "{v}");
    assert_eq!(v["target_uri"], "file:///a");

    let (code, out, err) = crate::common::run(
        crate::common::bin()
            .args(["extract", "--headers"])
            .arg(&good),
    );
    assert_eq!(code, 0, "{err}");
    let raw = String::from_utf8(out).unwrap();
    assert!(
        raw.contains("X-Title: =?UTF-8?B?Y2Fmw6k=?= au =?UTF-8?Q?lait?=\r\n"),
        "{raw}"
    );
    let (code, out, err) = crate::common::run(
        crate::common::bin()
            .args(["extract", "--headers", "--decode-words"])
            .arg(&good),
    );
    assert_eq!(code, 0, "{err}");
    let dec = String::from_utf8(out).unwrap();
    assert!(dec.starts_with("WARC/1.1\r\n"), "{dec}");
    assert!(dec.contains("X-Title: caf\u{e9} au lait\r\n"), "{dec}");
    assert!(dec.ends_with("\r\n\r\n"), "{dec}");
    let (code, out, err) = crate::common::run(crate::common::bin().arg("validate").arg(&good));
    let out = String::from_utf8_lossy(&out);
    assert!(!out.contains("warc.header.encoded-word"), "{out}{err}");
    assert_eq!(code, 0, "{out}{err}");

    let bad = dir.path().join("bad.warc");
    std::fs::write(&bad, rec("=?UTF-8?B?Y2Fmw6k!?=")).unwrap();
    let (_, out, err) = crate::common::run(crate::common::bin().arg("validate").arg(&bad));
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains("warc.header.encoded-word"), "{out}{err}");
    assert!(out.contains("X-Title"), "{out}");
}

/// `warchest --help` lists one line a command, as git, cargo and ripgrep
/// do; the paragraph is in `warchest CMD --help` (and `help CMD`).
#[test]
fn help_lists_a_line_a_command_and_the_paragraph_stays_with_the_command() {
    for flag in ["--help", "-h"] {
        let (code, out, err) = run(bin().arg(flag));
        assert_eq!(code, 0, "{err}");
        let list: Vec<&str> = out
            .lines()
            .skip_while(|l| *l != "Commands:")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(list.len() >= 25, "{flag}: {out}");
        for l in &list {
            // A command's name at column 2, never a continuation line.
            assert!(
                l.starts_with("  ") && !l.starts_with("   "),
                "{flag}: a line that is not a command: {l:?}\n{out}"
            );
            assert!(l.len() <= 100, "{flag}: {l:?}");
        }
        let ls = list.iter().find(|l| l.starts_with("  ls ")).unwrap();
        assert!(ls.ends_with(" List the records of archives"), "{ls:?}");
    }
    // The paragraph, whole, under the command.
    for args in [&["ls", "--help"][..], &["help", "ls"][..]] {
        let (code, out, err) = run(bin().args(args));
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("one record a line"), "{args:?}: {out}");
    }
    let (_, out, _) = run(bin().args(["check", "--help"]));
    assert!(
        out.contains("Exits 2 for a file in which no record"),
        "{out}"
    );
}

/// Every command that reads archives as its inputs says in `--help` that
/// a URL and a WACZ are read (the README alone said so).
#[test]
fn reading_commands_say_they_read_urls_and_wacz() {
    for cmd in [
        "ls",
        "check",
        "stats",
        "index",
        "validate",
        "convert",
        "filter",
        "recompress",
        "split",
        "concat",
    ] {
        let (code, out, err) = run(bin().args([cmd, "--help"]));
        assert_eq!(code, 0, "{err}");
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("`s3://`"), "{cmd}: {out}");
        assert!(
            flat.contains("a `.wacz` is read as its archive files"),
            "{cmd}: {out}"
        );
    }
    for sub in ["text", "wat", "wet"] {
        let (_, out, _) = run(bin().args(["derive", sub, "--help"]));
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("a `.wacz` as its archive files"),
            "derive {sub}: {out}"
        );
    }
}

/// The examples in `--help` keep a line each (clap would otherwise reflow
/// them into one paragraph with the prose).
#[test]
fn help_examples_keep_their_lines() {
    for cmd in ["extract", "fetch", "recompress", "stats"] {
        let (code, out, err) = run(bin().args([cmd, "--help"]));
        assert_eq!(code, 0, "{cmd}: {err}");
        let examples: Vec<&str> = out
            .lines()
            .skip_while(|l| *l != "Examples:")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(!examples.is_empty(), "{cmd}: no examples\n{out}");
        assert!(
            examples
                .iter()
                .all(|l| l.starts_with("  warchest ") || l.starts_with("      ")),
            "{cmd}: {examples:?}"
        );
    }
}

/// An archive given to `fetch` where its index belongs is named as such,
/// not read as lines of CDX; and nothing is written.
#[test]
fn fetch_of_an_archive_for_its_index_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.warc.gz");
    for archive in ["pywb/iana.warc.gz", "warcio/example.arc.gz"] {
        let got = bin()
            .arg("fetch")
            .arg(fixture(archive))
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&got.stderr);
        assert!(!got.status.success(), "{archive}: {err}");
        assert!(
            err.contains("an archive, not an index (make one with `warchest index`)"),
            "{archive}: {err}"
        );
        assert!(!out.exists(), "{archive}: an output was written");
    }
}

/// An index of `pywb/iana.warc.gz` copied into `dir`, its lines named
/// relative to `dir`: (index path, its lines).
fn fetch_index(dir: &std::path::Path) -> (PathBuf, Vec<String>) {
    let src = fixture("pywb/iana.warc.gz");
    let warc = dir.join("iana.warc.gz");
    std::fs::copy(&src, &warc).unwrap();
    let (rc, idx, err) = run(bin().current_dir(dir).args(["index", "iana.warc.gz"]));
    assert_eq!(rc, 0, "{err}");
    let lines: Vec<String> = idx.lines().map(str::to_string).collect();
    assert!(lines.len() > 3, "{idx}");
    let path = dir.join("i.cdxj");
    std::fs::write(&path, idx).unwrap();
    (path, lines)
}

/// The names of the files in `dir` ending in `.open`.
fn open_files(dir: &std::path::Path) -> Vec<PathBuf> {
    common::files_in(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "open"))
        .collect()
}

/// Index lines `fetch` cannot read are input not read: the records it can
/// read are fetched and written, and the exit code is 1, not 0.
#[test]
fn fetch_with_index_lines_not_understood_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let (idx, mut lines) = fetch_index(tmp.path());
    lines.insert(1, "com,example)/ 2024 not an index line".to_string());
    std::fs::write(&idx, lines.join("\n") + "\n").unwrap();
    let out = tmp.path().join("out.warc.gz");
    let (rc, _, err) = run(bin().arg("fetch").arg(&idx).arg("-o").arg(&out));
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("line 2: not an index line"), "{err}");
    assert!(err.contains("1 index entry not understood"), "{err}");
    // What could be read is fetched and complete: the warcinfo and the
    // records of every good line.
    let (rc, ls, err) = run(bin().arg("ls").arg(&out));
    assert_eq!(rc, 0, "{err}");
    assert_eq!(ls.lines().count(), lines.len(), "{ls}");
    assert!(open_files(tmp.path()).is_empty());
    // With --limit 1 the index is read only up to its first entry: the
    // bad line after it is not read, and the run asked for is whole.
    let one = tmp.path().join("one.warc.gz");
    let (rc, _, err) = run(bin()
        .arg("fetch")
        .arg(&idx)
        .arg("-o")
        .arg(&one)
        .args(["--limit", "1"]));
    assert_eq!(rc, 0, "{err}");
    assert!(!err.contains("not understood"), "{err}");
}

/// Nothing selected: no output at all (no empty file, no `.open`), said so,
/// and exit 0 (every line was read); `--limit 0` selects nothing.
#[test]
fn fetch_selecting_nothing_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (idx, _) = fetch_index(tmp.path());
    let out = tmp.path().join("out.warc.gz");
    for sel in [&["--host", "nowhere.invalid"][..], &["--limit", "0"][..]] {
        let (rc, _, err) = run(bin().arg("fetch").arg(&idx).arg("-o").arg(&out).args(sel));
        assert_eq!(rc, 0, "{sel:?}: {err}");
        assert!(err.contains(": 0 records selected"), "{sel:?}: {err}");
        assert!(
            err.contains("not written (nothing fetched: no records selected)"),
            "{sel:?}: {err}"
        );
        assert!(!out.exists(), "{sel:?}: an output was written");
        assert!(open_files(tmp.path()).is_empty(), "{sel:?}");
    }
    // --limit 1 still fetches one.
    let (rc, _, err) = run(bin()
        .arg("fetch")
        .arg(&idx)
        .arg("-o")
        .arg(&out)
        .args(["--limit", "1"]));
    assert_eq!(rc, 0, "{err}");
    assert!(err.contains(": 1 records selected"), "{err}");
    let (_, ls, _) = run(bin().arg("ls").arg(&out));
    assert_eq!(ls.lines().count(), 2, "{ls}");
}

/// Nothing selected and a line not understood: no output, exit 1.
#[test]
fn fetch_of_nothing_with_bad_lines_exits_1_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let idx = tmp.path().join("i.cdxj");
    std::fs::write(&idx, "garbage line\n").unwrap();
    let out = tmp.path().join("out.warc.gz");
    let (rc, _, err) = run(bin().arg("fetch").arg(&idx).arg("-o").arg(&out));
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("not written (nothing fetched"), "{err}");
    assert!(!out.exists());
    assert!(open_files(tmp.path()).is_empty());
}

/// Parquet rows with a null or negative offset or length are counted as
/// not understood (exit 1), the others fetched.
#[test]
fn fetch_counts_parquet_rows_without_offset_or_length() {
    if !common::python_has("pyarrow") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (idx, lines) = fetch_index(tmp.path());
    let parquet = tmp.path().join("cc.parquet");
    let script = format!(
        r#"
import json, pyarrow as pa, pyarrow.parquet as pq
rows = []
for line in open({idx:?}):
    surt, ts, js = line.split(' ', 2)
    j = json.loads(js)
    rows.append(dict(url=j['url'], url_surtkey=surt, warc_filename=j['filename'],
        warc_record_offset=int(j['offset']), warc_record_length=int(j['length'])))
rows[0]['warc_record_offset'] = None
rows[1]['warc_record_length'] = -5
schema = pa.schema([('url', pa.string()), ('url_surtkey', pa.string()), ('warc_filename', pa.string()),
    ('warc_record_offset', pa.int64()), ('warc_record_length', pa.int64())])
pq.write_table(pa.Table.from_pylist(rows, schema=schema), {parquet:?})
"#,
        idx = idx.display().to_string(),
        parquet = parquet.display().to_string()
    );
    let st = Command::new("python3")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(st.success());
    let out = tmp.path().join("out.warc.gz");
    let (rc, _, err) = run(bin().arg("fetch").arg(&parquet).arg("-o").arg(&out));
    assert_eq!(rc, 1, "{err}");
    assert!(
        err.contains("2 rows without a usable offset or length"),
        "{err}"
    );
    let (_, ls, _) = run(bin().arg("ls").arg(&out));
    // The warcinfo and every row but the two.
    assert_eq!(ls.lines().count(), 1 + lines.len() - 2, "{ls}");
    // --limit 0 selects no row of a Parquet index either.
    let out0 = tmp.path().join("out0.warc.gz");
    let (rc, _, err) = run(bin()
        .arg("fetch")
        .arg(&parquet)
        .args(["--limit", "0", "-o"])
        .arg(&out0));
    assert_eq!(rc, 0, "{err}");
    assert!(err.contains(": 0 records selected"), "{err}");
    assert!(!out0.exists());
}

/// `convert` and `index` refuse an output that is an input, by its name,
/// another name or a hard link to it, and the input is left whole.
#[test]
fn convert_refuses_an_output_that_is_an_input_by_another_name() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.warc.gz");
    std::fs::copy(fixture("pywb/iana.warc.gz"), &a).unwrap();
    let before = std::fs::read(&a).unwrap();
    let link = tmp.path().join("link.warc.gz");
    std::fs::hard_link(&a, &link).unwrap();
    for out in [a.clone(), tmp.path().join(".").join("a.warc.gz"), link] {
        // `index -o` the same: it would rename its index over the input.
        for cmd in ["convert", "index"] {
            let (rc, _, err) = run(bin().arg(cmd).arg(&a).arg("-o").arg(&out));
            assert_eq!(rc, 2, "{cmd} {}: {err}", out.display());
            assert!(err.contains("is also an input"), "{err}");
            assert_eq!(std::fs::read(&a).unwrap(), before);
        }
    }
}
