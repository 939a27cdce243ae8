//! Crash safety: a crawl killed with SIGKILL at random moments and resumed
//! each time fetches what an uninterrupted crawl fetches, fetches again
//! only what was in flight, and leaves files that validate.
//!
//! The crawl runs in a child process: this test binary run again with
//! `--ignored --exact resume::child_crawl` (the child's entry point below,
//! ignored in normal runs), its crawl directory in the environment.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use warchest_crawl::config::{CrawlConfig, SAVED_CONFIG};
use warchest_crawl::engine::{Crawl, Ending};

use crate::crawl::{check_files, expected};
use crate::web::{self, GEN, Web};

const DIR_VAR: &str = "WARCHEST_CRAWL_TEST_DIR";
const CONFIG_VAR: &str = "WARCHEST_CRAWL_TEST_CONFIG";
const WORKERS: usize = 3;
/// Set: the child gives both writers of its pool a file before it runs.
const BOTH_VAR: &str = "WARCHEST_CRAWL_TEST_BOTH_WRITERS";

/// The child: opens the crawl in $DIR (new with $CONFIG, or resumed from
/// its saved configuration) and runs it.
#[test]
#[ignore = "the kill test's child process"]
fn child_crawl() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let saved = dir.join(SAVED_CONFIG);
    let text = if saved.exists() {
        std::fs::read_to_string(&saved).unwrap()
    } else {
        std::env::var(CONFIG_VAR).unwrap()
    };
    let cfg = CrawlConfig::from_toml(&text).unwrap();
    let c = Crawl::open(&dir, cfg, &text, Arc::new(AtomicBool::new(false))).unwrap();
    if std::env::var_os(BOTH_VAR).is_some() {
        crate::crawl::open_both_writers(&c);
    }
    let s = c.run(&|_| {}).unwrap();
    assert_eq!(s.ending, Ending::Finished);
}

fn config(w: &Web) -> String {
    format!(
        "seeds = [\"{}\", \"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\nextra-hops = 1\nworkers = {WORKERS}\ntimeout = 5.0\nmax-size = 10000\n{}",
        w.url("a.test", "/"),
        w.url("d.test", "/gen/0"),
        w.resolve_toml()
    )
}

/// The crawl in a child process (this binary's ignored `child_crawl`);
/// `stderr` is kept for a failure's message or dropped.
fn child(dir: &std::path::Path, cfg: &str, stderr: Stdio) -> std::process::Child {
    child_cmd(dir, cfg).stderr(stderr).spawn().unwrap()
}

/// The command of [`child`], stdout dropped.
fn child_cmd(dir: &std::path::Path, cfg: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--ignored",
        "--exact",
        "resume::child_crawl",
        "--test-threads",
        "1",
        // A panic's message goes to stderr, kept for a failure.
        "--nocapture",
    ])
    .env(DIR_VAR, dir)
    .env(CONFIG_VAR, cfg)
    .stdout(Stdio::null());
    c
}

/// A small pseudo-random sequence (the seed is printed to replay a failure).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below.max(1)
    }
}

/// Three kills in the default run (seconds); the ten of the issue run by
/// hand (`killed_ten_times...`, docs/testing.md).
#[test]
fn killed_three_times_and_resumed_fetches_what_one_run_fetches() {
    killed_and_resumed(3);
}

/// The ten kills. The CI failure once seen here (the last resume
/// exited with a failure) was a kill between creating a WARC file and
/// flushing its first records: the empty `.open` file made the next open
/// fail (`a_kills_leftovers_are_repaired_when_the_crawl_resumes`).
#[test]
#[ignore = "about 30 s: run by hand (docs/testing.md)"]
fn killed_ten_times_and_resumed_fetches_what_one_run_fetches() {
    killed_and_resumed(10);
}

fn killed_and_resumed(times: usize) {
    let (all, span): (BTreeSet<String>, Duration) = {
        let w = web::start();
        let mut e = expected(&w);
        e.extend((0..GEN).map(|i| w.url("d.test", &format!("/gen/{i}"))));
        // The uninterrupted crawl, timed (the kills fall within its span).
        let out = tempfile::tempdir().unwrap();
        let t0 = Instant::now();
        let mut c = child(&out.path().join("c"), &config(&w), Stdio::null());
        assert!(c.wait().unwrap().success());
        let span = t0.elapsed();
        eprintln!("uninterrupted crawl: {span:?}");
        let got: BTreeSet<String> = w
            .requests()
            .into_iter()
            .filter(|r| !r.ends_with("/robots.txt"))
            .collect();
        assert_eq!(got, e, "the uninterrupted crawl");
        // Each run has its own server port: URLs are compared without it.
        (got.into_iter().map(|u| strip_port(&u)).collect(), span)
    };
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kill schedule seed {seed}");
    let mut rng = Lcg(seed);
    let cfg = config(&w);
    let mut kills = 0;
    for _ in 0..times {
        let mut c = child(&dir, &cfg, Stdio::piped());
        let at = Duration::from_millis(20 + rng.next(span.as_millis() as u64 + 1));
        std::thread::sleep(at);
        if c.try_wait().unwrap().is_none() {
            c.kill().unwrap(); // SIGKILL
            kills += 1;
        }
        let out = c.wait_with_output().unwrap();
        // Killed, or finished: never a failure (an open that fails).
        assert!(
            out.status.success() || out.status.code().is_none(),
            "a resume (seed {seed}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Then to the end.
    let c = child(&dir, &cfg, Stdio::piped());
    let out = c.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the last resume (seed {seed}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs: Vec<String> = w
        .requests()
        .into_iter()
        .filter(|r| !r.ends_with("/robots.txt"))
        .map(|u| strip_port(&u))
        .collect();
    let got: BTreeSet<String> = reqs.iter().cloned().collect();
    assert_eq!(got, all, "seed {seed}");
    // Fetched twice: only what was in flight at a kill (at most one URI
    // per worker per kill).
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &reqs {
        *counts.entry(r).or_default() += 1;
    }
    let again: usize = counts.values().map(|n| n - 1).sum();
    assert!(
        again <= kills * WORKERS,
        "seed {seed}: {again} fetched again after {kills} kills: {counts:?}"
    );
    // No .open file is left, and every file validates.
    let left: Vec<_> = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "open"))
        .collect();
    assert!(left.is_empty());
    check_files(&dir);
}

/// Kills the crawl (SIGKILL) once `ready` holds, waiting at most 60 s
/// (its `Err` says what is missing then); the crawl ending before fails
/// the test with its standard error.
fn kill_when(
    c: &mut std::process::Child,
    err_path: &std::path::Path,
    mut ready: impl FnMut() -> Result<(), String>,
) {
    let t0 = Instant::now();
    loop {
        let missing = match ready() {
            Ok(()) => break,
            Err(m) => m,
        };
        if let Some(st) = c.try_wait().unwrap() {
            panic!(
                "the crawl ended ({st}) before the kill: {}",
                std::fs::read_to_string(err_path).unwrap_or_default()
            );
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{missing}");
        std::thread::sleep(Duration::from_millis(20));
    }
    c.kill().unwrap(); // SIGKILL
    assert_eq!(c.wait().unwrap().code(), None, "killed, not ended");
}

fn strip_port(u: &str) -> String {
    let (scheme, rest) = u.split_once("://").unwrap();
    let (auth, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    format!("{scheme}://{}{path}", auth.split(':').next().unwrap())
}

/// What a kill at an unlucky moment leaves, each repaired by the next open:
/// an empty `.open` file (killed between creating it and flushing its first
/// records), one holding only a cut first record, CDXJ lines of a file
/// whose listing in `indexed.txt` the kill prevented (indexed again), and
/// a torn last line of crawl.log. Each used to fail the resume or its
/// checks.
#[test]
fn a_kills_leftovers_are_repaired_when_the_crawl_resumes() {
    use crate::crawl::{config, crawl, resume};
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let s = crawl(&dir, &config(&w, "max-pages = 2"));
    assert_eq!(s.ending, Ending::Budget);
    let archive = dir.join("archive");
    let whole = crate::crawl::warc_files(&dir)[0].clone();
    std::fs::write(
        archive.join("crawl-20260101000000000-00090-x.warc.gz.open"),
        b"",
    )
    .unwrap();
    let first = std::fs::read(&whole).unwrap();
    std::fs::write(
        archive.join("crawl-20260101000000001-00091-x.warc.gz.open"),
        &first[..first.len().min(200)],
    )
    .unwrap();
    // The kill came after the CDXJ lines and before the listing.
    let listed = dir.join("indexes/indexed.txt");
    let text = std::fs::read_to_string(&listed).unwrap();
    let kept: Vec<&str> = text.lines().collect();
    assert!(!kept.is_empty());
    let mut cut = kept[..kept.len() - 1].join("\n");
    if !cut.is_empty() {
        cut.push('\n');
    }
    std::fs::write(&listed, cut).unwrap();
    let log = dir.join("logs/crawl.log");
    let mut l = std::fs::read(&log).unwrap();
    l.extend_from_slice(b"2026-01-01T00:00:00.000Z   200       ");
    std::fs::write(&log, l).unwrap();

    let s = resume(&dir, |t| t.replace("max-pages = 2", "max-pages = 0"));
    assert_eq!(s.ending, Ending::Finished);
    assert_eq!(
        s.recovered.iter().filter(|r| r.contains("removed")).count(),
        2,
        "{:#?}",
        s.recovered
    );
    let left: Vec<_> = std::fs::read_dir(&archive)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".open") || n.contains("0009"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Every crawl.log line whole: Heritrix's 12 columns at least.
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        assert!(line.split_whitespace().count() >= 11, "{line}");
    }
    // The CDXJ equals cdxj-indexer's (a file indexed twice would not).
    check_files(&dir);
}

/// A crawl with `warc-writers = 2` killed (SIGKILL) with both writers'
/// files open: the resume closes both (each reported), every record in
/// them reads back (warchest's validator, warcio, cdxj-indexer: the
/// `check_files` of every test crawl), and the files the resumed run
/// writes take serials above the higher of the two.
#[test]
fn a_kill_with_both_writers_files_open_is_closed_on_resume() {
    use crate::crawl::{check_files, open_files, records, resume};
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    // e.test/hold, a seed, is held until the kill: the crawl is still
    // running then, however fast or slow the machine.
    w.hold("e.test/hold");
    let cfg = config(&w)
        .replace(
            "seeds = [",
            &format!("seeds = [\"{}\", ", w.url("e.test", "/hold")),
        )
        .replace("timeout = 5.0", "timeout = 120.0")
        .replace("max-size = 10000", "max-size = 10000\nwarc-writers = 2");
    assert!(cfg.contains("warc-writers = 2") && cfg.contains("timeout = 120.0"));
    let err_path = out.path().join("child.err");
    let err_file = std::fs::File::create(&err_path).unwrap();
    let mut c = child_cmd(&dir, &cfg)
        .env(BOTH_VAR, "1")
        .stderr(err_file)
        .spawn()
        .unwrap();
    // Killed once both files are there and the crawl's first fetches are
    // logged (their records are flushed before their log lines).
    let log = dir.join("logs/crawl.log");
    kill_when(&mut c, &err_path, || {
        let opens = if dir.join("archive").exists() {
            open_files(&dir)
        } else {
            Vec::new()
        };
        let lines = std::fs::read_to_string(&log)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        let held = w.requests().contains(&w.url("e.test", "/hold"));
        (opens.len() == 2 && lines >= 2 && held)
            .then_some(())
            .ok_or_else(|| format!("no two .open files and two fetches: {opens:?}, {lines} lines"))
    });
    let opens = open_files(&dir);
    assert_eq!(opens.len(), 2, "{opens:?}");
    let serial = |p: &std::path::Path| -> u64 {
        // crawl-TIMESTAMP-SERIAL-host.warc.gz[.open]
        let n = p.file_name().unwrap().to_str().unwrap();
        n.split('-').nth(2).unwrap().parse().unwrap()
    };
    let highest = opens.iter().map(|p| serial(p)).max().unwrap();
    w.release();
    let s = resume(&dir, |t| t);
    assert_eq!(s.ending, Ending::Finished);
    // Both closed, each reported under its final name.
    for o in &opens {
        let fin = o.with_extension("");
        assert!(fin.exists(), "{} closed", fin.display());
        let name = fin.display().to_string();
        assert!(
            s.recovered
                .iter()
                .any(|r| r.starts_with(&name) && r.contains("closed")),
            "{name}: {:#?}",
            s.recovered
        );
    }
    assert!(open_files(&dir).is_empty());
    assert!(!s.files.is_empty());
    for f in &s.files {
        assert!(serial(f) > highest, "{} after {highest}", f.display());
    }
    // The records written before the kill, one in each file, read back.
    let recs = records(&dir);
    for u in ["urn:test:writer0", "urn:test:writer1"] {
        assert!(
            recs.iter()
                .any(|r| r.contains(&format!("WARC-Target-URI: {u}\r\n"))),
            "{u}"
        );
    }
    check_files(&dir);
}

/// A frame queued behind a held request gains a page's standing (another
/// host's page links to it) and the crawl is killed (SIGKILL) before it is
/// fetched: the resumed crawl fetches it as a page (the frontier's
/// `linked` table, journaled, survives the kill).
#[test]
fn a_frames_page_standing_survives_a_kill() {
    use crate::crawl::{page_urls, resume};
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    // e.test/kill/held, a frame of the seed queued before x.html, is held
    // until the kill: x.html (one connection a host) waits behind it.
    w.hold("e.test/kill/held");
    let cfg = format!(
        "seeds = [\"{}\", \"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\nworkers = {WORKERS}\ntimeout = 120.0\n{}",
        w.url("e.test", "/kill/"),
        w.url("b.test", "/kill/"),
        w.resolve_toml()
    );
    let err_path = out.path().join("child.err");
    let mut c = child(&dir, &cfg, std::fs::File::create(&err_path).unwrap().into());
    // b.test/kill/after is taken only once its host's previous URI,
    // linker, is complete: the link to x.html is journaled by then.
    let after = w.url("b.test", "/kill/after");
    kill_when(&mut c, &err_path, || {
        let r = w.requests();
        r.contains(&after)
            .then_some(())
            .ok_or_else(|| format!("{after} not fetched: {r:?}"))
    });
    let x = w.url("e.test", "/kill/x.html");
    assert!(!w.requests().contains(&x), "x.html fetched before the kill");
    w.release();
    let s = resume(&dir, |t| t);
    assert_eq!(s.ending, Ending::Finished);
    assert!(w.requests().contains(&x), "x.html fetched after the resume");
    let pages = page_urls(&dir);
    assert!(pages.contains(&x), "{pages:?}");
    assert!(!pages.contains(&w.url("e.test", "/kill/held")), "{pages:?}");
    // x.html's crawl.log line gives it a page's path.
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let line = log
        .lines()
        .find(|l| l.split_whitespace().nth(3) == Some(x.as_str()))
        .unwrap_or_else(|| panic!("no line for {x} in\n{log}"));
    assert_eq!(line.split_whitespace().nth(4), Some("L"), "{line}");
}
