//! The writing commands end to end: dedupe and revisit resolution, pack and
//! unpack, segment and reassemble, annotate and migrate.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common;
use common::{bin, extract_payload, files_in, fixture, noise, run};
use warchest::archive::Reader;
use warchest::check::{DigestStatus, check_record};
use warchest::digest::{Digest, Hasher};
use warchest::warc::RecordType;

/// Every record of every file checks, with no lenient warning.
fn assert_valid(files: &[PathBuf]) {
    for f in files {
        assert!(!f.to_string_lossy().ends_with(".open"), "{}", f.display());
        let mut r = Reader::open(f).unwrap();
        while let Some(mut rec) = r.next_record().unwrap() {
            let c = check_record(&mut rec, &Default::default()).unwrap();
            assert!(c.is_ok(), "{}: {c:?}", f.display());
            assert!(!rec.finish().unwrap().truncated);
        }
        assert!(r.take_warnings().is_empty(), "{}", f.display());
        let (code, _, err) = run(bin().arg("check").arg(f));
        assert_eq!(code, 0, "{err}");
    }
}

struct Revisit {
    file: PathBuf,
    offset: u64,
    digest: Digest,
}

/// The revisits of `files` that name their original by WARC-Refers-To.
fn revisits(files: &[PathBuf]) -> Vec<Revisit> {
    let mut out = Vec::new();
    for f in files {
        let mut r = Reader::open(f).unwrap();
        while let Some(rec) = r.next_record().unwrap() {
            let h = rec.header();
            if h.record_type() == RecordType::Revisit && h.refers_to().is_some() {
                out.push(Revisit {
                    file: f.clone(),
                    offset: rec.location().offset,
                    digest: h.parsed_payload_digest().unwrap().unwrap(),
                });
            }
        }
    }
    out
}

fn assert_resolves(rv: &Revisit, how: &[&std::ffi::OsStr]) {
    let (code, payload, err) = extract_payload(&rv.file, rv.offset, how);
    assert_eq!(code, 0, "{err}");
    let alg = rv.digest.algorithm().unwrap();
    assert!(
        rv.digest.matches(Hasher::digest(alg, &payload).as_bytes()),
        "offset {}: the resolved payload is not the original's",
        rv.offset
    );
}

/// Runs `warchest dedupe INPUTS -o OUT --index INDEX EXTRA... --json`,
/// which must succeed; its summary.
fn dedupe(inputs: &[&Path], out: &Path, index: &Path, extra: &[&str]) -> serde_json::Value {
    let (code, stdout, err) = run(bin()
        .arg("dedupe")
        .args(inputs)
        .arg("-o")
        .arg(out)
        .arg("--index")
        .arg(index)
        .args(extra)
        .arg("--json"));
    assert_eq!(code, 0, "{err}");
    serde_json::from_slice(&stdout).unwrap()
}

#[test]
fn dedupe_writes_revisits_that_extract_resolves() {
    let dupes = fixture("pywb/dupes.warc.gz");
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let index = work.path().join("digests.redb");
    // The file twice: every response of the second copy is a duplicate.
    let stats = dedupe(&[&dupes, &dupes], &out, &index, &["--min-size", "0"]);
    // example.com, and the empty payloads of the first copy's second
    // response and of the second copy's three.
    assert_eq!(stats["revisits"], 4, "{stats}");
    assert_eq!(stats["records"], 50);
    let files = files_in(&out);
    assert_valid(&files);
    let rvs = revisits(&files);
    assert_eq!(rvs.len(), 4);
    let file_args: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    for rv in &rvs {
        let mut how = vec![std::ffi::OsStr::new("--resolve-revisit")];
        how.extend(&file_args);
        assert_resolves(rv, &how);
        assert_resolves(rv, &["--revisit-index".as_ref(), index.as_os_str()]);
    }
    // A second run with the same index: the first copy's responses are
    // now duplicates of the first run's originals.
    let out2 = work.path().join("out2");
    let stats = dedupe(&[&dupes], &out2, &index, &[]);
    assert_eq!(stats["revisits"], 1, "{stats}");
    let rvs2 = revisits(&files_in(&out2));
    assert_eq!(rvs2.len(), 1);
    assert_resolves(&rvs2[0], &["--revisit-index".as_ref(), index.as_os_str()]);
}

/// The files searched for a revisit's original are read leniently: their
/// recoveries are counted on stderr as any input's.
#[test]
fn extract_counts_the_recoveries_of_the_files_it_resolves_in() {
    let work = tempfile::tempdir().unwrap();
    let dupes = fixture("pywb/dupes.warc.gz");
    let iana = work.path().join("iana.warc.gz");
    let mut data = fs::read(fixture("pywb/iana.warc.gz")).unwrap();
    let at = data.len();
    data.extend_from_slice(b"trailing garbage\n");
    fs::write(&iana, data).unwrap();
    let mut r = Reader::open(&dupes).unwrap();
    let mut offsets = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if rec.header().record_type() == RecordType::Revisit {
            offsets.push(rec.location().offset);
        }
    }
    let line = format!("{}: 1 recovery, the first at offset {at}", iana.display());
    let mut resolved = 0;
    for offset in offsets {
        let (code, _, err) = extract_payload(
            &dupes,
            offset,
            ["--resolve-revisit".as_ref(), iana.as_os_str()],
        );
        assert!(err.contains(&line), "{err}");
        resolved += usize::from(code == 0);
    }
    assert!(resolved > 0);
}

/// A file of a response and a revisit of it whose header lines end in
/// bare LFs; the revisit's offset.
fn revisit_beside_its_original(path: &Path) -> u64 {
    let digest = "sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N"; // "hello"
    let block = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    let mut data = format!(
        "WARC/1.1\r\nWARC-Type: response\r\n\
         WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\n\
         WARC-Date: 2024-01-02T03:04:05Z\r\nWARC-Target-URI: http://a.test/\r\n\
         WARC-Payload-Digest: {digest}\r\nContent-Type: application/http; msgtype=response\r\n\
         Content-Length: {}\r\n\r\n{block}\r\n\r\n",
        block.len()
    );
    let at = data.len() as u64;
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n";
    data.push_str(&format!(
        "WARC/1.1\nWARC-Type: revisit\n\
         WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000002>\n\
         WARC-Date: 2024-02-02T03:04:05Z\nWARC-Target-URI: http://a.test/\n\
         WARC-Refers-To: <urn:uuid:00000000-0000-0000-0000-000000000001>\n\
         WARC-Refers-To-Target-URI: http://a.test/\n\
         WARC-Refers-To-Date: 2024-01-02T03:04:05Z\n\
         WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\n\
         WARC-Payload-Digest: {digest}\nContent-Type: application/http; msgtype=response\n\
         Content-Length: {}\n\n{head}\r\n\r\n",
        head.len()
    ));
    fs::write(path, data).unwrap();
    at
}

/// `extract F --resolve-revisit F` reads F twice (the record, and the
/// whole file to find the original in): its recoveries are counted once,
/// as reading it once counts them, whether F is named the same way twice
/// or two ways (then under the name the resolving read used).
#[test]
fn extract_counts_a_file_read_twice_once() {
    let work = tempfile::tempdir().unwrap();
    let f = work.path().join("f.warc");
    let at = revisit_beside_its_original(&f);
    // What reading it once meets.
    let mut r = Reader::open(&f).unwrap();
    while r.next_record().unwrap().is_some() {}
    let ws = r.take_warnings();
    assert!(!ws.is_empty());
    let n = ws.len();
    let first = ws.iter().map(|w| w.offset).min().unwrap();
    assert!(first >= at, "{first} {at}");
    let once = |name: &str| {
        let what = if n == 1 { "recovery" } else { "recoveries" };
        format!("warchest: {name}: {n} {what}, the first at offset {first};")
    };
    let name = f.to_str().unwrap();
    let other = format!("{}/./f.warc", work.path().display());
    for (how, told) in [
        (vec![name], name),
        (vec![name, name], name),
        (vec![other.as_str(), name], other.as_str()),
    ] {
        let mut extra = vec!["--resolve-revisit"];
        extra.extend(&how);
        let (code, payload, err) = extract_payload(&f, at, &extra);
        assert_eq!(code, 0, "{how:?}: {err}");
        assert_eq!(payload, b"hello", "{how:?}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{how:?}: {err}");
        assert!(lines[0].starts_with(&once(told)), "{how:?}: {err}");
        // -w lists each once.
        let (code, _, err) = run(bin()
            .arg("-w")
            .arg("extract")
            .arg(&f)
            .args(["--offset", &at.to_string(), "--payload"])
            .args(&extra));
        assert_eq!(code, 0, "{err}");
        assert_eq!(err.matches(": warning: ").count(), n, "{how:?}: {err}");
    }
    // Resolved in another file, the record's own recoveries are still told.
    let g = work.path().join("g.warc");
    revisit_beside_its_original(&g);
    let (code, _, err) = extract_payload(&f, at, ["--resolve-revisit".as_ref(), g.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&once(name)), "{err}");
}

#[test]
fn extract_resolves_the_fixtures_own_revisits() {
    // dupes.warc.gz holds WARC/1.0 revisits (0.18 profile URIs) of
    // records in iana.warc.gz, named by target URI and date.
    let dupes = fixture("pywb/dupes.warc.gz");
    let iana = fixture("pywb/iana.warc.gz");
    let mut rvs = Vec::new();
    let mut r = Reader::open(&dupes).unwrap();
    while let Some(rec) = r.next_record().unwrap() {
        let h = rec.header();
        if h.record_type() == RecordType::Revisit {
            rvs.push(Revisit {
                file: dupes.clone(),
                offset: rec.location().offset,
                digest: h.parsed_payload_digest().unwrap().unwrap(),
            });
        }
    }
    assert!(rvs.len() >= 5);
    let mut resolved = 0;
    for rv in &rvs {
        let (code, payload, err) = extract_payload(
            &rv.file,
            rv.offset,
            ["--resolve-revisit".as_ref(), iana.as_os_str()],
        );
        if code == 0 {
            let alg = rv.digest.algorithm().unwrap();
            assert!(rv.digest.matches(Hasher::digest(alg, &payload).as_bytes()));
            resolved += 1;
        } else {
            // Originals iana.warc.gz itself holds as revisits only.
            assert!(err.contains("not found"), "{err}");
        }
    }
    assert!(resolved >= 5, "{resolved} of {}", rvs.len());
    // Not found: a clear failure.
    let (code, _, err) = extract_payload(
        &dupes,
        rvs[0].offset,
        [
            "--resolve-revisit".as_ref(),
            fixture("pywb/example.warc.gz").as_os_str(),
        ],
    );
    assert_eq!(code, 2);
    assert!(err.contains("not found"), "{err}");
}

#[cfg(unix)]
#[test]
fn pack_round_trips_a_directory() {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("tree");
    fs::create_dir_all(src.join("sub/deeper")).unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0".to_vec();
    png.extend((0..5000u32).map(|i| (i * 7 % 251) as u8));
    let big = noise(300_000, 11);
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("a.txt", b"hello, archive\n".to_vec()),
        ("empty", Vec::new()),
        ("sub/image.png", png),
        ("sub/name with spaces & %.txt", b"odd name".to_vec()),
        ("sub/deeper/big.bin", big),
    ];
    for (p, data) in &files {
        fs::write(src.join(p), data).unwrap();
    }
    fs::set_permissions(src.join("a.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();
    let out = work.path().join("warcs");
    let (code, _, err) = run(bin()
        .arg("pack")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .arg("--max-size")
        .arg("64KiB"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    let warcs = files_in(&out);
    assert!(warcs.len() >= 5, "the big file is segmented: {warcs:?}");
    assert_valid(&warcs);
    // Content types from the bytes, file:// URIs, metadata after each.
    let mut types = Vec::new();
    for f in &warcs {
        let mut r = Reader::open(f).unwrap();
        while let Some(rec) = r.next_record().unwrap() {
            let h = rec.header();
            if h.record_type() == RecordType::Resource {
                assert!(h.target_uri().unwrap().starts_with("file:///"));
                types.push((
                    h.target_uri().unwrap().into_owned(),
                    h.content_type().unwrap().into_owned(),
                ));
            }
        }
    }
    assert!(
        types
            .iter()
            .any(|(u, t)| u.ends_with("/sub/image.png") && t == "image/png"),
        "{types:?}"
    );
    assert!(
        types
            .iter()
            .any(|(u, t)| u.ends_with("/name%20with%20spaces%20&%20%25.txt") && t == "text/plain"),
        "{types:?}"
    );
    let back = work.path().join("back");
    let (code, _, err) = run(bin().arg("unpack").args(&warcs).arg("-o").arg(&back));
    assert_eq!(code, 0, "{err}");
    for (p, data) in &files {
        let got = fs::read(back.join("tree").join(p)).unwrap();
        assert!(got == *data, "{p} differs");
    }
    let mode = fs::metadata(back.join("tree/a.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    let m0 = fs::metadata(src.join("sub/image.png"))
        .unwrap()
        .modified()
        .unwrap();
    let m1 = fs::metadata(back.join("tree/sub/image.png"))
        .unwrap()
        .modified()
        .unwrap();
    let diff = m0.duration_since(m1).unwrap_or_else(|e| e.duration());
    assert!(diff.as_millis() < 1, "{m0:?} {m1:?}");
    assert!(!back.join("tree/link").exists());
    // Unpacking again refuses to replace what is there.
    let (code, _, err) = run(bin().arg("unpack").args(&warcs).arg("-o").arg(&back));
    assert_eq!(code, 1);
    assert!(err.contains("not replaced"), "{err}");
}

/// An archive cut inside a file's record: the file is left as far as
/// it was read, named as truncated, exit 1, for plain and gzip records.
/// `src` packed into `out` with `flags`: the WARC files written.
fn packed(src: &Path, out: &Path, flags: &[&str]) -> Vec<PathBuf> {
    let (code, _, err) = run(bin().arg("pack").arg(src).arg("-o").arg(out).args(flags));
    assert_eq!(code, 0, "{err}");
    files_in(out)
}

#[test]
fn unpack_names_a_file_the_archive_ends_inside() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("tree");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.txt"), b"whole\n").unwrap();
    fs::write(src.join("big.bin"), noise(200_000, 5)).unwrap();
    for compress in ["none", "gzip"] {
        let out = work.path().join(format!("warcs-{compress}"));
        let warcs = packed(
            &src,
            &out,
            &[
                "--compress",
                compress,
                "--base-uri",
                "https://example.org/files/",
            ],
        );
        assert_eq!(warcs.len(), 1, "{warcs:?}");
        // Cut well inside big.bin's record, which is most of the file.
        let data = fs::read(&warcs[0]).unwrap();
        fs::write(&warcs[0], &data[..data.len() - 50_000]).unwrap();
        let back = work.path().join(format!("back-{compress}"));
        let (code, _, err) = run(bin().arg("unpack").arg(&warcs[0]).arg("-o").arg(&back));
        assert_eq!(code, 1, "{compress}: {err}");
        assert_eq!(fs::read(back.join("tree/a.txt")).unwrap(), b"whole\n");
        // Its metadata record is lost with the end: the URI's path.
        let cut = back.join("files/tree/big.bin");
        let n = fs::metadata(&cut).unwrap().len();
        assert!(n < 200_000, "{compress}: {n}");
        let named = format!("{}: truncated: {n} of 200000 bytes restored", cut.display());
        assert!(err.contains(&named), "{compress}: {err}");
        assert!(err.contains("1 files, 1 truncated"), "{compress}: {err}");
        assert!(err.contains("the first at offset"), "{compress}: {err}");
        let (code, _, err) = run(bin()
            .arg("unpack")
            .arg("-w")
            .arg(&warcs[0])
            .arg("-o")
            .arg(work.path().join(format!("again-{compress}"))));
        assert_eq!(code, 1, "{compress}: {err}");
        assert!(err.contains("warning:"), "{compress}: {err}");
    }
}

/// A file packed in segments, one of them cut short, missing, or with a
/// byte changed: that file is named (truncated, or damaged by its payload
/// digest), exit 1, and the other files are still restored.
#[test]
fn unpack_names_a_file_whose_segments_are_cut_or_wrong() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("tree");
    fs::create_dir_all(&src).unwrap();
    let big = noise(300_000, 9);
    fs::write(src.join("big.bin"), &big).unwrap();
    fs::write(src.join("small.txt"), b"small\n").unwrap();
    let flags = ["--compress", "none", "--max-size", "64KiB"];
    let holds_segment = |f: &PathBuf, n: u32| {
        let data = fs::read(f).unwrap();
        let needle = format!("WARC-Segment-Number: {n}\r\n");
        data.windows(needle.len())
            .position(|w| w == needle.as_bytes())
    };
    for damage in ["cut", "missing", "changed"] {
        let out = work.path().join(format!("warcs-{damage}"));
        let warcs = packed(&src, &out, &flags);
        let third = warcs
            .iter()
            .find(|f| holds_segment(f, 3).is_some())
            .expect("a third segment")
            .clone();
        let data = fs::read(&third).unwrap();
        let at = holds_segment(&third, 3).unwrap();
        match damage {
            "cut" => fs::write(&third, &data[..at + 20_000]).unwrap(),
            "missing" => fs::remove_file(&third).unwrap(),
            _ => {
                let mut d = data.clone();
                d[at + 20_000] ^= 0x55;
                fs::write(&third, d).unwrap();
            }
        }
        let warcs = files_in(&out);
        let back = work.path().join(format!("back-{damage}"));
        let (code, _, err) = run(bin().arg("unpack").args(&warcs).arg("-o").arg(&back));
        assert_eq!(code, 1, "{damage}: {err}");
        assert_eq!(fs::read(back.join("tree/small.txt")).unwrap(), b"small\n");
        let named = back.join("tree/big.bin").display().to_string();
        let got = fs::read(back.join("tree/big.bin")).unwrap();
        match damage {
            "changed" => {
                assert_eq!(got.len(), big.len(), "{damage}");
                assert!(
                    err.contains(&format!("{named}: damaged: payload digest")),
                    "{err}"
                );
                assert!(err.contains("1 files, 1 damaged"), "{err}");
            }
            _ => {
                assert!(got.len() < big.len() && big.starts_with(&got), "{damage}");
                let told = format!(
                    "{named}: truncated: {} of 300000 bytes restored:",
                    got.len()
                );
                assert!(err.contains(&told), "{damage}: {err}");
                assert!(err.contains("segment 3"), "{damage}: {err}");
                assert!(err.contains("1 files, 1 truncated"), "{damage}: {err}");
            }
        }
    }
}

/// A record whose gzip member is damaged inside (its bytes stored, so the
/// damage shows as a checksum that does not match): the file is written
/// and named as damaged, exit 1, never restored as if whole.
#[test]
fn unpack_names_a_file_whose_member_is_damaged() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("tree");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("big.bin"), noise(200_000, 3)).unwrap();
    let out = work.path().join("warcs");
    let warcs = packed(&src, &out, &["--compress", "gzip"]);
    let mut data = fs::read(&warcs[0]).unwrap();
    let mid = data.len() / 2;
    for b in &mut data[mid..mid + 64] {
        *b ^= 0xa5;
    }
    fs::write(&warcs[0], &data).unwrap();
    let back = work.path().join("back");
    let (code, _, err) = run(bin().arg("unpack").arg(&warcs[0]).arg("-o").arg(&back));
    assert_eq!(code, 1, "{err}");
    let named = format!("{}: damaged: offset ", back.join("tree/big.bin").display());
    assert!(err.contains(&named), "{err}");
    assert!(err.contains("0 files, 1 damaged"), "{err}");
}

/// Recoveries in a packed archive are counted on stderr; metadata that
/// does not read is named and makes the exit status 1.
#[test]
fn unpack_counts_recoveries_and_names_bad_metadata() {
    use warchest::write::{Body, NewRecord, Writer, WriterOptions};
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("tree");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.txt"), b"hello\n").unwrap();
    let warc = packed(&src, &work.path().join("warcs"), &["--compress", "none"]).remove(0);
    let mut data = fs::read(&warc).unwrap();
    let at = data.len();
    data.extend_from_slice(b"garbage after the last record\n");
    fs::write(&warc, &data).unwrap();
    let back = work.path().join("back");
    let (code, _, err) = run(bin().arg("unpack").arg(&warc).arg("-o").arg(&back));
    assert_eq!(code, 0, "{err}");
    assert_eq!(fs::read(back.join("tree/a.txt")).unwrap(), b"hello\n");
    let line = format!(
        "{}: 1 recovery, the first at offset {at}; -w lists it",
        warc.display()
    );
    assert!(err.contains(&line), "{err}");
    // A permissions value that is not octal: named, the file written.
    let bad = work.path().join("bad.warc");
    let mut w = Writer::new(fs::File::create(&bad).unwrap(), WriterOptions::default()).unwrap();
    let mut r = NewRecord::new(RecordType::Resource);
    r.set("WARC-Target-URI", "https://example.org/x.txt")
        .unwrap();
    w.write(&mut r, Body::Bytes(b"x")).unwrap();
    let id = r.record_id().to_string();
    let mut m = NewRecord::new(RecordType::Metadata);
    m.set("WARC-Concurrent-To", &id).unwrap();
    m.set("Content-Type", "application/warc-fields").unwrap();
    let block = b"size: 1\r\nrelative-path: d/x.txt\r\npermissions: rwxr-xr-x\r\n";
    w.write(&mut m, Body::Bytes(block)).unwrap();
    w.finish().unwrap();
    let back = work.path().join("back-bad");
    let (code, _, err) = run(bin().arg("unpack").arg(&bad).arg("-o").arg(&back));
    assert_eq!(code, 1, "{err}");
    assert_eq!(fs::read(back.join("d/x.txt")).unwrap(), b"x");
    assert!(
        err.contains("x.txt: permissions \"rwxr-xr-x\" are not octal"),
        "{err}"
    );
    // Another tool's metadata about the same file, after pack's: neither
    // replaces pack's record nor counts as a problem, in its own format or
    // in warc-fields without a relative path.
    let other = work.path().join("other.warc");
    let mut w = Writer::new(fs::File::create(&other).unwrap(), WriterOptions::default()).unwrap();
    let mut r = NewRecord::new(RecordType::Resource);
    r.set("WARC-Target-URI", "https://example.org/y.txt")
        .unwrap();
    w.write(&mut r, Body::Bytes(b"y")).unwrap();
    let id = r.record_id().to_string();
    for (ct, block) in [
        (
            "application/warc-fields",
            &b"size: 1\r\nrelative-path: d/y.txt\r\n"[..],
        ),
        ("text/plain", b"just a note\r\nwith no fields in it\r\n"),
        ("application/warc-fields", b"via: another tool\r\n"),
    ] {
        let mut m = NewRecord::new(RecordType::Metadata);
        m.set("WARC-Concurrent-To", &id).unwrap();
        m.set("Content-Type", ct).unwrap();
        w.write(&mut m, Body::Bytes(block)).unwrap();
    }
    w.finish().unwrap();
    let back = work.path().join("back-other");
    let (code, _, err) = run(bin().arg("unpack").arg(&other).arg("-o").arg(&back));
    assert_eq!(code, 0, "{err}");
    assert_eq!(fs::read(back.join("d/y.txt")).unwrap(), b"y");
}

#[test]
fn unpack_never_writes_outside_its_directory() {
    use warchest::write::{Body, NewRecord, Writer, WriterOptions};
    let work = tempfile::tempdir().unwrap();
    let warc = work.path().join("evil.warc");
    let mut w = Writer::new(fs::File::create(&warc).unwrap(), WriterOptions::default()).unwrap();
    for uri in [
        "file:///../../escaped.txt",
        "http://example.com/%2E%2E/%2E%2E/escaped2.txt",
    ] {
        let mut r = NewRecord::new(RecordType::Resource);
        r.set("WARC-Target-URI", uri).unwrap();
        w.write(&mut r, Body::Bytes(b"x")).unwrap();
    }
    w.finish().unwrap();
    let out = work.path().join("deep/out");
    let (code, _, err) = run(bin().arg("unpack").arg(&warc).arg("-o").arg(&out));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("leaves the output directory"), "{err}");
    assert!(!work.path().join("escaped.txt").exists());
    assert!(!work.path().join("escaped2.txt").exists());
    assert!(!work.path().join("deep/escaped.txt").exists());
}

#[test]
fn segment_and_reassemble_commands() {
    use warchest::write::{Body, NewRecord, Writer, WriterOptions};
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in.warc.gz");
    let body = noise(400_000, 12);
    let mut block =
        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    block.extend(&body);
    let mut w = Writer::new(fs::File::create(&input).unwrap(), WriterOptions::default()).unwrap();
    let mut small = NewRecord::new(RecordType::Resource);
    small
        .set("WARC-Target-URI", "http://example.com/small")
        .unwrap();
    w.write(&mut small, Body::Bytes(b"small")).unwrap();
    let mut big = NewRecord::new(RecordType::Response);
    big.set("WARC-Target-URI", "http://example.com/big")
        .unwrap()
        .set("Content-Type", "application/http; msgtype=response")
        .unwrap();
    w.write(&mut big, Body::Bytes(&block)).unwrap();
    w.finish().unwrap();
    let parts = work.path().join("parts");
    let (code, _, err) = run(bin()
        .arg("segment")
        .arg(&input)
        .arg("-o")
        .arg(&parts)
        .arg("--max-size")
        .arg("100KB"));
    assert_eq!(code, 0, "{err}");
    let files = files_in(&parts);
    assert!(files.len() >= 5, "{files:?}");
    for f in &files {
        assert!(fs::metadata(f).unwrap().len() <= 100_000);
    }
    assert_valid(&files);
    let whole = work.path().join("whole.warc");
    let (code, _, err) = run(bin().arg("reassemble").args(&files).arg("-o").arg(&whole));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 records reassembled"), "{err}");
    let mut r = Reader::open(&whole).unwrap();
    let mut blocks = Vec::new();
    while let Some(mut rec) = r.next_record().unwrap() {
        if rec.header().record_type() == RecordType::Warcinfo {
            continue;
        }
        let c = check_record(&mut rec, &Default::default()).unwrap();
        assert_eq!(c.block, DigestStatus::Valid);
        assert_ne!(c.payload, DigestStatus::NotApplicable);
        assert!(c.payload.is_ok());
        assert_eq!(rec.header().segment_number(), None);
        assert_ne!(rec.header().record_type(), RecordType::Continuation);
        blocks.push(rec.header().content_length().unwrap());
    }
    assert_eq!(blocks, [5, block.len() as u64]);
    // Without one of the parts the series is incomplete: exit 1.
    let some: Vec<_> = files.iter().take(files.len() - 1).cloned().collect();
    let (code, _, err) = run(bin()
        .arg("reassemble")
        .args(&some)
        .arg("-o")
        .arg(work.path().join("partial.warc")));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not found"), "{err}");
}

#[cfg(unix)]
#[test]
fn annotate_and_migrate_refer_to_their_sources() {
    let example = fixture("pywb/example.warc.gz");
    let work = tempfile::tempdir().unwrap();
    let notes = work.path().join("notes.warc.gz");
    let (code, _, err) = run(bin()
        .arg("annotate")
        .arg(&example)
        .arg("-o")
        .arg(&notes)
        .args(["--exec", "wc", "-c"]));
    assert_eq!(code, 0, "{err}");
    assert_valid(std::slice::from_ref(&notes));
    // Source records with a payload, by id.
    let mut sources = std::collections::HashMap::new();
    let mut r = Reader::open(&example).unwrap();
    while let Some(rec) = r.next_record().unwrap() {
        let h = rec.header();
        if matches!(h.record_type(), RecordType::Response | RecordType::Resource) {
            sources.insert(
                h.record_id().unwrap().into_owned(),
                h.target_uri().map(|s| s.into_owned()),
            );
        }
    }
    let mut r = Reader::open(&notes).unwrap();
    let mut n = 0;
    while let Some(mut rec) = r.next_record().unwrap() {
        let h = rec.header().clone();
        if h.record_type() != RecordType::Metadata {
            continue;
        }
        let to = h.refers_to().unwrap().into_owned();
        assert!(sources.contains_key(&to), "{to}");
        let text = String::from_utf8(rec.read_block().unwrap()).unwrap();
        assert!(text.trim().parse::<u64>().is_ok(), "{text:?}");
        n += 1;
    }
    assert_eq!(n, sources.len());

    let conv = work.path().join("conv.warc");
    let (code, _, err) = run(bin()
        .arg("migrate")
        .arg(&example)
        .arg("-o")
        .arg(&conv)
        .arg("--from")
        .arg("text/html")
        .arg("--to")
        .arg("text/plain")
        .args(["--exec", "tr", "a-z", "A-Z"]));
    assert_eq!(code, 0, "{err}");
    assert_valid(std::slice::from_ref(&conv));
    let mut r = Reader::open(&conv).unwrap();
    let mut last_conversion = None;
    let mut pairs = 0;
    while let Some(mut rec) = r.next_record().unwrap() {
        let h = rec.header().clone();
        match h.record_type() {
            RecordType::Conversion => {
                assert!(sources.contains_key(h.refers_to().unwrap().as_ref()));
                let text = String::from_utf8(rec.read_block().unwrap()).unwrap();
                assert!(
                    text.contains("<HTML") || text.contains("<!DOCTYPE"),
                    "{text}"
                );
                assert_eq!(h.content_type().unwrap(), "text/plain");
                last_conversion = h.record_id().map(|s| s.into_owned());
            }
            RecordType::Metadata => {
                assert_eq!(h.refers_to().map(|s| s.into_owned()), last_conversion);
                let text = String::from_utf8(rec.read_block().unwrap()).unwrap();
                assert!(text.contains("migration-tool: tr a-z A-Z\r\n"), "{text}");
                assert!(text.contains("source-type: text/html\r\n"), "{text}");
                pairs += 1;
            }
            _ => {}
        }
    }
    assert!(pairs >= 1);
    // A tool that fails leaves no conversion and says so.
    let (code, _, err) = run(bin()
        .arg("migrate")
        .arg(&example)
        .arg("-o")
        .arg(work.path().join("none.warc"))
        .arg("--from")
        .arg("text/html")
        .arg("--exec")
        .arg("false"));
    assert_eq!(code, 1);
    assert!(err.contains("no conversion written"), "{err}");
}

/// The benchmark corpus given twice: the second copy's responses all become
/// revisits. Run with
/// `WARCHEST_CORPUS=/work/corpus/rustdocs.warc.gz cargo test -p warchest-cli --test writing -- --ignored dedupe_halves`
/// (the corpus is built by `../shared/bench/make-corpus.sh`).
///
/// Measured (2026-11, debug build, 80 s): 372,490,684 bytes in, 227,889,805
/// out (61%, 144.6 MB saved); 51,342 revisits of 611 bytes on average
/// replace responses of 3,243. Not a clean half because the second copy's
/// 51,931 requests (22.8 MB) are not duplicates a revisit can stand for,
/// and each revisit keeps its WARC and HTTP headers.
#[test]
#[ignore]
fn dedupe_halves_the_corpus_given_twice() {
    let corpus = PathBuf::from(
        std::env::var("WARCHEST_CORPUS")
            .unwrap_or_else(|_| "/work/corpus/rustdocs.warc.gz".to_string()),
    );
    assert!(corpus.exists(), "{} missing", corpus.display());
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let index = work.path().join("idx.redb");
    let stats = dedupe(&[&corpus, &corpus], &out, &index, &[]);
    eprintln!("{stats}");
    let bytes_in = stats["bytes_in"].as_u64().unwrap() as f64;
    let bytes_out = stats["bytes_out"].as_u64().unwrap() as f64;
    assert!(bytes_out < 0.65 * bytes_in, "{stats}");
    let responses = stats["responses"].as_u64().unwrap();
    assert!(
        stats["revisits"].as_u64().unwrap() >= responses / 2,
        "{stats}"
    );
    let files = files_in(&out);
    let rvs = revisits(&files);
    for rv in rvs.iter().step_by(2000) {
        assert_resolves(rv, &["--revisit-index".as_ref(), index.as_os_str()]);
    }
}

#[cfg(unix)]
#[test]
fn exec_takes_the_program_and_its_arguments_as_words() {
    let work = tempfile::tempdir().unwrap();
    let notes = work.path().join("notes.warc.gz");
    // A quoted argument with spaces and a semicolon stays one argument.
    let code = "import sys; sys.stdout.write(\"bytes: %d\" % len(sys.stdin.buffer.read()))";
    let (status, _, err) = run(bin()
        .arg("annotate")
        .arg(fixture("pywb/example.warc.gz"))
        .arg("-o")
        .arg(&notes)
        .args(["--exec", "python3", "-c", code]));
    assert_eq!(status, 0, "{err}");
    let mut r = Reader::open(&notes).unwrap();
    let mut seen = 0;
    while let Some(mut rec) = r.next_record().unwrap() {
        if rec.header().record_type() == RecordType::Metadata {
            let b = rec.read_block().unwrap();
            assert!(b.starts_with(b"bytes: "), "{}", String::from_utf8_lossy(&b));
            seen += 1;
        }
    }
    assert!(seen > 0);
    // migrate alike; its metadata names the tool as a shell would read it.
    let conv = work.path().join("conv.warc.gz");
    let (status, _, err) = run(bin()
        .arg("migrate")
        .arg(fixture("pywb/example.warc.gz"))
        .arg("-o")
        .arg(&conv)
        .args(["--from", "text/html", "--to", "text/plain"])
        .args(["--exec", "python3", "-c", code]));
    assert_eq!(status, 0, "{err}");
    let mut r = Reader::open(&conv).unwrap();
    let mut tool = None;
    while let Some(mut rec) = r.next_record().unwrap() {
        let t = rec.header().record_type();
        let b = rec.read_block().unwrap();
        if t == RecordType::Conversion {
            assert!(b.starts_with(b"bytes: "));
        } else if t == RecordType::Metadata {
            tool = Some(String::from_utf8_lossy(&b).into_owned());
        }
    }
    let tool = tool.expect("a metadata record");
    assert!(
        tool.contains(&format!("migration-tool: python3 -c '{code}'")),
        "{tool}"
    );
    // The help says how.
    for cmd in ["annotate", "migrate"] {
        let (_, out, _) = run(bin().args([cmd, "--help"]));
        let help = String::from_utf8_lossy(&out);
        assert!(help.contains("separate words"), "{help}");
    }
}
