//! The hook a browser fills: pages loaded in a browser instead of the HTTP
//! client (`crawl --browser`).
//!
//! This crate (layer 3) does not know a browser; the command sets a
//! [`PageRenderer`] on the crawl ([`crate::engine::Crawl::set_renderer`])
//! built on `warchest-browser` (layer 5). The engine calls it for pages
//! (seeds and the targets of links, not embeds, robots.txt or sitemaps).
//! The renderer records what the browser fetched through the crawl's own
//! recorder ([`crate::engine::Crawl::recorder`]), so its records go into
//! the same WARC files and dedupe index; it returns the rendered DOM's
//! links, which go to the frontier, and the URLs the browser fetched,
//! which the HTTP client then never fetches.
//!
//! The configuration keys ([`RenderConfig`]) are the command's flags:
//! `browser`, `browsers`, `chromium`, `page-timeout` and `behaviors`.

use std::path::PathBuf;

use serde::Deserialize;
use url::Url;

/// A page as a browser loaded it.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// The document's HTTP status (none: the browser got no answer).
    pub status: Option<u16>,
    /// The page's title.
    pub title: Option<String>,
    /// Browsertrix's `loadState`: 0 failed, 1 content loaded, 2 full page
    /// loaded, 3 behaviours run.
    pub load_state: u8,
    /// The rendered DOM's links (http and https).
    pub links: Vec<Url>,
    /// Links the page had past the renderer's bound, left out of `links`
    /// (crawl.log's `dol:N`).
    pub links_dropped: usize,
    /// Why reading the page's recorded HTML for links stopped before its
    /// end, if it did (crawl.log's `linksStopped:WHY`).
    pub links_stopped: Option<crate::links::Stopped>,
    /// The http(s) URLs the browser fetched (and the recorder recorded).
    pub fetched: Vec<Url>,
    /// Why the page failed (after the renderer's own retry).
    pub error: Option<String>,
    /// Milliseconds the page took.
    pub ms: u64,
    /// The browser's tracker of the page lost events: its `fetched` and
    /// `links` may be short (crawl.log's `trackerIncomplete`).
    pub tracker_incomplete: bool,
    /// Set when the page's own document (a 2xx answer to its URL, as
    /// recorded, or as the browser took it) was not HTML: its
    /// Content-Type. The URL is then a resource a tab loaded (a link to
    /// an image, a PDF or JSON), which got no screenshot or text: logged
    /// and listed in pages.jsonl with that type, as Browsertrix lists
    /// such a page URL, and not counted as a page by the budgets.
    pub not_html: Option<String>,
}

/// Loads pages in a browser whose traffic the crawl's recorder records.
/// Called from the crawl's worker threads: `render` blocks, and a
/// renderer bounds how many pages it loads at once (`browsers`).
pub trait PageRenderer: Send + Sync {
    /// Loads `url`, runs its behaviours, records it; never panics on a
    /// page (a failure is [`Rendered::error`]).
    fn render(&self, url: &Url) -> Rendered;

    /// [`PageRenderer::render`], calling `early` (on the calling thread)
    /// with links the page gives before it ends: those of its HTML as it
    /// was recorded (after its redirects), and of its DOM once it loaded.
    /// The engine queues them at once, so that the other tabs need not
    /// wait for this page's end. `early` may be slow (it writes to the
    /// frontier): a renderer drives the page elsewhere meanwhile, and
    /// makes every call before it returns. By default, none are given
    /// early.
    fn render_early(&self, url: &Url, early: &mut dyn FnMut(Vec<Url>)) -> Rendered {
        let _ = early;
        self.render(url)
    }

    /// Closes the browsers and waits for the recording of their exchanges
    /// under way: called once the crawl's workers stopped, before the
    /// recorder closes its files.
    ///
    /// # Errors
    /// Closing failed (the proxy's error).
    fn finish(&self) -> Result<(), String> {
        Ok(())
    }

    /// The exchanges of the pages that the renderer's recording proxy did
    /// not record, once [`PageRenderer::finish`] returned (none: it has no
    /// proxy, or cannot tell).
    fn unrecorded(&self) -> Option<warchest_capture::proxy::UnrecordedSummary> {
        None
    }
}

/// The browser keys of the configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct RenderConfig {
    /// Load pages in headless Chromium.
    pub browser: bool,
    /// Browsers (one tab each) at once.
    pub browsers: usize,
    /// The Chromium executable (none: found on PATH).
    pub chromium: Option<PathBuf>,
    /// Seconds a page may take in all.
    pub page_timeout: f64,
    /// The user's behaviour script, run in each page.
    pub behaviors: Option<PathBuf>,
}

impl Default for RenderConfig {
    fn default() -> Self {
        RenderConfig {
            browser: false,
            browsers: 1,
            chromium: None,
            page_timeout: 60.0,
            behaviors: None,
        }
    }
}

impl RenderConfig {
    /// Checks the values.
    ///
    /// # Errors
    /// A key out of its range, named.
    pub fn check(&self) -> Result<(), crate::config::ConfigError> {
        if self.browsers == 0 || self.browsers > 64 {
            return Err(crate::config::ConfigError("browsers: from 1 to 64".into()));
        }
        if !(self.page_timeout > 0.0 && self.page_timeout.is_finite()) {
            return Err(crate::config::ConfigError(
                "page-timeout: a positive number of seconds".into(),
            ));
        }
        Ok(())
    }
}

/// Whether the engine hands `hops` (a URI's hop path from its seed) to
/// the renderer: a seed, or a link's target, after any redirects. Embeds,
/// prerequisites, sitemap entries and speculative URLs go to the HTTP
/// client.
pub fn is_page(hops: &str) -> bool {
    matches!(hops.trim_end_matches('R').chars().last(), None | Some('L'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_seeds_and_link_targets() {
        assert!(is_page(""));
        assert!(is_page("L"));
        assert!(is_page("LLR"));
        assert!(is_page("R"));
        assert!(!is_page("LE"));
        assert!(!is_page("LER"));
        assert!(!is_page("P"));
        assert!(!is_page("I"));
        assert!(!is_page("LX"));
    }

    #[test]
    fn keys_are_the_flags() {
        let c: RenderConfig =
            toml::from_str("browser = true\nbrowsers = 3\npage-timeout = 20.0").unwrap();
        assert!(c.browser);
        assert_eq!(c.browsers, 3);
        assert_eq!(c.page_timeout, 20.0);
        assert!(toml::from_str::<RenderConfig>("tabs = 2").is_err());
    }
}
