//! `warchest crawl` (issue 29): the command on the crawl crate's test web,
//! served on loopback by the test.

use std::process::{Command, Stdio};
use std::time::Duration;

use warchest_crawl::testweb::{TestWeb, TestWebConfig};

use crate::common::{bin, run};

fn web() -> TestWeb {
    TestWeb::start(TestWebConfig {
        sites: 1,
        pages: 8,
        special: false,
        ..TestWebConfig::default()
    })
    .unwrap()
}

fn crawl_args(w: &TestWeb, dir: &std::path::Path) -> Vec<String> {
    let mut a = vec![
        "crawl".to_string(),
        w.url("site0.test", "/").to_string(),
        "-o".into(),
        dir.display().to_string(),
        "--delay-factor".into(),
        "0".into(),
        "--min-delay".into(),
        "0".into(),
        "--max-delay".into(),
        "0".into(),
        "--resolve-only".into(),
    ];
    for (h, addr) in w.hosts() {
        a.push("--resolve".into());
        a.push(format!("{h}:{}", addr.ip()));
    }
    a
}

#[test]
fn crawl_writes_a_site_and_a_wacz_and_refuses_to_mix_crawls() {
    let w = web();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let mut args = crawl_args(&w, &dir);
    args.push("--wacz".into());
    let (code, _, err) = run(bin().args(&args));
    assert_eq!(code, 0, "{err}");
    let served: std::collections::BTreeSet<String> = w.served_urls().into_iter().collect();
    for u in w.site_urls() {
        assert!(served.contains(&u), "{u} not fetched: {err}");
    }
    assert!(w.served_twice().is_empty(), "{:?}", w.served_twice());
    let wacz = dir.join("crawl.wacz");
    let (code, text, err) = run(bin().args(["wacz", "validate"]).arg(&wacz));
    assert_eq!(code, 0, "{}{err}", String::from_utf8_lossy(&text));
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    assert!(log.lines().count() >= w.site_urls().len(), "{log}");
    // The same -o again: refused, the crawl there is kept.
    let (code, _, err) = run(bin().args(&args));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--resume"), "{err}");
}

#[test]
fn sigint_stops_a_crawl_that_resume_finishes() {
    let w = web();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let mut args = crawl_args(&w, &dir);
    // Slow enough to be stopped half way: 0.3 s between two fetches.
    for (i, a) in args.clone().iter().enumerate() {
        if a == "--min-delay" || a == "--max-delay" {
            args[i + 1] = "0.3".into();
        }
    }
    let child = bin()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the crawl has fetched (its handler is set by then), not after a
    // fixed time, which a slow machine can spend starting the process: a
    // SIGINT before the handler kills it (no exit code).
    let t0 = std::time::Instant::now();
    while w.served_urls().len() < 2 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // Stopped before the end: exit 1 (resumable), so `&&` does not go on.
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("interrupted") && err.contains("--resume"),
        "{err}"
    );
    let before = w.served_urls().len();
    assert!(before < w.site_urls().len(), "stopped early: {err}");
    let (code, _, err) = run(bin().arg("crawl").arg("--resume").arg(&dir).args([
        "--min-delay",
        "0",
        "--max-delay",
        "0",
    ]));
    assert_eq!(code, 0, "{err}");
    let served: std::collections::BTreeSet<String> = w.served_urls().into_iter().collect();
    for u in w.site_urls() {
        assert!(served.contains(&u), "{u} not fetched: {err}");
    }
    // robots.txt is fetched again by the new run; nothing else twice.
    let twice: Vec<_> = w
        .served_twice()
        .into_keys()
        .filter(|u| !u.ends_with("/robots.txt"))
        .collect();
    assert!(twice.is_empty(), "{twice:?}");
}

/// A frontier journal damaged in its middle (the changes after the
/// damage discarded) makes the resumed crawl exit 1, though it finishes
/// with no URI failed. The crawl is killed (SIGKILL) half way, so its
/// journal is left, then the second of its records is damaged.
#[test]
fn a_journal_damaged_in_its_middle_makes_the_resumed_crawl_exit_1() {
    let w = web();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let mut args = crawl_args(&w, &dir);
    for (i, a) in args.clone().iter().enumerate() {
        if a == "--min-delay" || a == "--max-delay" {
            args[i + 1] = "0.3".into();
        }
    }
    // No checkpoint starts the journal afresh before the kill.
    args.extend(["--checkpoint-interval".into(), "3600".into()]);
    let mut child = bin()
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // robots.txt, the seed and two pages: a change journaled for each.
    let t0 = std::time::Instant::now();
    while w.served_urls().len() < 4 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        w.served_urls().len() < w.site_urls().len(),
        "killed before the end"
    );
    let journal = dir.join("frontier.journal");
    let mut data = std::fs::read(&journal).unwrap();
    // docs/crawl.md's layout: a 12-byte header, then records of a length
    // (u32 LE), a CRC-32 and the payload.
    let mut starts = Vec::new();
    let mut at = 12;
    while at + 8 <= data.len() {
        starts.push(at);
        at += 8 + u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
    }
    assert!(starts.len() >= 3, "{} records", starts.len());
    data[starts[1] + 8] ^= 0xff;
    std::fs::write(&journal, &data).unwrap();
    // A copy resumed with -q: the note that says why it exits 1 is said
    // all the same.
    let quiet = dir.with_extension("quiet");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(&dir)
        .arg(&quiet)
        .status()
        .unwrap();
    assert!(copied.success());
    let delays = ["--min-delay", "0", "--max-delay", "0"];
    let (code, _, err) = run(bin().arg("crawl").arg("--resume").arg(&dir).args(delays));
    assert!(err.contains("in its middle"), "{err}");
    assert!(err.contains(" (0 failed)"), "{err}");
    assert!(!err.contains("interrupted"), "{err}");
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = run(bin()
        .args(["-q", "crawl", "--resume"])
        .arg(&quiet)
        .args(delays));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("in its middle"), "-q: {err}");
}

/// A WARC record, as text: its type, target, content type and block.
fn warc_record(typ: &str, url: &str, content_type: &str, block: &str) -> String {
    format!(
        "WARC/1.1\r\nWARC-Type: {typ}\r\nWARC-Target-URI: {url}\r\n\
WARC-Date: 2026-11-29T06:00:00Z\r\nWARC-Record-ID: <urn:uuid:{:032x}>\r\n\
Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{block}\r\n\r\n",
        record_id(url, typ),
        block.len()
    )
}

/// A stable, distinct record id of (`url`, `typ`).
fn record_id(url: &str, typ: &str) -> u128 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (url, typ).hash(&mut h);
    u128::from(h.finish())
}

/// `wacz create` of a WARC the lenient reader recovers from (a header
/// with bare LFs, garbage after the last record) succeeds and counts the
/// recoveries on stderr, one line per file; of a clean WARC it says none.
#[test]
fn wacz_create_counts_the_recoveries_of_its_inputs() {
    let d = tempfile::tempdir().unwrap();
    let http = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 4\r\n\r\n<p>x";
    let resp = |u: &str| warc_record("response", u, "application/http; msgtype=response", http);
    let clean = d.path().join("clean.warc");
    std::fs::write(&clean, resp("http://c.test/")).unwrap();
    let bare = resp("http://b.test/");
    let (head, rest) = bare.split_once("\r\n\r\n").unwrap();
    let bare_lf = d.path().join("bare-lf.warc");
    std::fs::write(
        &bare_lf,
        format!("{}\n\n{rest}", head.replace("\r\n", "\n")),
    )
    .unwrap();
    let garbage = d.path().join("garbage.warc");
    let mut text = resp("http://g.test/");
    let at = text.len();
    text.push_str("trailing garbage\n");
    std::fs::write(&garbage, text).unwrap();
    for (input, line) in [
        (&bare_lf, format!("{}: ", bare_lf.display())),
        (
            &garbage,
            format!(
                "{}: 1 recovery, the first at offset {at}",
                garbage.display()
            ),
        ),
    ] {
        let out = d.path().join("x.wacz");
        let _ = std::fs::remove_file(&out);
        let (code, _, err) = run(bin().args(["wacz", "create", "-o"]).arg(&out).arg(input));
        assert_eq!(code, 0, "{err}");
        assert!(err.contains(&line), "{err}");
        assert!(err.contains(", the first at offset "), "{err}");
        let (code, _, err) = run(bin()
            .args(["-w", "wacz", "create", "-o"])
            .arg(&out)
            .arg(input));
        assert_eq!(code, 0, "{err}");
        assert!(err.contains(": warning: "), "{err}");
        assert!(!err.contains("-w lists"), "{err}");
    }
    let out = d.path().join("clean.wacz");
    let (code, _, err) = run(bin().args(["wacz", "create", "-o"]).arg(&out).arg(&clean));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("recover"), "{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// `wacz create` says which rule found how many pages in how many input
/// files (a browser capture by its screenshots, a plain one by its HTML
/// responses), and how many rows of a `--pages` file it left out for want
/// of a capture, naming them under `-w`.
#[test]
fn wacz_create_says_how_it_found_its_pages_and_what_it_left_out() {
    let d = tempfile::tempdir().unwrap();
    let http = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 4\r\n\r\n<p>x";
    let resp = |u: &str| warc_record("response", u, "application/http; msgtype=response", http);
    let browser = d.path().join("browser.warc");
    let shot = warc_record("resource", "urn:view:http://b.test/", "image/png", "PNG");
    let text = format!(
        "{}{}{shot}",
        resp("http://b.test/"),
        resp("http://b.test/frag")
    );
    std::fs::write(&browser, text).unwrap();
    let plain = d.path().join("plain.warc");
    std::fs::write(&plain, resp("http://p.test/") + &resp("http://p.test/2")).unwrap();
    let out = d.path().join("x.wacz");
    let (code, _, err) = run(bin()
        .args(["wacz", "create", "-o"])
        .arg(&out)
        .arg(&browser)
        .arg(&plain));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("pages found: 1 by browser screenshots (urn:view: records) in 1 file, 2 by HTML responses in 1 file"),
        "{err}"
    );
    assert!(err.contains(", 3 pages"), "{err}");
    let pages = d.path().join("pages.jsonl");
    let row = |u: &str| format!("{{\"url\":\"{u}\",\"ts\":\"2026-11-29T06:00:00Z\"}}\n");
    std::fs::write(&pages, row("http://p.test/") + &row("http://gone.test/")).unwrap();
    let (code, _, err) = run(bin()
        .args(["-w", "wacz", "create", "--pages"])
        .arg(&pages)
        .arg("-o")
        .arg(&out)
        .arg(&plain));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("1 pages left out: no capture of their URL"),
        "{err}"
    );
    assert!(
        err.contains("no capture of page http://gone.test/"),
        "{err}"
    );
    assert!(!err.contains("pages found"), "{err}");
}

/// Links left out over the bounds are counted on stderr at the end, each
/// page's `dol:N` in crawl.log: here `max-links-per-page = 1` (in
/// --config) on pages of several links.
#[test]
fn crawl_counts_the_links_it_left_out_on_stderr() {
    let w = web();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let cfg = out.path().join("c.toml");
    std::fs::write(&cfg, "max-links-per-page = 1\n").unwrap();
    let mut args = crawl_args(&w, &dir);
    args.push("--config".into());
    args.push(cfg.display().to_string());
    let (code, _, err) = run(bin().args(&args));
    assert_eq!(code, 0, "{err}");
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let dropped: u64 = log
        .lines()
        .filter_map(|l| l.split_whitespace().nth(11))
        .flat_map(|a| a.split(','))
        .filter_map(|a| a.strip_prefix("dol:"))
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert!(dropped > 0, "{log}");
    assert!(
        err.contains(&format!(
            "{dropped} links left out over the extraction bounds"
        )),
        "{err}"
    );
}
