//! `warchest capture --browser` and `warchest qa`: pages as a browser sees
//! them, and how their replay compares (docs/crawl.md, "Browser capture"
//! and "QA").

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use warchest_browser::qa::{QaOptions, Thresholds};
use warchest_browser::{BrowserOptions, Browsers, PageResult, chrome};

use crate::report::{Global, Outcome};

/// The browser flags of `capture` (and, later, `crawl`).
#[derive(clap::Args, Debug, Clone)]
pub struct BrowserArgs {
    /// Load each URL in headless Chromium, its traffic recorded through
    /// warchest's recording proxy (robots.txt is not read, as Browsertrix
    /// by default); per page a screenshot (urn:view:URL), the rendered
    /// text (urn:text:URL) and a metadata record with its links.
    #[arg(long)]
    pub browser: bool,
    /// The Chromium (or Chrome) executable; default: chromium,
    /// chromium-browser, google-chrome or chrome on PATH.
    #[arg(long, value_name = "PATH")]
    pub chromium: Option<PathBuf>,
    /// Browsers at once (one tab each).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub browsers: usize,
    /// Seconds a page may take in all (load, behaviours, screenshot);
    /// past it the browser is restarted and the page retried once.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub page_timeout: f64,
    /// Seconds each behaviour (scroll, media, --behaviors) may take.
    #[arg(long, default_value_t = 15.0, value_name = "SECONDS")]
    pub behavior_timeout: f64,
    /// A script of your own run in each page after it loaded (for
    /// instance browsertrix-behaviors' bundle and its run call); a promise
    /// it returns is awaited, within --behavior-timeout.
    #[arg(long, value_name = "FILE")]
    pub behaviors: Option<PathBuf>,
    /// Do not scroll pages to their end.
    #[arg(long)]
    pub no_scroll: bool,
    /// Do not start audio and video.
    #[arg(long)]
    pub no_media: bool,
}

fn seconds(s: f64, what: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("{what}: not a positive number of seconds"))
}

fn chromium(given: &Option<PathBuf>) -> Result<PathBuf> {
    match given {
        Some(p) => Ok(p.clone()),
        None => chrome::find_on_path().context(
            "no Chromium on PATH (chromium, chromium-browser, google-chrome, chrome): \
             install it or give --chromium PATH",
        ),
    }
}

impl BrowserArgs {
    /// The browser options these flags give.
    pub fn options(&self) -> Result<BrowserOptions> {
        let mut o = BrowserOptions::new(chromium(&self.chromium)?);
        o.browsers = self.browsers.max(1);
        o.page_timeout = seconds(self.page_timeout, "--page-timeout")?;
        o.behavior_timeout = seconds(self.behavior_timeout, "--behavior-timeout")?;
        // The load event is waited for half the page's time at most; the
        // rest is for the behaviours and the screenshot.
        o.load_timeout = o.load_timeout.min(o.page_timeout / 2);
        o.idle_timeout = o.idle_timeout.min(o.page_timeout / 4);
        o.scroll = !self.no_scroll;
        o.media = !self.no_media;
        if let Some(f) = &self.behaviors {
            o.behaviors = Some(
                std::fs::read_to_string(f)
                    .with_context(|| format!("--behaviors {}", f.display()))?,
            );
        }
        Ok(o)
    }
}

/// A page's line on stderr: its status, URL and counts, then what the
/// page lacks: a retry, not HTML, resources not recorded, a tracker that
/// lost events (its resource list may then be short).
fn page_line(p: &PageResult) -> String {
    if let Some(e) = &p.error {
        return format!("failed {} after {} attempts: {e}", p.url, p.attempts);
    }
    let mut line = format!(
        "{} {} {} resources, {} links{}, {} ms",
        p.status.map_or("-".to_string(), |s| s.to_string()),
        p.url,
        p.fetched.len(),
        p.links.len(),
        links_dropped_note(p.links_dropped),
        p.ms,
    );
    if p.attempts > 1 {
        line.push_str(" (retried)");
    }
    if let (Some(m), false) = (&p.mime, p.is_page()) {
        line.push_str(&format!(" (not HTML: {m}; no screenshot or text)"));
    }
    if !p.not_recorded.is_empty() {
        line.push_str(&format!(" ({} not recorded)", p.not_recorded.len()));
    }
    if p.incomplete {
        line.push_str(" (tracker incomplete)");
    }
    line
}

/// `capture --browser`: every URL a page in the browser.
pub fn run_capture(
    g: &Global,
    urls: Vec<String>,
    b: &BrowserArgs,
    recorder: Arc<warchest_capture::Recorder>,
    proxy: warchest_capture::proxy::ProxyOptions,
    json: bool,
) -> Result<(Outcome, Vec<PathBuf>)> {
    let opts = b.options()?;
    let browsers = Browsers::start(opts, recorder.clone(), proxy)?;
    let quiet = g.quiet;
    let stdout = std::sync::Mutex::new(std::io::stdout());
    let each = move |p: &PageResult| {
        if json && let Ok(mut o) = stdout.lock() {
            crate::report::json_line(&mut *o, p);
        }
        if quiet {
            return;
        }
        eprintln!("{}", page_line(p));
    };
    let pages = browsers.capture_all(&urls, &each);
    let restarts = browsers.restarts();
    let unrecorded = browsers.unrecorded();
    browsers.finish()?;
    let stats = recorder.stats();
    let files = recorder.finish()?;
    let failed = pages.iter().filter(|p| !p.ok()).count();
    if !quiet {
        for f in &files {
            eprintln!("wrote {}", f.display());
        }
        eprintln!(
            "{} pages: {} captured, {} failed; {} browser restarts; {} records ({} warcinfo, {} responses, {} revisits)",
            pages.len(),
            pages.len() - failed,
            failed,
            restarts,
            stats.records + files.len() as u64,
            files.len(),
            stats.responses,
            stats.revisits,
        );
        // Their resource lists may be short (the HTTP client then fetches
        // nothing in their place): said once more at the end.
        let incomplete = pages.iter().filter(|p| p.incomplete).count();
        if incomplete > 0 {
            eprintln!("{incomplete} pages' trackers incomplete (events lost)");
        }
    }
    // A resource a page asked for and the proxy did not record is missing
    // from the archive: the run lost it. The browser's own requests
    // (its updater, its clock) are counted but lose nothing of a page.
    let lost = super::capture::report_unrecorded(g, &unrecorded.summary(), true);
    let outcome = if failed > 0 || lost > 0 {
        Outcome::Problem
    } else {
        Outcome::Ok
    };
    Ok((outcome, files))
}

/// Replay each captured page through serve in headless Chromium and
/// compare it with the capture: the screenshots (share of pixels that
/// differ), the text (similarity), resources the replay asked for that the
/// archive lacks, and requests that tried to leave the archive. Writes a
/// JSON report per page, qa.json and index.html (worst pages first, the
/// screenshots side by side). Exit 1 when a page falls under the
/// thresholds.
///
/// Pages are those captured with --browser (their urn:view: screenshots);
/// an archive without them has each HTML page checked for what is missing.
///
/// Example: `warchest qa crawl/ -o qa/ --min-screenshot 0.95`
#[derive(clap::Args, Debug)]
pub struct QaArgs {
    /// The crawl: a directory, WARC files or a WACZ.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Report directory.
    #[arg(short, long, default_value = "qa-report")]
    output: PathBuf,
    /// The Chromium executable (default: found on PATH).
    #[arg(long, value_name = "PATH")]
    chromium: Option<PathBuf>,
    /// Least share of pixels alike, 0 to 1.
    #[arg(long, default_value_t = 0.97)]
    min_screenshot: f64,
    /// Least text similarity, 0 to 1.
    #[arg(long, default_value_t = 0.9)]
    min_text: f64,
    /// Most resources missing from the archive in a page.
    #[arg(long, default_value_t = 0)]
    max_missing: usize,
    /// Seconds a page's replay may take.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    page_timeout: f64,
    /// Pages checked at most.
    #[arg(long, default_value_t = 10_000)]
    max_pages: usize,
    /// Browsers at once (one tab each), each replaying the next page.
    #[arg(long, default_value_t = 1, value_name = "N")]
    browsers: usize,
    /// The summary as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run_qa(g: &Global, a: QaArgs) -> Result<Outcome> {
    for (v, what) in [
        (a.min_screenshot, "--min-screenshot"),
        (a.min_text, "--min-text"),
    ] {
        if !(0.0..=1.0).contains(&v) {
            bail!("{what} {v}: not between 0 and 1");
        }
    }
    let mut o = QaOptions::new(chromium(&a.chromium)?, a.output.clone());
    o.thresholds = Thresholds {
        min_screenshot: a.min_screenshot,
        min_text: a.min_text,
        max_missing: a.max_missing,
    };
    o.page_timeout = seconds(a.page_timeout, "--page-timeout")?;
    o.load_timeout = o.load_timeout.min(o.page_timeout / 2);
    o.max_pages = a.max_pages;
    o.browsers = a.browsers.max(1);
    let s = warchest_browser::qa::run(&a.inputs, &o)?;
    if s.pages == 0 {
        bail!(
            "no pages found in {} (neither urn:view: screenshots nor HTML responses)",
            a.inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if a.json {
        let mut o = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut o, &s)?;
        writeln!(o)?;
    }
    if !g.quiet {
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0));
        for r in &s.reports {
            eprintln!(
                "{} {} screenshot {} text {} missing {} left {}{}",
                if r.good { "good" } else { "BAD " },
                r.url,
                pct(r.screenshot_match),
                pct(r.text_match),
                r.missing.len(),
                r.left_archive.len(),
                if r.problems.is_empty() {
                    String::new()
                } else {
                    format!(": {}", r.problems.join("; "))
                }
            );
        }
        eprintln!(
            "{} of {} pages good; report in {}",
            s.good,
            s.pages,
            a.output.join("index.html").display()
        );
        if s.unchecked > 0 {
            eprintln!(
                "{} of {} pages not checked (--max-pages {})",
                s.unchecked, s.found, a.max_pages
            );
        }
    }
    Ok(if s.good < s.pages {
        Outcome::Problem
    } else {
        Outcome::Ok
    })
}

/// `crawl --browser`: the crawl's pages in Chromium, through a recording
/// proxy that writes with the crawl's recorder, fetches as the crawl does
/// (its `resolve` table, timeout, --max-size) and asks the crawl's scope
/// before each connection.
struct CrawlRenderer {
    browsers: std::sync::RwLock<Option<Browsers>>,
    /// The crawl's link extraction, for a page's document as recorded.
    extract: warchest_crawl::links::ExtractConfig,
    /// `meta robots` nofollow is obeyed (robots `obey`).
    obey_robots: bool,
    /// The CA's directory, removed when the crawl ends.
    _ca: tempfile::TempDir,
    /// What the recording proxy did not record.
    unrecorded: Arc<warchest_capture::proxy::Unrecorded>,
}

impl warchest_crawl::render::PageRenderer for CrawlRenderer {
    fn render(&self, url: &url::Url) -> warchest_crawl::render::Rendered {
        self.render_early(url, &mut |_| {})
    }

    fn render_early(
        &self,
        url: &url::Url,
        early: &mut dyn FnMut(Vec<url::Url>),
    ) -> warchest_crawl::render::Rendered {
        use warchest_crawl::render::Rendered;
        let Ok(guard) = self.browsers.read() else {
            return Rendered {
                error: Some("the browsers are gone".into()),
                ..Rendered::default()
            };
        };
        let Some(b) = guard.as_ref() else {
            return Rendered {
                error: Some("the browsers are closed".into()),
                ..Rendered::default()
            };
        };
        let urls = |v: &[String]| -> Vec<url::Url> {
            v.iter().filter_map(|u| url::Url::parse(u).ok()).collect()
        };
        // What the document embeds: the browser fetches it itself, so a
        // link to it (a lightbox's <a href=x.jpg><img src=x.jpg>) is not
        // given early, where another tab would load it as a page before
        // this page's end marks it fetched (the end skips it then).
        let mut embeds = std::collections::HashSet::new();
        // The document's `meta robots` nofollow, obeyed as the HTTP crawl
        // does (not under --ignore-robots) on the three paths: the HTML's
        // links, the DOM's early and at the end. The DOM's early links
        // wait for the document (the end gives them otherwise).
        let mut nofollow = false;
        let mut document = false;
        // The page's own document was not HTML: a resource, not a page.
        let mut not_html: Option<String> = None;
        // The HTML's links not given early (what it embeds, what is named
        // as a resource): queued at the page's end unless it fetched them.
        let mut deferred: Vec<url::Url> = Vec::new();
        // What the HTML's extraction left out or stopped on.
        let mut html_dropped = 0;
        let mut html_stopped = None;
        let p = b.capture_early(url.as_str(), &mut |e| match e {
            // The HTML's a/area links, the ones the DOM's links.js takes
            // (not its embeds: the browser fetches those itself; nor
            // <link rel> or form targets, which the browser path never
            // loads as pages).
            warchest_browser::Early::Document {
                url: doc,
                content_type,
                body,
                cut,
            } => {
                let Ok(base) = url::Url::parse(&doc) else {
                    return;
                };
                let x = warchest_crawl::links::extract(
                    &base,
                    content_type.as_deref(),
                    &self.extract,
                    &body,
                );
                let (links, embedded): (Vec<_>, Vec<_>) = x
                    .links
                    .into_iter()
                    .partition(|l| l.hop == warchest_crawl::uri::Hop::Link);
                embeds.extend(embedded.into_iter().map(|l| l.url));
                embeds.extend(x.also_embedded);
                html_dropped = x.dropped;
                // An extractor's own stop came first, inside the bytes
                // it had; else the document's cut, at their end.
                html_stopped = x.stopped.or(document_cut_stop(cut));
                document = true;
                nofollow = x.nofollow && self.obey_robots;
                if !nofollow {
                    let (now, later): (Vec<_>, Vec<_>) = links
                        .into_iter()
                        .filter(|l| matches!(l.context, "a/@href" | "area/@href"))
                        .map(|l| l.url)
                        .partition(|u| !embeds.contains(u) && !named_as_a_resource(u));
                    // Kept for the end: a link only the HTML has (inside
                    // <noscript>, or one a script removed) is not among
                    // the DOM's links there.
                    deferred.extend(later);
                    early(now);
                }
            }
            warchest_browser::Early::NotHtml { content_type, .. } => {
                not_html = Some(content_type.unwrap_or_default());
            }
            warchest_browser::Early::Links(v) if document && !nofollow => early(
                urls(&v)
                    .into_iter()
                    .filter(|u: &url::Url| !embeds.contains(u) && !named_as_a_resource(u))
                    .collect(),
            ),
            _ => {}
        });
        let fetched = urls(&p.fetched);
        let links = if nofollow {
            Vec::new()
        } else {
            let mut links = urls(&p.links);
            let mut have: std::collections::HashSet<url::Url> =
                links.iter().chain(&fetched).cloned().collect();
            for u in deferred {
                if have.insert(u.clone()) {
                    links.push(u);
                }
            }
            links
        };
        Rendered {
            status: p.status,
            title: p.title.clone(),
            load_state: p.load_state as u8,
            links,
            // Under nofollow none are followed, and none are lost. The
            // DOM's and the HTML's lists mostly name the same links: the
            // larger count is a floor of those left out.
            links_dropped: if nofollow {
                0
            } else {
                p.links_dropped.max(html_dropped)
            },
            links_stopped: if nofollow { None } else { html_stopped },
            fetched,
            error: p.error.clone(),
            ms: p.ms,
            tracker_incomplete: p.incomplete,
            // The tab's document type when it has one (what the page
            // shows, the one that decided its records), else the recorded
            // answer's.
            not_html: match &p.mime {
                Some(m) => (!p.is_page()).then(|| m.clone()),
                None => not_html,
            },
        }
    }

    fn finish(&self) -> std::result::Result<(), String> {
        let taken = self.browsers.write().ok().and_then(|mut g| g.take());
        match taken {
            Some(b) => b.finish().map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    fn unrecorded(&self) -> Option<warchest_capture::proxy::UnrecordedSummary> {
        Some(self.unrecorded.summary())
    }
}

/// What `capture --browser`'s page line says of the DOM's links past
/// the bound (none when none were).
fn links_dropped_note(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} more dropped past {})", warchest_browser::MAX_LINKS)
    }
}

/// The link extraction stop a page's early document was cut by
/// (crawl.log's `linksStopped:WHY`), if it was.
fn document_cut_stop(
    cut: Option<warchest_browser::DocumentCut>,
) -> Option<warchest_crawl::links::Stopped> {
    use warchest_browser::DocumentCut;
    use warchest_crawl::links::{StopReason, Stopped};
    Some(match cut? {
        DocumentCut::Size => Stopped::new(
            StopReason::Size,
            format!(
                "links read from the first {} bytes of the document",
                warchest_browser::MAX_EARLY_DOCUMENT
            ),
        ),
        DocumentCut::Decode(e) => Stopped::new(StopReason::Decode, e),
        DocumentCut::Read(e) => {
            Stopped::new(StopReason::Read, format!("reading the recorded body: {e}"))
        }
    })
}

/// Whether `u`'s path ends as a file a page loads rather than shows does
/// (an image, a stylesheet, a script, a font, media, JSON): such a link is
/// not given early but left to the page's end, which queues it (from the
/// DOM's links, or the HTML's kept aside) only if the page did not fetch
/// it. Given early, another tab would load it as a
/// page while this page may still fetch it by other means than its HTML
/// names (a CSS background of a stylesheet, a lazy image's `data-src`).
fn named_as_a_resource(u: &url::Url) -> bool {
    const EXTS: &[&str] = &[
        "png", "jpg", "jpeg", "gif", "webp", "avif", "svg", "ico", "bmp", "tif", "tiff", "css",
        "js", "mjs", "woff", "woff2", "ttf", "otf", "eot", "mp4", "webm", "mp3", "ogg", "oga",
        "ogv", "wav", "m4a", "m4v", "m3u8", "mpd", "json",
    ];
    let last = u.path().rsplit('/').next().unwrap_or("");
    last.rsplit_once('.')
        .is_some_and(|(_, ext)| EXTS.iter().any(|e| ext.eq_ignore_ascii_case(e)))
}

/// The renderer `crawl --browser` sets on `crawl` (its `browser`,
/// `browsers`, `chromium`, `page-timeout` and `behaviors` keys).
pub fn crawl_renderer(
    crawl: &warchest_crawl::engine::Crawl,
) -> Result<Box<dyn warchest_crawl::render::PageRenderer>> {
    use warchest_capture::{proxy, tls};
    let r = &crawl.config().render;
    let mut o = BrowserOptions::new(chromium(&r.chromium)?);
    o.browsers = r.browsers.max(1);
    o.page_timeout = seconds(r.page_timeout, "page-timeout")?;
    o.load_timeout = o.load_timeout.min(o.page_timeout / 2);
    o.idle_timeout = o.idle_timeout.min(o.page_timeout / 4);
    o.behavior_timeout = o.behavior_timeout.min(o.page_timeout / 2);
    if let Some(f) = &r.behaviors {
        o.behaviors =
            Some(std::fs::read_to_string(f).with_context(|| format!("behaviors {}", f.display()))?);
    }
    let ca_dir = tempfile::tempdir().context("temporary directory")?;
    let ca = Arc::new(tls::CertAuthority::load_or_create(
        &ca_dir.path().join("ca.pem"),
    )?);
    let (mut fetch, resolver) = crawl.fetch_options();
    // A response a page still receives when its time is up is recorded
    // as truncated (time) rather than left open.
    fetch.read.limits.max_time = Some(o.page_timeout);
    let opts = proxy::ProxyOptions {
        fetch,
        ca,
        resolver,
        // The proxy listens on loopback for our own browser: it reaches
        // what the crawl reaches, as the crawl's scope and resolve-only
        // allow (the filter), before any lookup.
        access: proxy::Access {
            credentials: None,
            allow: vec!["0.0.0.0/0".parse()?, "::/0".parse()?],
            deny: Vec::new(),
            filter: Some(proxy::UrlFilter(crawl.embed_filter())),
        },
    };
    let browsers = Browsers::start(o, crawl.recorder(), opts)?;
    let unrecorded = browsers.unrecorded();
    Ok(Box::new(CrawlRenderer {
        unrecorded,
        browsers: std::sync::RwLock::new(Some(browsers)),
        extract: crawl.config().extract.clone(),
        obey_robots: crawl.config().engine.robots == warchest_crawl::config::RobotsMode::Obey,
        _ca: ca_dir,
    }))
}

#[cfg(test)]
mod tests {
    use super::{document_cut_stop, links_dropped_note, named_as_a_resource, page_line};
    use warchest_browser::{DocumentCut, LoadState, PageResult};
    use warchest_crawl::links::StopReason;

    fn page() -> PageResult {
        PageResult {
            url: "http://a.test/".into(),
            status: Some(200),
            title: None,
            load_state: LoadState::BehaviorsDone,
            load_event: true,
            links: vec!["http://a.test/b".into()],
            fetched: vec!["http://a.test/".into(), "http://a.test/i.png".into()],
            behaviors: Vec::new(),
            attempts: 1,
            ms: 12,
            error: None,
            incomplete: false,
            links_dropped: 0,
            not_recorded: Vec::new(),
            mime: Some("text/html".into()),
        }
    }

    #[test]
    fn a_pages_line_says_what_it_lacks() {
        let mut p = page();
        assert_eq!(
            page_line(&p),
            "200 http://a.test/ 2 resources, 1 links, 12 ms"
        );
        p.incomplete = true;
        p.not_recorded = vec!["http://a.test/i.png".into()];
        assert_eq!(
            page_line(&p),
            "200 http://a.test/ 2 resources, 1 links, 12 ms (1 not recorded) (tracker incomplete)"
        );
        p.error = Some("timed out".into());
        p.attempts = 2;
        assert_eq!(
            page_line(&p),
            "failed http://a.test/ after 2 attempts: timed out"
        );
    }

    /// The page line names links past the bound, and only then.
    #[test]
    fn the_page_line_names_dropped_links() {
        assert_eq!(links_dropped_note(0), "");
        assert_eq!(links_dropped_note(4), " (4 more dropped past 10000)");
    }

    /// A page's early document cut says why as the extractor's own stops
    /// do (crawl.log's `linksStopped:WHY`): past the early bound `size`,
    /// naming the bound; a whole document no stop.
    #[test]
    fn a_cut_document_is_a_links_stop() {
        assert_eq!(document_cut_stop(None), None);
        let size = document_cut_stop(Some(DocumentCut::Size)).unwrap();
        assert_eq!(size.why, StopReason::Size);
        assert_eq!(
            size.to_string(),
            "size: links read from the first 4194304 bytes of the document"
        );
        let decode = document_cut_stop(Some(DocumentCut::Decode("bad gzip".into()))).unwrap();
        assert_eq!(decode.to_string(), "decode: bad gzip");
        let read = document_cut_stop(Some(DocumentCut::Read("gone".into()))).unwrap();
        assert_eq!(read.to_string(), "read: reading the recorded body: gone");
    }

    #[test]
    fn resources_are_named_by_their_extension() {
        let r = |u: &str| named_as_a_resource(&url::Url::parse(u).unwrap());
        for u in [
            "http://a.test/i/big.JPG",
            "http://a.test/s.css?v=2",
            "http://a.test/api/data.json",
            "http://a.test/f/x.woff2#y",
        ] {
            assert!(r(u), "{u}");
        }
        for u in [
            "http://a.test/",
            "http://a.test/p/1.html",
            "http://a.test/doc.pdf",
            "http://a.test/svg/",
            "http://a.test/page?img=x.png",
            "http://a.test/v1.2/about",
        ] {
            assert!(!r(u), "{u}");
        }
    }
}
