//! Every reading command on two threads whatever the source (issue 33):
//! `ls`, `ls --json`, `check`, `index` and `validate` with `-j 2` give
//! stdout, stderr and exit status byte for byte those of `-j 1`, over a
//! local file, an HTTP server (tests/remote/range_server.py, with faults
//! and with 20 ms of latency a request), S3 (moto) and a WACZ, each an
//! uncompressed WARC file (read in chunks: the trace knob shows chunks
//! used), a damaged one and a gzip one (members decoded on the threads).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::bin;
use crate::remote::servers::{Moto, RangeServer};
use crate::remote_jobs::big_members;

/// Remote blocks of 256 KiB and plain chunks of 100 kB: the files (about
/// 4 MB) take many of each.
const BLOCK: u64 = 256 << 10;
const CHUNK: u64 = 100_000;

const COMMANDS: &[&[&str]] = &[
    &["ls"],
    &["ls", "--json"],
    &["check"],
    &["index"],
    &["validate"],
];
/// Over a remote source (slower to read on one thread): `ls --json` is
/// `ls`'s read.
const REMOTE_COMMANDS: &[&[&str]] = &[&["ls"], &["check"], &["index"], &["validate"]];

/// `warchest -w CMD -j JOBS NAME` with `env`, small blocks and chunks,
/// short remote timeouts; status, stdout, stderr.
fn run(
    env: &[(&'static str, String)],
    cmd: &[&str],
    jobs: u32,
    name: &str,
    trace: &Path,
) -> (i32, Vec<u8>, String) {
    let mut c: Command = bin();
    c.arg("-w")
        .args(cmd)
        .arg("-j")
        .arg(jobs.to_string())
        .arg(name)
        .env("WARCHEST_REMOTE_TIMEOUT", "3")
        .env("WARCHEST_REMOTE_RETRIES", "4")
        .env("WARCHEST_REMOTE_BACKOFF_MS", "10")
        .env("WARCHEST_REMOTE_BLOCK", BLOCK.to_string())
        .env("WARCHEST_PLAIN_CHUNK", CHUNK.to_string())
        .env("WARCHEST_PLAIN_TRACE", trace);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run warchest");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The uncompressed twin of `gz`, and a copy with junk between two
/// records past its middle (read sequentially there, in chunks again
/// after it).
fn plain_files(dir: &Path, gz: &Path) -> (PathBuf, PathBuf) {
    let mut plain = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(gz).unwrap())
        .read_to_end(&mut plain)
        .unwrap();
    let p = dir.join("big.warc");
    std::fs::write(&p, &plain).unwrap();
    let at = plain.len() / 2
        + plain[plain.len() / 2..]
            .windows(14)
            .position(|w| w == b"\r\n\r\nWARC/1.1\r\n")
            .unwrap()
        + 4;
    let mut damaged = plain[..at].to_vec();
    damaged.extend_from_slice(b"junk that is not a record\r\n");
    damaged.extend_from_slice(&plain[at..]);
    let d = dir.join("damaged.warc");
    std::fs::write(&d, damaged).unwrap();
    (p, d)
}

/// Runs `commands` on `name` with one and two threads and asserts the
/// same status, stdout and stderr, and some output; the trace lines the
/// two-thread `ls` runs wrote.
fn same_on_two(
    env: &[(&'static str, String)],
    commands: &[&[&str]],
    name: &str,
    trace: &Path,
) -> String {
    let _ = std::fs::remove_file(trace);
    let none = tempfile::NamedTempFile::new().unwrap();
    for cmd in commands {
        let one = run(env, cmd, 1, name, none.path());
        let two = run(env, cmd, 2, name, trace);
        assert!(!one.1.is_empty(), "{cmd:?} {name}: {}", one.2);
        assert_eq!(
            (two.0, &two.2),
            (one.0, &one.2),
            "{cmd:?} {name}: status and stderr"
        );
        assert!(
            two.1 == one.1,
            "{cmd:?} {name}: stdout differs:\n{}\n---\n{}",
            String::from_utf8_lossy(&one.1),
            String::from_utf8_lossy(&two.1)
        );
    }
    std::fs::read_to_string(trace).unwrap_or_default()
}

/// Asserts that a chunked read ran and used chunks.
fn chunks_used(trace: &str, what: &str) {
    let used: Vec<u64> = trace
        .lines()
        .filter_map(|l| l.split_whitespace().skip_while(|w| *w != "used").nth(1))
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(
        !used.is_empty() && used.iter().all(|&n| n >= 2),
        "{what}: {trace}"
    );
}

#[test]
fn two_threads_match_one_on_local_http_s3_and_wacz_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let gz = big_members(dir);
    let (plain, damaged) = plain_files(dir, &gz);
    let trace = dir.join("trace");
    let files = [
        ("big.warc", &plain),
        ("damaged.warc", &damaged),
        ("big.warc.gz", &gz),
    ];

    // Local files.
    for (name, path) in &files {
        let t = same_on_two(&[], COMMANDS, &path.display().to_string(), &trace);
        if !name.ends_with(".gz") {
            chunks_used(&t, name);
        }
    }

    // A WACZ holding the three (each stored, a range of the ZIP).
    let wacz = dir.join("w.wacz");
    let out = bin()
        .args(["wacz", "create"])
        .args(files.iter().map(|(_, p)| p.as_os_str()))
        .arg("-o")
        .arg(&wacz)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, _) in &files {
        let member = format!("{}#archive/{name}", wacz.display());
        let t = same_on_two(&[], COMMANDS, &member, &trace);
        if !name.ends_with(".gz") {
            chunks_used(&t, &member);
        }
    }

    // HTTP, then with faults on the two-thread reads (5xx, a reset mid
    // body, a short answer: retried), then with 20 ms a request.
    let srv = RangeServer::start(dir, 5.0);
    for (name, _) in &files {
        let t = same_on_two(&[], REMOTE_COMMANDS, &srv.url(name), &trace);
        if !name.ends_with(".gz") {
            chunks_used(&t, name);
        }
    }
    let none = tempfile::NamedTempFile::new().unwrap();
    for name in ["big.warc", "big.warc.gz"] {
        let url = srv.url(name);
        for cmd in [&["ls"][..], &["check"], &["validate"]] {
            let one = run(&[], cmd, 1, &url, none.path());
            srv.faults(&["503", "reset", "500", "short", "reset"]);
            let two = run(&[], cmd, 2, &url, none.path());
            assert_eq!(
                (two.0, &two.2),
                (one.0, &one.2),
                "{cmd:?} {url} with faults"
            );
            assert!(two.1 == one.1, "{cmd:?} {url} with faults: stdout differs");
        }
    }
    drop(srv);
    let slow = RangeServer::with_latency(dir, 5.0, 20);
    for (name, path) in [files[0], files[2]] {
        let url = slow.url(name);
        let local = run(&[], &["ls"], 1, &path.display().to_string(), none.path());
        slow.reset_count();
        let two = run(&[], &["ls"], 2, &url, none.path());
        assert_eq!(two.0, 0, "{url}: {}", two.2);
        let local_out =
            String::from_utf8_lossy(&local.1).replace(&path.display().to_string(), &url);
        assert_eq!(String::from_utf8_lossy(&two.1), local_out, "{url}");
        // Read in blocks, each fetched once or twice: never a request a
        // read, whose latency the read-ahead could not hide.
        let blocks = std::fs::metadata(path).unwrap().len().div_ceil(BLOCK);
        let (gets, _) = slow.count();
        assert!(
            (blocks..=2 * blocks + 4).contains(&gets),
            "{url}: {gets} GETs for {blocks} blocks"
        );
    }
    drop(slow);

    // S3.
    let moto = Moto::start();
    let env = moto.env();
    let keys: Vec<_> = [files[0], files[2]]
        .iter()
        .map(|(n, p)| (format!("crawl/{n}"), (*p).clone()))
        .collect();
    moto.upload("bucket", &keys);
    // The damaged file's reads are HTTP's: the store is not what they test.
    for (name, _) in [files[0], files[2]] {
        let url = format!("s3://bucket/crawl/{name}");
        let t = same_on_two(&env, REMOTE_COMMANDS, &url, &trace);
        if !name.ends_with(".gz") {
            chunks_used(&t, &url);
        }
    }
}

/// Memory stays bounded whatever the source's size (ignored in the
/// default run: it writes and serves a 165 MB file; docs/testing.md):
/// `ls -j 2` and `check -j 2` of an uncompressed WARC file over HTTP,
/// read in chunks from 1 MiB blocks within the byte budget, and of a
/// WACZ member, peak RSS (from /usr/bin/time) under 100 MiB, less than
/// half the file.
#[test]
#[ignore]
fn memory_stays_bounded_on_a_large_remote_or_wacz_source() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let path = dir.join("large.warc");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let body = vec![b'x'; 40_000];
    for i in 0..8000usize {
        let len = 1000 + (i * 7919) % 39_000;
        write!(
            f,
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{i:012}>\r\nWARC-Target-URI: http://example.com/{i}\r\nContent-Length: {len}\r\n\r\n"
        )
        .unwrap();
        f.write_all(&body[..len]).unwrap();
        f.write_all(b"\r\n\r\n").unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let size = std::fs::metadata(&path).unwrap().len();
    let wacz = dir.join("w.wacz");
    let out = bin()
        .args(["wacz", "create"])
        .arg(&path)
        .arg("-o")
        .arg(&wacz)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let srv = RangeServer::start(dir, 5.0);
    let member = format!("{}#archive/large.warc", wacz.display());
    for name in [srv.url("large.warc"), member] {
        for cmd in ["ls", "check"] {
            let out = Command::new("/usr/bin/time")
                .args(["-f", "maxrss=%M"])
                .arg(crate::common::bin_path())
                .args([cmd, "-j", "2", &name])
                .stdout(std::process::Stdio::null())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{cmd} {name}: {err}");
            let kib: u64 = err
                .lines()
                .filter_map(|l| l.strip_prefix("maxrss="))
                .next_back()
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert!(
                kib < 100 << 10 && kib << 10 < size,
                "{cmd} {name}: {kib} KiB for {size} bytes"
            );
        }
    }
}
