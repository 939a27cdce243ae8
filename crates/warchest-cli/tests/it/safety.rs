//! Writing safely, end to end: every command that writes files, on a full
//! disk, reports the error with the file's name and leaves no file under
//! its final name half-written; `unpack` never writes outside its output
//! directory; `--exec` runs its program without a shell; damaged inputs
//! never make a command panic or hang (run under a time and memory cap).

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::common;
use common::{bin, bin_path, files_in, fixture};
use warchest::archive::Reader;
use warchest::warc::RecordType;
use warchest::write::{Body, Compression, NewRecord, Writer, WriterOptions};

/// Runs warchest with a file size limit of `kib` KiB, SIGXFSZ ignored so
/// that a write past it fails (EFBIG) as on a full disk.
fn with_fsize(kib: u64, args: &[&std::ffi::OsStr]) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {kib}; exec timeout 120 \"$0\" \"$@\""
        ))
        .arg(bin_path())
        .args(args)
        .output()
        .unwrap()
}

/// Every record of `p` reads whole, with no warning.
fn assert_whole(p: &Path) {
    let mut r = Reader::open(p).unwrap();
    while let Some(rec) = r.next_record().unwrap() {
        let end = rec.finish().unwrap();
        assert!(!end.truncated, "{}", p.display());
    }
    assert!(r.take_warnings().is_empty(), "{}", p.display());
}

#[test]
fn a_full_disk_is_reported_and_leaves_no_half_file() {
    let input = fixture("pywb/iana.warc.gz");
    let arc = fixture("pywb/example.arc.gz");
    let page = fixture("tianwang/page.dat");
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let i = input.as_os_str();
    let (a, p) = (arc.as_os_str(), page.as_os_str());
    // (command, its output file or directory, is it a directory)
    let case = |args: &[&std::ffi::OsStr], out: &str, is_dir: bool| {
        let out = w.join(out);
        let mut v: Vec<std::ffi::OsString> = args.iter().map(|&s| s.to_owned()).collect();
        v.push("-o".into());
        v.push(out.clone().into_os_string());
        (v, out, is_dir)
    };
    let s = |t: &'static str| std::ffi::OsStr::new(t);
    let mut cases = vec![
        case(&[s("recompress"), i], "r.warc.zst", false),
        case(&[s("filter"), i, s(":length >= 0")], "f.warc.gz", false),
        case(&[s("concat"), i, i], "c.warc", false),
        case(&[s("convert"), p], "p.warc.gz", false),
        case(
            &[s("convert"), a, i, s("--to"), s("infomall")],
            "i.dat",
            false,
        ),
        case(&[s("recover"), i], "rec.warc", false),
        case(&[s("index"), i, p], "i.cdxj", false),
        case(&[s("split"), i, s("--max-size"), s("10MB")], "split", true),
        case(&[s("dedupe"), i], "dedupe", true),
        case(
            &[s("segment"), i, s("--max-size"), s("10MB")],
            "segment",
            true,
        ),
        case(&[s("pack"), p], "pack", true),
    ];
    // filter takes its expression last.
    let f = &mut cases[1].0;
    let expr = f.remove(2);
    f.push(expr);
    let mut failures = Vec::new();
    for (args, out, is_dir) in cases {
        let what = args[0].to_string_lossy().into_owned();
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let o = with_fsize(64, &args);
        let code = o.status.code();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        // An error, not a panic nor a kill, and not success.
        if code != Some(2) && code != Some(1) {
            failures.push(format!("{what}: exit {:?}: {err}", o.status));
            continue;
        }
        let name = out.file_name().unwrap().to_string_lossy().into_owned();
        // dedupe's digest index, in the output's stead, may be the file
        // that fills the disk.
        // recover's temporary file of the decompressed input may be too.
        let named = err.contains(&name)
            || (what == "dedupe" && err.contains(".redb"))
            || (what == "recover" && err.contains("temporary file"));
        if !named {
            failures.push(format!("{what}: the error does not name {name}: {err}"));
        }
        if !err.contains("too large") && !err.contains("No space") {
            failures.push(format!("{what}: the error does not say why: {err}"));
        }
        if is_dir && out.exists() {
            // Files closed before the disk filled are whole; the one being
            // written keeps its `.open` name.
            for f in files_in(&out) {
                let n = f.to_string_lossy();
                if n.ends_with(".open") || n.ends_with(".redb") {
                    continue;
                }
                assert_whole(&f);
            }
        } else if !is_dir && out.exists() {
            failures.push(format!(
                "{what}: {} left under its final name: {err}",
                out.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn exec_runs_without_a_shell() {
    let work = tempfile::tempdir().unwrap();
    let notes = work.path().join("notes.warc");
    let pwned = work.path().join("pwned");
    // A shell would run `touch`; without one, echo prints its arguments.
    let touch = format!("a;touch {} $HOME `id`", pwned.display());
    let o = bin()
        .current_dir(work.path())
        .arg("annotate")
        .arg(fixture("pywb/example.warc.gz"))
        .arg("-o")
        .arg(&notes)
        .args(["--exec", "echo"])
        .arg(&touch)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!pwned.exists(), "--exec went through a shell");
    let mut r = Reader::open(&notes).unwrap();
    let mut seen = 0;
    while let Some(mut rec) = r.next_record().unwrap() {
        if rec.header().record_type() == RecordType::Metadata {
            let b = rec.read_block().unwrap();
            let want = format!("a;touch {} $HOME `id`\n", pwned.display());
            assert_eq!(String::from_utf8_lossy(&b), want);
            seen += 1;
        }
    }
    assert!(seen > 0);
}

/// A WARC of resource records named by hostile paths, each with the
/// metadata record `pack` writes.
fn hostile_pack(paths: &[(&str, Option<&str>)]) -> Vec<u8> {
    let mut w = Writer::new(
        Vec::new(),
        WriterOptions {
            compression: Compression::None,
            ..WriterOptions::default()
        },
    )
    .unwrap();
    for (i, (uri, rel)) in paths.iter().enumerate() {
        let mut rec = NewRecord::new(RecordType::Resource);
        rec.set("WARC-Target-URI", uri).unwrap();
        rec.set("Content-Type", "text/plain").unwrap();
        let id = rec.record_id();
        w.write(&mut rec, Body::Bytes(format!("escaped {i}\n").as_bytes()))
            .unwrap();
        if let Some(rel) = rel {
            let mut m = NewRecord::new(RecordType::Metadata);
            m.set("WARC-Target-URI", uri).unwrap();
            m.set("WARC-Concurrent-To", &id).unwrap();
            m.set("Content-Type", "application/warc-fields").unwrap();
            let block = format!("relative-path: {rel}\r\n");
            w.write(&mut m, Body::Bytes(block.as_bytes())).unwrap();
        }
    }
    w.finish().unwrap()
}

#[test]
fn unpack_never_writes_outside_its_directory() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let outside = work.path().join("outside");
    fs::create_dir_all(&out).unwrap();
    fs::create_dir_all(&outside).unwrap();
    // A link inside the output directory to a directory outside it.
    std::os::unix::fs::symlink(&outside, out.join("link")).unwrap();
    let abs = outside.join("abs.txt");
    let abs_uri = format!("file://{}", abs.display());
    let data = hostile_pack(&[
        ("file:///../../outside/u1.txt", None),
        ("http://example.com/../../outside/u2.txt", None),
        ("file:///x/%2e%2e/%2e%2e/outside/u3.txt", None),
        (&abs_uri, None),
        ("file:///x/y.txt", Some("../outside/m1.txt")),
        ("file:///x/z.txt", Some(&abs.display().to_string())),
        ("file:///x/w.txt", Some("link/m3.txt")),
        ("file:///link/u4.txt", None),
        ("file:///fine/ok.txt", Some("fine/ok.txt")),
    ]);
    let input = work.path().join("hostile.warc");
    fs::write(&input, data).unwrap();
    let o = bin()
        .arg("unpack")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    // Nothing outside: neither in `outside` nor beside `out`.
    assert!(
        files_in(&outside).is_empty(),
        "{:?}\n{err}",
        files_in(&outside)
    );
    let mut beside: Vec<_> = files_in(work.path());
    beside.retain(|p| p != &out && p != &outside && p != &input);
    assert!(beside.is_empty(), "{beside:?}");
    // Every file written is under `out`, reached without the link.
    let mut stack = vec![out.clone()];
    let mut written = Vec::new();
    while let Some(d) = stack.pop() {
        for p in files_in(&d) {
            let m = fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file() {
                written.push(p);
            }
        }
    }
    assert!(
        written.iter().any(|p| p.ends_with("fine/ok.txt")),
        "{written:?}\n{err}"
    );
    for p in &written {
        assert!(p.starts_with(&out), "{}", p.display());
    }
}

#[test]
fn extract_writes_only_to_standard_output() {
    // extract has no output directory nor file to escape from: what it
    // extracts goes to standard output, whatever the record's URI says.
    let work = tempfile::tempdir().unwrap();
    let data = hostile_pack(&[("file:///../../etc/x", None)]);
    let input = work.path().join("h.warc");
    fs::write(&input, &data).unwrap();
    let o = bin()
        .current_dir(work.path())
        .args(["extract", "--payload"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout, b"escaped 0\n");
    assert_eq!(files_in(work.path()), vec![input]);
}

/// Damaged copies of a few fixtures through the binary, under a time
/// limit and an address-space cap: no panic (exit 101), no kill, and every
/// message about the file names an offset.
#[test]
fn damaged_inputs_through_the_binary() {
    let work = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for (rel, seed) in [
        ("pywb/iana.warc.gz", 1u64),
        ("warcio/example.warc", 2),
        ("pywb/example.arc.gz", 3),
        ("tianwang/page.dat", 4),
        ("resiliparse/warcfile.warc.lz4", 5),
    ] {
        let data = fs::read(fixture(rel)).unwrap();
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rnd = |n: usize| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % n.max(1) as u64) as usize
        };
        for k in 0..3 {
            let mut d = data.clone();
            match k {
                0 => {
                    let at = rnd(d.len());
                    d.truncate(at);
                }
                1 => {
                    for _ in 0..4 {
                        let at = rnd(d.len());
                        d[at] ^= 1 << rnd(8);
                    }
                }
                _ => {
                    let at = rnd(d.len()) / 512 * 512;
                    let end = (at + 512).min(d.len());
                    d[at..end].fill(0);
                }
            }
            let p = work.path().join(format!("d{seed}-{k}"));
            fs::write(&p, &d).unwrap();
            let recovered = work.path().join(format!("r{seed}-{k}.warc"));
            for args in [
                vec!["ls".into(), p.clone().into_os_string()],
                vec!["check".into(), p.clone().into_os_string()],
                vec!["validate".into(), p.clone().into_os_string()],
                vec!["index".into(), p.clone().into_os_string()],
                vec![
                    "recover".into(),
                    p.clone().into_os_string(),
                    "-o".into(),
                    recovered.clone().into_os_string(),
                ],
            ] {
                let o = Command::new("prlimit")
                    .arg("--as=4294967296")
                    .arg("--")
                    .arg("timeout")
                    .arg("120")
                    .arg(bin_path())
                    .args(&args)
                    .output()
                    .unwrap();
                let err = String::from_utf8_lossy(&o.stderr);
                let what = format!("{rel} damage {k}: {args:?}");
                let code = o.status.code();
                assert!(
                    matches!(code, Some(0..=2)),
                    "{what}: exit {:?}\n{err}",
                    o.status
                );
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                // The closing count of recover and the lines naming a lost
                // record under its range are no messages about a place.
                for line in err.lines().filter(|l| {
                    l.contains(&name)
                        && !l.contains("records written")
                        && !l.contains("record at ")
                        && !l.contains("give the format")
                }) {
                    assert!(
                        line.contains("offset") || line.contains("bytes"),
                        "{what}: no offset in {line:?}"
                    );
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 75);
}
