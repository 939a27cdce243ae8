//! What every command does with input that holds no record, and how
//! lenient-reading recoveries are shown without `-w` (issue 19).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::{bin, run};

fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.warc.gz")
}

/// Every command that reads archives, on `file`, with outputs in `out`.
fn commands(file: &Path, out: &Path) -> Vec<Vec<String>> {
    let f = file.to_string_lossy().to_string();
    let o = |n: &str| out.join(n).to_string_lossy().to_string();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        v(&["ls", &f]),
        v(&["ls", "--json", &f]),
        v(&["check", &f]),
        v(&["index", &f]),
        v(&["index", "--format", "cdx", &f]),
        v(&["stats", &f]),
        v(&["extract", &f, "--offset", "0"]),
        v(&["validate", &f]),
        v(&["convert", "-o", &o("x.warc.gz"), &f]),
        v(&["dedupe", "-o", &o("d"), &f]),
        v(&[
            "filter",
            &f,
            "-o",
            &o("f.warc.gz"),
            "warc-type == \"response\"",
        ]),
        v(&["recompress", &f, "-o", &o("r.warc.gz")]),
        v(&["split", &f, "--max-size", "1MB", "-o", &o("s")]),
        v(&["concat", &f, "-o", &o("c.warc.gz")]),
        v(&["recover", &f, "-o", &o("rec.warc.gz")]),
        v(&["segment", &f, "-o", &o("seg")]),
        v(&["reassemble", &f, "-o", &o("re.warc.gz")]),
        v(&["annotate", &f, "-o", &o("a.warc.gz"), "--exec", "cat"]),
        v(&[
            "migrate",
            &f,
            "-o",
            &o("m.warc.gz"),
            "--from",
            "text/html",
            "--exec",
            "cat",
        ]),
        v(&["unpack", &f, "-o", &o("u")]),
        v(&["wacz", "create", &f, "-o", &o("w.wacz")]),
        v(&["derive", "wet", &f, "-o", &o("d.wet.gz")]),
        v(&["derive", "wat", &f, "-o", &o("d.wat.gz")]),
        v(&["derive", "text", &f, "-o", &o("d.parquet")]),
    ]
}

/// A missing input fails every command (exit 2), named once in its
/// message (`dedupe`, `segment` and `search-index` named it twice), and
/// leaves no `OUT.open` of nothing (`convert`, `filter`, `recompress`,
/// `concat` and `recover` left an empty one) and no empty output
/// directory (`split`, `unpack` and `pack` made one).
#[test]
fn a_missing_input_fails_every_command_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.warc.gz");
    let name = missing.to_string_lossy().to_string();
    let out = tempfile::tempdir().unwrap();
    let mut all = commands(&missing, out.path());
    let index = out.path().join("si").to_string_lossy().to_string();
    all.push(vec![
        "search-index".into(),
        name.clone(),
        "-o".into(),
        index,
    ]);
    for args in all {
        let (code, _, err) = run(bin().args(&args));
        assert_eq!(code, 2, "{args:?}: {err}");
        let said: Vec<&str> = err.lines().filter(|l| l.contains(&name)).collect();
        assert!(!said.is_empty(), "{args:?}: {err}");
        for l in said {
            assert_eq!(l.matches(&name).count(), 1, "{args:?}: {l}");
        }
        // Nothing read, nothing left: no `.open` output of nothing, no
        // empty output directory.
        let left: Vec<_> = std::fs::read_dir(out.path())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
            .collect();
        assert!(left.is_empty(), "{args:?}: {left:?}");
    }
    // `pack` reads files of any kind: a missing one is named too, and no
    // output directory is made for it.
    let packed = out.path().join("p");
    let (code, _, err) = run(bin().arg("pack").arg(&missing).arg("-o").arg(&packed));
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.matches(&name).count(), 1, "{err}");
    assert!(!packed.exists());
}

#[test]
fn no_record_found_is_an_error_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("passwd");
    std::fs::write(
        &text,
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
    )
    .unwrap();
    // An empty file has no record either: the same error.
    let empty = dir.path().join("empty.warc.gz");
    std::fs::write(&empty, b"").unwrap();
    for file in [&text, &empty] {
        let expected = format!(
            "no WARC, ARC or Web InfoMall record found in {}",
            file.display()
        );
        let out = tempfile::tempdir().unwrap();
        for args in commands(file, out.path()) {
            let (code, _, err) = run(bin().args(&args));
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(err.contains(&expected), "{args:?}: {err}");
        }
        // Nothing written under a final name.
        for n in [
            "x.warc.gz",
            "f.warc.gz",
            "r.warc.gz",
            "c.warc.gz",
            "rec.warc.gz",
            "w.wacz",
        ] {
            assert!(!out.path().join(n).exists(), "{n}");
        }
    }
    // Standard input, which is read once: counted as read.
    for args in [
        vec!["ls", "-"],
        vec!["check", "-"],
        vec!["convert", "-o", "-", "-"],
        vec!["index", "-"],
    ] {
        let mut child = bin()
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"root:x:0:0:root:/root:/bin/bash\n")
            .unwrap();
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("no WARC, ARC or Web InfoMall record found in -"),
            "{args:?}: {err}"
        );
    }
    // A real archive still reads.
    let (code, _, err) = run(bin().arg("ls").arg(sample()));
    assert_eq!(code, 0, "{err}");
    // A WACZ with no archive file is not an input with nothing in it:
    // every reading command says so (exit 2).
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.wacz");
    {
        let mut z = zip::ZipWriter::new(std::fs::File::create(&empty).unwrap());
        z.start_file("datapackage.json", zip::write::SimpleFileOptions::default())
            .unwrap();
        z.write_all(b"{}").unwrap();
        z.finish().unwrap();
    }
    for cmd in ["ls", "check", "index", "validate", "stats"] {
        let (code, _, err) = run(bin().arg(cmd).arg(&empty));
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(
            err.contains("no archive file") || err.contains("no WARC, ARC or Web InfoMall record"),
            "{cmd}: {err}"
        );
    }
    // The copying commands, which read streams, say why too, and leave no
    // output (they read the ZIP's bytes, said "no record" and left an
    // empty OUT.open).
    for cmd in ["convert", "concat", "recompress"] {
        let o = dir.path().join(format!("{cmd}.warc.gz"));
        let (code, _, err) = run(bin().arg(cmd).arg(&empty).arg("-o").arg(&o));
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(err.contains("no archive file"), "{cmd}: {err}");
        let mut open = o.clone().into_os_string();
        open.push(".open");
        assert!(!o.exists() && !Path::new(&open).exists(), "{cmd}");
    }
}

/// A WACZ given where an archive is read: every command either reads its
/// archive files (as `ls` does) or refuses it naming what to give; none
/// reads the ZIP's bytes as an archive and reports finding no record in it.
#[test]
fn a_wacz_is_read_as_its_archive_files_or_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let wacz = dir.path().join("s.wacz");
    let (code, _, err) = run(bin()
        .args(["wacz", "create", "-o"])
        .arg(&wacz)
        .arg(sample()));
    assert_eq!(code, 0, "{err}");
    let out = tempfile::tempdir().unwrap();
    let mut read = 0;
    for args in commands(&wacz, out.path()) {
        let (code, stdout, err) = run(bin().args(&args));
        let stdout = String::from_utf8_lossy(&stdout);
        assert!(
            !err.contains("no WARC, ARC or Web InfoMall record"),
            "{args:?}: {err}"
        );
        let refused = match args[0].as_str() {
            "dedupe" | "recover" | "segment" | "reassemble" | "annotate" | "migrate" | "unpack" => {
                Some("reads archive files on disk, not a WACZ")
            }
            "extract" => Some("an offset is within one"),
            "wacz" => Some("a WACZ cannot go inside a WACZ"),
            _ => None,
        };
        match refused {
            Some(why) => {
                assert_eq!(code, 2, "{args:?}: {err}");
                assert!(err.contains(why), "{args:?}: {err}");
            }
            None => {
                assert_eq!(code, 0, "{args:?}: {err}");
                read += 1;
                // What was read is the sample's records.
                if args[0] == "ls" {
                    assert!(stdout.lines().count() >= 5, "{stdout}");
                }
            }
        }
    }
    assert!(read >= 14, "{read}");
    // The copies hold the sample's records.
    for n in ["x.warc.gz", "f.warc.gz", "r.warc.gz", "c.warc.gz"] {
        let (code, stdout, err) = run(bin().arg("ls").arg(out.path().join(n)));
        let stdout = String::from_utf8_lossy(&stdout);
        assert_eq!(code, 0, "{n}: {err}");
        assert!(stdout.contains("http://example.com/"), "{n}: {stdout}");
    }
}

/// A WACZ named in capitals (`S.WACZ`) is a WACZ: its archive files are
/// read, each named `S.WACZ#archive/NAME`, and such a name is opened as
/// the member it names (it was taken for a file of that name, not found).
#[test]
fn a_wacz_named_in_capitals_is_read_as_its_archive_files() {
    let dir = tempfile::tempdir().unwrap();
    let wacz = dir.path().join("S.WACZ");
    let (code, _, err) = run(bin()
        .args(["wacz", "create", "-o"])
        .arg(dir.path().join("s.wacz"))
        .arg(sample()));
    assert_eq!(code, 0, "{err}");
    std::fs::rename(dir.path().join("s.wacz"), &wacz).unwrap();
    let (code, listed, err) = run(bin().args(["ls", "-H"]).arg(&wacz));
    assert_eq!(code, 0, "{err}");
    let listed = String::from_utf8_lossy(&listed);
    let member = listed.lines().next().unwrap().split('\t').next().unwrap();
    assert!(
        member.ends_with("S.WACZ#archive/sample.warc.gz"),
        "{listed}"
    );
    let (code, whole, _) = run(bin().arg("ls").arg(sample()));
    assert_eq!(code, 0);
    for args in [vec!["ls"], vec!["ls", "-j", "2"]] {
        let (code, out, err) = run(bin().args(&args).arg(member));
        assert_eq!(code, 0, "{args:?} {member}: {err}");
        assert_eq!(out, whole, "{args:?} {member}");
    }
    let (code, _, err) = run(bin().args(["check", member]));
    assert_eq!(code, 0, "{err}");
}

/// The damaged copies of issue 19: trailing garbage, a Content-Length far
/// past the end of the file, a damaged zstd frame skipped.
fn damaged(dir: &Path) -> Vec<PathBuf> {
    let garbage = dir.join("garbage.warc.gz");
    let mut g = std::fs::read(sample()).unwrap();
    g.extend_from_slice(b"this is not a record, just bytes after the last one\n");
    std::fs::write(&garbage, g).unwrap();

    let long = dir.join("long.warc");
    std::fs::write(
        &long,
        b"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:0b9e2a3c-1b1e-4c52-9a8e-2f8a3c7d9e01>\r\n\
WARC-Date: 2020-01-01T00:00:00Z\r\nWARC-Target-URI: file:///a\r\nContent-Type: text/plain\r\n\
Content-Length: 99999999999999\r\n\r\nhello\r\n\r\n",
    )
    .unwrap();

    let zst = dir.join("frames.warc.zst");
    let (code, _, err) = run(bin()
        .arg("recompress")
        .arg(sample())
        .args(["--to", "zstd", "-o"])
        .arg(&zst));
    assert_eq!(code, 0, "{err}");
    let (code, ls, err) = run(bin().arg("ls").arg(&zst));
    assert_eq!(code, 0, "{err}");
    // Damage the middle of the third record's frame.
    let third: Vec<u64> = String::from_utf8(ls)
        .unwrap()
        .lines()
        .nth(2)
        .unwrap()
        .split('\t')
        .take(2)
        .map(|c| c.parse().unwrap())
        .collect();
    let mut z = std::fs::read(&zst).unwrap();
    for b in &mut z[(third[0] + third[1] / 2) as usize..][..8] {
        *b ^= 0x55;
    }
    std::fs::write(&zst, z).unwrap();
    vec![garbage, long, zst]
}

#[test]
fn recoveries_are_summed_up_without_w_and_fail_check() {
    let dir = tempfile::tempdir().unwrap();
    for file in damaged(dir.path()) {
        let name = file.display().to_string();
        for cmd in ["ls", "index", "stats"] {
            let (code, _, err) = run(bin().arg(cmd).arg(&file));
            assert_eq!(code, 0, "{cmd} {name}: {err}");
            let line = err
                .lines()
                .find(|l| {
                    l.starts_with(&format!("warchest: {name}: "))
                        && l.contains(", the first at offset ")
                })
                .unwrap_or_else(|| panic!("{cmd} {name}: no summary: {err}"));
            assert!(
                line.ends_with("; -w lists them") || line.ends_with("; -w lists it"),
                "{line}"
            );
            // -w lists them instead.
            let (_, _, err) = run(bin().args([cmd, "-w"]).arg(&file));
            assert!(err.contains(": warning: "), "{cmd} -w {name}: {err}");
            assert!(
                !err.contains(", the first at offset "),
                "{cmd} -w {name}: {err}"
            );
        }
        let (code, out, err) = run(bin().arg("check").arg(&file));
        assert_eq!(
            code,
            1,
            "check {name}: {}{err}",
            String::from_utf8_lossy(&out)
        );
        assert!(String::from_utf8_lossy(&out).contains("FAILED"));
    }
    // A clean file: no summary, check OK.
    let (code, _, err) = run(bin().arg("check").arg(sample()));
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
}

/// Issue 19: after a header line over the header limit, `ls` goes on at
/// the next record (exit 0, the three good records listed, a warning at
/// the bad record's offset); `--strict` stops there with exit 2.
#[test]
fn ls_resyncs_after_a_header_over_the_limit() {
    let rec = |typ: &str, uri: &str| {
        format!(
            "WARC/1.1\r\nWARC-Type: {typ}\r\nWARC-Record-ID: <urn:uuid:{typ}>\r\nWARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Target-URI: {uri}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok\r\n\r\n"
        )
        .into_bytes()
    };
    let first = rec("resource", "http://a.example/");
    let bad = format!(
        "WARC/1.1\r\nWARC-Type: resource\r\nX-Long: {}\r\nContent-Length: 3\r\n\r\nabc\r\n\r\n",
        "a".repeat(2 << 20)
    );
    let data = [
        first.clone(),
        bad.into_bytes(),
        rec("resource", "http://c.example/"),
        rec("metadata", "http://d.example/"),
    ]
    .concat();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("long-header.warc");
    std::fs::write(&f, data).unwrap();
    let (code, out, err) = run(bin().args(["ls", "-w"]).arg(&f));
    let out = String::from_utf8_lossy(&out);
    assert_eq!(code, 0, "{out}\n{err}");
    for uri in [
        "http://a.example/",
        "http://c.example/",
        "http://d.example/",
    ] {
        assert!(out.contains(uri), "{uri}: {out}");
    }
    assert_eq!(out.lines().filter(|l| l.contains(".example/")).count(), 3);
    assert!(err.contains(&first.len().to_string()), "{err}");
    assert!(err.contains("longer than the limit"), "{err}");
    let (code, _, err) = run(bin().args(["ls", "--strict"]).arg(&f));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&first.len().to_string()), "{err}");
}

/// Issue 19: the commands that read to write (and `validate`, `recover`)
/// end with the same one-line summary of the recoveries they made, as
/// `ls` does; `-w` lists them instead.
#[test]
fn recoveries_are_summed_up_by_the_other_reading_commands() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for file in damaged(dir.path()) {
        let name = file.display().to_string();
        let out = tempfile::tempdir().unwrap();
        let o = |n: &str| out.path().join(n).to_string_lossy().to_string();
        let cmds: Vec<Vec<String>> = [
            vec!["dedupe", "-o", &o("d")],
            vec!["segment", "-o", &o("seg")],
            vec!["reassemble", "-o", &o("re.warc.gz")],
            vec!["annotate", "-o", &o("a.warc.gz"), "--exec", "wc", "-c"],
            vec![
                "migrate",
                "-o",
                &o("m.warc.gz"),
                "--from",
                "text/html",
                "--exec",
                "cat",
            ],
            vec!["recover", "-o", &o("rec.warc.gz")],
            vec!["validate"],
        ]
        .into_iter()
        .map(|v| v.into_iter().map(String::from).collect())
        .collect();
        for args in cmds {
            // The input first: --exec takes every word after it.
            let (code, _, err) = run(bin().arg(&args[0]).arg(&file).args(&args[1..]));
            let summary = err.lines().any(|l| {
                l.starts_with(&format!("warchest: {name}: "))
                    && l.contains(", the first at offset ")
                    && (l.ends_with("; -w lists them") || l.ends_with("; -w lists it"))
            });
            // A record cut short by the end of the file (long.warc) stops
            // the commands that write it whole (dedupe, segment,
            // reassemble): exit 2, the file named; never success.
            let stopped = code == 2 && err.contains(&name);
            if code == 101 || code == 0 && !summary || !(summary || stopped) {
                failures.push(format!("{args:?} {name}: exit {code:?}, no summary: {err}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An input named twice (once by another spelling) to a command that
/// writes every input's records into one sequence: written twice, as asked,
/// and said once on stderr; quiet under `-q`.
#[test]
fn an_input_named_twice_is_said_by_commands_that_write_one_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.warc.gz");
    std::fs::copy(sample(), &a).unwrap();
    let again = dir.path().join(".").join("a.warc.gz");
    let count = |f: &Path| {
        let (code, out, err) = run(bin().arg("ls").arg(f));
        assert_eq!(code, 0, "{err}");
        String::from_utf8(out).unwrap().lines().count()
    };
    let once = count(&a);
    for cmd in ["concat", "convert", "filter"] {
        let out = dir.path().join(format!("{cmd}.warc.gz"));
        let mut c = bin();
        c.arg(cmd).arg(&a).arg(&again).arg("-o").arg(&out);
        if cmd == "filter" {
            c.arg("warc-type != \"nothing\"");
        }
        let (code, _, err) = run(&mut c);
        assert_eq!(code, 0, "{cmd}: {err}");
        let said = format!(
            "{} is named 2 times: its records are written 2 times",
            a.display()
        );
        assert_eq!(err.matches(&said).count(), 1, "{cmd}: {err}");
        assert_eq!(count(&out), 2 * once, "{cmd}");
    }
    // A hard link is the same file.
    let link = dir.path().join("link.warc.gz");
    std::fs::hard_link(&a, &link).unwrap();
    let out = dir.path().join("linked.warc.gz");
    let (code, _, err) = run(bin().arg("concat").arg(&a).arg(&link).arg("-o").arg(&out));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("is named 2 times"), "{err}");
    // Two different files: nothing said.
    let b = dir.path().join("b.warc.gz");
    std::fs::copy(sample(), &b).unwrap();
    let out = dir.path().join("ab.warc.gz");
    let (code, _, err) = run(bin().arg("concat").arg(&a).arg(&b).arg("-o").arg(&out));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("is named"), "{err}");
    // Under -q, nothing.
    let out = dir.path().join("q.warc.gz");
    let (code, _, err) = run(bin()
        .arg("-q")
        .arg("concat")
        .arg(&a)
        .arg(&a)
        .arg("-o")
        .arg(&out));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("is named"), "{err}");
}

/// A gzip file cut inside a record's member, then another file's members
/// written after it (a cut download concatenated with the next file). The
/// cut member's data is one stored block: longer than everything after
/// the cut, it runs over the next file to the end without failing; shorter,
/// it ends inside the next file and 8 of its bytes are read as the trailer.
/// Either way `ls` (on one thread and on two), `index` and `validate` read
/// the next file's records, and name the cut member as damaged where the
/// next file starts.
#[test]
fn records_written_after_a_member_cut_short_are_read() {
    let sample_bytes = std::fs::read(sample()).unwrap();
    let (_, whole, _) = run(bin().arg("ls").arg(sample()));
    let (_, index_whole, _) = run(bin().arg("index").arg(sample()));
    let lines = |out: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(out)
            .lines()
            .map(String::from)
            .collect()
    };
    let (whole, index_whole) = (lines(&whole), lines(&index_whole));
    let dir = tempfile::tempdir().unwrap();
    for size in [60_000, 3_000] {
        let record = format!(
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-0000000000cc>\r\n\
WARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Target-URI: http://cut.example/\r\nContent-Type: text/plain\r\n\
Content-Length: {size}\r\n\r\n{}\r\n\r\n",
            "z".repeat(size)
        );
        let len = u16::try_from(record.len()).unwrap();
        // A gzip header, then one final stored block holding the record.
        let mut member = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1];
        member.extend(len.to_le_bytes());
        member.extend((!len).to_le_bytes());
        member.extend(record.as_bytes());
        let mut data = sample_bytes.clone();
        data.extend(&member[..1500]);
        let next = data.len();
        data.extend(&sample_bytes);
        assert_eq!(
            record.len() - 1500 > sample_bytes.len(),
            size == 60_000,
            "the block runs past the end, or ends inside the next file"
        );
        let f = dir.path().join(format!("cut-{size}.warc.gz"));
        std::fs::write(&f, &data).unwrap();

        let (code, one, err) = run(bin().args(["ls", "-w"]).arg(&f));
        assert_eq!(code, 0, "{err}");
        let one = lines(&one);
        assert_eq!(one.len(), 2 * whole.len() + 1, "{size}: {one:?}");
        assert!(one[whole.len()].contains("http://cut.example/"));
        // The next file's records, at their offsets in it plus where it
        // starts.
        for (got, want) in one[whole.len() + 1..].iter().zip(&whole) {
            let (got_at, got_rest) = got.split_once('\t').unwrap();
            let (want_at, want_rest) = want.split_once('\t').unwrap();
            let want_at: usize = want_at.parse().unwrap();
            assert_eq!(got_at, (want_at + next).to_string());
            assert_eq!(got_rest, want_rest);
        }
        assert!(
            err.contains("damaged-member")
                && err.contains(&format!("resumes at stored offset {next}")),
            "{size}: {err}"
        );
        let (code, two, err2) = run(bin().args(["ls", "-w", "-j", "2"]).arg(&f));
        assert_eq!(code, 0, "{err2}");
        assert_eq!(lines(&two), one, "{size}: -j 2 reads as -j 1");
        assert_eq!(err2, err);

        let (code, index, err) = run(bin().arg("index").arg(&f));
        assert_eq!(code, 0, "{err}");
        assert!(
            lines(&index).len() >= 2 * index_whole.len(),
            "{size}: {}",
            String::from_utf8_lossy(&index)
        );
        let (_, report, _) = run(bin().arg("validate").arg(&f));
        let report = String::from_utf8_lossy(&report);
        assert!(
            report.contains(&format!("{} records", 2 * whole.len() + 1)),
            "{size}: {report}"
        );
    }
}
