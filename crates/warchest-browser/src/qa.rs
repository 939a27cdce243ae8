//! `warchest qa`: every captured page replayed through `warchest serve`
//! (in process) in headless Chromium and compared with the page as
//! captured, as Browsertrix's `qa` mode does:
//!
//! - the screenshots: the share of pixels that differ (a channel off by
//!   more than [`PIXEL_TOLERANCE`]);
//! - the text: a similarity ratio, 1 − (word-level Levenshtein distance ÷
//!   the longer text's words), over the first [`TEXT_WORDS`] words;
//! - resources the replay asked for that the archive does not hold (serve
//!   answered 4xx or 5xx on the replay origin without `Memento-Datetime`:
//!   an archived 404 is a capture, not a miss);
//! - requests that tried to leave the archive (any other origin, blocked
//!   by the replay's Content-Security-Policy or failing).
//!
//! The pages are those with a `urn:view:` screenshot (a browser capture);
//! an archive with none (an HTTP capture) has each HTML response with
//! status 200 checked for what its replay misses, with no scores.
//! A JSON report per page, `qa.json` and `index.html` (worst pages
//! first, the screenshots side by side) go to the report directory.

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use warchest_replay::Collection;
use warchest_replay::store::{KeyRange, Query, Store};
use warchest_serve::{ServeOptions, Server};

use crate::BrowserError;
use crate::chrome::{Chromium, Launch};
use crate::grab::{MAX_TEXT, TEXT_JS};
use crate::page::Tab;

/// A colour channel may differ by this much (of 255) and the pixel still
/// count as the same (anti-aliasing, font hinting).
pub const PIXEL_TOLERANCE: u8 = 26;

/// Words of each text compared (the distance is quadratic in them).
pub const TEXT_WORDS: usize = 3000;

/// The largest screenshot read from an archive.
const MAX_PNG: u64 = 64 << 20;

const CSP_WATCH_JS: &str = include_str!("js/csp-watch.js");

/// What makes a page good.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Thresholds {
    /// The least screenshot match (1 − the share of pixels that differ).
    pub min_screenshot: f64,
    /// The least text similarity.
    pub min_text: f64,
    /// The most resources missing from the archive.
    pub max_missing: usize,
}

impl Default for Thresholds {
    /// 0.97 (at most 3 % of pixels differ), 0.9, none missing.
    fn default() -> Self {
        Thresholds {
            min_screenshot: 0.97,
            min_text: 0.9,
            max_missing: 0,
        }
    }
}

/// How QA runs.
#[derive(Debug, Clone)]
pub struct QaOptions {
    /// The Chromium executable.
    pub chromium: PathBuf,
    /// Where the reports go.
    pub report_dir: PathBuf,
    /// What makes a page good.
    pub thresholds: Thresholds,
    /// Bound of each page's replay.
    pub page_timeout: Duration,
    /// How long the load event is waited for.
    pub load_timeout: Duration,
    /// Quiet network time that counts as idle, and the longest wait.
    pub idle: (Duration, Duration),
    /// Pages checked at most.
    pub max_pages: usize,
    /// Browsers at once, one tab each, each replaying the next page not
    /// yet taken (at least one).
    pub browsers: usize,
}

impl QaOptions {
    /// Defaults: 60 s a page, 30 s to load, 500 ms idle within 10 s,
    /// 10,000 pages, one browser.
    pub fn new(chromium: PathBuf, report_dir: PathBuf) -> QaOptions {
        QaOptions {
            chromium,
            report_dir,
            thresholds: Thresholds::default(),
            page_timeout: Duration::from_secs(60),
            load_timeout: Duration::from_secs(30),
            idle: (Duration::from_millis(500), Duration::from_secs(10)),
            max_pages: 10_000,
            browsers: 1,
        }
    }
}

/// One page's report.
#[derive(Debug, Clone, Serialize)]
pub struct PageReport {
    /// The page.
    pub url: String,
    /// Its capture's timestamp.
    pub timestamp: String,
    /// Where it was replayed.
    pub replay_url: String,
    /// The replay's HTTP status for the page.
    pub replay_status: Option<u16>,
    /// 1 − the share of pixels that differ (`None`: no screenshot was
    /// captured).
    pub screenshot_match: Option<f64>,
    /// The text similarity (`None`: no text was captured).
    pub text_match: Option<f64>,
    /// Resources the replay asked for that the archive does not hold
    /// (their original URLs).
    pub missing: Vec<String>,
    /// Requests that tried to leave the archive.
    pub left_archive: Vec<String>,
    /// Resources the replay got from the archive.
    pub replayed: usize,
    /// Whether the page meets the thresholds.
    pub good: bool,
    /// Why not.
    pub problems: Vec<String>,
    /// The captured screenshot's file in the report directory.
    pub capture_png: Option<String>,
    /// The replay's screenshot's file.
    pub replay_png: Option<String>,
    /// Milliseconds.
    pub ms: u64,
}

/// What QA found.
#[derive(Debug, Clone, Serialize)]
pub struct QaSummary {
    /// Pages checked.
    pub pages: usize,
    /// Pages the archive has: its `urn:view:` screenshots (one a page, the
    /// latest), or without any, its 200 HTML responses.
    pub found: usize,
    /// Pages found but not checked: past [`QaOptions::max_pages`].
    pub unchecked: usize,
    /// Pages that meet the thresholds.
    pub good: usize,
    /// The thresholds.
    pub thresholds: Thresholds,
    /// The reports, worst first.
    pub reports: Vec<PageReport>,
}

struct PageToCheck {
    url: String,
    timestamp: String,
    png: Option<Vec<u8>>,
    text: Option<String>,
}

/// Checks the archive at `input` (a crawl directory, WARC files, or a
/// WACZ); writes the reports.
///
/// # Errors
/// The archive cannot be read, the browser cannot run, or the reports
/// cannot be written.
pub fn run(input: &[PathBuf], o: &QaOptions) -> Result<QaSummary, BrowserError> {
    let io = |what: &Path| {
        let w = what.display().to_string();
        move |e| BrowserError::Io(w, e)
    };
    std::fs::create_dir_all(&o.report_dir).map_err(io(&o.report_dir))?;
    let work = tempfile::tempdir().map_err(io(Path::new("temporary directory")))?;
    let (pages, found) = pages_of(input, &work.path().join("qa.store"), o.max_pages)?;
    let mut opts = ServeOptions::new(input.to_vec());
    opts.listen = "127.0.0.1:0".into();
    opts.replay_listen = Some("127.0.0.1:0".into());
    opts.store = Some(work.path().join("serve.store"));
    opts.poll = None;
    opts.collection = "qa".into();
    let server = Server::bind(opts)?;
    let replay = server
        .replay_addr()
        .map_err(io(Path::new("replay address")))?
        .ok_or_else(|| BrowserError::Page("serve has no replay origin".into()))?;
    let stop = server.stop_handle();
    let serving = std::thread::spawn(move || server.run());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(io(Path::new("tokio runtime")))?;
    let origin = format!("http://{replay}");
    let result = rt.block_on(check_all(&pages, &origin, o));
    stop.stop();
    let _ = serving.join();
    let mut reports = result?;
    reports.sort_by(|a, b| {
        score(a)
            .total_cmp(&score(b))
            .then(b.missing.len().cmp(&a.missing.len()))
    });
    let summary = QaSummary {
        pages: reports.len(),
        found,
        unchecked: found.saturating_sub(pages.len()),
        good: reports.iter().filter(|r| r.good).count(),
        thresholds: o.thresholds,
        reports,
    };
    write_reports(&summary, &o.report_dir)?;
    Ok(summary)
}

/// How good a page looks, for the order of the report (lower: worse).
fn score(r: &PageReport) -> f64 {
    let s = [r.screenshot_match, r.text_match]
        .into_iter()
        .flatten()
        .fold(1.0f64, f64::min);
    if r.good { 1.0 + s } else { s }
}

/// The first `max` pages of the archive, with what was captured of them,
/// and how many it has in all (the rest are counted, not read).
fn pages_of(
    input: &[PathBuf],
    store_path: &Path,
    max: usize,
) -> Result<(Vec<PageToCheck>, usize), BrowserError> {
    let store = Store::open(store_path)?;
    store.sync(input)?;
    let coll = Collection {
        name: "qa".into(),
        paths: input.to_vec(),
        store,
        fuzzy: warchest_replay::fuzzy::FuzzyRules::none(),
        served: Default::default(),
    };
    let mut views = Vec::new();
    let mut texts = HashMap::new();
    let mut html = Vec::new();
    let mut html_found = 0usize;
    let q = Query {
        range: KeyRange::raw(String::new()),
        from: None,
        to: None,
        limit: usize::MAX,
        reverse: false,
        skip: 0,
        resume: None,
    };
    coll.store.query(&q, |c| {
        let url = c.entry.url.clone().unwrap_or_default();
        let kind = c.entry.record_type.as_deref().unwrap_or("");
        if let Some(page) = url.strip_prefix("urn:view:") {
            views.push((page.to_string(), c));
        } else if let Some(page) = url.strip_prefix("urn:text:") {
            texts.insert(page.to_string(), c);
        } else if kind.eq_ignore_ascii_case("response")
            && c.status() == Some(200)
            && warchest::http::is_html_type(c.entry.mime.as_deref(), false)
        {
            html_found += 1;
            if html.len() < max {
                html.push(c);
            }
        }
        true
    })?;
    let read = |c: &warchest_replay::store::Capture, max: u64| -> Result<Vec<u8>, BrowserError> {
        Ok(coll.with_payload(c, |p| {
            let mut v = Vec::new();
            p.body
                .take(max)
                .read_to_end(&mut v)
                .map_err(warchest::Error::from)?;
            Ok(v)
        })?)
    };
    let mut out = Vec::new();
    if views.is_empty() {
        for c in html {
            out.push(PageToCheck {
                url: c.entry.url.clone().unwrap_or_default(),
                timestamp: c.entry.timestamp.clone(),
                png: None,
                text: None,
            });
        }
        return Ok((out, html_found));
    }
    // The latest capture of each page.
    views.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.entry.timestamp.cmp(&b.1.entry.timestamp))
    });
    views.dedup_by(|later, earlier| {
        if later.0 == earlier.0 {
            std::mem::swap(later, earlier);
            true
        } else {
            false
        }
    });
    let found = views.len();
    for (url, c) in views.into_iter().take(max) {
        let png = read(&c, MAX_PNG)?;
        let text = match texts.get(&url) {
            Some(t) => Some(String::from_utf8_lossy(&read(t, MAX_TEXT as u64 * 4)?).into_owned()),
            None => None,
        };
        out.push(PageToCheck {
            url,
            timestamp: c.entry.timestamp.clone(),
            png: Some(png),
            text,
        });
    }
    Ok((out, found))
}

/// The proxy QA's Chromium is given for anything but the loopback replay:
/// port 9 (discard) of loopback, where nothing listens.
const NOWHERE: &str = "127.0.0.1:9";

async fn check_all(
    pages: &[PageToCheck],
    origin: &str,
    o: &QaOptions,
) -> Result<Vec<PageReport>, BrowserError> {
    let launch = Launch {
        exe: o.chromium.clone(),
        proxy: None,
        spki: Vec::new(),
        // The replay is on loopback, which Chromium never sends through a
        // proxy: everything else (a page's request the replay's CSP did
        // not stop, Chromium's own update and account checks) meets a
        // proxy port nothing listens on, so a QA run never leaves this
        // machine.
        extra: vec![format!("--proxy-server=http://{NOWHERE}")],
        timeout: Duration::from_secs(30),
        event_buffer: crate::cdp::EVENT_BUFFER,
    };
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    // Each browser takes the next page not taken; the waits are the
    // browser's, so the workers share one task.
    let worker = || async {
        let mut browser: Option<Chromium> = None;
        let mut done = Vec::new();
        let mut result = Ok(());
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(p) = pages.get(i) else { break };
            match check_one(&mut browser, &launch, i, p, origin, o).await {
                Ok(r) => done.push((i, r)),
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    result = Err(e);
                }
            }
        }
        if let Some(b) = browser {
            b.kill().await;
        }
        result.map(|()| done)
    };
    let n = o.browsers.clamp(1, pages.len().max(1));
    let mut out = Vec::with_capacity(pages.len());
    for done in futures_util::future::join_all((0..n).map(|_| worker())).await {
        out.extend(done?);
    }
    // In the pages' order, whichever browser replayed them.
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

/// Replays page `i` in `browser` (started, or started again when it is
/// gone or passed its bound; one retry), compares it with its capture and
/// writes its report files.
async fn check_one(
    browser: &mut Option<Chromium>,
    launch: &Launch,
    i: usize,
    p: &PageToCheck,
    origin: &str,
    o: &QaOptions,
) -> Result<PageReport, BrowserError> {
    let replay_url = format!("{origin}/qa/{}mp_/{}", p.timestamp, p.url);
    let start = Instant::now();
    let mut outcome = Err(BrowserError::Gone);
    for _attempt in 0..2 {
        let alive = match browser {
            Some(b) => b.alive(),
            None => false,
        };
        if !alive {
            if let Some(b) = browser.take() {
                b.kill().await;
            }
            *browser = Some(Chromium::launch(launch).await?);
        }
        let Some(b) = browser.as_ref() else { continue };
        match tokio::time::timeout(o.page_timeout, replay_page(&b.cdp, &replay_url, origin, o))
            .await
        {
            Ok(Ok(r)) => {
                outcome = Ok(r);
                break;
            }
            Ok(Err(e)) => outcome = Err(e),
            Err(_) => {
                outcome = Err(BrowserError::Timeout(format!(
                    "{replay_url}: {:?}",
                    o.page_timeout
                )));
                if let Some(b) = browser.take() {
                    b.kill().await;
                }
            }
        }
    }
    let mut report = PageReport {
        url: p.url.clone(),
        timestamp: p.timestamp.clone(),
        replay_url: replay_url.clone(),
        replay_status: None,
        screenshot_match: None,
        text_match: None,
        missing: Vec::new(),
        left_archive: Vec::new(),
        replayed: 0,
        good: false,
        problems: Vec::new(),
        capture_png: None,
        replay_png: None,
        ms: 0,
    };
    match outcome {
        Ok(r) => {
            if let Some(cap) = &p.png {
                let name = format!("{i:05}-capture.png");
                write(&o.report_dir.join(&name), cap)?;
                report.capture_png = Some(name);
                report.screenshot_match = Some(1.0 - pixel_difference(cap, &r.png));
            }
            let name = format!("{i:05}-replay.png");
            write(&o.report_dir.join(&name), &r.png)?;
            report.replay_png = Some(name);
            if let Some(t) = &p.text {
                report.text_match = Some(text_similarity(t, &r.text));
            }
            report.replay_status = r.status;
            report.missing = r.missing;
            report.left_archive = r.left;
            report.replayed = r.replayed;
        }
        Err(e) => report.problems.push(format!("replay failed: {e}")),
    }
    judge(&mut report, &o.thresholds);
    report.ms = start.elapsed().as_millis() as u64;
    let json = serde_json::to_vec_pretty(&report).map_err(|e| BrowserError::Page(e.to_string()))?;
    write(&o.report_dir.join(format!("{i:05}.json")), &json)?;
    Ok(report)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), BrowserError> {
    std::fs::write(path, bytes).map_err(|e| BrowserError::Io(path.display().to_string(), e))
}

fn judge(r: &mut PageReport, t: &Thresholds) {
    if let Some(s) = r.replay_status
        && s >= 400
    {
        r.problems.push(format!("the replay answered {s}"));
    }
    if let Some(s) = r.screenshot_match
        && s < t.min_screenshot
    {
        r.problems.push(format!(
            "{:.1} % of pixels differ (at most {:.1} %)",
            (1.0 - s) * 100.0,
            (1.0 - t.min_screenshot) * 100.0
        ));
    }
    if let Some(s) = r.text_match
        && s < t.min_text
    {
        r.problems.push(format!(
            "text similarity {s:.3} (at least {:.3})",
            t.min_text
        ));
    }
    if r.missing.len() > t.max_missing {
        r.problems.push(format!(
            "{} resources missing from the archive (at most {})",
            r.missing.len(),
            t.max_missing
        ));
    }
    if !r.left_archive.is_empty() {
        r.problems.push(format!(
            "{} requests tried to leave the archive",
            r.left_archive.len()
        ));
    }
    r.good = r.problems.is_empty();
}

struct Replayed {
    png: Vec<u8>,
    text: String,
    status: Option<u16>,
    missing: Vec<String>,
    left: Vec<String>,
    replayed: usize,
}

async fn replay_page(
    cdp: &crate::cdp::Cdp,
    url: &str,
    origin: &str,
    o: &QaOptions,
) -> Result<Replayed, BrowserError> {
    let tab = Tab::open(cdp, &[CSP_WATCH_JS], false, crate::page::MAX_TARGETS).await?;
    let r = async {
        tab.navigate(url, o.load_timeout).await?;
        tab.network_idle(o.idle.0, o.idle.1).await;
        if tab.crashed() {
            return Err(BrowserError::Crashed);
        }
        let png = tab.screenshot().await?;
        let text = tab
            .eval(
                &TEXT_JS.replace("MAX_CHARS", &MAX_TEXT.to_string()),
                crate::page::COMMAND,
            )
            .await?
            .as_str()
            .unwrap_or("")
            .to_string();
        let blocked = tab
            .eval("window.__warchestBlocked || []", crate::page::COMMAND)
            .await
            .unwrap_or_default();
        let (responses, failures, _, _) = tab.seen();
        let status = crate::grab::document_status(&responses, url);
        let mut missing = BTreeSet::new();
        let mut left = BTreeSet::new();
        let mut replayed = 0;
        let inside = |u: &str| u.starts_with(origin) && u[origin.len()..].starts_with('/');
        for r in &responses {
            if r.url == url {
                continue;
            }
            if !inside(&r.url) {
                left.insert(r.url.clone());
            } else if r.status >= 400 && !r.memento {
                missing.insert(original_url(&r.url[origin.len()..]));
            } else {
                replayed += 1;
            }
        }
        for f in &failures {
            if !inside(&f.url) {
                left.insert(f.url.clone());
            }
        }
        if let serde_json::Value::Array(a) = blocked {
            for v in a {
                if let Some(u) = v.as_str()
                    && u.starts_with("http")
                    && !inside(u)
                {
                    left.insert(u.to_string());
                }
            }
        }
        Ok(Replayed {
            png,
            text,
            status,
            missing: missing.into_iter().collect(),
            left: left.into_iter().collect(),
            replayed,
        })
    }
    .await;
    tab.close().await;
    r
}

/// The URL archived behind a replay path `/{coll}/{ts}{mod}/{url}`.
fn original_url(path: &str) -> String {
    let mut parts = path.splitn(4, '/');
    let _ = parts.next();
    let _ = parts.next();
    let _ = parts.next();
    parts.next().unwrap_or(path).to_string()
}

/// The share of pixels that differ between two PNGs (1 when either does
/// not decode or their sizes differ).
pub fn pixel_difference(a: &[u8], b: &[u8]) -> f64 {
    let (Some((wa, ha, pa)), Some((wb, hb, pb))) = (rgba(a), rgba(b)) else {
        return 1.0;
    };
    if (wa, ha) != (wb, hb) || wa == 0 || ha == 0 {
        return 1.0;
    }
    let differ = pa
        .chunks_exact(4)
        .zip(pb.chunks_exact(4))
        .filter(|(x, y)| {
            x.iter()
                .zip(y.iter())
                .any(|(p, q)| p.abs_diff(*q) > PIXEL_TOLERANCE)
        })
        .count();
    differ as f64 / (wa as f64 * ha as f64)
}

/// A PNG as width, height and RGBA pixels (bounded: at most 64
/// megapixels).
fn rgba(png_bytes: &[u8]) -> Option<(u32, u32, Vec<u8>)> {
    let mut d = png::Decoder::new_with_limits(
        std::io::Cursor::new(png_bytes),
        png::Limits { bytes: 256 << 20 },
    );
    d.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut r = d.read_info().ok()?;
    let mut buf = vec![0; r.output_buffer_size()?];
    let info = r.next_frame(&mut buf).ok()?;
    let (w, h) = (info.width, info.height);
    let px = &buf[..info.buffer_size()];
    let out = match info.color_type {
        png::ColorType::Rgba => px.to_vec(),
        png::ColorType::Rgb => px
            .chunks_exact(3)
            .flat_map(|c| [c[0], c[1], c[2], 255])
            .collect(),
        png::ColorType::GrayscaleAlpha => px
            .chunks_exact(2)
            .flat_map(|c| [c[0], c[0], c[0], c[1]])
            .collect(),
        png::ColorType::Grayscale => px.iter().flat_map(|&g| [g, g, g, 255]).collect(),
        png::ColorType::Indexed => return None,
    };
    Some((w, h, out))
}

/// 1 − (word-level Levenshtein distance ÷ the longer text's words), over
/// the first [`TEXT_WORDS`] words of each; 1 for two empty texts.
pub fn text_similarity(a: &str, b: &str) -> f64 {
    let wa: Vec<&str> = a.split_whitespace().take(TEXT_WORDS).collect();
    let wb: Vec<&str> = b.split_whitespace().take(TEXT_WORDS).collect();
    let longest = wa.len().max(wb.len());
    if longest == 0 {
        return 1.0;
    }
    let d = strsim::generic_levenshtein(&wa, &wb);
    1.0 - d as f64 / longest as f64
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn write_reports(s: &QaSummary, dir: &Path) -> Result<(), BrowserError> {
    let json = serde_json::to_vec_pretty(s).map_err(|e| BrowserError::Page(e.to_string()))?;
    write(&dir.join("qa.json"), &json)?;
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>warchest QA</title>\
<style>body{font:14px sans-serif;margin:1em}section{border-top:1px solid #ccc;padding:.5em 0}\
.bad h2{color:#a00}.good h2{color:#070}img{width:48%;border:1px solid #999;vertical-align:top}\
td{padding:0 1em 0 0}</style></head><body>",
    );
    h.push_str(&format!(
        "<h1>QA: {} of {} pages good</h1><p>Thresholds: screenshot match ≥ {}, text similarity ≥ {}, missing ≤ {}. Worst pages first; left: as captured, right: as replayed.</p>",
        s.good, s.pages, s.thresholds.min_screenshot, s.thresholds.min_text, s.thresholds.max_missing
    ));
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1} %", v * 100.0));
    for r in &s.reports {
        h.push_str(&format!(
            "<section class=\"{}\"><h2>{}</h2><table><tr><td>screenshot match</td><td>{}</td></tr>\
<tr><td>text similarity</td><td>{}</td></tr><tr><td>replayed resources</td><td>{}</td></tr></table>",
            if r.good { "good" } else { "bad" },
            esc(&r.url),
            pct(r.screenshot_match),
            pct(r.text_match),
            r.replayed
        ));
        for p in &r.problems {
            h.push_str(&format!("<p>{}</p>", esc(p)));
        }
        for (what, list) in [
            ("missing", &r.missing),
            ("left the archive", &r.left_archive),
        ] {
            if !list.is_empty() {
                h.push_str(&format!(
                    "<details><summary>{} {what}</summary><ul>",
                    list.len()
                ));
                for u in list {
                    h.push_str(&format!("<li>{}</li>", esc(u)));
                }
                h.push_str("</ul></details>");
            }
        }
        h.push_str("<div>");
        for p in [&r.capture_png, &r.replay_png].into_iter().flatten() {
            h.push_str(&format!("<img src=\"{}\" alt=\"\">", esc(p)));
        }
        h.push_str("</div></section>");
    }
    h.push_str("</body></html>\n");
    write(&dir.join("index.html"), h.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_similarity_counts_words() {
        assert_eq!(text_similarity("", ""), 1.0);
        assert_eq!(text_similarity("a b c d", "a b c d"), 1.0);
        assert_eq!(text_similarity("a b c d", "a b x d"), 0.75);
        assert_eq!(text_similarity("a b", ""), 0.0);
    }

    #[test]
    fn original_url_of_a_replay_path() {
        assert_eq!(
            original_url("/qa/20121120120000mp_/http://example.com/a?b"),
            "http://example.com/a?b"
        );
    }

    #[test]
    fn undecodable_screenshots_differ_wholly() {
        assert_eq!(pixel_difference(b"not a png", b"nor this"), 1.0);
    }
}
