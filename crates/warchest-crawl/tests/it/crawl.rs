//! The engine end to end on the small web of `web.rs`.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;

use warchest_crawl::config::CrawlConfig;
use warchest_crawl::engine::{Crawl, Ending, Summary};

use crate::web::{self, Web};

/// The configuration of a test crawl of `web` from a.test's home page:
/// no delays, loopback only (every host resolved to 127.0.0.1).
pub fn config(web: &Web, extra: &str) -> String {
    format!(
        "seeds = [\"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\nextra-hops = 1\nworkers = 3\ntimeout = 5.0\n{extra}\n{}",
        web.url("a.test", "/"),
        web.resolve_toml()
    )
}

pub fn crawl(dir: &Path, toml: &str) -> Summary {
    let cfg = CrawlConfig::from_toml(toml).unwrap();
    let c = Crawl::open(dir, cfg, toml, Arc::new(AtomicBool::new(false))).unwrap();
    c.run(&|_| {}).unwrap()
}

pub fn warc_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    v.sort();
    v
}

/// The records of the crawl's WARC files, each as text (the test web's
/// bodies are small and ASCII).
pub fn records(dir: &Path) -> Vec<String> {
    let mut all = String::new();
    for f in warc_files(dir) {
        let mut d = flate2::read::MultiGzDecoder::new(std::fs::File::open(f).unwrap());
        let mut b = Vec::new();
        d.read_to_end(&mut b).unwrap();
        all.push_str(&String::from_utf8_lossy(&b));
    }
    all.split("WARC/1.1\r\n")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The first record of type `ty` for `uri` among `recs`.
pub fn record_of<'a>(recs: &'a [String], ty: &str, uri: &str) -> &'a str {
    recs.iter()
        .find(|r| {
            r.contains(&format!("WARC-Type: {ty}\r\n"))
                && r.contains(&format!("WARC-Target-URI: {uri}\r\n"))
        })
        .unwrap_or_else(|| panic!("no {ty} record of {uri}"))
}

/// A WARC header field of a record as text.
pub fn field<'a>(rec: &'a str, name: &str) -> &'a str {
    rec.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name}: {rec}"))
}

fn without_robots(reqs: Vec<String>) -> BTreeSet<String> {
    reqs.into_iter()
        .filter(|r| !r.ends_with("/robots.txt"))
        .collect()
}

/// What a complete crawl of the small web fetches (robots.txt aside).
pub fn expected(w: &Web) -> BTreeSet<String> {
    [
        "/",
        "/p1",
        "/p2",
        "/p3",
        "/old",
        "/p1new",
        "/style.css",
        "/bg.png",
        "/big",
    ]
    .iter()
    .map(|p| w.url("a.test", p))
    .chain([w.url("c.test", "/img.png")])
    .collect()
}

/// The issue's three checks on every WARC file of a crawl: warcio check
/// and warchest's validator pass; `warchest index` (the library) equals
/// cdxj-indexer; pywb replays the seed page.
pub fn check_files(dir: &Path) {
    let files = warc_files(dir);
    assert!(!files.is_empty());
    pywb_replays_the_seed(dir, &files);
    let report = warchest_validate::validate_files(&files, &warchest_validate::Options::default());
    assert_eq!(report.summary.errors(), 0, "{:#?}", report.findings);
    // One warcio process for all the files (its start-up is most of its time).
    let o = Command::new("warcio")
        .args(["check", "-v"])
        .args(&files)
        .output()
        .expect("warcio (pip install warcio)");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && !text.contains("fail"),
        "warcio check: {text}"
    );
    for f in &files {
        assert!(
            text.contains(&*f.to_string_lossy()),
            "warcio check did not read {}: {text}",
            f.display()
        );
    }
    // The CDXJ written as the crawl went equals cdxj-indexer's, sorted.
    let mut ours: Vec<String> = std::fs::read_to_string(dir.join("indexes/index.cdxj"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    ours.sort();
    let o = Command::new("cdxj-indexer")
        .args(&files)
        .output()
        .expect("cdxj-indexer (pip install cdxj-indexer)");
    assert!(o.status.success());
    let mut theirs: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    theirs.sort();
    // cdxj-indexer names files as given (full paths), ours by base name;
    // it keeps the digest's `sha1:` label, warchest writes pywb's form.
    let theirs: Vec<String> = theirs
        .into_iter()
        .map(|l| {
            let mut l = l.replace("\"digest\": \"sha1:", "\"digest\": \"");
            for f in &files {
                l = l.replace(
                    &f.display().to_string(),
                    &f.file_name().unwrap().to_string_lossy(),
                );
            }
            l
        })
        .collect();
    let only_ours: Vec<&String> = ours
        .iter()
        .filter(|l| !theirs.contains(l))
        .take(3)
        .collect();
    let only_theirs: Vec<&String> = theirs
        .iter()
        .filter(|l| !ours.contains(l))
        .take(3)
        .collect();
    assert!(
        ours == theirs,
        "{} lines ours, {} cdxj-indexer's; only ours: {only_ours:#?}\nonly theirs: {only_theirs:#?}",
        ours.len(),
        theirs.len()
    );
}

/// pywb (its own index of the files, its WSGI app in process:
/// tests/pywb_replay.py) answers the seeds' replay with their archived
/// status and, unrewritten, their archived payload. A shard's crawl that
/// holds none of the seeds is checked on its first page.
pub fn pywb_replays_the_seed(dir: &Path, files: &[PathBuf]) {
    let text = std::fs::read_to_string(dir.join("crawl.toml")).unwrap();
    let cfg = CrawlConfig::from_toml(&text).unwrap();
    // Revisits of identical payload replay from their originals: an
    // earlier crawl's files (its indexes/ as the dedupe index) come first.
    // (A recrawl's are left out: its 304 revisits replay as their head,
    // and pywb would choose between one and the earlier response of the
    // same second.)
    let mut all = Vec::new();
    let earlier = cfg
        .engine
        .dedupe_index
        .as_deref()
        .filter(|p| p.ends_with("indexes"))
        .and_then(|p| p.parent().map(Path::to_path_buf));
    if let Some(old) = earlier {
        all.extend(warc_files(&old));
    }
    all.extend_from_slice(files);
    let o = pywb_replay(&cfg.engine.seeds, cfg.engine.shard.is_some(), &all);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("pywb replays "),
        "pywb replay (pip install pywb): {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn pywb_replay(seeds: &[String], or_first_page: bool, files: &[PathBuf]) -> std::process::Output {
    let mut cmd = Command::new("python3");
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pywb_replay.py"));
    if or_first_page {
        cmd.arg("--or-first-page");
    }
    cmd.args(seeds)
        .arg("--")
        .args(files)
        .output()
        .expect("python3")
}

#[test]
fn a_site_is_crawled_end_to_end() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let s = crawl(&dir, &config(&w, "max-size = 10000"));
    assert_eq!(s.ending, Ending::Finished);
    let reqs = w.requests();
    // Every URL of the site, the out-of-scope embed, nothing disallowed by
    // robots.txt, nothing out of scope, and each once.
    assert_eq!(without_robots(reqs.clone()), expected(&w));
    assert_eq!(
        reqs.iter().filter(|r| !r.ends_with("/robots.txt")).count(),
        expected(&w).len(),
        "{reqs:#?}"
    );
    assert!(reqs.contains(&w.url("a.test", "/robots.txt")));
    assert!(reqs.contains(&w.url("c.test", "/robots.txt")));
    assert!(
        !reqs
            .iter()
            .any(|r| r.contains("/private") || r.contains("b.test"))
    );

    let recs = records(&dir);
    let find = |ty: &str, uri: &str| -> Vec<&String> {
        recs.iter()
            .filter(|r| {
                r.contains(&format!("WARC-Type: {ty}\r\n"))
                    && r.contains(&format!("WARC-Target-URI: {uri}\r\n"))
            })
            .collect()
    };
    // warcinfo describes the crawl.
    let info = recs
        .iter()
        .find(|r| r.contains("WARC-Type: warcinfo"))
        .unwrap();
    assert!(info.contains("software: warchest-crawl/"), "{info}");
    assert!(info.contains("crawl-config: max-size = 10000"), "{info}");
    assert!(
        info.contains("http-header-user-agent: Mozilla/5.0 (compatible; warchest-crawl/"),
        "{info}"
    );
    // request + response + metadata with its outlinks, as Heritrix writes.
    let home = w.url("a.test", "/");
    assert_eq!(find("response", &home).len(), 1);
    assert_eq!(find("request", &home).len(), 1);
    assert!(find("request", &home)[0].contains("GET / HTTP/1.0\r\n"));
    let meta = find("metadata", &home);
    assert_eq!(meta.len(), 1);
    assert!(
        meta[0].contains(&format!("outlink: {} L", w.url("a.test", "/p1"))),
        "{}",
        meta[0]
    );
    assert!(
        meta[0].contains(&format!("outlink: {} E", w.url("c.test", "/img.png"))),
        "{}",
        meta[0]
    );
    // The same payload twice: one response, one identical-payload revisit.
    let (p2, p3) = (w.url("a.test", "/p2"), w.url("a.test", "/p3"));
    let revisits = find("revisit", &p2).len() + find("revisit", &p3).len();
    let responses = find("response", &p2).len() + find("response", &p3).len();
    assert_eq!((responses, revisits), (1, 1));
    assert!(recs.iter().any(|r| r.contains(
        "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
    )));
    // Larger than max-size: cut, and said so.
    let big = find("response", &w.url("a.test", "/big"));
    assert!(
        big[0].contains("WARC-Truncated: length"),
        "{}",
        &big[0][..400]
    );

    // crawl.log: a line per URI, Heritrix's columns.
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let line = |uri: &str| -> Vec<String> {
        log.lines()
            .find(|l| l.split_whitespace().nth(3) == Some(uri))
            .unwrap_or_else(|| panic!("no line for {uri} in\n{log}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let h = line(&home);
    assert_eq!(
        (h[1].as_str(), h[4].as_str(), h[5].as_str(), h[6].as_str()),
        ("200", "-", "-", "text/html")
    );
    assert!(h[9].starts_with("sha1:"), "{h:?}");
    let img = line(&w.url("c.test", "/img.png"));
    assert_eq!((img[4].as_str(), img[5].as_str()), ("E", home.as_str()));
    let private = line(&w.url("a.test", "/private/secret"));
    assert_eq!(private[1], "-9998");
    let moved = line(&w.url("a.test", "/p1new"));
    assert_eq!(moved[4], "LLR");
    let robots = line(&w.url("a.test", "/robots.txt"));
    assert_eq!(robots[4], "P");
    let dup = if log.contains(&format!(" {p2} ")) && line(&p2)[11].contains("duplicate:digest") {
        p2
    } else {
        p3
    };
    assert!(line(&dup)[11].contains("duplicate:digest"), "{log}");
    assert!(line(&w.url("a.test", "/big"))[11].contains("lenTrunc"));
    // Out of scope: logged with the rule.
    let scope = std::fs::read_to_string(dir.join("logs/scope.log")).unwrap();
    assert!(scope.contains(&w.url("b.test", "/")), "{scope}");

    // pages.jsonl: header, then each HTML page.
    let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
    let mut it = pages.lines();
    assert!(it.next().unwrap().contains("json-pages-1.0"));
    let rows: Vec<serde_json::Value> = it.map(|l| serde_json::from_str(l).unwrap()).collect();
    let urls: BTreeSet<&str> = rows.iter().map(|r| r["url"].as_str().unwrap()).collect();
    assert_eq!(urls.len(), 5, "{pages}");
    let first = rows.iter().find(|r| r["url"] == home.as_str()).unwrap();
    assert_eq!(
        (first["title"].as_str(), first["seed"].as_bool()),
        (Some("Home"), Some(true))
    );

    check_files(&dir);
    // The replay check can fail: a seed the crawl does not hold.
    let o = pywb_replay(&[w.url("a.test", "/never")], false, &warc_files(&dir));
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds none of its seeds"));
}

/// Runs the crawl in `dir` again from its saved configuration, with
/// `change` applied to the text.
pub fn resume(dir: &Path, change: impl Fn(String) -> String) -> Summary {
    let text = change(std::fs::read_to_string(dir.join("crawl.toml")).unwrap());
    crawl(dir, &text)
}

/// A page's frame and the HTML fragment its script names are fetched (an
/// embed and a speculative hop) but are no pages of their own: only the
/// page and what it links to are in pages.jsonl, and only they count
/// against `max-pages`.
#[test]
fn a_frame_or_a_fragment_a_script_fetches_is_no_page() {
    let w = web::start();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("crawl");
    let home = w.url("e.test", "/frames/");
    // Script text read for URLs (`js`), as the fragment is named there.
    let toml = config(&w, "js = true").replace(&w.url("a.test", "/"), &home);
    let s = crawl(&dir, &toml);
    let reqs = w.requests();
    for p in ["frame.html", "frag.html", "linked.html"] {
        let u = w.url("e.test", &format!("/frames/{p}"));
        assert!(reqs.contains(&u), "{u} fetched: {reqs:?}");
    }
    let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
    let urls: BTreeSet<String> = pages
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["url"].to_string())
        .collect();
    let want: BTreeSet<String> = [home.clone(), w.url("e.test", "/frames/linked.html")]
        .iter()
        .map(|u| format!("\"{u}\""))
        .collect();
    assert_eq!(urls, want, "{pages}");
    assert_eq!(s.counts.pages, 2, "{:?}", s.counts);
}

/// A crawl of the test web from the seed `host` `path` (the default
/// configuration): the web, the temporary directory, the crawl's, and its
/// summary.
fn crawl_from(host: &str, path: &str) -> (Web, tempfile::TempDir, PathBuf, Summary) {
    let w = web::start();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("crawl");
    let toml = config(&w, "").replace(&w.url("a.test", "/"), &w.url(host, path));
    let s = crawl(&dir, &toml);
    (w, d, dir, s)
}

/// The URLs of a crawl's pages.jsonl rows.
pub fn page_urls(dir: &Path) -> BTreeSet<String> {
    let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
    pages
        .lines()
        .skip(1)
        .map(|l| {
            let row: serde_json::Value = serde_json::from_str(l).unwrap();
            row["url"].as_str().unwrap().to_string()
        })
        .collect()
}

/// A frame the page (or another document, before the frame is fetched)
/// also links to is a page: the link makes it one. A frame fetched before
/// any link named it stays a frame (docs/crawl.md, "Pages and resources").
#[test]
fn a_frame_also_linked_is_a_page() {
    let (w, _d, dir, s) = crawl_from("e.test", "/framed/");
    let home = w.url("e.test", "/framed/");
    let at = |p: &str| w.url("e.test", &format!("/framed/{p}"));
    let reqs = w.requests();
    for p in ["f.html", "x.html", "y.html", "later.html"] {
        assert!(reqs.contains(&at(p)), "{p} fetched: {reqs:?}");
    }
    let want: BTreeSet<String> = [home.clone(), at("x.html"), at("y.html"), at("later.html")]
        .into_iter()
        .collect();
    assert_eq!(page_urls(&dir), want);
    assert_eq!(s.counts.pages, 4, "{:?}", s.counts);
}

/// A frame a link names before it is fetched, and that redirects: the
/// redirect's target is a page, as the target of a linked URL's redirect
/// is (the frame's lease took a page's standing when it was taken). It
/// used to get the frame's hops, `ER`, and no page.
#[test]
fn a_linked_frame_that_redirects_passes_its_page_standing_on() {
    let (w, _d, dir, s) = crawl_from("e.test", "/relinked/");
    let at = |p: &str| w.url("e.test", &format!("/relinked/{p}"));
    let reqs = w.requests();
    for p in ["f.html", "r", "t.html"] {
        assert!(reqs.contains(&at(p)), "{p} fetched: {reqs:?}");
    }
    let want: BTreeSet<String> = [w.url("e.test", "/relinked/"), at("t.html")]
        .into_iter()
        .collect();
    assert_eq!(page_urls(&dir), want);
    assert_eq!(s.counts.pages, 2, "{:?}", s.counts);
    // crawl.log: the frame's path is a link's, its target's a link's
    // redirect.
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let hops = |u: &str| -> String {
        let line = log
            .lines()
            .find(|l| l.split_whitespace().nth(3) == Some(u))
            .unwrap_or_else(|| panic!("{u} in {log}"));
        line.split_whitespace().nth(4).unwrap().to_string()
    };
    assert_eq!(hops(&at("f.html")), "E");
    assert_eq!(hops(&at("r")), "L");
    assert_eq!(hops(&at("t.html")), "LR");
}

/// XHTML, and HTML whose Content-Type lacks its `;`, are pages on the
/// HTTP path (one rule for "is HTML": `warchest::http::is_html_type`).
#[test]
fn xhtml_and_html_of_a_loose_type_are_pages() {
    let (w, _d, dir, s) = crawl_from("e.test", "/types/");
    let home = w.url("e.test", "/types/");
    let at = |p: &str| w.url("e.test", &format!("/types/{p}"));
    let want: BTreeSet<String> = [home.clone(), at("x.xhtml"), at("nosemi.html")]
        .into_iter()
        .collect();
    assert_eq!(page_urls(&dir), want);
    assert_eq!(s.counts.pages, 3, "{:?}", s.counts);
}

/// A seed that redirects: its final URL's row is a seed's.
#[test]
fn a_redirected_seed_is_a_seed_in_pages() {
    let (w, _d, dir, _) = crawl_from("a.test", "/old");
    let pages = std::fs::read_to_string(dir.join("pages/pages.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = pages
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{pages}");
    assert_eq!(rows[0]["url"], w.url("a.test", "/p1new"), "{pages}");
    assert_eq!(rows[0]["seed"], true, "{pages}");
}

/// A renderer that loads nothing: the seed links to `/data`, whose
/// document is JSON (a resource loaded in a tab).
struct JsonLinked;

impl warchest_crawl::render::PageRenderer for JsonLinked {
    fn render(&self, url: &url::Url) -> warchest_crawl::render::Rendered {
        let json = url.path() == "/data";
        warchest_crawl::render::Rendered {
            status: Some(200),
            load_state: 2,
            links: if json {
                vec![]
            } else {
                vec![url.join("/data").unwrap()]
            },
            not_html: json.then(|| "application/json".to_string()),
            ..Default::default()
        }
    }
}

/// The progress line's and the status' pages are the HTML pages, as the
/// budgets count them: a browser crawl's row of a resource loaded in a tab
/// is in pages.jsonl but is no page there.
#[test]
fn a_resource_loaded_in_a_tab_is_no_page_in_the_counters() {
    let w = web::start();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("crawl");
    let toml = config(&w, "robots = \"ignore\"");
    let cfg = CrawlConfig::from_toml(&toml).unwrap();
    let mut c = Crawl::open(&dir, cfg, &toml, Arc::new(AtomicBool::new(false))).unwrap();
    c.set_renderer(Box::new(JsonLinked));
    let last = std::sync::Mutex::new(String::new());
    let s = c.run(&|c| *last.lock().unwrap() = c.snapshot().0).unwrap();
    assert_eq!(page_urls(&dir).len(), 2, "the seed's row and the JSON's");
    assert_eq!(s.counts.pages, 1, "{:?}", s.counts);
    let status: serde_json::Value = serde_json::from_str(&last.lock().unwrap()).unwrap();
    assert_eq!(status["pages_this_run"], 1, "{status}");
}

fn counted(reqs: &[String]) -> std::collections::BTreeMap<String, usize> {
    let mut m = std::collections::BTreeMap::new();
    for r in reqs.iter().filter(|r| !r.ends_with("/robots.txt")) {
        *m.entry(r.clone()).or_insert(0) += 1;
    }
    m
}

#[test]
fn a_budget_stops_the_crawl_and_resume_goes_on() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let s = crawl(&dir, &config(&w, "max-pages = 2"));
    assert_eq!(s.ending, Ending::Budget);
    assert!(s.counts.queued > 0, "{:?}", s.counts);
    let first = w.requests().len();
    assert!(first < expected(&w).len(), "stopped early: {first}");
    let s = resume(&dir, |t| t.replace("max-pages = 2", "max-pages = 0"));
    assert_eq!(s.ending, Ending::Finished);
    let c = counted(&w.requests());
    assert_eq!(c.keys().cloned().collect::<BTreeSet<_>>(), expected(&w));
    assert!(c.values().all(|&n| n == 1), "nothing fetched twice: {c:?}");
    check_files(&dir);
}

#[test]
fn a_stop_request_finishes_in_flight_and_resume_goes_on() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let toml = config(&w, "").replace(
        "seeds = [",
        &format!("seeds = [\"{}\", ", w.url("d.test", "/gen/0")),
    );
    let cfg = CrawlConfig::from_toml(&toml).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let c = Crawl::open(&dir, cfg, &toml, stop.clone()).unwrap();
    // d.test/gen/5 is held by the web until the stop is asked: d.test's
    // later pages (one connection a host) wait behind it in their queue,
    // so the crawl is stopped with URIs left and that one in flight
    // whatever the machine's speed (it used to be stopped at the first
    // request, and relied on the crawl not finishing before the stopper
    // thread next ran).
    let held = w.url("d.test", "/gen/5");
    w.hold("d.test/gen/5");
    let s = std::thread::scope(|sc| {
        let s2 = stop.clone();
        let w = &w;
        sc.spawn(move || {
            let t0 = std::time::Instant::now();
            while !w.requests().contains(&held) && t0.elapsed().as_secs() < 60 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            s2.store(true, std::sync::atomic::Ordering::Relaxed);
            w.release();
        });
        c.run(&|_| {}).unwrap()
    });
    assert_eq!(s.ending, Ending::Interrupted);
    assert_eq!(s.counts.in_flight, 0, "in-flight URIs finished");
    assert!(s.counts.queued > 0, "{:?}", s.counts);
    let s = resume(&dir, |t| t);
    assert_eq!(s.ending, Ending::Finished);
    let c = counted(&w.requests());
    let mut want = expected(&w);
    want.extend((0..web::GEN).map(|i| w.url("d.test", &format!("/gen/{i}"))));
    assert_eq!(c.keys().cloned().collect::<BTreeSet<_>>(), want);
    assert!(c.values().all(|&n| n == 1), "nothing fetched twice: {c:?}");
    check_files(&dir);
}

/// The configuration of shard `k` (1-based) of 2 on `handoff`, seeded
/// with d.test's generated pages too.
fn shard_config(w: &Web, handoff: &Path, k: usize, extra: &str) -> String {
    let extra = format!(
        "shard = \"{k}/2\"\nhandoff = \"{}\"\n{extra}",
        handoff.display()
    );
    config(w, &extra).replace(
        "seeds = [",
        &format!("seeds = [\"{}\", ", w.url("d.test", "/gen/0")),
    )
}

/// Runs a shard in each of `dirs` at once (with `extra` configuration
/// each), each until it ends by itself; a watchdog stops them after 60 s
/// (they end Interrupted then). With `stagger`, shard 1 runs alone for a
/// second first and must still be running when shard 2 starts.
fn run_shards(
    w: &Web,
    handoff: &Path,
    dirs: &[PathBuf],
    extra: &[&str],
    stagger: bool,
) -> Vec<Summary> {
    let stop = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let mut runs = Vec::new();
        for (k, d) in dirs.iter().enumerate() {
            if stagger && k == 1 {
                std::thread::sleep(std::time::Duration::from_secs(1));
                assert!(
                    !runs
                        .iter()
                        .any(|r: &std::thread::ScopedJoinHandle<'_, Summary>| r.is_finished()),
                    "shard 1 waits for shard 2"
                );
            }
            let t = shard_config(w, handoff, k + 1, extra[k]);
            let stop = stop.clone();
            runs.push(s.spawn(move || {
                let cfg = CrawlConfig::from_toml(&t).unwrap();
                Crawl::open(d, cfg, &t, stop).unwrap().run(&|_| {}).unwrap()
            }));
        }
        let t0 = std::time::Instant::now();
        while !runs.iter().all(|r| r.is_finished()) && t0.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    })
}

#[test]
fn a_shard_stopped_by_a_budget_lets_the_other_finish() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let handoff = out.path().join("handoff");
    let dirs: Vec<PathBuf> = (1..=2)
        .map(|k| out.path().join(format!("shard{k}")))
        .collect();
    let e = run_shards(&w, &handoff, &dirs, &["max-pages = 1", ""], false);
    assert_eq!(e[0].ending, Ending::Budget);
    assert_eq!(e[1].ending, Ending::Finished, "shard 2 ended by itself");
    let st = std::fs::read_to_string(handoff.join("status/shard-1.json")).unwrap();
    assert!(st.contains("\"ended\""), "{st}");
}

#[test]
fn two_shards_fetch_what_one_crawler_fetches() {
    use warchest_crawl::shard::shard_of;
    let w = web::start();
    let hosts: BTreeSet<u32> = ["a.test", "c.test", "d.test"]
        .iter()
        .map(|h| shard_of(&url::Url::parse(&w.url(h, "/")).unwrap(), 2))
        .collect();
    assert_eq!(hosts.len(), 2, "the test web's hosts fall in both shards");
    let out = tempfile::tempdir().unwrap();
    let handoff = out.path().join("handoff");
    let dirs: Vec<PathBuf> = (1..=2)
        .map(|k| out.path().join(format!("shard{k}")))
        .collect();
    // Both at once, each until it finds the whole crawl done (shard.rs):
    // shard 1 first, which must wait for shard 2 to start.
    let endings = run_shards(&w, &handoff, &dirs, &["", ""], true);
    for (k, s) in endings.iter().enumerate() {
        assert_eq!(
            s.ending,
            Ending::Finished,
            "shard {} ended by itself",
            k + 1
        );
        assert_eq!(
            (s.counts.queued, s.counts.in_flight),
            (0, 0),
            "{:?}",
            s.counts
        );
    }
    let c = counted(&w.requests());
    let mut want = expected(&w);
    want.extend((0..web::GEN).map(|i| w.url("d.test", &format!("/gen/{i}"))));
    assert_eq!(c.keys().cloned().collect::<BTreeSet<_>>(), want);
    assert!(
        c.values().all(|&n| n == 1),
        "each URL fetched by one shard once: {c:?}"
    );
    for d in &dirs {
        assert!(
            !warc_files(d).is_empty(),
            "{} crawled something",
            d.display()
        );
        check_files(d);
    }
}

fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn status_listen_serves_json_and_metrics_while_crawling() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let toml = config(&w, "status-listen = \"127.0.0.1:0\"")
        .replace("min-delay = 0.0", "min-delay = 0.05")
        .replace(
            "seeds = [",
            &format!("seeds = [\"{}\", ", w.url("d.test", "/gen/0")),
        );
    let cfg = CrawlConfig::from_toml(&toml).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let c = Crawl::open(&dir, cfg, &toml, stop.clone()).unwrap();
    let addr = c.status_addr.unwrap();
    assert!(addr.ip().is_loopback());
    let h = std::thread::spawn(move || c.run(&|_| {}).unwrap());
    // Polled until a URI is done (a slow machine may take seconds to get
    // there), not read once after a fixed wait.
    let t0 = std::time::Instant::now();
    let v = loop {
        let status = http_get(addr, "/status");
        assert!(
            status.starts_with("HTTP/1.0 200") || status.starts_with("HTTP/1.1 200"),
            "{status}"
        );
        let body = &status[status.find("\r\n\r\n").unwrap() + 4..];
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        if v["counts"]["done"].as_u64().unwrap() > 0 || t0.elapsed().as_secs() >= 60 {
            break v;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(v["counts"]["done"].as_u64().unwrap() > 0, "{v}");
    assert!(v["counts"]["queued"].as_u64().unwrap() > 0, "{v}");
    let metrics = http_get(addr, "/metrics");
    assert!(
        metrics.contains("# TYPE warchest_crawl_done gauge\nwarchest_crawl_done "),
        "{metrics}"
    );
    assert!(http_get(addr, "/nothing").contains(" 404 "));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let s = h.join().unwrap();
    assert_eq!(s.ending, Ending::Interrupted);
}

/// With `resolve-only` (what every test sets), a host outside the
/// `resolve` table is refused before any DNS lookup: the crawl fails that
/// URI and reaches nothing else, while the table's hosts are fetched.
#[test]
fn resolve_only_refuses_a_host_outside_the_table() {
    let w = crate::web::start();
    let text = format!(
        "seeds = [\"http://outside.invalid/\", \"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\nmax-hops = 0\nextra-hops = 0\ntimeout = 5.0\n{}",
        w.url("a.test", "/"),
        w.resolve_toml()
    );
    let out = tempfile::tempdir().unwrap();
    let cfg = warchest_crawl::config::CrawlConfig::from_toml(&text).unwrap();
    let c = warchest_crawl::engine::Crawl::open(
        &out.path().join("c"),
        cfg,
        &text,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    )
    .unwrap();
    let s = c.run(&|_| {}).unwrap();
    assert!(s.counts.pages >= 1, "{:?}", s.counts);

    let log = std::fs::read_to_string(out.path().join("c/logs/crawl.log")).unwrap_or_default();
    assert!(!w.requests().iter().any(|r| r.contains("outside.invalid")));
    // Its robots.txt failed as a host that cannot be resolved (Heritrix's
    // -1), so the page was precluded (-9998).
    assert!(
        log.lines()
            .any(|l| l.contains(" -1 ") && l.contains("http://outside.invalid/robots.txt")),
        "{log}"
    );
}

/// `logs/progress.log` gets a stats line every `stats-interval` (a minute
/// by default) and one at the end of the run.
#[test]
fn stats_lines_go_to_the_progress_log_while_crawling() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    // One host, 0.3 s between fetches: about 3 s.
    let toml = config(&w, "stats-interval = 0.2")
        .replace("min-delay = 0.0", "min-delay = 0.3")
        .replace("max-delay = 0.0", "max-delay = 0.3");
    let s = crawl(&dir, &toml);
    assert_eq!(s.ending, Ending::Finished);
    let log = std::fs::read_to_string(dir.join("logs/progress.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.len() >= 4, "{log}");
    for l in &lines {
        assert!(l.contains(" queued ") && l.contains(" done "), "{l}");
    }
    assert!(lines.last().unwrap().ends_with("(end of run)"), "{log}");
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| !l.contains("end of run"))
    );
}

#[test]
fn resolve_only_refuses_a_table_address_outside_loopback() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let toml = config(&w, "") + "\"x.test\" = \"10.0.0.1\"\n";
    let cfg = CrawlConfig::from_toml(&toml).unwrap();
    let err = match Crawl::open(
        &out.path().join("c"),
        cfg,
        &toml,
        Arc::new(AtomicBool::new(false)),
    ) {
        Ok(_) => panic!("opened with 10.0.0.1 under resolve-only"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("x.test") && err.contains("10.0.0.1"), "{err}");
}

/// crawl.log's retry count and extras, as Heritrix writes them: a URI
/// answered 429 and then 200 is logged once, with `2t` (two tries), and
/// every fetch's last column names its WARC file and the record's offset,
/// where its response record is.
#[test]
fn crawl_log_counts_tries_and_names_the_warc_record() {
    use warchest_crawl::testweb::{TestWeb, TestWebConfig};
    let web = TestWeb::start(TestWebConfig {
        sites: 1,
        pages: 2,
        ..TestWebConfig::default()
    })
    .unwrap();
    let page = web.url("ratelimit.test", "/a.html");
    let ip = host_ip(&web, "ratelimit.test");
    let toml = format!(
        "seeds = [\"{page}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\nmax-hops = 0\nextra-hops = 0\ntimeout = 5.0\nresolve-only = true\n[resolve]\n\"ratelimit.test\" = \"{ip}\"\n"
    );
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let s = crawl(&dir, &toml);
    assert_eq!(s.ending, Ending::Finished);
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let lines: Vec<Vec<&str>> = log
        .lines()
        .filter(|l| l.split_whitespace().nth(3) == Some(page.as_str()))
        .map(|l| l.split_whitespace().collect())
        .collect();
    // One line, for the last try: 200, and two tries.
    assert_eq!(lines.len(), 1, "{log}");
    let l = &lines[0];
    assert_eq!(l[1], "200", "{log}");
    assert!(l[11].split(',').any(|a| a == "2t"), "{log}");
    // A URI fetched once has no tries annotation.
    let robots = log.lines().find(|l| l.contains("/robots.txt ")).unwrap();
    assert!(!robots.contains("1t") && !robots.contains("2t"), "{robots}");
    // The extras: contentSize, and the WARC file and offset of the record.
    let x: serde_json::Value = serde_json::from_str(l[12]).unwrap();
    let name = x["warcFilename"].as_str().unwrap();
    let offset = x["warcFileOffset"].as_u64().unwrap();
    assert!(x["contentSize"].as_u64().unwrap() > 0, "{x}");
    let mut f = std::fs::File::open(dir.join("archive").join(name)).unwrap();
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(offset)).unwrap();
    let mut rec = Vec::new();
    flate2::read::GzDecoder::new(f)
        .read_to_end(&mut rec)
        .unwrap();
    let rec = String::from_utf8_lossy(&rec);
    assert!(rec.starts_with("WARC/1.1\r\n"), "{rec}");
    assert!(rec.contains("WARC-Type: response\r\n"), "{rec}");
    assert!(
        rec.contains(&format!("WARC-Target-URI: {page}\r\n")),
        "{rec}"
    );
    assert!(
        rec.contains("HTTP/1.0 200") || rec.contains("HTTP/1.1 200"),
        "{rec}"
    );
}

/// With `host-parallel` above one, a host's robots.txt is fetched once:
/// the workers that take its other URIs meanwhile wait for that fetch
/// (slow.test answers after 300 ms, so all three start together).
#[test]
fn robots_txt_is_fetched_once_with_host_parallel() {
    use warchest_crawl::testweb::{TestWeb, TestWebConfig};
    let web = TestWeb::start(TestWebConfig {
        sites: 1,
        pages: 2,
        ..TestWebConfig::default()
    })
    .unwrap();
    let toml = three_slow_seeds(&web, 5.0);
    let out = tempfile::tempdir().unwrap();
    let s = crawl(&out.path().join("c"), &toml);
    assert_eq!(s.ending, Ending::Finished);
    let served = web.served_urls();
    let robots = served.iter().filter(|u| u.ends_with("/robots.txt")).count();
    assert_eq!(robots, 1, "{served:?}");
    // Each seed fetched once.
    assert_eq!(served.len(), 4, "{served:?}");
}

/// A crawl of slow.test's home page and its two pages as seeds, no links
/// followed, three workers on the host at once.
fn three_slow_seeds(web: &warchest_crawl::testweb::TestWeb, timeout: f64) -> String {
    let ip = host_ip(web, "slow.test");
    let seeds: Vec<String> = ["/", "/1.html", "/2.html"]
        .iter()
        .map(|p| format!("\"{}\"", web.url("slow.test", p)))
        .collect();
    format!(
        "seeds = [{}]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\nmax-hops = 0\nextra-hops = 0\ntimeout = {timeout:.1}\nworkers = 3\nhost-parallel = 3\nresolve-only = true\n[resolve]\n\"slow.test\" = \"{ip}\"\n",
        seeds.join(", ")
    )
}

/// The loopback address the test web serves `host` on.
fn host_ip(web: &warchest_crawl::testweb::TestWeb, host: &str) -> std::net::IpAddr {
    web.hosts()
        .into_iter()
        .find(|(h, _)| h == host)
        .unwrap()
        .1
        .ip()
}

/// Keep-alive per host: a crawl of one site makes far fewer connections
/// than fetches; a server that closes each kept connection without notice
/// after two answers costs no failure (each request it dropped is sent
/// again on a new connection, once); with `keep-alive = false`, one
/// connection a fetch.
#[test]
fn keep_alive_reuses_a_hosts_connection_and_survives_its_closing() {
    use warchest_crawl::testweb::{TestWeb, TestWebConfig};
    for (max, keep) in [(0, true), (2, true), (0, false)] {
        let web = TestWeb::start(TestWebConfig {
            sites: 1,
            pages: 30,
            special: false,
            keep_alive_max: max,
            ..TestWebConfig::default()
        })
        .unwrap();
        let ip = host_ip(&web, "site0.test");
        let toml = format!(
            "seeds = [\"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\ntimeout = 5.0\nworkers = 2\nkeep-alive = {keep}\nresolve-only = true\n[resolve]\n\"site0.test\" = \"{ip}\"\n",
            web.seeds()[0]
        );
        let out = tempfile::tempdir().unwrap();
        let s = crawl(&out.path().join("c"), &toml);
        assert_eq!(s.ending, Ending::Finished);
        let served = web.served_urls();
        let fetched = served.len() as u64;
        assert!(fetched > 30, "{fetched}");
        assert_eq!(s.counts.failed, 0, "max {max} keep {keep}: {:?}", s.counts);
        assert!(web.served_twice().is_empty(), "{:?}", web.served_twice());
        let conns = web.connections();
        let what = format!("max {max}, keep-alive {keep}: {conns} connections, {fetched} fetches");
        match (max, keep) {
            (0, true) => assert!(conns <= 3, "{what}"),
            // Two answers a connection, and each drop costs one more.
            (2, true) => assert!(conns >= fetched / 2 && conns < fetched, "{what}"),
            _ => assert_eq!(conns, fetched, "{what}"),
        }
    }
}

/// A stop while workers wait for another worker's fetch of their host's
/// robots.txt lets them go at once: they fetch nothing, their URIs go back
/// to the queue and are fetched on resume (before, they waited for the
/// fetch and then fetched their pages after the stop).
#[test]
fn a_stop_lets_robots_txt_waiters_go() {
    use warchest_crawl::testweb::{TestWeb, TestWebConfig};
    let web = TestWeb::start(TestWebConfig {
        sites: 1,
        pages: 2,
        slow_delay: std::time::Duration::ZERO,
        ..TestWebConfig::default()
    })
    .unwrap();
    let toml = three_slow_seeds(&web, 10.0);
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let cfg = CrawlConfig::from_toml(&toml).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let c = Crawl::open(&dir, cfg, &toml, stop.clone()).unwrap();
    // robots.txt's answer is held; the stop comes once the web has the
    // request and the other two workers wait for it, and the answer goes
    // once they have left (events, not times), 60 s at most each. The
    // ticker ends at the stop, so this tick waits for them itself.
    web.hold_slow(true);
    let t0 = std::time::Instant::now();
    let s = c
        .run(&|c| {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let asked = web.served_urls().iter().any(|u| u.ends_with("/robots.txt"));
            assert!(
                t0.elapsed().as_secs() < 60,
                "robots.txt asked: {asked}, waiters: {}",
                c.robots_waiters()
            );
            if asked && c.robots_waiters() == 2 {
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
                let t1 = std::time::Instant::now();
                while c.robots_waiters() > 0 {
                    assert!(t1.elapsed().as_secs() < 60, "waiters kept after the stop");
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                web.hold_slow(false);
            }
        })
        .unwrap();
    assert_eq!(s.ending, Ending::Interrupted);
    let served = web.served_urls();
    // robots.txt and the fetching worker's own page; the two waiters
    // fetched nothing.
    assert_eq!(served.len(), 2, "{served:?}");
    assert_eq!(
        (s.counts.in_flight, s.counts.queued),
        (0, 2),
        "{:?}",
        s.counts
    );
    let s = resume(&dir, |t| t);
    assert_eq!(s.ending, Ending::Finished);
    let mut pages: Vec<String> = web
        .served_urls()
        .into_iter()
        .filter(|u| !u.ends_with("/robots.txt"))
        .collect();
    pages.sort();
    assert_eq!(pages.len(), 3, "each seed once: {pages:?}");
    pages.dedup();
    assert_eq!(pages.len(), 3, "each seed once");
}

/// Gives both writers of a crawl's pool (`warc-writers = 2`) a file of
/// their own before it runs: writer 0 held while a record goes to writer
/// 1 (serial 0), then one through the hold (writer 0, serial 1). A pool
/// otherwise opens its second file only when two records meet.
pub fn open_both_writers(c: &Crawl) {
    let rec = c.recorder();
    let now = time::OffsetDateTime::now_utc();
    let mut h = rec.hold().unwrap();
    rec.record_resource("urn:test:writer1", now, "text/plain", b"1", &[])
        .unwrap();
    h.record_resource("urn:test:writer0", now, "text/plain", b"0", &[])
        .unwrap();
}

/// The `.open` files of a crawl directory, sorted.
pub fn open_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "open"))
        .collect();
    v.sort();
    v
}

/// Runs a crawl of `toml` (two WARC writers) in `dir`, both writers'
/// files opened first ([`open_both_writers`]) and writer 0's removed once
/// nothing is queued or in flight (the run's last tick comes then, before
/// the files are closed), `also` called with both just after; returns the
/// run's error and the two `.open` files.
pub fn run_losing_a_writers_file(
    dir: &Path,
    toml: &str,
    also: &(dyn Fn(&[PathBuf]) + Sync),
) -> (String, Vec<PathBuf>) {
    let cfg = CrawlConfig::from_toml(toml).unwrap();
    let c = Crawl::open(dir, cfg, toml, Arc::new(AtomicBool::new(false))).unwrap();
    open_both_writers(&c);
    let open = open_files(dir);
    assert_eq!(open.len(), 2, "{open:?}");
    assert!(open[1].to_string_lossy().contains("-00001-"), "{open:?}");
    let removed = AtomicBool::new(false);
    let tick = |c: &Crawl| {
        let n = c.frontier().counts().unwrap();
        if n.done > 0 && n.queued == 0 && n.in_flight == 0 && !removed.swap(true, SeqCst) {
            std::fs::remove_file(&open[1]).unwrap();
            also(&open);
        }
    };
    let err = c.run(&tick).unwrap_err().to_string();
    assert!(removed.load(SeqCst));
    (err, open)
}

/// `Recorder::finish` failing at the end of a crawl (one writer's `.open`
/// file removed under it once every URI is done): the crawl returns the
/// error, and the file the other writer closed is indexed (CDXJ,
/// `indexed.txt`) all the same and named in it. It used to wait, not
/// indexed, for a resume.
#[test]
fn a_failed_close_at_the_end_still_indexes_the_other_writers_file() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let (err, open) = run_losing_a_writers_file(&dir, &config(&w, "warc-writers = 2"), &|_| {});
    let kept = open[0].with_extension("");
    let name = kept.file_name().unwrap().to_str().unwrap();
    assert!(err.contains("closing the WARC files failed"), "{err}");
    assert!(err.contains(name), "the closed file named: {err}");
    let listed = std::fs::read_to_string(dir.join("indexes/indexed.txt")).unwrap_or_default();
    assert!(
        listed.lines().any(|l| l.starts_with(&format!("{name}\t"))),
        "{name} indexed: {listed:?}"
    );
    let cdxj = std::fs::read_to_string(dir.join("indexes/index.cdxj")).unwrap();
    assert!(cdxj.lines().any(|l| l.contains(name)), "{cdxj}");
}

/// A failed close at the end (one writer's `.open` file removed) whose
/// other file then fails to index: that file's `.open` name is made a
/// directory once every URI is done, so its close renames the directory
/// and its index cannot trust its rows (the length differs) and cannot
/// read it again. The error names it as closed, not indexed, and no line
/// of it is in `index.cdxj` or `indexed.txt`.
#[test]
fn a_failed_close_whose_other_file_fails_to_index_names_it() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let (err, open) = run_losing_a_writers_file(&dir, &config(&w, "warc-writers = 2"), &|open| {
        std::fs::remove_file(&open[0]).unwrap();
        std::fs::create_dir(&open[0]).unwrap();
    });
    let kept = open[0].with_extension("");
    let name = kept.file_name().unwrap().to_str().unwrap();
    assert!(kept.is_dir(), "the close renamed the directory");
    assert!(err.contains("closing the WARC files failed"), "{err}");
    assert!(
        err.contains(&format!("closed, not indexed: {}", kept.display())),
        "the file whose indexing failed named: {err}"
    );
    assert!(err.contains("closed and indexed: none"), "{err}");
    let listed = std::fs::read_to_string(dir.join("indexes/indexed.txt")).unwrap_or_default();
    assert!(!listed.contains(name), "{listed:?}");
    let cdxj = std::fs::read_to_string(dir.join("indexes/index.cdxj")).unwrap_or_default();
    assert!(!cdxj.contains(name), "{cdxj}");
}

/// A rotation whose close fails part way, before the crawl runs (the
/// file's final name taken: the writer is left as a failed sync leaves
/// it, the file `.open`, a new one begun): every checkpoint of the run
/// fails, so the dedupe index never durably commits entries that point
/// into that file (its end-of-run checkpoint used to, the presync and the
/// companion syncing only the new file), and the run's error path leaves
/// the `.open` files for a resume instead of syncing, renaming and
/// indexing them.
#[test]
fn a_failed_close_at_a_rotation_fails_the_checkpoints_and_leaves_the_files_open() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let toml = config(&w, "warc-writers = 1\nwarc-size = 3000");
    let cfg = CrawlConfig::from_toml(&toml).unwrap();
    let c = Crawl::open(&dir, cfg, &toml, Arc::new(AtomicBool::new(false))).unwrap();
    let rec = c.recorder();
    let now = time::OffsetDateTime::now_utc();
    rec.record_resource("urn:test:a", now, "text/plain", b"a", &[])
        .unwrap();
    let open = open_files(&dir);
    assert_eq!(open.len(), 1, "{open:?}");
    std::fs::write(open[0].with_extension(""), b"").unwrap();
    let rotated = (0..100).any(|_| {
        rec.record_resource("urn:test:b", now, "text/plain", b"b", &[])
            .is_err()
    });
    assert!(rotated, "a rotation came and failed");
    let err = c.run(&|_| {}).unwrap_err().to_string();
    assert!(err.contains("earlier sync or close"), "{err}");
    rec.flush().expect("the recorder is not closed");
    let left = open_files(&dir);
    assert!(left.contains(&open[0]), "{left:?}");
    assert!(
        left.len() >= 2,
        "the run's last file left open too: {left:?}"
    );
}

/// The CDXJ of each file is made from its records as they were written
/// (no file read again: `indexed_as_written` counts them all), and is the
/// same bytes as `warchest index` of the closed file; with two writers and
/// small files (rotation), a redirect, a revisit and the `dns:` records.
#[test]
fn the_cdxj_made_as_records_are_written_is_warchest_index_of_each_file() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("crawl");
    let s = crawl(&dir, &config(&w, "warc-writers = 2\nwarc-size = 3000"));
    assert_eq!(s.ending, Ending::Finished);
    let files = warc_files(&dir);
    assert!(files.len() > 2, "rotated: {files:?}");
    assert_eq!(s.files.len(), files.len());
    assert_eq!(
        s.indexed_as_written,
        files.len() as u64,
        "every file indexed from its written records"
    );
    // In indexed.txt's order, each file's lines as `warchest index` makes them.
    let listed = std::fs::read_to_string(dir.join("indexes/indexed.txt")).unwrap();
    let mut want = String::new();
    for name in listed.lines().map(|l| l.split('\t').next().unwrap()) {
        let f = dir.join("archive").join(name);
        let mut r = warchest::archive::Reader::open(&f).unwrap();
        let mut o =
            warchest_index::IndexOutput::new(Vec::new(), &warchest_index::Format::Cdxj, false)
                .unwrap();
        warchest_index::Indexer::new(name, warchest_index::IndexOptions::default())
            .index(&mut r, |e| o.push(&e))
            .unwrap();
        want.push_str(&String::from_utf8(o.finish().unwrap()).unwrap());
    }
    let got = std::fs::read_to_string(dir.join("indexes/index.cdxj")).unwrap();
    assert!(!got.is_empty());
    assert_eq!(got, want);
    // What the comparison covered: an exchange whose records are split
    // between two files, a redirect and a revisit.
    let mut file_of = std::collections::HashMap::new();
    let mut all = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let mut d = flate2::read::MultiGzDecoder::new(std::fs::File::open(f).unwrap());
        let mut b = Vec::new();
        d.read_to_end(&mut b).unwrap();
        for r in String::from_utf8_lossy(&b).split("WARC/1.1\r\n") {
            if let Some(id) = r.lines().find_map(|l| l.strip_prefix("WARC-Record-ID: ")) {
                file_of.insert(id.to_string(), i);
                all.push((i, r.to_string()));
            }
        }
    }
    let split = all
        .iter()
        .filter(|(i, r)| {
            r.lines()
                .filter_map(|l| l.strip_prefix("WARC-Concurrent-To: "))
                .any(|to| file_of.get(to).is_some_and(|j| j != i))
        })
        .count();
    assert!(split > 0, "an exchange split between two files");
    let recs: Vec<String> = all.into_iter().map(|(_, r)| r).collect();
    assert!(
        recs.iter().any(|r| r.contains("WARC-Type: revisit\r\n")),
        "a revisit"
    );
    let old = record_of(&recs, "response", w.url("a.test", "/old").as_str());
    assert!(old.contains("\r\n\r\nHTTP/1.0 301 "), "a redirect: {old}");
    check_files(&dir);
}

/// The product token robots.txt groups are matched against is the
/// `robots-agent` key, as capture's is its option: `warchest` by default,
/// whose group keeps /not-for-warchest.html out; another token gets the
/// `*` group, which does not.
#[test]
fn the_robots_agent_key_names_the_group_obeyed() {
    use warchest_crawl::testweb::{TestWeb, TestWebConfig};
    let web = TestWeb::start(TestWebConfig {
        sites: 1,
        pages: 1,
        ..TestWebConfig::default()
    })
    .unwrap();
    let host = "robots-disallow.test";
    let ip = host_ip(&web, host);
    let page = web.url(host, "/not-for-warchest.html").to_string();
    for (extra, fetched) in [("", false), ("robots-agent = \"otherbot\"\n", true)] {
        let toml = format!(
            "seeds = [\"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\ntimeout = 5.0\nresolve-only = true\n{extra}[resolve]\n\"{host}\" = \"{ip}\"\n",
            web.url(host, "/")
        );
        let out = tempfile::tempdir().unwrap();
        let s = crawl(&out.path().join("c"), &toml);
        assert_eq!(s.ending, Ending::Finished);
        let served = web.served_urls();
        assert_eq!(served.contains(&page), fetched, "{extra:?}: {served:?}");
        assert!(
            !served.iter().any(|u| u.ends_with("/private/secret.html")),
            "{served:?}"
        );
    }
}

/// A host's robots.txt that redirects (301) twice, with relative
/// Locations (r.test), or once to an absolute URL (s.test), is followed
/// to the rules at the end (`robots::fetch_robots`): the path they
/// disallow is not fetched, the one they do not is. Each request is a hop
/// of its own in crawl.log: robots.txt a prerequisite (`P`) of the seed,
/// each redirect target one more `R` by way of the URL that redirected to
/// it, with its status; each is recorded in the WARC files and asked for
/// once.
#[test]
fn robots_txt_redirect_hops_are_followed_and_logged() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let toml = format!(
        "seeds = [\"{}\", \"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\n\
         workers = 2\ntimeout = 5.0\nresolve-only = true\n\
         [resolve]\n\"r.test\" = \"127.0.0.1\"\n\"s.test\" = \"127.0.0.1\"\n",
        w.url("r.test", "/"),
        w.url("s.test", "/")
    );
    let s = crawl(&dir, &toml);
    assert_eq!(s.ending, Ending::Finished);
    let reqs = w.requests();
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let lines_of = |uri: &str| -> Vec<Vec<String>> {
        log.lines()
            .filter(|l| l.split_whitespace().nth(3) == Some(uri))
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect()
    };
    let line = |uri: &str| -> Vec<String> {
        let mut v = lines_of(uri);
        assert_eq!(v.len(), 1, "one line for {uri} in\n{log}");
        v.remove(0)
    };
    let recs = records(&dir);
    for (host, hops) in [
        (
            "r.test",
            &["/robots.txt", "/robots-moved.txt", "/rules/robots.txt"][..],
        ),
        ("s.test", &["/robots.txt", "/rules/robots.txt"][..]),
    ] {
        let seed = w.url(host, "/");
        // (a) The rules were the moved ones: /secret/ is not fetched but
        // logged as kept out by robots.txt; the rest is.
        let secret = w.url(host, "/secret/page.html");
        assert!(!reqs.contains(&secret), "{reqs:?}");
        assert_eq!(line(&secret)[1], "-9998", "{log}");
        assert!(reqs.contains(&w.url(host, "/open.html")), "{reqs:?}");
        assert_eq!(line(&w.url(host, "/open.html"))[1], "200");
        // (b) Each hop: asked for once, one crawl.log line with its
        // status, its hop path and the URL it came by, and a response
        // record.
        let mut via = seed.clone();
        for (i, path) in hops.iter().enumerate() {
            let uri = w.url(host, path);
            let last = i + 1 == hops.len();
            assert_eq!(
                reqs.iter().filter(|r| **r == uri).count(),
                1,
                "{uri}: {reqs:?}"
            );
            let l = line(&uri);
            let want_hops = format!("P{}", "R".repeat(i));
            assert_eq!(
                (l[1].as_str(), l[4].as_str(), l[5].as_str()),
                (
                    if last { "200" } else { "301" },
                    want_hops.as_str(),
                    via.as_str()
                ),
                "{uri}: {l:?}"
            );
            if last {
                assert_eq!(l[6], "text/plain", "{l:?}");
            }
            let rec = record_of(&recs, "response", &uri);
            let status = if last { "200" } else { "301" };
            assert!(
                rec.contains(&format!("\r\n\r\nHTTP/1.0 {status} ")),
                "{rec}"
            );
            via = uri;
        }
    }
    // Nothing else: each host's two pages and its robots.txt hops.
    assert_eq!(reqs.len(), 2 * 2 + 3 + 2, "{reqs:?}");
}

/// A 200 robots.txt whose gzip coding does not decode (not gzip at all,
/// or cut short) is not read as empty or shortened rules: the host is
/// disallowed as for an unreachable robots.txt, its seed logged -9998
/// annotated `robots:undecodable`, and nothing of it but robots.txt is
/// fetched (within the back-off robots.txt is not asked again). A clean
/// gzip robots.txt is obeyed as any other.
#[test]
fn a_robots_txt_that_does_not_decode_disallows_its_host() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let hosts = ["gz-ok.test", "gz-bad.test", "gz-cut.test"];
    let seeds: Vec<String> = hosts
        .iter()
        .map(|h| format!("\"{}\"", w.url(h, "/")))
        .collect();
    let resolve: String = hosts
        .iter()
        .map(|h| format!("\"{h}\" = \"127.0.0.1\"\n"))
        .collect();
    let toml = format!(
        "seeds = [{}]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\n\
         workers = 2\ntimeout = 5.0\nresolve-only = true\n[resolve]\n{resolve}",
        seeds.join(", ")
    );
    let s = crawl(&dir, &toml);
    assert_eq!(s.ending, Ending::Finished);
    let reqs = w.requests();
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let line = |uri: &str| -> Vec<String> {
        let v: Vec<Vec<String>> = log
            .lines()
            .filter(|l| l.split_whitespace().nth(3) == Some(uri))
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect();
        assert_eq!(v.len(), 1, "one line for {uri} in\n{log}");
        v[0].clone()
    };
    for host in ["gz-bad.test", "gz-cut.test"] {
        let asked: Vec<&String> = reqs.iter().filter(|r| r.contains(host)).collect();
        assert_eq!(asked, [&w.url(host, "/robots.txt")], "{reqs:?}");
        let seed = line(&w.url(host, "/"));
        assert_eq!(seed[1], "-9998", "{log}");
        assert!(
            seed.last().unwrap().contains("robots:undecodable"),
            "{seed:?}"
        );
        // The robots.txt fetch itself is logged with its status.
        assert_eq!(line(&w.url(host, "/robots.txt"))[1], "200", "{log}");
    }
    let host = "gz-ok.test";
    assert!(reqs.contains(&w.url(host, "/open.html")), "{reqs:?}");
    assert!(
        !reqs.contains(&w.url(host, "/secret/page.html")),
        "{reqs:?}"
    );
    let secret = line(&w.url(host, "/secret/page.html"));
    assert_eq!(secret[1], "-9998", "{log}");
    assert!(
        !secret.last().unwrap().contains("undecodable"),
        "{secret:?}"
    );
}

/// Links lost are said: a page whose gzip is cut in its middle is logged
/// `linksStopped:decode` (its link before the cut followed, the one
/// after never seen), a page of more links than `max-links-per-page`
/// `dol:N`, and the summary counts both.
#[test]
fn links_cut_short_are_annotated_and_counted() {
    let w = web::start();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("c");
    let toml = format!(
        "seeds = [\"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\n\
         workers = 2\ntimeout = 5.0\nmax-links-per-page = 4\nresolve-only = true\n\
         [resolve]\n\"cut.test\" = \"127.0.0.1\"\n",
        w.url("cut.test", "/")
    );
    let s = crawl(&dir, &toml);
    assert_eq!(s.ending, Ending::Finished);
    let reqs = w.requests();
    assert!(reqs.contains(&w.url("cut.test", "/c1")), "{reqs:?}");
    assert!(!reqs.contains(&w.url("cut.test", "/c2")), "{reqs:?}");
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let ann = |uri: &str| -> String {
        let l = log
            .lines()
            .find(|l| l.split_whitespace().nth(3) == Some(uri))
            .unwrap_or_else(|| panic!("no line for {uri} in\n{log}"));
        l.split_whitespace().nth(11).unwrap_or_default().to_string()
    };
    assert!(
        ann(&w.url("cut.test", "/cut.html")).contains("linksStopped:decode"),
        "{log}"
    );
    assert!(
        ann(&w.url("cut.test", "/many.html")).contains("dol:6"),
        "{log}"
    );
    assert!(!ann(&w.url("cut.test", "/")).contains("links"), "{log}");
    assert_eq!((s.links_stopped, s.links_dropped), (1, 6));
}

/// A renderer whose page had more links than it gives: 3 past its bound,
/// and its HTML's extraction stopped at lol_html's memory bound; and
/// whose tracker lost events, counted as the browser counts them (on its
/// proxy's `Unrecorded`, which the crawl's summary takes at its end).
#[derive(Default)]
struct Capped(warchest_capture::proxy::Unrecorded);

impl warchest_crawl::render::PageRenderer for Capped {
    fn render(&self, _: &url::Url) -> warchest_crawl::render::Rendered {
        self.0.tracker_incomplete();
        warchest_crawl::render::Rendered {
            status: Some(200),
            load_state: 2,
            links_dropped: 3,
            links_stopped: Some(warchest_crawl::links::Stopped::new(
                warchest_crawl::links::StopReason::Memory,
                "a tag of megabytes",
            )),
            tracker_incomplete: true,
            ..Default::default()
        }
    }

    fn unrecorded(&self) -> Option<warchest_capture::proxy::UnrecordedSummary> {
        Some(self.0.summary())
    }
}

/// The browser path says the links a renderer left out: `dol:N` and
/// `linksStopped:WHY` on the page's crawl.log line, counted in the
/// summary and in the status JSON; and a tracker that lost events
/// (`trackerIncomplete`), counted in the summary (the end line's count)
/// once a line.
#[test]
fn a_rendered_pages_dropped_links_are_annotated() {
    let w = web::start();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("crawl");
    let toml = config(&w, "robots = \"ignore\"");
    let cfg = CrawlConfig::from_toml(&toml).unwrap();
    let mut c = Crawl::open(&dir, cfg, &toml, Arc::new(AtomicBool::new(false))).unwrap();
    c.set_renderer(Box::new(Capped::default()));
    let last = std::sync::Mutex::new((String::new(), String::new()));
    let s = c.run(&|c| *last.lock().unwrap() = c.snapshot()).unwrap();
    let log = std::fs::read_to_string(dir.join("logs/crawl.log")).unwrap();
    let seed = log
        .lines()
        .find(|l| l.split_whitespace().nth(3) == Some(w.url("a.test", "/").as_str()))
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(
        seed.split_whitespace().nth(11),
        Some("browser,resources:0,dol:3,linksStopped:memory,trackerIncomplete"),
        "{seed}"
    );
    assert_eq!((s.links_dropped, s.links_stopped), (3, 1));
    let incomplete = log
        .lines()
        .filter(|l| l.contains("trackerIncomplete"))
        .count() as u64;
    assert_eq!(incomplete, 1, "{log}");
    let unrecorded = s.unrecorded.expect("the renderer's unrecorded summary");
    assert_eq!(unrecorded.incomplete_pages, incomplete);
    let (json, metrics) = last.into_inner().unwrap();
    let status: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(status["links_dropped_this_run"], 3, "{status}");
    assert_eq!(status["links_stopped_this_run"], 1, "{status}");
    assert!(
        metrics.contains("\nwarchest_crawl_links_dropped 3\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("\nwarchest_crawl_links_stopped 1\n"),
        "{metrics}"
    );
}

/// `dir/logs/NAME` made a link to /dev/full: every write to it fails
/// (ENOSPC), as on a full disk.
fn full_log(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::os::unix::fs::symlink("/dev/full", dir.join("logs").join(name)).unwrap();
}

/// A crawl.log line that cannot be written stops the crawl with an error
/// naming the log, on every path: here only robots.txt's fetch line and a
/// -9998 line (the seed is disallowed), which used to be dropped while
/// the crawl finished.
#[test]
fn a_crawl_log_that_cannot_be_written_fails_the_crawl() {
    let w = web::start();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("crawl");
    full_log(&dir, "crawl.log");
    let toml = format!(
        "seeds = [\"{}\"]\nmin-delay = 0.0\nmax-delay = 0.0\ndelay-factor = 0.0\nworkers = 1\ntimeout = 5.0\n{}",
        w.url("a.test", "/private/x"),
        w.resolve_toml()
    );
    let cfg = CrawlConfig::from_toml(&toml).unwrap();
    let c = Crawl::open(&dir, cfg, &toml, Arc::new(AtomicBool::new(false))).unwrap();
    let err = c.run(&|_| {}).expect_err("crawl.log is unwritable");
    assert!(err.to_string().contains("crawl.log"), "{err}");
}

/// scope.log is a side log: a full one does not stop the crawl, and its
/// lost lines are counted in the summary's notes.
#[test]
fn a_scope_log_that_cannot_be_written_is_counted() {
    let w = web::start();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("crawl");
    full_log(&dir, "scope.log");
    let s = crawl(&dir, &config(&w, ""));
    assert_eq!(s.ending, Ending::Finished);
    let note = s
        .notes
        .iter()
        .find(|n| n.contains("scope.log"))
        .unwrap_or_else(|| panic!("{:?}", s.notes));
    assert!(note.contains("lines could not be written"), "{note}");
    // The crawl itself went on.
    assert!(s.counts.done > 3, "{:?}", s.counts);
}
