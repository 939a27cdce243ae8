//! Reading commands on URLs with `-j 2` (ls, check, index, validate): the object is decoded on two
//! threads that read it in blocks at offsets (`RemoteBlocks`), over S3
//! (moto) and HTTP (tests/remote/range_server.py), with the output of the
//! same command on the local file; faults retried, a cut object named.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{bin, fixture};

use crate::remote::servers::{Moto, RangeServer};

/// Blocks of 64 KiB, so that even the fixtures take many blocks.
const BLOCK: u64 = 64 << 10;

/// Runs warchest with `env`, short remote timeouts and small blocks.
fn run_env(env: &[(&'static str, String)], args: &[&str]) -> (i32, String, String) {
    let mut c: Command = bin();
    c.args(args)
        .env("WARCHEST_REMOTE_TIMEOUT", "3")
        .env("WARCHEST_REMOTE_RETRIES", "4")
        .env("WARCHEST_REMOTE_BACKOFF_MS", "10")
        .env("WARCHEST_REMOTE_BLOCK", BLOCK.to_string());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run warchest");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A gzip WARC like the benchmark corpus: one member per record, small
/// records between large ones (up to 1.4 MB, past a job's chunk and the
/// block size), written into `dir`.
pub(crate) fn big_members(dir: &Path) -> PathBuf {
    let mut s = 0x9e37_79b9u32;
    let mut noise = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                if i % 3 == 0 { b'x' } else { s as u8 }
            })
            .collect()
    };
    let mut out = Vec::new();
    for i in 0..24usize {
        let len = if i % 4 == 1 {
            150_000 + i * 50_000
        } else {
            900 + i * 37
        };
        let payload = noise(len);
        let mut rec = format!(
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{i:012}>\r\nWARC-Date: 2024-01-01T00:00:{:02}Z\r\nWARC-Target-URI: http://example.com/{i}\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\n\r\n",
            i % 60
        )
        .into_bytes();
        rec.extend_from_slice(&payload);
        rec.extend_from_slice(b"\r\n\r\n");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&rec).unwrap();
        out.extend(gz.finish().unwrap());
    }
    let p = dir.join("big.warc.gz");
    std::fs::write(&p, out).unwrap();
    p
}

/// The files compared: multi-member gzip fixtures and the big one, copied
/// into one directory (which the HTTP server serves).
fn files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut v = Vec::new();
    for f in ["pywb/iana.warc.gz", "warcio/example.warc.gz"] {
        let name = f.rsplit('/').next().unwrap().to_string();
        std::fs::copy(fixture(f), dir.join(&name)).unwrap();
        v.push((name.clone(), dir.join(name)));
    }
    v.push(("big.warc.gz".into(), big_members(dir)));
    v
}

const COMMANDS: &[&[&str]] = &[
    &["ls", "-j", "2"],
    &["check", "-j", "2"],
    &["index", "-j", "2"],
];

/// `cmd` on `url` gives what it gives on `local` (names aside).
fn same_as_local(env: &[(&'static str, String)], cmd: &[&str], url: &str, local: &Path) {
    let local = local.display().to_string();
    let mut r = cmd.to_vec();
    r.push(url);
    let mut l = cmd.to_vec();
    l.push(&local);
    let (rc, rout, rerr) = run_env(env, &r);
    let (lc, lout, lerr) = run_env(&[], &l);
    assert_eq!(lc, 0, "{cmd:?} {local}: {lerr}");
    assert_eq!(rc, lc, "{cmd:?} {url}: {rerr}");
    assert!(!lout.is_empty(), "{cmd:?} {local}");
    assert_eq!(rout.replace(url, &local), lout, "{cmd:?} {url}: {rerr}");
}

#[test]
fn jobs_on_s3_and_http_match_the_local_files_through_faults_and_a_cut_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let files = files(tmp.path());

    // S3.
    let moto = Moto::start();
    let env = moto.env();
    let keys: Vec<_> = files
        .iter()
        .map(|(n, p)| (format!("crawl/{n}"), p.clone()))
        .collect();
    moto.upload("bucket", &keys);
    for (name, path) in &files {
        for cmd in COMMANDS {
            same_as_local(&env, cmd, &format!("s3://bucket/crawl/{name}"), path);
        }
    }
    drop(moto);

    // HTTP: the same, and the object is read in blocks (one GET each, a
    // few fetched again at most), not in the growing ranges of one thread.
    let srv = RangeServer::start(tmp.path(), 5.0);
    for (name, path) in &files {
        for cmd in COMMANDS {
            srv.reset_count();
            same_as_local(&[], cmd, &srv.url(name), path);
            let blocks = std::fs::metadata(path).unwrap().len().div_ceil(BLOCK);
            let (gets, _) = srv.count();
            assert!(
                (blocks..=2 * blocks + 4).contains(&gets),
                "{cmd:?} {name}: {gets} GETs for {blocks} blocks"
            );
        }
    }

    // Faults (5xx, a connection reset mid-body, a short answer) are retried.
    let (name, path) = &files[2];
    srv.faults(&["503", "reset", "500", "short", "reset"]);
    same_as_local(&[], &["ls", "-j", "2"], &srv.url(name), path);

    // A cut object is an error naming the URL and the byte where it stops,
    // whatever the command, never a shorter output that passes.
    let size = std::fs::metadata(path).unwrap().len();
    let cut = size * 2 / 3 + 7;
    srv.cut(name, cut);
    let url = srv.url(name);
    for cmd in COMMANDS {
        let mut r = cmd.to_vec();
        r.push(&url);
        let (rc, _, rerr) = run_env(&[], &r);
        assert_ne!(rc, 0, "{cmd:?}: {rerr}");
        assert!(
            rerr.contains(&url) && rerr.contains(&format!("at byte {cut}")),
            "{cmd:?}: {rerr}"
        );
    }
}

/// `WARCHEST_REMOTE_STATS` at `0` or empty prints no stats line, and on
/// prints exactly one for the object, every time (the command line prints
/// it when its command is over: printed only when the object was dropped,
/// it was missing whenever a decoding pool thread still held the object
/// as the process exited); a size knob with a unit is read as the
/// command's size flags read one (`warchest::size`: `64KiB` blocks a GET
/// each, `1MB` blocks of 1,000,000 bytes), one that cannot be read is said
/// once on stderr and its default used, the listing the same.
#[test]
fn remote_stats_off_and_size_knobs_with_suffixes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = big_members(tmp.path());
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    let srv = RangeServer::start(tmp.path(), 5.0);
    let url = srv.url(&name);
    let ls = ["ls", "-j", "2", url.as_str()];
    let lines = |err: &str, what: &str| err.lines().filter(|l| l.contains(what)).count();
    let (rc, want, err) = run_env(&[], &ls);
    assert!(rc == 0 && !want.is_empty(), "{err}");
    for off in ["0", ""] {
        let (rc, out, err) = run_env(&[("WARCHEST_REMOTE_STATS", off.into())], &ls);
        assert!(rc == 0 && out == want, "{off:?}: {err}");
        assert_eq!(lines(&err, "remote blocks of"), 0, "{off:?}: {err}");
    }
    for _ in 0..3 {
        let (rc, out, err) = run_env(&[("WARCHEST_REMOTE_STATS", "1".into())], &ls);
        assert!(rc == 0 && out == want, "{err}");
        assert_eq!(lines(&err, "remote blocks of"), 1, "{err}");
        assert_eq!(
            lines(&err, &format!("remote blocks of {url}: ")),
            1,
            "{err}"
        );
    }
    let env = [
        ("WARCHEST_REMOTE_BLOCK", "1MB".into()),
        ("WARCHEST_REMOTE_BUDGET_MAX", "lots".into()),
    ];
    srv.reset_count();
    let (rc, out, err) = run_env(&env, &ls);
    assert!(rc == 0 && out == want, "{err}");
    assert_eq!(
        lines(&err, "WARCHEST_REMOTE_BUDGET_MAX=\"lots\""),
        1,
        "{err}"
    );
    assert_eq!(lines(&err, "is not a byte count"), 1, "{err}");
    let blocks = |b: u64| std::fs::metadata(&path).unwrap().len().div_ceil(b);
    let (big, _) = srv.count();
    srv.reset_count();
    let (rc, out, err) = run_env(&[("WARCHEST_REMOTE_BLOCK", "64KiB".into())], &ls);
    assert!(rc == 0 && out == want, "{err}");
    let (small, _) = srv.count();
    // 1MB blocks: a GET each (a few again at most); 64KiB: about fifteen
    // times as many blocks.
    assert!(
        big <= 2 * blocks(1_000_000) + 4,
        "{big} GETs with 1MB blocks"
    );
    assert!(small >= blocks(BLOCK), "{small} GETs with 64KiB blocks");
    assert!(
        small > 2 * big,
        "{small} GETs with 64KiB blocks, {big} with 1MB"
    );
}

/// `WARCHEST_REMOTE_STATS` on a read on one thread (an object read by
/// ranges, not blocks): one line naming the object with its requests
/// and bytes asked, none when the variable is off.
#[test]
fn remote_stats_of_a_read_by_ranges() {
    let tmp = tempfile::tempdir().unwrap();
    let path = big_members(tmp.path());
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    let srv = RangeServer::start(tmp.path(), 5.0);
    let url = srv.url(&name);
    let ls = ["ls", "-j", "1", url.as_str()];
    let lines = |err: &str, what: &str| err.lines().filter(|l| l.contains(what)).count();
    let (rc, want, err) = run_env(&[("WARCHEST_REMOTE_STATS", "0".into())], &ls);
    assert!(rc == 0 && !want.is_empty(), "{err}");
    assert_eq!(lines(&err, "remote ranges of"), 0, "{err}");
    let (rc, out, err) = run_env(&[("WARCHEST_REMOTE_STATS", "1".into())], &ls);
    assert!(rc == 0 && out == want, "{err}");
    let line = format!("remote ranges of {url}: ");
    assert_eq!(lines(&err, &line), 1, "{err}");
    // The bytes asked cover the object at least once.
    let size = std::fs::metadata(&path).unwrap().len();
    let asked: u64 = err
        .lines()
        .find(|l| l.contains(&line))
        .and_then(|l| l.split(", ").find(|p| p.ends_with(" bytes asked")))
        .and_then(|p| p.trim_end_matches(" bytes asked").parse().ok())
        .unwrap_or_else(|| panic!("no bytes asked in: {err}"));
    assert!(asked >= size, "{asked} bytes asked of {size}: {err}");
}
