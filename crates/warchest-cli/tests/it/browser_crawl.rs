//! Issue 30: `crawl --browser` on the fidelity site served live from
//! loopback: pages loaded in Chromium through the crawl's recording proxy,
//! links only script builds followed, nothing the browser fetched fetched
//! again, QA good; the same crawl without --browser, QA says what is
//! missing; the browser's requests outside the crawl's scope are refused
//! before any connection.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::browser::{Live, qa, qa_with, verifies};
use crate::common::{bin, files_in, run};
use crate::serve::chromium;

const HTML: &str = "text/html; charset=utf-8";

/// A page whose only link is built by script, and its target.
fn script_links(_: &str) -> Vec<(String, &'static str, Vec<u8>)> {
    vec![
        (
            "/js-links.html".into(),
            HTML,
            b"<!doctype html><title>js links</title><p>links built by script:</p>\
<script>var a=document.createElement('a');a.href='/js-only.html';a.textContent='only by script';\
document.body.appendChild(a);</script>"
                .to_vec(),
        ),
        (
            "/js-only.html".into(),
            HTML,
            b"<!doctype html><title>js only</title><p>reached by a script's link only</p>".to_vec(),
        ),
    ]
}

/// The fidelity site with the script-built link, a work directory, the
/// crawl directory in it, and the seeds: the fidelity page and the page
/// whose link only a script builds.
fn script_site() -> (Live, tempfile::TempDir, PathBuf, [String; 2]) {
    let live = Live::start_with(script_links);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("crawl");
    let seeds = [
        format!("http://{}/", live.addr),
        format!("http://{}/js-links.html", live.addr),
    ];
    (live, work, dir, seeds)
}

/// `warchest crawl` of `seeds` into `dir` (fast politeness, loopback
/// only), with `more` flags.
fn crawl(dir: &Path, seeds: &[String], more: &[&str]) -> (i32, String) {
    let (code, _, err) = run(crawl_command(dir, seeds).args(more));
    (code, err)
}

/// The `warchest crawl` command of the tests: no delays, loopback only.
fn crawl_command(dir: &Path, seeds: &[String]) -> std::process::Command {
    crawl_command_of(bin(), dir, seeds)
}

/// [`crawl_command`] of the `warchest` that `c` runs.
fn crawl_command_of(
    mut c: std::process::Command,
    dir: &Path,
    seeds: &[String],
) -> std::process::Command {
    c.arg("crawl").args(seeds).arg("-o").arg(dir).args([
        "--resolve-only",
        "--min-delay",
        "0",
        "--max-delay",
        "0",
        "--delay-factor",
        "0",
    ]);
    c
}

fn browser_flags(exe: &Path) -> Vec<String> {
    vec![
        "--browser".into(),
        "--chromium".into(),
        exe.display().to_string(),
        "--page-timeout".into(),
        "40".into(),
    ]
}

fn archive(dir: &Path) -> Vec<PathBuf> {
    files_in(&dir.join("archive"))
}

#[test]
fn crawl_with_a_browser_archives_what_pages_loaded_and_passes_qa() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let (live, work, dir, seeds) = script_site();
    let flags = browser_flags(&exe);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (code, err) = crawl(&dir, &seeds, &flags);
    assert_eq!(code, 0, "{err}");
    let files = archive(&dir);
    // Every resource the live pages loaded is in the archive.
    live.all_archived(&files);
    let served = live.paths();
    // The link only a script builds was followed, by the browser.
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let js_only = format!("http://{}/js-only.html", live.addr);
    assert!(served.contains(&"/js-only.html".to_string()), "{served:?}");
    assert!(
        log.lines()
            .any(|l| l.contains(&js_only) && l.contains("browser")),
        "{log}"
    );
    // Nothing the browser fetched was fetched again by the HTTP client:
    // its only fetches are robots.txt; URIs queued before the browser
    // fetched them are logged as such (-5003 browser-fetched).
    for l in log.lines() {
        assert!(
            l.contains("browser") || l.contains("/robots.txt"),
            "fetched by the HTTP client: {l}"
        );
    }
    let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
    assert!(pages.contains(&js_only), "{pages}");
    for f in &files {
        verifies(f);
    }
    // QA: the replay looks as the capture did.
    let (code, v, err) = qa(&dir.join("archive"), &work.path().join("qa"));
    assert_eq!(v["pages"], 3, "{v:#}{err}");
    let top = v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["url"] == seeds[0].as_str())
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(top["screenshot_match"].as_f64().unwrap() >= 0.97, "{top:#}");
    assert_eq!(top["missing"], serde_json::json!([]), "{top:#}");
    assert_eq!(code, 0, "{v:#}{err}");
}

#[test]
fn crawl_without_a_browser_qa_reports_what_is_missing() {
    let Some(_) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let (live, work, dir, seeds) = script_site();
    let (code, err) = crawl(&dir, &seeds, &["--max-hops", "1"]);
    assert_eq!(code, 0, "{err}");
    // The link only a script builds is not followed without a browser.
    assert!(
        !live.paths().contains(&"/js-only.html".to_string()),
        "{:?}",
        live.paths()
    );
    // Two browsers at once: each report is numbered by its page, as with one.
    let report_dir = work.path().join("qa");
    let (code, v, err) = qa_with(&dir.join("archive"), &report_dir, &["--browsers", "2"]);
    assert_eq!(code, 1, "{v:#}{err}");
    let reports = v["reports"].as_array().unwrap();
    assert!(reports.len() > 10, "{v:#}");
    assert_eq!(v["pages"], reports.len(), "{v:#}");
    let mut numbers = Vec::new();
    for r in reports {
        let png = r["replay_png"].as_str().unwrap_or_else(|| panic!("{r:#}"));
        let n = png.strip_suffix("-replay.png").unwrap().to_string();
        let own: serde_json::Value =
            serde_json::from_slice(&std::fs::read(report_dir.join(format!("{n}.json"))).unwrap())
                .unwrap();
        assert_eq!(own["url"], r["url"], "{n}");
        assert!(report_dir.join(png).is_file(), "{png}");
        numbers.push(n);
    }
    numbers.sort();
    numbers.dedup();
    assert_eq!(numbers.len(), reports.len(), "{numbers:?}");
    let top = v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["url"] == seeds[0].as_str())
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(top["good"], false, "{top:#}");
    // What the frames' scripts load was never fetched by the HTTP crawl.
    let missing: Vec<&str> = top["missing"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    let api = format!("http://{}/api/data.json", live.addr);
    assert!(missing.contains(&api.as_str()), "{missing:?}");
}

/// A loopback listener that counts the connections made to it.
struct Counter {
    addr: String,
    n: Arc<AtomicUsize>,
}

fn counter(ip: &str) -> Counter {
    let l = TcpListener::bind(format!("{ip}:0")).unwrap();
    let addr = l.local_addr().unwrap().to_string();
    l.set_nonblocking(true).unwrap();
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(180) {
            match l.accept() {
                Ok(_) => {
                    n2.fetch_add(1, Ordering::SeqCst);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    Counter { addr, n }
}

/// The browser's requests for hosts out of the crawl's scope, or out of
/// its resolve table under resolve-only, are refused by the proxy before
/// any lookup or connection: nothing reaches the outside host, nothing of
/// it is recorded.
#[test]
fn the_browsers_requests_outside_the_crawl_reach_nothing() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let outside = counter("127.0.0.2");
    let out = outside.addr.clone();
    let live = Live::start_with(move |_| {
        vec![(
            "/out.html".into(),
            HTML,
            format!(
                "<!doctype html><title>out</title><p>outside links</p>\
<img src=\"http://{out}/x.png\"><a href=\"http://{out}/page.html\">out</a>\
<script>fetch('http://{out}/api').catch(function(){{}});\
fetch('http://outside.invalid/y').catch(function(){{}});</script>"
            )
            .into_bytes(),
        )]
    });
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("crawl");
    let seeds = [format!("http://{}/out.html", live.addr)];
    let mut flags = browser_flags(&exe);
    flags.extend(["--exclude".into(), r"^http://127\.0\.0\.2".into()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (code, err) = crawl(&dir, &seeds, &flags);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        outside.n.load(Ordering::SeqCst),
        0,
        "the outside host was reached"
    );
    // The refusals are counted at the end, as what the scope asked (no
    // loss: exit 0 above): the image and the script's two fetches at
    // least, and nothing for another reason.
    let end = err
        .lines()
        .find(|l| l.contains(" not recorded ("))
        .unwrap_or_else(|| panic!("no count of the refusals: {err}"));
    let (n, reasons) = end.split_once(" exchanges not recorded (").unwrap();
    assert!(n.parse::<u64>().unwrap() >= 3, "{end}");
    assert_eq!(reasons, format!("refused {n})"), "{end}");
    let mut targets = Vec::new();
    for f in archive(&dir) {
        let mut r = warchest::warc::Reader::open(&f).unwrap();
        while let Some(rec) = r.next_record().unwrap() {
            if let Some(t) = rec.header().get("WARC-Target-URI") {
                targets.push(t.to_string());
            }
        }
    }
    assert!(
        targets.iter().any(|t| t == &seeds[0]),
        "the page itself: {targets:?}"
    );
    assert!(
        !targets
            .iter()
            .any(|t| t.contains("127.0.0.2") || t.contains("outside.invalid")),
        "{targets:?}"
    );
    // The counter counts: a connection made now is seen.
    drop(std::net::TcpStream::connect(&outside.addr).unwrap());
    let t = Instant::now();
    while outside.n.load(Ordering::SeqCst) == 0 && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(outside.n.load(Ordering::SeqCst), 1);
}

/// `n` pages, each with an image and two links its script builds (the
/// next page and one further on): a crawl reaches them only by browser.
fn chain(n: usize) -> impl Fn(&str) -> Vec<(String, &'static str, Vec<u8>)> {
    move |_| {
        (0..n)
            .map(|i| {
                let img = ["orange", "teal", "grey"][i % 3];
                (
                    format!("/p/{i}.html"),
                    HTML,
                    format!(
                        "<!doctype html><title>page {i}</title><h1>page {i}</h1>\
<p>{}</p><img src=\"/img/{img}.svg\"><script>[{},{}].forEach(function(k){{\
var a=document.createElement('a');a.href='/p/'+k+'.html';a.textContent='page '+k;\
document.body.appendChild(a);}});</script>",
                        "text of the page ".repeat(40),
                        (i + 1) % n,
                        (i * 7 + 3) % n,
                    )
                    .into_bytes(),
                )
            })
            .collect()
    }
}

/// The resident set (kB) of `pid`, and the proportional set (kB: shared
/// pages divided among their sharers, so not counted once per process) of
/// all its descendants (Chromium's processes), from /proc.
fn rss_tree(pid: u32) -> (u64, u64) {
    let field = |path: String, name: &str| -> u64 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with(name))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0)
    };
    let rss = |p: u32| field(format!("/proc/{p}/status"), "VmRSS:");
    let pss = |p: u32| field(format!("/proc/{p}/smaps_rollup"), "Pss:");
    let mut parent = std::collections::HashMap::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces.
            if let Ok(st) = std::fs::read_to_string(format!("/proc/{p}/stat"))
                && let Some(rest) = st.rsplit_once(')').map(|x| x.1)
                && let Some(pp) = rest.split_whitespace().nth(1).and_then(|x| x.parse().ok())
            {
                parent.insert(p, pp);
            }
        }
    }
    let descends = |mut p: u32| {
        for _ in 0..64 {
            match parent.get(&p) {
                Some(&pp) if pp == pid => return true,
                Some(&pp) if pp > 1 => p = pp,
                _ => return false,
            }
        }
        false
    };
    let kids: u64 = parent
        .keys()
        .filter(|&&p| descends(p))
        .map(|&p| pss(p))
        .sum();
    (rss(pid), kids)
}

/// A crawl's memory samples (warchest kB, Chromium kB), its pages and how
/// long it took.
struct MemoryRun {
    samples: Vec<(u64, u64)>,
    pages: usize,
    took: Duration,
}

/// Crawls `n` script-linked pages with a browser, sampling memory.
fn memory_run(n: usize) -> Option<MemoryRun> {
    let exe = chromium()?;
    let live = Live::start_with(chain(n));
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("crawl");
    // WARCHEST_MEMORY_BIN: another build (a release build's figures).
    let warchest =
        std::env::var_os("WARCHEST_MEMORY_BIN").map_or_else(bin, std::process::Command::new);
    let mut child = crawl_command_of(warchest, &dir, &[format!("http://{}/p/0.html", live.addr)])
        .args(["--max-hops", "10000", "--page-timeout", "30", "-q"])
        .args(["--browser", "--chromium"])
        .arg(&exe)
        .stdout(std::process::Stdio::null())
        // Not piped: nobody reads it while the crawl runs.
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut samples = Vec::new();
    // Generous: a loaded machine takes 5 s a page.
    let limit = Duration::from_secs(60 + 10 * n as u64);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let (a, b) = halves(&samples);
            panic!(
                "the crawl of {n} pages took more than {limit:?} \
                 (peak memory so far, kB: warchest {} then {}, Chromium {} then {})",
                a.0, b.0, a.1, b.1
            );
        }
        samples.push(rss_tree(child.id()));
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = t0.elapsed();
    assert!(status.success(), "{status}");
    let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl"))
        .unwrap()
        .lines()
        .skip(1)
        .count();
    Some(MemoryRun {
        samples,
        pages,
        took,
    })
}

/// Peak memory of the first and the second half of the samples.
fn halves(s: &[(u64, u64)]) -> ((u64, u64), (u64, u64)) {
    let peak = |v: &[(u64, u64)]| {
        v.iter()
            .fold((0, 0), |(a, b), &(x, y)| (a.max(x), b.max(y)))
    };
    let mid = s.len() / 2;
    (peak(&s[..mid]), peak(&s[mid..]))
}

fn memory_check(n: usize) {
    let Some(MemoryRun {
        samples,
        pages,
        took,
    }) = memory_run(n)
    else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    assert_eq!(pages, n, "every page crawled");
    assert!(samples.len() > 10, "{samples:?}");
    let (first, second) = halves(&samples);
    let peak = (first.0.max(second.0), first.1.max(second.1));
    eprintln!(
        "{n} pages in {:.0} s: peak RSS warchest {} MB, PSS of Chromium (all its processes) {} MB; \
         first half {} / {} MB, second half {} / {} MB",
        took.as_secs_f64(),
        peak.0 / 1024,
        peak.1 / 1024,
        first.0 / 1024,
        first.1 / 1024,
        second.0 / 1024,
        second.1 / 1024,
    );
    // Bounded: warchest's own memory does not grow with the pages (the
    // frontier and the dedupe index are on disk), Chromium's is bounded by
    // its restarts every 100 pages.
    assert!(peak.0 < 400 * 1024, "warchest {} MB", peak.0 / 1024);
    assert!(
        second.0 <= first.0 + first.0 / 2 + 32 * 1024,
        "warchest grew: {} MB then {} MB",
        first.0 / 1024,
        second.0 / 1024
    );
    assert!(peak.1 > 0, "no Chromium process seen");
    assert!(peak.1 < 3 * 1024 * 1024, "Chromium {} MB", peak.1 / 1024);
}

/// Memory over a small browser crawl: warchest's does not grow from the
/// first half to the second, Chromium's stays bounded.
#[test]
fn memory_stays_bounded_over_a_browser_crawl() {
    memory_check(8);
}

/// The same over 1,000 pages (`WARCHEST_MEMORY_PAGES` others; about a
/// minute per 20 pages on a loaded 2-core machine); the figures go to
/// docs/crawl.md. Run: `cargo test -p warchest-cli --test it
/// memory_over_1000_pages -- --ignored --nocapture`
/// (`WARCHEST_MEMORY_BIN=PATH`: that `warchest`, e.g. a release build).
#[test]
#[ignore]
fn memory_over_1000_pages() {
    let n = std::env::var("WARCHEST_MEMORY_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    memory_check(n);
}

/// A loopback site of `n` pages under /p/, each answered after `wait`,
/// that counts how many of its page requests were in flight at once.
struct Overlap {
    addr: String,
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Overlap {
    fn start(n: usize, wait: Duration) -> Overlap {
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (now2, most2) = (now.clone(), most.clone());
        let addr = serve_paths(move |path| match path.strip_prefix("/p/") {
            Some(_) => {
                let k = now2.fetch_add(1, Ordering::SeqCst) + 1;
                most2.fetch_max(k, Ordering::SeqCst);
                std::thread::sleep(wait);
                now2.fetch_sub(1, Ordering::SeqCst);
                let links: String = (0..n)
                    .map(|i| format!("<a href=\"/p/{i}.html\">page {i}</a> "))
                    .collect();
                (
                    "text/html",
                    format!("<!doctype html><title>{path}</title><p>{links}</p>"),
                )
            }
            None => ("text/html", String::new()),
        });
        Overlap { addr, now, most }
    }
}

/// A loopback server (three minutes at most) answering each request, on
/// a thread of its own, with what `page` gives for its path: its
/// Content-Type and body (an empty body: a 404; the type `redirect`: a
/// 302 to the body).
fn serve_paths(page: impl Fn(&str) -> (&'static str, String) + Send + Sync + 'static) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    l.set_nonblocking(true).unwrap();
    let page = Arc::new(page);
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(180) {
            let Ok((mut s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let page = page.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let Some(path) = crate::browser::request_path(&mut s) else {
                    return;
                };
                let (ct, body) = page(&path);
                if ct == "redirect" {
                    let _ = s.write_all(
                        format!(
                            "HTTP/1.0 302 Found\r\nLocation: {body}\r\nContent-Length: 0\r\n\r\n"
                        )
                        .as_bytes(),
                    );
                    return;
                }
                let status = if body.is_empty() {
                    "404 Not Found"
                } else {
                    "200 OK"
                };
                let _ = s.write_all(
                    format!(
                        "HTTP/1.0 {status}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
            });
        }
    });
    addr
}

/// The pages' loads in the browser, from crawl.log: (start, end) in
/// milliseconds (of the month: the tests do not cross one).
fn page_loads(log: &str) -> Vec<(u64, u64)> {
    log.lines()
        .filter(|l| l.contains(" browser,resources:"))
        .filter_map(|l| {
            let f = l.split_whitespace().nth(8)?;
            let (t, ms) = f.split_once('+')?;
            let d = |r: std::ops::Range<usize>| t.get(r)?.parse::<u64>().ok();
            let start = (((d(6..8)? * 24 + d(8..10)?) * 60 + d(10..12)?) * 60 + d(12..14)?) * 1000
                + d(14..17)?;
            Some((start, start + ms.parse::<u64>().ok()?))
        })
        .collect()
}

/// Whether two of `loads` overlap in time.
fn overlapping(loads: &[(u64, u64)]) -> bool {
    loads
        .iter()
        .enumerate()
        .any(|(i, a)| loads[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1))
}

/// `--host-parallel 2` with two tabs: two pages of one host load at
/// once; without it, never (one URI of a host in flight at a time).
#[test]
fn host_parallel_loads_pages_of_one_host_in_several_tabs() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let mut flags = browser_flags(&exe);
    flags.extend(["--browsers".into(), "2".into(), "--ignore-robots".into()]);
    for parallel in [false, true] {
        let site = Overlap::start(4, Duration::from_millis(400));
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("crawl");
        let mut f: Vec<&str> = flags.iter().map(String::as_str).collect();
        if parallel {
            f.extend(["--host-parallel", "2"]);
        }
        let (code, err) = crawl(&dir, &[format!("http://{}/p/0.html", site.addr)], &f);
        assert_eq!(code, 0, "{err}");
        let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
        assert_eq!(pages.lines().skip(1).count(), 4, "{pages}");
        assert_eq!(site.now.load(Ordering::SeqCst), 0);
        let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
        let loads = page_loads(&log);
        assert_eq!(loads.len(), 4, "{log}");
        let most = site.most.load(Ordering::SeqCst);
        if parallel {
            // Page loads overlap (the second tab's browser may take
            // longer to start than a page's request on a loaded machine,
            // so the server need not see two requests at once).
            assert!(overlapping(&loads), "host-parallel 2: {loads:?}\n{log}");
        } else {
            assert!(
                !overlapping(&loads),
                "without host-parallel: {loads:?}\n{log}"
            );
            assert_eq!(most, 1, "without host-parallel");
        }
    }
}

/// A loopback site whose seed page is slow to end: its HTML links to
/// /p/1.html, its script builds a link to /p/2.html, an image holds its
/// load event back and a request after load holds its network idle back
/// (each at least `wait`, and on a gate: the image until /p/1.html was
/// asked for, the request until /p/2.html was, or 60 s); /r redirects to
/// it. With it, when each path was asked for (and when /slow.svg was
/// answered, as `answered /slow.svg`).
type Events = Arc<std::sync::Mutex<Vec<(String, Instant)>>>;

fn slow_seed_site(wait: Duration) -> (String, Events) {
    let events = Events::default();
    let ev = events.clone();
    let note = move |what: String| ev.lock().unwrap().push((what, Instant::now()));
    let ev = events.clone();
    // No clock decides the order: the seed's page cannot end before the
    // linked page was asked for, however long the second browser takes to
    // start (only a hang reaches the deadline, and fails the test).
    let gate = move |path: &str| {
        std::thread::sleep(wait);
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline && !ev.lock().unwrap().iter().any(|e| e.0 == path) {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let addr = serve_paths(move |path| {
        note(path.to_string());
        match path {
        "/" => (
            HTML,
            "<!doctype html><title>seed</title><a href=\"/p/1.html\">one</a>\
<img src=\"/slow.svg\" width=\"8\" height=\"8\"><script>\
const a=document.createElement('a');a.href='/p/'+(1+1)+'.html';a.textContent='two';document.body.appendChild(a);\
addEventListener('load',()=>fetch('/slow.json'));</script>"
                .to_string(),
        ),
        "/slow.svg" => {
            gate("/p/1.html");
            note("answered /slow.svg".into());
            (
                "image/svg+xml",
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"8\"/>".to_string(),
            )
        }
        "/slow.json" => {
            gate("/p/2.html");
            ("application/json", "{}".to_string())
        }
        "/r" => ("redirect", "/".to_string()),
        p if p.starts_with("/p/") => (HTML, format!("<!doctype html><title>{p}</title><p>{p}</p>")),
        _ => ("text/plain", String::new()),
    }
    });
    (addr, events)
}

/// A page's links go to the frontier before the page ends: those of its
/// HTML as the recording proxy recorded it, and those its script built
/// once it loaded. A second tab starts on each while the first page
/// still waits for its slow image and its slow request.
#[test]
fn a_second_tab_starts_before_the_first_page_ends() {
    second_tab_starts_before_the_seed_ends("/");
}

/// [`a_second_tab_starts_before_the_first_page_ends`] with a seed that
/// redirects to that page: the links of the document the redirect led to
/// (its HTML's, and its DOM's once it loaded) come early too.
#[test]
fn a_redirecting_seed_gives_its_links_before_it_ends() {
    second_tab_starts_before_the_seed_ends("/r");
}

/// The seed at `seed` (a path of [`slow_seed_site`]), crawled with two
/// tabs: the pages its document links to start before it ends.
fn second_tab_starts_before_the_seed_ends(seed: &str) {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    // The seed's image and late request are held until the linked pages
    // were asked for (slow_seed_site), not for a time the second browser
    // (started beside the first) was given to be up: under load it once
    // took longer than 3 s. The page timeout gives that hold room (the
    // load timeout is half of it).
    let wait = Duration::from_secs(1);
    let (addr, events) = slow_seed_site(wait);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("crawl");
    let mut flags = browser_flags(&exe);
    let t = flags.iter().position(|f| f == "--page-timeout").unwrap() + 1;
    flags[t] = "150".into();
    flags.extend(["--browsers", "2", "--host-parallel", "2", "--ignore-robots"].map(String::from));
    let f: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (code, err) = crawl(&dir, &[format!("http://{addr}{seed}")], &f);
    assert_eq!(code, 0, "{err}");
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let load = |path: &str| {
        let uri = format!("http://{addr}{path}");
        let line: Vec<&str> = log
            .lines()
            .filter(|l| l.split_whitespace().nth(3) == Some(uri.as_str()))
            .collect();
        assert_eq!(line.len(), 1, "{uri}:\n{log}");
        let loads = page_loads(line[0]);
        assert_eq!(loads.len(), 1, "{uri} not in the browser:\n{log}");
        loads[0]
    };
    let seed = load(seed);
    // Its load event after `wait` (and the gate), its idle after twice
    // that: the seed's page took both.
    assert!(
        seed.1 - seed.0 >= 2 * wait.as_millis() as u64,
        "{seed:?}\n{log}"
    );
    for p in ["/p/1.html", "/p/2.html"] {
        let (start, _) = load(p);
        assert!(start < seed.1, "{p} started after the seed ended\n{log}");
    }
    // The HTML's link came from the recorded document: its page was
    // asked for before the image that holds the seed's load event back
    // was answered (the DOM's links come after that event).
    let events = events.lock().unwrap().clone();
    let at = |what: &str| events.iter().find(|e| e.0 == what).map(|e| e.1);
    let (one, svg) = (at("/p/1.html"), at("answered /slow.svg"));
    assert!(
        one.is_some() && svg.is_some() && one < svg,
        "/p/1.html waited for the seed's load event: {events:?}"
    );
}

/// How often each path of a [`serve_paths`] site was asked for.
type Asked = Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>;

fn asked(a: &Asked, path: &str) -> usize {
    a.lock().unwrap().get(path).copied().unwrap_or(0)
}

/// A [`serve_paths`] site whose requests are counted by path.
fn counted(
    page: impl Fn(&str) -> (&'static str, String) + Send + Sync + 'static,
) -> (String, Asked) {
    let seen = Asked::default();
    let s = seen.clone();
    let addr = serve_paths(move |path| {
        *s.lock().unwrap().entry(path.to_string()).or_default() += 1;
        page(path)
    });
    (addr, seen)
}

/// A small SVG image.
const SVG: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"8\"/>";

/// A site of a seed page (`seed`, its body), /p/1.html, and `routes`
/// (path, Content-Type, body, milliseconds before the answer), crawled
/// with two tabs free: `path` is asked for once and is no page, /p/1.html
/// is loaded as a page once.
fn fetched_once_and_no_page(
    exe: &Path,
    seed: &'static str,
    routes: &'static [(&'static str, &'static str, &'static str, u64)],
    path: &str,
) {
    let (addr, seen) = counted(move |p| match p {
        "/" => (HTML, format!("<!doctype html>{seed}")),
        "/p/1.html" => (
            HTML,
            "<!doctype html><title>one</title><p>one</p>".to_string(),
        ),
        _ => match routes.iter().find(|r| r.0 == p) {
            Some(&(_, ct, body, ms)) => {
                std::thread::sleep(Duration::from_millis(ms));
                (ct, body.to_string())
            }
            None => ("text/plain", String::new()),
        },
    });
    let (_work, dir, log) = two_tab_crawl(exe, &addr);
    assert_eq!(asked(&seen, path), 1, "{path}:\n{log}");
    assert_eq!(asked(&seen, "/p/1.html"), 1, "{log}");
    let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
    assert!(!pages.contains(&format!("{path}\"")), "{pages}");
    assert!(pages.contains("/p/1.html"), "{pages}");
}

/// A lightbox (`<a href=x.svg><img src=x.svg></a>`, the image slow to
/// come) with a second tab free: the image is fetched once, by the page
/// that embeds it, and never loaded as a page. Its link given early would
/// have the other tab load it while the first still waits for it.
#[test]
fn a_page_linking_to_its_own_image_fetches_it_once() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    fetched_once_and_no_page(
        &exe,
        "<title>lightbox</title><a href=\"/big.svg\"><img src=\"/big.svg\" width=\"8\" \
height=\"8\"></a><a href=\"/p/1.html\">one</a>",
        &[("/big.svg", "image/svg+xml", SVG, 1500)],
        "/big.svg",
    );
}

/// The site of [`links_given_early_are_the_browsers_a_and_area_links`]:
/// a seed with `<link rel>` and form GET targets and one `a` link, and a
/// page with `meta robots` nofollow; each path's requests counted.
fn link_kinds_site() -> (String, Asked) {
    let seen = Asked::default();
    let s = seen.clone();
    let addr = serve_paths(move |path| {
        *s.lock().unwrap().entry(path.to_string()).or_default() += 1;
        let page = |body: &str| (HTML, format!("<!doctype html>{body}"));
        match path {
            "/" => page(
                "<title>kinds</title><link rel=alternate type=application/rss+xml href=/feed/>\
<link rel=canonical href=/canon.html><link rel=next href=/next.html>\
<form method=get action=/search><input name=q></form><a href=/p/1.html>one</a>",
            ),
            "/nf.html" => page(
                "<title>nofollow</title><meta name=robots content=nofollow>\
<a href=/nf-link.html>not followed</a>",
            ),
            p if p.starts_with("/") && p.ends_with(".html") || p == "/feed/" => {
                page(&format!("<title>{p}</title><p>{p}</p>"))
            }
            _ => ("text/plain", String::new()),
        }
    });
    (addr, seen)
}

/// The links given early are those the browser's own links are (a and
/// area hrefs): no `<link rel=alternate/canonical/next>` target, no form
/// GET action (forms on), is loaded. A page's `meta robots` nofollow
/// keeps its links out under robots `obey` on every path, and not under
/// --ignore-robots, as in the HTTP crawl.
#[test]
fn links_given_early_are_the_browsers_a_and_area_links() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("forms.toml");
    std::fs::write(&config, "forms = true\n").unwrap();
    let mut flags = browser_flags(&exe);
    flags.extend(["--browsers", "2", "--host-parallel", "2"].map(String::from));
    flags.extend(["--config".into(), config.display().to_string()]);
    for obey in [true, false] {
        let (addr, seen) = link_kinds_site();
        let dir = work.path().join(format!("crawl-{obey}"));
        let mut f: Vec<&str> = flags.iter().map(String::as_str).collect();
        if !obey {
            f.push("--ignore-robots");
        }
        let seeds = [format!("http://{addr}/"), format!("http://{addr}/nf.html")];
        let (code, err) = crawl(&dir, &seeds, &f);
        assert_eq!(code, 0, "{err}");
        let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
        for p in [
            "/feed/",
            "/canon.html",
            "/next.html",
            "/search",
            "/search?q=",
        ] {
            assert_eq!(asked(&seen, p), 0, "{p} (obey {obey}):\n{log}");
        }
        assert_eq!(asked(&seen, "/p/1.html"), 1, "obey {obey}:\n{log}");
        assert_eq!(
            asked(&seen, "/nf-link.html"),
            usize::from(!obey),
            "nofollow, obey {obey}:\n{log}"
        );
    }
}

/// A crawl of `addr`'s `/` with two tabs, both free for one host, into a
/// new directory: it, and the crawl's log.
fn two_tab_crawl(exe: &Path, addr: &str) -> (tempfile::TempDir, PathBuf, String) {
    browser_crawl_of(exe, addr, &["--browsers", "2", "--host-parallel", "2"])
}

/// A browser crawl of `addr`'s `/` (robots.txt ignored) with `more`
/// flags, into a new directory: it, and the crawl's log.
fn browser_crawl_of(exe: &Path, addr: &str, more: &[&str]) -> (tempfile::TempDir, PathBuf, String) {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("crawl");
    let mut flags = browser_flags(exe);
    flags.push("--ignore-robots".into());
    flags.extend(more.iter().map(|f| f.to_string()));
    let f: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (code, err) = crawl(&dir, &[format!("http://{addr}/")], &f);
    assert_eq!(code, 0, "{err}");
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    (work, dir, log)
}

/// A link to a URL the page is still fetching by other means (here a
/// script's request, slow to be answered, that the rendered DOM also links
/// to) is not given early: another tab would load it as a page while the
/// page waits for it, where the page's end, which marks what it fetched,
/// does not queue it. It is fetched once, by the page, and is no page.
#[test]
fn a_link_the_page_is_still_fetching_is_not_loaded_as_a_page() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    fetched_once_and_no_page(
        &exe,
        "<title>data</title><a href=\"/p/1.html\">one</a><script>fetch('/da'+'ta');\
const a=document.createElement('a');a.href='/da'+'ta';a.textContent='the data';\
document.body.appendChild(a);</script>",
        &[("/data", "application/json", "{\"a\":1}", 2500)],
        "/data",
    );
}

/// A link to the page's own CSS background, which its HTML does not name
/// as an embed (the stylesheet does, and comes late): the HTML's early
/// links leave out what looks like a file a page loads (an image here),
/// so it is fetched once, by the page, and is no page.
#[test]
fn a_link_to_the_pages_css_background_is_not_loaded_as_a_page() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    fetched_once_and_no_page(
        &exe,
        "<title>bg</title><link rel=stylesheet href=/s.css>\
<a href=\"/bg.svg\">the background</a><a href=\"/p/1.html\">one</a>",
        &[
            ("/s.css", "text/css", "body{background:url(/bg.svg)}", 1500),
            ("/bg.svg", "image/svg+xml", SVG, 0),
        ],
        "/bg.svg",
    );
}

/// Links only the HTML has, named as resources (so not given early): one
/// inside a `<template>` (not in the document's DOM) and one a script
/// removes. The page's end queues them, as it did not fetch them.
#[test]
fn links_only_the_html_has_are_queued_at_the_pages_end() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let (addr, seen) = counted(|p| match p {
        "/" => (
            HTML,
            "<!doctype html><title>only html</title>\
<template><a href=\"/gallery/1.jpg\">one</a></template>\
<a id=gone href=\"/gone.png\">gone</a>\
<script>document.getElementById('gone').remove()</script>\
<a href=\"/p/1.html\">one</a>"
                .to_string(),
        ),
        "/p/1.html" => (HTML, "<!doctype html><title>one</title>".to_string()),
        _ => ("text/plain", "x".to_string()),
    });
    let (_work, _dir, log) = two_tab_crawl(&exe, &addr);
    for p in ["/gallery/1.jpg", "/gone.png", "/p/1.html"] {
        assert_eq!(asked(&seen, p), 1, "{p}:\n{log}");
    }
}

/// A page whose document is longer than the browser's early bound
/// (`MAX_EARLY_DOCUMENT`, 4 MiB): its HTML's links are read from the
/// first 4 MiB only (a link past them only the HTML has, in a
/// `<template>`, is not queued; one before them is), and the crawl says
/// so: `linksStopped:size` on the page's crawl.log line, counted on the
/// end line.
#[test]
fn a_document_past_the_early_bound_stops_its_links_at_size() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    // Hidden: the page stays short to lay out and to screenshot.
    let filler = format!("<div hidden>{}</div>", "filler words\n".repeat(350_000));
    assert!(filler.len() > 4 << 20);
    let seed = format!(
        "<!doctype html><title>big</title><template><a href=\"/before-the-cut.html\">before</a></template>\
{filler}<template><a href=\"/past-the-cut.html\">past</a></template>"
    );
    let (addr, seen) = counted(move |p| match p {
        "/" => (HTML, seed.clone()),
        "/before-the-cut.html" | "/past-the-cut.html" => {
            (HTML, "<!doctype html><title>x</title>".to_string())
        }
        _ => ("text/plain", String::new()),
    });
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("crawl");
    let mut flags = browser_flags(&exe);
    flags.push("--ignore-robots".into());
    let f: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (code, err) = crawl(&dir, &[format!("http://{addr}/")], &f);
    assert_eq!(code, 0, "{err}");
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let seed_url = format!("http://{addr}/");
    let line = log
        .lines()
        .find(|l| l.split_whitespace().nth(3) == Some(seed_url.as_str()))
        .unwrap_or_else(|| panic!("no line for the seed in\n{log}"));
    let ann = line.split_whitespace().nth(11).unwrap_or_default();
    assert!(ann.split(',').any(|a| a == "linksStopped:size"), "{line}");
    assert_eq!(asked(&seen, "/before-the-cut.html"), 1, "{log}");
    assert_eq!(asked(&seen, "/past-the-cut.html"), 0, "{log}");
    assert!(
        err.contains(
            "\n1 URIs' link extraction stopped before their end (`linksStopped:` in logs/crawl.log)\n"
        ),
        "{err}"
    );
}

/// The rows of a pages.jsonl (its header line left out): URL and MIME.
fn page_rows(pages: &str) -> std::collections::BTreeSet<(String, String)> {
    pages
        .lines()
        .skip(1)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["url"].as_str().unwrap().into(),
                v["mime"].as_str().unwrap().into(),
            )
        })
        .collect()
}

/// A link to an extensionless URL that is not a page (JSON here, which a
/// page could also fetch): a tab loads it, its own record says it is not
/// HTML, so it gets no screenshot, text or metadata record, and is
/// listed in pages.jsonl with its type, as Browsertrix Crawler lists a
/// page URL that is not HTML (it used to get a screenshot and be listed
/// as an HTML page).
#[test]
fn a_linked_url_whose_document_is_not_html_gets_no_page_records() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let addr = serve_paths(|p| match p {
        "/" => (
            "text/html",
            "<html><title>home</title><a href=/data>data</a></html>".to_string(),
        ),
        "/data" => ("application/json", "{\"a\": 1}".to_string()),
        _ => ("text/plain", String::new()),
    });
    let (_work, dir, log) = browser_crawl_of(&exe, &addr, &[]);
    let (home, data) = (format!("http://{addr}/"), format!("http://{addr}/data"));
    let line = log
        .lines()
        .find(|l| l.split_whitespace().nth(3) == Some(data.as_str()))
        .unwrap_or_else(|| panic!("no line of {data}: {log}"));
    assert!(line.contains(" browser,"), "loaded in a tab: {line}");
    assert!(line.contains(" application/json "), "{line}");
    let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
    // A set: the two rows' order is the tabs' (the link may be taken
    // before its page ends).
    let rows = page_rows(&pages);
    assert_eq!(pages.lines().count(), 3, "{pages}");
    assert_eq!(
        rows,
        [
            (home.clone(), "text/html".to_string()),
            (data.clone(), "application/json".to_string())
        ]
        .into(),
        "{pages}"
    );
    // The page's screenshot and text are there, none of the JSON's.
    let cdxj = std::fs::read_to_string(dir.join("indexes/index.cdxj")).unwrap();
    for (u, derived) in [(&home, true), (&data, false)] {
        for kind in ["view", "text"] {
            let rec = format!("\"url\": \"urn:{kind}:{u}\"");
            assert_eq!(cdxj.contains(&rec), derived, "{rec}:\n{cdxj}");
        }
    }
}

/// The URLs a WACZ lists in its pages/pages.jsonl (python's zipfile reads
/// it).
fn wacz_page_urls(wacz: &Path) -> std::collections::BTreeSet<String> {
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import json, sys, zipfile\n\
rows = zipfile.ZipFile(sys.argv[1]).read('pages/pages.jsonl').decode().splitlines()[1:]\n\
print('\\n'.join(json.loads(l)['url'] for l in rows))",
        )
        .arg(wacz)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// An HTML fragment a page's script fetches, and the page's iframe, are
/// recorded with the page and are no pages of their own: neither the
/// crawl's pages.jsonl nor its WACZ lists them (the WACZ used to list
/// every HTML response), while the page and the page it links to are.
#[test]
fn an_html_fragment_a_script_fetches_is_no_page_in_the_wacz() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    let (addr, seen) = counted(|p| match p {
        "/" => (
            HTML,
            "<!doctype html><title>home</title><a href=/p/1.html>one</a>\
<iframe src=/frame.html></iframe><div id=x></div><script>fetch('/frag.html')\
.then(r=>r.text()).then(t=>{document.getElementById('x').innerHTML=t})</script>"
                .to_string(),
        ),
        "/frag.html" => (HTML, "<p>a fragment</p>".to_string()),
        "/frame.html" => (
            HTML,
            "<!doctype html><title>frame</title><p>framed".to_string(),
        ),
        "/p/1.html" => (HTML, "<!doctype html><title>one</title><p>one".to_string()),
        _ => ("text/plain", String::new()),
    });
    let (_work, dir, log) = browser_crawl_of(&exe, &addr, &["--wacz"]);
    for p in ["/frag.html", "/frame.html", "/p/1.html"] {
        assert_eq!(asked(&seen, p), 1, "{p}:\n{log}");
    }
    let want: std::collections::BTreeSet<String> = ["/", "/p/1.html"]
        .iter()
        .map(|p| format!("http://{addr}{p}"))
        .collect();
    let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
    let listed: std::collections::BTreeSet<String> = pages
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["url"]
                .as_str()
                .unwrap()
                .into()
        })
        .collect();
    assert_eq!(listed, want, "{pages}");
    assert_eq!(wacz_page_urls(&dir.join("crawl.wacz")), want);
    // `wacz create` of the crawl's WARC files: given its pages, or
    // finding them by their screenshots, the same.
    for given in [true, false] {
        let out = dir.join(format!("again-{given}.wacz"));
        let mut c = bin();
        c.args(["wacz", "create", "-o"])
            .arg(&out)
            .args(archive(&dir));
        if given {
            c.arg("--pages").arg(dir.join("pages/pages.jsonl"));
        }
        let (code, _, err) = run(&mut c);
        assert_eq!(code, 0, "{err}");
        assert_eq!(wacz_page_urls(&out), want, "pages given: {given}");
    }
}

/// A frame whose document a page also links to, in a browser crawl
/// (docs/crawl.md, "Pages and resources"): a linked URL is a page unless
/// a page fetched it before its turn. The seed links to /frame.html and
/// to /framer.html, which frames it, one tab loading one page at a time:
/// - the link to the frame first: its turn comes first, so /frame.html is
///   loaded as a page, at the link's hops (`L`, from the seed; no frame
///   hop on this path: the browser fetches a page's frames itself, none
///   is queued as an embed), with its screenshot, text and pages.jsonl
///   row; /framer.html then loads it again as its frame;
/// - the framer first: it fetches the frame, whose turn then comes as
///   `browser-fetched` (-5003, at the link's hops): fetched once, no page.
///
/// Either way the seed's own frame, /own.html, which the seed also links
/// to, is fetched by the seed as its frame before a link to it could be
/// taken: it is never queued, fetched once, and no page.
#[test]
fn a_frame_also_linked_is_a_page_unless_a_page_fetched_it_first() {
    let Some(exe) = chromium() else {
        eprintln!("skipped: WARCHEST_SKIP_BROWSER");
        return;
    };
    for frame_first in [true, false] {
        let (addr, seen) = counted(move |p| {
            let page = |body: &str| (HTML, format!("<!doctype html>{body}"));
            let (frame, framer) = (
                "<a href=/frame.html>the frame</a>",
                "<a href=/framer.html>a page framing it</a>",
            );
            match p {
                "/" => page(&format!(
                    "<title>home</title>{} {} <iframe src=/own.html></iframe> \
<a href=/own.html>our own frame</a>",
                    if frame_first { frame } else { framer },
                    if frame_first { framer } else { frame },
                )),
                "/frame.html" => page("<title>frame</title><p>framed"),
                "/framer.html" => page("<title>framer</title><iframe src=/frame.html></iframe>"),
                "/own.html" => page("<title>own</title><p>our own frame"),
                _ => ("text/plain", String::new()),
            }
        });
        let (_work, dir, log) = browser_crawl_of(&exe, &addr, &[]);
        let url = |p: &str| format!("http://{addr}{p}");
        // crawl.log's columns: status 2nd, URI 4th, hops and via after it,
        // annotations last.
        let line = |p: &str| {
            log.lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|f| f.get(3) == Some(&url(p).as_str()))
        };
        let frame = line("/frame.html").unwrap_or_else(|| panic!("no line of the frame:\n{log}"));
        assert_eq!(
            (frame[4], frame[5]),
            ("L", url("/").as_str()),
            "the link's hops:\n{log}"
        );
        let (status, note) = (frame[1], frame[frame.len() - 1]);
        if frame_first {
            assert_eq!(status, "200", "{log}");
            assert!(note.starts_with("browser,"), "loaded as a page:\n{log}");
        } else {
            assert_eq!((status, note), ("-5003", "browser-fetched"), "{log}");
        }
        let framer = line("/framer.html").unwrap_or_else(|| panic!("no framer:\n{log}"));
        assert!(framer[framer.len() - 1].starts_with("browser,"), "{log}");
        assert!(line("/own.html").is_none(), "never queued:\n{log}");
        assert_eq!(asked(&seen, "/own.html"), 1, "{log}");
        // As its page, then as the framer's frame; or as the frame only.
        let times = if frame_first { 2 } else { 1 };
        assert_eq!(asked(&seen, "/frame.html"), times, "{log}");
        let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
        let rows = page_rows(&pages);
        let html = |p: &str| (url(p), "text/html".to_string());
        let mut want: std::collections::BTreeSet<_> = [html("/"), html("/framer.html")].into();
        if frame_first {
            want.insert(html("/frame.html"));
        }
        assert_eq!(rows, want, "{pages}");
        let cdxj = std::fs::read_to_string(dir.join("indexes/index.cdxj")).unwrap();
        for (p, page) in [("/frame.html", frame_first), ("/own.html", false)] {
            for kind in ["view", "text"] {
                let rec = format!("\"url\": \"urn:{kind}:{}\"", url(p));
                assert_eq!(cdxj.contains(&rec), page, "{rec}:\n{cdxj}");
            }
        }
    }
}
