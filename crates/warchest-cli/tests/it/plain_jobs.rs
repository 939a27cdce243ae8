//! `ls -j N` of an uncompressed WARC file cut into chunks read on several
//! threads (issue 20): stdout, stderr and exit status byte for byte those
//! of `ls -j 1`, on every uncompressed fixture and on files made to fool
//! the split (an archived WARC file as a payload) or damaged. The test knob
//! `WARCHEST_PLAIN_CHUNK` forces tiny chunks so small files have many cuts;
//! `WARCHEST_PLAIN_TRACE` names a file where each chunked read appends its
//! counts (chunks used, false starts passed over, sequential runs).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::common::{bin, fixture_files, run};

/// `warchest FLAGS ls [--json] -j JOBS FILE`, chunks of `chunk` bytes.
fn ls(
    file: &Path,
    flags: &[&str],
    json: bool,
    jobs: u32,
    chunk: u64,
    trace: &Path,
) -> (i32, Vec<u8>, String) {
    let mut cmd = bin();
    cmd.args(flags).arg("ls");
    if json {
        cmd.arg("--json");
    }
    cmd.arg("-j")
        .arg(jobs.to_string())
        .arg(file)
        .env("WARCHEST_PLAIN_CHUNK", chunk.to_string())
        .env("WARCHEST_PLAIN_TRACE", trace);
    run(&mut cmd)
}

/// Asserts `ls -j 4` equals `ls -j 1` on `file` for each chunk size: tab
/// with `-w`, JSON with the summary line, and strict.
fn same_as_one_thread(file: &Path, chunks: &[u64], trace: &Path) {
    same_in_modes(file, chunks, chunks, trace);
}

/// [`same_as_one_thread`], with the tab mode at each of `chunks` and JSON
/// and strict at each of `other_chunks`.
fn same_in_modes(file: &Path, chunks: &[u64], other_chunks: &[u64], trace: &Path) {
    let modes: [(&[&str], bool); 3] = [(&["-w"], false), (&[], true), (&["--strict"], false)];
    for (i, (flags, json)) in modes.into_iter().enumerate() {
        let chunks = if i == 0 { chunks } else { other_chunks };
        let Some(&first) = chunks.first() else {
            continue;
        };
        let one = ls(file, flags, json, 1, first, trace);
        for &c in chunks {
            let four = ls(file, flags, json, 4, c, trace);
            assert_eq!(
                (four.0, &four.2),
                (one.0, &one.2),
                "{} {flags:?} json {json} chunk {c}: status and stderr",
                file.display()
            );
            assert!(
                four.1 == one.1,
                "{} {flags:?} json {json} chunk {c}: stdout differs:\n{}\n---\n{}",
                file.display(),
                String::from_utf8_lossy(&one.1),
                String::from_utf8_lossy(&four.1)
            );
        }
    }
}

/// The trace lines written so far, as (chunks, used, false starts,
/// sequential runs).
fn traces(trace: &Path) -> Vec<[u64; 4]> {
    let text = std::fs::read_to_string(trace).unwrap_or_default();
    text.lines()
        .map(|l| {
            let n: Vec<u64> = l
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            [n[0], n[1], n[2], n[3]]
        })
        .collect()
}

/// Asserts that the runs traced to `trace` read files in chunks: 30 or
/// more chunked reads, one of them using five chunks or more.
fn read_in_chunks(trace: &Path) {
    let t = traces(trace);
    assert!(t.len() >= 30, "{} chunked reads", t.len());
    assert!(t.iter().any(|t| t[1] >= 5), "{t:?}");
}

/// Runs `cmd(file, jobs)` at `-j 1` and `-j 2` and asserts the same exit
/// status, stderr and stdout (`what` names the run in messages); returns
/// `-j 1`'s run.
fn same_on_two_threads(
    f: &Path,
    what: &str,
    cmd: impl Fn(&Path, &str) -> (i32, Vec<u8>, String),
) -> (i32, Vec<u8>, String) {
    let one = cmd(f, "1");
    let two = cmd(f, "2");
    assert_eq!((two.0, &two.2), (one.0, &one.2), "{} {what}", f.display());
    assert!(
        two.1 == one.1,
        "{} {what}: stdout differs:\n{}\n---\n{}",
        f.display(),
        String::from_utf8_lossy(&one.1),
        String::from_utf8_lossy(&two.1)
    );
    one
}

/// Every uncompressed fixture, and every gzip one decompressed into `dir`
/// (what decompresses of a damaged one).
fn plain_fixtures(dir: &Path) -> Vec<PathBuf> {
    let mut v = fixture_files(&[".warc", ".arc", ".dat"]);
    for gz in fixture_files(&[".warc.gz", ".warc.gz.bad", ".arc.gz"]) {
        let mut bytes = Vec::new();
        let f = std::fs::File::open(&gz).unwrap();
        // A damaged member ends the bytes: the part before is kept.
        let _ = flate2::read::MultiGzDecoder::new(f).read_to_end(&mut bytes);
        if bytes.is_empty() {
            continue;
        }
        let name = gz.file_name().unwrap().to_string_lossy().replace(".gz", "");
        let sub = gz.parent().unwrap().file_name().unwrap().to_string_lossy();
        let out = dir.join(format!("{sub}-{name}"));
        std::fs::write(&out, bytes).unwrap();
        v.push(out);
    }
    v
}

#[test]
fn every_plain_fixture_lists_the_same_on_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let files = plain_fixtures(dir.path());
    assert!(files.len() >= 40, "{} fixtures", files.len());
    // Each run is a process, so this test was the CLI suite's slowest
    // (docs/testing.md, "Running time"): the tab listing with warnings at
    // both chunk sizes; JSON and strict, which print the same records
    // another way, at the smallest (the most cuts); ARC and Web InfoMall,
    // never read in chunks, in the tab listing once (that `-j 4` falls back
    // to the sequential read).
    for f in &files {
        let name = f.to_string_lossy();
        if name.ends_with(".arc") || name.ends_with(".dat") {
            same_in_modes(f, &[61], &[], &trace);
        } else {
            same_in_modes(f, &[61, 997], &[61], &trace);
        }
    }
    let t = traces(&trace);
    // The WARC files went through the chunks (ARC and Web InfoMall not),
    // some chunks were used, and some files needed sequential reading.
    assert!(t.len() >= 100, "{} chunked reads", t.len());
    assert!(t.iter().any(|t| t[1] >= 5), "{t:?}");
    assert!(t.iter().any(|t| t[3] >= 1), "{t:?}");
}

fn record(n: usize, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "WARC/1.1\r\nWARC-Type: resource\r\n\
         WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{n:012}>\r\n\
         WARC-Date: 2026-11-25T10:00:00Z\r\nWARC-Target-URI: http://example.com/{n}\r\n\
         Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v.extend_from_slice(b"\r\n\r\n");
    v
}

fn records(from: usize, count: usize) -> Vec<u8> {
    (from..from + count)
        .flat_map(|n| record(n, format!("body {n} {}", "x".repeat(n * 7 % 91)).as_bytes()))
        .collect()
}

/// Writes `data` as `name` in `dir`, checks `-j 4` against `-j 1`, and
/// returns the traces of the chunked reads.
fn check_made(dir: &Path, name: &str, data: &[u8]) -> Vec<[u64; 4]> {
    let file = dir.join(name);
    std::fs::write(&file, data).unwrap();
    let trace = dir.join(format!("{name}.trace"));
    same_as_one_thread(&file, &[89, 640, 5000], &trace);
    traces(&trace)
}

#[test]
fn an_archived_warc_file_in_a_payload_does_not_fool_the_chunks() {
    let dir = tempfile::tempdir().unwrap();
    // A resource record holding an uncompressed WARC file of 40 records:
    // cuts inside it find candidates that confirm (a chain of 8 records).
    let mut data = records(0, 5);
    data.extend(record(1000, &records(2000, 40)));
    data.extend(records(5, 30));
    // And one at the very end, so the false chain reaches the file's end.
    data.extend(record(1001, &records(3000, 20)));
    let t = check_made(dir.path(), "nested.warc", &data);
    assert!(t.iter().any(|t| t[2] >= 5), "no false start seen: {t:?}");
    assert!(t.iter().any(|t| t[1] >= 5), "{t:?}");
    let out = bin()
        .args(["ls", "-j", "4"])
        .arg(dir.path().join("nested.warc"))
        .env("WARCHEST_PLAIN_CHUNK", "300")
        .output()
        .unwrap();
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 37);
}

#[test]
fn damaged_files_are_read_on_from_the_damage_as_one_thread_reads() {
    let dir = tempfile::tempdir().unwrap();
    // Junk between records.
    let mut junk = records(0, 20);
    junk.extend_from_slice(b"some bytes that are not a record\r\n\r\n");
    junk.extend(records(20, 30));
    // 51 records, the 21st's Content-Length (21) declared as `length`.
    let misdeclared = |length: &[u8; 2]| {
        let mut data = records(0, 20);
        let mut bad = record(20, b"a body of some length");
        let at = bad.windows(4).position(|w| w == b": 21").unwrap();
        bad[at + 2..at + 4].copy_from_slice(length);
        data.extend(bad);
        data.extend(records(21, 30));
        data
    };
    // A Content-Length 9 bytes too long, and one too short.
    let long = misdeclared(b"30");
    let short = misdeclared(b"12");
    // A truncated last record.
    let mut cut = records(0, 40);
    let last = record(40, &[b'z'; 500]);
    cut.extend_from_slice(&last[..300]);
    // Junk at the start.
    let mut head = b"not a warc file at first\r\n".to_vec();
    head.extend(records(0, 30));
    for (name, data) in [
        ("junk.warc", junk),
        ("long.warc", long),
        ("short.warc", short),
        ("cut.warc", cut),
        ("head.warc", head),
    ] {
        let t = check_made(dir.path(), name, &data);
        assert!(
            t.iter().any(|t| t[3] >= 1),
            "{name}: no sequential run: {t:?}"
        );
        assert!(t.iter().any(|t| t[1] >= 2), "{name}: no chunk used: {t:?}");
    }
}

#[test]
fn records_with_their_own_warnings_are_still_read_in_chunks() {
    let dir = tempfile::tempdir().unwrap();
    // Every target URI in <...> (a recovery of each record, named by its
    // number and id): the chunks carry the warnings, numbered from the
    // start of the file by the main thread.
    let data: Vec<u8> = records(0, 60)
        .split(|&b| b == b'\n')
        .map(|l| {
            let mut l = l.to_vec();
            if let Some(rest) = l.strip_prefix(b"WARC-Target-URI: ".as_slice()) {
                let uri = rest.strip_suffix(b"\r").unwrap_or(rest).to_vec();
                l = [b"WARC-Target-URI: <".as_slice(), &uri, b">\r"].concat();
            }
            l
        })
        .collect::<Vec<_>>()
        .join(&b'\n');
    let t = check_made(dir.path(), "bracketed.warc", &data);
    // Lenient (tab with -w, then JSON; three chunk sizes each): no
    // sequential run; strict (the last three) fails at the first record.
    assert_eq!(t.len(), 9, "{t:?}");
    assert!(t[..6].iter().all(|t| t[3] == 0 && t[1] >= 4), "{t:?}");
    assert!(t[6..].iter().all(|t| t[1] == 0 && t[3] == 1), "{t:?}");
    let out = bin()
        .args(["-w", "ls", "-j", "4"])
        .arg(dir.path().join("bracketed.warc"))
        .env("WARCHEST_PLAIN_CHUNK", "500")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("bracketed-uri").count(), 60, "{err}");
    assert!(
        err.contains("(record 59, <urn:uuid:00000000-0000-0000-0000-000000000059>)"),
        "{err}"
    );
}

/// `check` reads uncompressed WARC files in chunks too (issue 33), its
/// summary counted per chunk: `-w check -v` (every record listed) with
/// `-j 2` gives `-j 1`'s stdout, stderr and exit status on every plain
/// fixture (valid, wrong and malformed digests, truncated and damaged
/// files), and `--json` on every third one; chunked reads ran.
#[test]
fn every_plain_fixture_checks_the_same_on_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let files = plain_fixtures(dir.path());
    let check = |f: &Path, json: bool, jobs: &str| {
        let mut cmd = bin();
        cmd.args(["-w", "check", "-v", "-j", jobs]);
        if json {
            cmd.arg("--json");
        }
        cmd.arg(f)
            .env("WARCHEST_PLAIN_CHUNK", "997")
            .env("WARCHEST_PLAIN_TRACE", &trace);
        run(&mut cmd)
    };
    let mut failed = 0;
    for (i, f) in files.iter().enumerate() {
        for json in [false, true] {
            if json && i % 3 != 0 {
                continue;
            }
            let one = same_on_two_threads(f, &format!("json {json}"), |f, j| check(f, json, j));
            failed += usize::from(one.0 == 1);
        }
    }
    // Some files fail their check (the comparison covers failures), and
    // the WARC files were checked in chunks, some of them used.
    assert!(failed >= 5, "{failed} failed checks");
    read_in_chunks(&trace);
}

/// `index -j 2` gives `-j 1`'s stdout, stderr and exit status on every
/// plain fixture (POST pairs among them, the records a read in order pairs
/// carried across the cuts), in CDXJ, and in CDX on every third one.
#[test]
fn every_plain_fixture_indexes_the_same_on_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let files = plain_fixtures(dir.path());
    let index = |f: &Path, cdx: bool, jobs: &str| {
        let mut cmd = bin();
        cmd.args(["-w", "index", "-j", jobs]);
        if cdx {
            cmd.args(["--format", "cdx"]);
        }
        cmd.arg(f)
            .env("WARCHEST_PLAIN_CHUNK", "499")
            .env("WARCHEST_PLAIN_TRACE", &trace);
        run(&mut cmd)
    };
    let mut posts = 0;
    for (i, f) in files.iter().enumerate() {
        for cdx in [false, true] {
            if cdx && i % 3 != 0 {
                continue;
            }
            let one = same_on_two_threads(f, &format!("cdx {cdx}"), |f, j| index(f, cdx, j));
            posts += String::from_utf8_lossy(&one.1)
                .matches("__wb_method=post")
                .count();
        }
    }
    assert!(posts >= 4, "{posts} POST keys");
    read_in_chunks(&trace);
}

/// A crawl of request and response pairs (Wget's order and Heritrix's),
/// GETs and POSTs, indexed in chunks of every size from a record's to many
/// records': the entries of `-j 1`, POST keys on both records of a POST
/// pair however the cuts fall, and chunks cut inside a GET pair used (a
/// pair that changes no entry does not stop the chunk after the cut).
#[test]
fn request_and_response_pairs_index_the_same_across_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pairs.warc");
    let mut data = Vec::new();
    let mut n = 0usize;
    let mut rec = |data: &mut Vec<u8>, typ: &str, uri: &str, to: Option<usize>, block: &[u8]| {
        let to = to
            .map(|t| format!("WARC-Concurrent-To: <urn:uuid:00000000-0000-0000-0000-{t:012}>\r\n"))
            .unwrap_or_default();
        let head = format!(
            "WARC/1.1\r\nWARC-Type: {typ}\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{n:012}>\r\n\
             WARC-Date: 2024-05-06T07:08:09Z\r\nWARC-Target-URI: {uri}\r\n{to}\
             Content-Type: application/http; msgtype={typ}\r\nContent-Length: {}\r\n\r\n",
            block.len()
        );
        data.extend_from_slice(head.as_bytes());
        data.extend_from_slice(block);
        data.extend_from_slice(b"\r\n\r\n");
        n += 1;
        n - 1
    };
    for i in 0..60 {
        let uri = format!("http://example.com/p{}?i={i}", i % 7);
        let body = format!("page {i} {}", "x".repeat(i * 13 % 101));
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let post = i % 4 == 1;
        let request = if post {
            format!(
                "POST /p HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 9\r\n\r\nq=item{:03}",
                i % 1000
            )
        } else {
            "GET /p HTTP/1.1\r\nHost: example.com\r\n\r\n".to_string()
        };
        if i % 3 == 0 {
            // Heritrix: the response, then its request.
            let a = rec(&mut data, "response", &uri, None, response.as_bytes());
            rec(&mut data, "request", &uri, Some(a), request.as_bytes());
        } else {
            // Wget: the request, then its response.
            let a = rec(&mut data, "request", &uri, None, request.as_bytes());
            rec(&mut data, "response", &uri, Some(a), response.as_bytes());
        }
    }
    std::fs::write(&file, &data).unwrap();
    let trace = dir.path().join("trace");
    let index = |jobs: &str, chunk: usize| {
        run(bin()
            .args(["index", "--all", "-j", jobs])
            .arg(&file)
            .env("WARCHEST_PLAIN_CHUNK", chunk.to_string())
            .env("WARCHEST_PLAIN_TRACE", &trace))
    };
    let one = index("1", 1000);
    assert_eq!(one.0, 0, "{}", one.2);
    let text = String::from_utf8_lossy(&one.1).into_owned();
    assert_eq!(text.lines().count(), 120);
    // 15 POST pairs: both records keyed by the request's body.
    assert_eq!(text.matches("__wb_method=post&").count(), 30, "{text}");
    for chunk in [150, 311, 450, 777, 1200, 2900, 7000] {
        let two = index("2", chunk);
        assert_eq!((two.0, &two.2), (0, &one.2), "chunk {chunk}");
        assert!(two.1 == one.1, "chunk {chunk}: stdout differs");
    }
    // Only a cut through one of the 15 POST pairs sends the read after it
    // back to one thread (through each of the 45 GET pairs, none does).
    let t = traces(&trace);
    assert_eq!(t.len(), 7, "{t:?}");
    for [_, used, _, runs] in &t {
        assert!(*runs <= 15 && *used > 3 * runs, "{t:?}");
    }
}

/// `stats --json -j 2` gives `-j 1`'s stdout, stderr and exit status on
/// every plain fixture (an uncompressed WARC file counted in chunks, the
/// tables merged as one read fills them), and on a gzip one (its members
/// decoded on the threads); chunked reads ran and were used.
#[test]
fn every_plain_fixture_counts_the_same_on_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let mut files = plain_fixtures(dir.path());
    files.push(super::common::fixture("pywb/example.warc.gz"));
    let stats = |f: &Path, jobs: &str| {
        run(bin()
            .args(["-w", "stats", "--json", "-j", jobs])
            .arg(f)
            .env("WARCHEST_PLAIN_CHUNK", "499")
            .env("WARCHEST_PLAIN_TRACE", &trace))
    };
    let mut records = 0;
    for f in &files {
        let one = same_on_two_threads(f, "stats", stats);
        records += String::from_utf8_lossy(&one.1)
            .matches("\"records\"")
            .count();
    }
    assert!(records >= 200, "{records} counts");
    read_in_chunks(&trace);
}

/// `validate -j 2` of an uncompressed file, its records hashed ahead on
/// another thread (the reader hashing those it reaches first), gives
/// `-j 1`'s findings, counts and exit status on every plain fixture, and
/// on a made file of 3,000 records whose digests are right, wrong or
/// over a chunked body, read while the walker is still hashing.
#[test]
fn every_plain_fixture_validates_the_same_on_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = plain_fixtures(dir.path());
    let made = dir.path().join("digests.warc");
    let sha1 = |b: &[u8]| {
        let mut h = warchest::digest::Hasher::new(warchest::digest::Algorithm::Sha1);
        h.update(b);
        format!(
            "sha1:{}",
            warchest::digest::Encoding::Base32.encode(&h.finalize())
        )
    };
    let mut data = Vec::new();
    for i in 0..3000usize {
        let body: Vec<u8> = (0..(i * 37 % 4000))
            .map(|k| b'a' + (k % 26) as u8)
            .collect();
        let block = if i % 5 == 3 {
            let mut b = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            b.extend(format!("{:x}\r\n", body.len()).bytes());
            b.extend(&body);
            b.extend(b"\r\n0\r\n\r\n");
            b
        } else {
            [
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n".as_slice(),
                &body,
            ]
            .concat()
        };
        let block_digest = if i % 97 == 5 {
            sha1(b"no")
        } else {
            sha1(&block)
        };
        let payload_digest = if i % 89 == 7 {
            sha1(b"no")
        } else {
            sha1(&body)
        };
        let head = format!(
            "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{i:012}>\r\n\
             WARC-Date: 2024-05-06T07:08:09Z\r\nWARC-Target-URI: http://example.com/{i}\r\n\
             Content-Type: application/http; msgtype=response\r\nWARC-Block-Digest: {block_digest}\r\n\
             WARC-Payload-Digest: {payload_digest}\r\nContent-Length: {}\r\n\r\n",
            block.len()
        );
        data.extend(head.as_bytes());
        data.extend(&block);
        data.extend(b"\r\n\r\n");
    }
    std::fs::write(&made, &data).unwrap();
    files.push(made.clone());
    let validate = |f: &Path, jobs: &str| run(bin().args(["validate", "-j", jobs]).arg(f));
    let mut failed = 0;
    for f in &files {
        let one = same_on_two_threads(f, "validate", validate);
        failed += usize::from(one.0 != 0);
    }
    assert!(failed >= 5, "{failed} files with errors");
    // The made file's wrong digests are found: 31 blocks, 34 payloads.
    let (_, out, _) = validate(&made, "2");
    let out = String::from_utf8_lossy(&out);
    assert_eq!(out.matches("WARC-Block-Digest").count(), 31, "{out}");
    assert_eq!(out.matches("WARC-Payload-Digest").count(), 34, "{out}");
}
