//! A URI to crawl, with the hop path that led to it from a seed.
//!
//! Hop letters are Heritrix's (as its crawl.log writes them): `L` a link,
//! `E` an embed, `R` a redirect, `X` speculative (found in script text),
//! `P` a prerequisite (robots.txt, DNS), `I` inferred (a sitemap, a Link
//! header). A seed has an empty path.

use url::Url;

/// How a URI was reached from the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hop {
    /// A navigational link (`a/@href`, `area/@href`, a form action).
    Link,
    /// An embedded resource (image, style sheet, script, frame, media).
    Embed,
    /// A redirect (`Location`, meta refresh).
    Redirect,
    /// Speculative: a URL-like string found in script text.
    Speculative,
    /// A prerequisite fetched before the URI (robots.txt, DNS).
    Prerequisite,
    /// Inferred: a sitemap entry, a `Link` header, robots.txt `Sitemap:`.
    Inferred,
}

impl Hop {
    /// The letter Heritrix writes for this hop.
    pub fn letter(self) -> char {
        match self {
            Hop::Link => 'L',
            Hop::Embed => 'E',
            Hop::Redirect => 'R',
            Hop::Speculative => 'X',
            Hop::Prerequisite => 'P',
            Hop::Inferred => 'I',
        }
    }

    /// The hop for a Heritrix letter.
    pub fn from_letter(c: char) -> Option<Hop> {
        Some(match c {
            'L' => Hop::Link,
            'E' => Hop::Embed,
            'R' => Hop::Redirect,
            'X' => Hop::Speculative,
            'P' => Hop::Prerequisite,
            'I' => Hop::Inferred,
            _ => return None,
        })
    }

    /// Whether this hop fetches a part of the page before it rather than a
    /// new page (embeds, speculative script URLs, prerequisites).
    pub fn is_transclusion(self) -> bool {
        matches!(self, Hop::Embed | Hop::Speculative | Hop::Prerequisite)
    }

    /// Whether this hop counts toward `max-hops` (a link, or an inferred
    /// page such as a sitemap entry).
    pub fn is_link(self) -> bool {
        matches!(self, Hop::Link | Hop::Inferred)
    }
}

/// The most hop letters kept in a path (longer paths keep their tail;
/// `max-hops`, 20 by default, stops a crawl long before).
pub const MAX_HOPS_PATH: usize = 1024;

/// A URI on its way through a crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawlUri {
    /// The URL to fetch.
    pub url: Url,
    /// The hop letters from the seed, oldest first (`""` for a seed).
    pub hops: String,
    /// The URI this one was found in (none for a seed).
    pub via: Option<Url>,
    /// The index of the seed this URI descends from.
    pub seed: u32,
    /// Fetches of it answered with 429 or 503 and tried again (0 for a
    /// new URI): kept in the frontier, so a resume goes on counting
    /// (crawl.log's `Nt`, the backoff).
    pub tries: u32,
}

impl CrawlUri {
    /// Seed number `i`.
    pub fn seed(url: Url, i: u32) -> CrawlUri {
        CrawlUri {
            url,
            hops: String::new(),
            via: None,
            seed: i,
            tries: 0,
        }
    }

    /// A URI found in this one by a `hop`.
    pub fn child(&self, url: Url, hop: Hop) -> CrawlUri {
        let mut hops = String::with_capacity(self.hops.len() + 1);
        // Bounded: a path longer than MAX_HOPS_PATH keeps its tail, which
        // is all that trailing_embeds looks at; links_hops then
        // undercounts, but max-hops has stopped such a path long before.
        let start = (self.hops.len() + 1).saturating_sub(MAX_HOPS_PATH);
        hops.push_str(&self.hops[start..]);
        hops.push(hop.letter());
        CrawlUri {
            url,
            hops,
            via: Some(self.url.clone()),
            seed: self.seed,
            tries: 0,
        }
    }

    /// The last hop (none for a seed).
    pub fn last_hop(&self) -> Option<Hop> {
        self.hops.chars().next_back().and_then(Hop::from_letter)
    }

    /// Link hops from the seed: `L` and `I` (a page reached by a link, a
    /// sitemap or a `Link` header). `max-hops` limits this count.
    /// Redirects, embeds, speculative and prerequisite hops do not count.
    pub fn links_hops(&self) -> usize {
        self.hops
            .chars()
            .filter(|&c| matches!(c, 'L' | 'I'))
            .count()
    }

    /// Whether this URI is a page when it is an HTML document: a seed, or
    /// reached by a link (`L`) or a sitemap entry or `Link` header (`I`),
    /// after any redirects. An embed's document (a frame, an iframe: `E`)
    /// is part of the page that embeds it, and a URL found in script text
    /// (`X`, a fragment a script fetches) or a prerequisite (`P`) is no
    /// page of its own, whatever its type (docs/crawl.md, "Pages").
    pub fn reached_as_page(&self) -> bool {
        matches!(
            self.hops.trim_end_matches('R').chars().last(),
            None | Some('L' | 'I')
        )
    }

    /// Gives a URI queued first as no link (an embed, a URL in script
    /// text) the standing of a page, as a link or sitemap entry that named
    /// it before it was fetched does: its last hop before any redirects
    /// becomes `L` (`LE` -> `LL`, `LER` -> `LLR`). Its redirects' targets
    /// are then pages too, and it counts one link hop more, as a link's
    /// target does. A seed, or a URI reached as a page, is left as it is.
    pub fn take_page_standing(&mut self) {
        if self.reached_as_page() {
            return;
        }
        let redirects = self.hops.len() - self.hops.trim_end_matches('R').len();
        // The hop letters are ASCII, so the byte before the redirects is a
        // whole letter.
        if let Some(at) = self.hops.len().checked_sub(redirects + 1) {
            self.hops.replace_range(at..=at, "L");
        }
    }

    /// The trailing run of hops that are not links (`E`, `X`, `P`, `R`):
    /// `LEE` has 2, `LER` (an embed's redirect) 2, `LR` 1. `extra-hops`
    /// limits this count for URIs out of scope, as Heritrix's
    /// TransclusionDecideRule counts every hop after the last link.
    pub fn trailing_embeds(&self) -> usize {
        self.hops
            .chars()
            .rev()
            .take_while(|&c| !matches!(c, 'L' | 'I'))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn letters_round_trip() {
        for h in [
            Hop::Link,
            Hop::Embed,
            Hop::Redirect,
            Hop::Speculative,
            Hop::Prerequisite,
            Hop::Inferred,
        ] {
            assert_eq!(Hop::from_letter(h.letter()), Some(h));
        }
        assert_eq!(Hop::from_letter('Q'), None);
    }

    #[test]
    fn child_paths_and_counts() {
        let s = CrawlUri::seed(u("http://a.test/"), 3);
        assert_eq!(s.links_hops(), 0);
        assert_eq!(s.last_hop(), None);
        let p = s.child(u("http://a.test/p"), Hop::Link);
        let r = p.child(u("http://a.test/q"), Hop::Redirect);
        let e = r.child(u("http://b.test/s.css"), Hop::Embed);
        let e2 = e.child(u("http://c.test/i.png"), Hop::Embed);
        assert_eq!(e2.hops, "LREE");
        assert_eq!(e2.seed, 3);
        assert_eq!(e2.via.as_ref().unwrap().as_str(), "http://b.test/s.css");
        assert_eq!(e2.links_hops(), 1);
        assert_eq!(e2.trailing_embeds(), 3);
        assert_eq!(r.trailing_embeds(), 1);
        assert_eq!(p.trailing_embeds(), 0);
        let i = e2.child(u("http://a.test/sitemap-page"), Hop::Inferred);
        assert_eq!(i.links_hops(), 2);
        assert_eq!(i.trailing_embeds(), 0);
        assert_eq!(e2.last_hop(), Some(Hop::Embed));
    }

    #[test]
    fn pages_are_seeds_links_and_sitemap_entries() {
        let s = CrawlUri::seed(u("http://a.test/"), 0);
        let at = |hops: &str| CrawlUri {
            hops: hops.into(),
            ..s.clone()
        };
        for h in ["", "R", "L", "LLR", "LI", "LEI", "LXL"] {
            assert!(at(h).reached_as_page(), "{h}");
        }
        for h in ["LE", "LER", "LX", "LXR", "P", "LEE"] {
            assert!(!at(h).reached_as_page(), "{h}");
        }
    }

    #[test]
    fn a_linked_embed_takes_a_pages_standing() {
        let s = CrawlUri::seed(u("http://a.test/"), 0);
        let at = |hops: &str| CrawlUri {
            hops: hops.into(),
            ..s.clone()
        };
        for (from, to) in [
            ("LE", "LL"),
            ("LER", "LLR"),
            ("E", "L"),
            ("LXRR", "LLRR"),
            ("LEE", "LEL"),
            // Pages already: unchanged.
            ("", ""),
            ("R", "R"),
            ("LLR", "LLR"),
            ("LEI", "LEI"),
        ] {
            let mut c = at(from);
            c.take_page_standing();
            assert_eq!(c.hops, to, "{from}");
            assert!(c.reached_as_page(), "{from}");
            assert!(crate::render::is_page(&c.hops) || c.hops.ends_with('I'));
            // A redirect's target is a page too.
            let r = c.child(u("http://a.test/to"), Hop::Redirect);
            assert!(r.reached_as_page(), "{from} -> {}", r.hops);
        }
        let mut e = at("LE");
        e.take_page_standing();
        assert_eq!(e.links_hops(), 2);
    }

    #[test]
    fn hop_path_is_bounded() {
        let mut c = CrawlUri::seed(u("http://a.test/"), 0);
        for _ in 0..MAX_HOPS_PATH + 10 {
            c = c.child(u("http://a.test/x"), Hop::Embed);
        }
        assert_eq!(c.hops.len(), MAX_HOPS_PATH);
        assert_eq!(c.trailing_embeds(), MAX_HOPS_PATH);
    }
}
