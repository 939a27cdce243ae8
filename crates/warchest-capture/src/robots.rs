//! robots.txt, per RFC 9309, parsed by the `robotxt` crate (chosen in
//! docs/crawl.md, "robots.txt"): the rules for our product token, its
//! `Crawl-delay` and `Sitemap:` lines; what a fetch outcome for robots.txt
//! means (2xx: its rules; 4xx: everything allowed; 5xx, 429 or no answer:
//! everything disallowed for a while, RFC 9309 2.3.1; a 2xx whose body
//! does not decode likewise, [`decode_body`]); how long an
//! answer is kept ([`Kept`]); and a per-host cache with that expiry,
//! bounded in entries.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use url::Url;

/// The most of a robots.txt that is parsed (RFC 9309 2.5 asks for at
/// least 500 KiB).
pub const MAX_ROBOTS: usize = 512 << 10;
/// The most `Sitemap:` lines kept from one robots.txt.
pub const MAX_SITEMAPS: usize = 1000;

/// The rules of one robots.txt for one product token.
#[derive(Debug, Clone)]
pub struct Robots {
    rules: Rules,
    crawl_delay: Option<Duration>,
    sitemaps: Vec<Url>,
}

#[derive(Debug, Clone)]
enum Rules {
    AllowAll,
    DisallowAll,
    /// Disallowed as unreachable: a 2xx whose body did not decode (why).
    Undecodable(Arc<str>),
    Parsed(Arc<robotxt::Robots>),
}

impl Robots {
    /// Everything allowed: no robots.txt (4xx).
    pub fn allow_all() -> Robots {
        Robots {
            rules: Rules::AllowAll,
            crawl_delay: None,
            sitemaps: Vec::new(),
        }
    }

    /// Everything disallowed: robots.txt unreachable (5xx, no answer).
    pub fn disallow_all() -> Robots {
        Robots {
            rules: Rules::DisallowAll,
            ..Robots::allow_all()
        }
    }

    /// Everything disallowed: a 2xx robots.txt whose body could not be
    /// decoded (`why`, from [`decode_body`]), treated as unreachable.
    pub fn undecodable(why: &str) -> Robots {
        Robots {
            rules: Rules::Undecodable(why.into()),
            ..Robots::allow_all()
        }
    }

    /// The rules of `body` (cut at [`MAX_ROBOTS`]) for product token
    /// `agent` (`warchest`), matched case-insensitively; the `*` group's
    /// when no group names it. Lines that are not rules are skipped (RFC
    /// 9309 2.2: parsers are lenient).
    pub fn parse(body: &[u8], agent: &str) -> Robots {
        let body = &body[..body.len().min(MAX_ROBOTS)];
        let r = robotxt::Robots::parse(body, agent);
        Robots {
            crawl_delay: r.crawl_delay(),
            sitemaps: r.sitemaps().iter().take(MAX_SITEMAPS).cloned().collect(),
            rules: Rules::Parsed(Arc::new(r)),
        }
    }

    /// Whether the rules allow fetching `url` (its path and query).
    /// robots.txt itself is always allowed.
    pub fn allowed(&self, url: &Url) -> bool {
        match &self.rules {
            Rules::AllowAll => true,
            Rules::DisallowAll | Rules::Undecodable(_) => url.path() == "/robots.txt",
            Rules::Parsed(r) => r.is_url_allowed(url),
        }
    }

    /// The `Crawl-delay` of the group that applies, if any.
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    /// The `Sitemap:` URLs (all groups), at most [`MAX_SITEMAPS`].
    pub fn sitemaps(&self) -> &[Url] {
        &self.sitemaps
    }

    /// Whether these rules disallow everything because robots.txt was
    /// unreachable (or did not decode, [`Robots::undecoded`]).
    pub fn is_disallow_all(&self) -> bool {
        matches!(self.rules, Rules::DisallowAll | Rules::Undecodable(_))
    }

    /// Why the robots.txt body could not be decoded, when that is why
    /// everything is disallowed.
    pub fn undecoded(&self) -> Option<&str> {
        match &self.rules {
            Rules::Undecodable(why) => Some(why),
            _ => None,
        }
    }
}

/// The body of a 2xx robots.txt answer whose head `head` has been read
/// from `body`: transfer and content codings removed, at most
/// [`MAX_ROBOTS`]. `truncated` is the capture's truncation reason, if the
/// response was cut short while fetched.
///
/// # Errors
/// Why the body could not be decoded: a content or transfer coding that
/// fell back (unknown, not decoding, cut short), a read error, or a
/// truncated response that ended before [`MAX_ROBOTS`]. Rules read from
/// such bytes would be garbage or cut short, so the caller treats the
/// answer as unreachable ([`RobotsStep::Undecodable`]; RFC 9309 2.3.1.4
/// lets a crawler treat an unparseable file so, and disallowing is the
/// safe side). Shared by `capture` and the crawler so they decide alike.
pub fn decode_body<R: std::io::BufRead + Send>(
    body: R,
    head: &warchest::http::HttpHead,
    truncated: Option<&str>,
) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let (r, notes) = warchest::http::payload_reader_lenient_noted(body, head);
    let mut out = Vec::new();
    // One byte past the limit: a body that reaches it is cut by RFC 9309
    // 2.5's leave, not by the fetch, so a truncation past it is no loss.
    let read = r.take(MAX_ROBOTS as u64 + 1).read_to_end(&mut out);
    let mut why: Vec<String> = notes
        .get()
        .iter()
        // A body announced as chunked but not is whole and readable (the
        // read error is said below).
        .filter(|f| {
            !matches!(
                f,
                warchest::http::PayloadFallback::ReadError
                    | warchest::http::PayloadFallback::NotChunked
            )
        })
        .map(|f| f.describe().into())
        .collect();
    if let Err(e) = read {
        why.push(format!("read error: {e}"));
    }
    if let Some(t) = truncated
        && out.len() <= MAX_ROBOTS
    {
        why.push(format!("response truncated ({t})"));
    }
    if why.is_empty() {
        out.truncate(MAX_ROBOTS);
        Ok(out)
    } else {
        Err(why.join("; "))
    }
}

/// What fetching robots.txt gave.
#[derive(Debug, Clone, Copy)]
pub enum RobotsFetch<'a> {
    /// An HTTP answer (after redirects, which the fetcher follows up to
    /// five, RFC 9309 2.3.1.2) and its body.
    Answer {
        /// The status code.
        status: u16,
        /// The body (only read for 2xx).
        body: &'a [u8],
    },
    /// No answer: DNS, connection or timeout failure, or too many
    /// redirects.
    Unreachable,
    /// A 2xx answer whose body could not be decoded ([`decode_body`]'s
    /// error): treated as unreachable.
    Undecodable {
        /// Why, as [`decode_body`] says.
        why: &'a str,
    },
}

/// How long robots.txt answers are trusted, for `capture`
/// (`CaptureOptions::robots_policy`) and the crawler alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RobotsPolicy {
    /// A 2xx or 4xx answer (RFC 9309 2.4: no more than 24 hours).
    /// Default 24 hours.
    pub ttl: Duration,
    /// The back-off after a 5xx, 429 or no answer: the host is disallowed
    /// this long, then robots.txt is fetched again (RFC 9309 2.3.1.4
    /// wants the disallow, not for ever). Default 10 minutes.
    pub unreachable_ttl: Duration,
}

impl Default for RobotsPolicy {
    fn default() -> RobotsPolicy {
        RobotsPolicy {
            ttl: Duration::from_secs(24 * 3600),
            unreachable_ttl: Duration::from_secs(600),
        }
    }
}

impl RobotsPolicy {
    /// The rules a robots.txt fetch outcome gives, and how long they hold.
    pub fn decide(&self, fetch: RobotsFetch<'_>, agent: &str) -> (Robots, Duration) {
        match fetch {
            RobotsFetch::Answer { status, body } => match status {
                200..=299 => (Robots::parse(body, agent), self.ttl),
                // 429 is the server asking us to wait, not "no file":
                // treated as unreachable, as Google does.
                429 => (Robots::disallow_all(), self.unreachable_ttl),
                400..=499 => (Robots::allow_all(), self.ttl),
                _ => (Robots::disallow_all(), self.unreachable_ttl),
            },
            RobotsFetch::Unreachable => (Robots::disallow_all(), self.unreachable_ttl),
            RobotsFetch::Undecodable { why } => (Robots::undecodable(why), self.unreachable_ttl),
        }
    }
}

/// The most redirects followed to robots.txt (RFC 9309 2.3.1.2 asks for
/// at least five).
pub const MAX_ROBOTS_REDIRECTS: usize = 5;

/// What one request for robots.txt gave, as its fetcher reports it to
/// [`fetch_robots`]. `U` is the fetcher's URL type (capture and the
/// crawler each have their own).
#[derive(Debug, Clone)]
pub enum RobotsStep<U> {
    /// A redirect to this URL (resolved, and of a scheme the fetcher
    /// takes). A 3xx without a usable `Location` is an [`Answer`].
    ///
    /// [`Answer`]: RobotsStep::Answer
    Redirect(U),
    /// A final answer: its status and (for 2xx) its body.
    Answer {
        /// The status code.
        status: u16,
        /// The body, at most [`MAX_ROBOTS`] (only read for 2xx).
        body: Vec<u8>,
    },
    /// No answer (DNS, connection or timeout failure); the fetcher has
    /// reported why.
    Unreachable,
    /// A 2xx answer whose body could not be decoded: why
    /// ([`decode_body`]'s error). Everything is disallowed for the
    /// back-off, as for no answer.
    Undecodable(String),
}

/// Fetches robots.txt from `url` with `fetch`, following up to
/// [`MAX_ROBOTS_REDIRECTS`] redirects, and decides with `policy` what the
/// outcome means for product token `agent` (RFC 9309 2.3.1: 2xx its
/// rules, 4xx everything allowed, 5xx, 429, no answer or a body that did
/// not decode everything disallowed for a while). More redirects than that count as no answer.
/// The one loop `capture` and the crawler share, so they decide alike.
///
/// # Errors
/// Whatever `fetch` returns as an error (a failure to record, which
/// stops the caller; a failed request is [`RobotsStep::Unreachable`]).
pub fn fetch_robots<U, E>(
    url: U,
    agent: &str,
    policy: &RobotsPolicy,
    mut fetch: impl FnMut(&U) -> Result<RobotsStep<U>, E>,
) -> Result<(Robots, Duration), E> {
    let mut url = url;
    for _ in 0..=MAX_ROBOTS_REDIRECTS {
        match fetch(&url)? {
            RobotsStep::Redirect(next) => url = next,
            RobotsStep::Answer { status, body } => {
                return Ok(policy.decide(
                    RobotsFetch::Answer {
                        status,
                        body: &body,
                    },
                    agent,
                ));
            }
            RobotsStep::Undecodable(why) => {
                return Ok(policy.decide(RobotsFetch::Undecodable { why: &why }, agent));
            }
            RobotsStep::Unreachable => break,
        }
    }
    Ok(policy.decide(RobotsFetch::Unreachable, agent))
}

/// The robots.txt URL of `url`'s host (scheme, host and port).
pub fn robots_url(url: &Url) -> Option<Url> {
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    let mut r = url.clone();
    r.set_path("/robots.txt");
    r.set_query(None);
    r.set_fragment(None);
    // No user info: robots.txt belongs to the authority.
    let _ = r.set_username("");
    let _ = r.set_password(None);
    Some(r)
}

/// The cache key of `url`'s robots.txt: scheme, host and port.
pub fn robots_key(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// A robots.txt answer (`T`: the rules, or what the caller keeps of them)
/// and when it expires: the one expiry rule of [`RobotsCache`] and of
/// capture's per-origin rules. The caller passes the time in.
#[derive(Debug, Clone)]
pub struct Kept<T> {
    value: T,
    expires: Instant,
}

impl<T> Kept<T> {
    /// `value`, trusted from `now` for `ttl` (the `Duration` of
    /// [`RobotsPolicy::decide`]); a `ttl` past what `Instant` can hold is
    /// a year.
    pub fn new(value: T, now: Instant, ttl: Duration) -> Kept<T> {
        let expires = now
            .checked_add(ttl)
            .or_else(|| now.checked_add(Duration::from_secs(86400 * 365)))
            .unwrap_or(now);
        Kept { value, expires }
    }

    /// The value, unless it has expired at `now` (then robots.txt is to
    /// be fetched again).
    pub fn get(&self, now: Instant) -> Option<&T> {
        (now < self.expires).then_some(&self.value)
    }

    /// The value, expired or not (the answer just fetched applies to the
    /// URL that asked for it, even with a zero `ttl`).
    pub fn value(&self) -> &T {
        &self.value
    }
}

/// Robots rules per host, with expiry, at most `capacity` hosts (the
/// oldest entry goes first). The caller passes the time in.
#[derive(Debug)]
pub struct RobotsCache {
    capacity: usize,
    map: HashMap<String, Kept<Robots>>,
    order: VecDeque<String>,
}

impl RobotsCache {
    /// A cache of at most `capacity` hosts (at least 1).
    pub fn new(capacity: usize) -> RobotsCache {
        RobotsCache {
            capacity: capacity.max(1),
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// The rules for `url`'s host, unless missing or expired at `now`
    /// (then robots.txt is to be fetched).
    pub fn get(&self, url: &Url, now: Instant) -> Option<&Robots> {
        self.map.get(&robots_key(url)).and_then(|k| k.get(now))
    }

    /// Keeps `robots` for `url`'s host until `now + ttl`.
    pub fn insert(&mut self, url: &Url, robots: Robots, now: Instant, ttl: Duration) {
        let key = robots_key(url);
        if self
            .map
            .insert(key.clone(), Kept::new(robots, now, ttl))
            .is_none()
        {
            self.order.push_back(key);
            while self.map.len() > self.capacity {
                let Some(old) = self.order.pop_front() else {
                    break;
                };
                self.map.remove(&old);
            }
        }
    }

    /// How many hosts are cached.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no host is cached.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    const TXT: &[u8] = b"User-agent: *\nDisallow: /private\nAllow: /private/ok\n\
Disallow: /*.pdf$\nCrawl-delay: 2\n\nUser-agent: otherbot\nDisallow: /\n\n\
Sitemap: http://a.test/sitemap.xml\n";

    #[test]
    fn rules_for_our_agent() {
        let r = Robots::parse(TXT, "warchest");
        assert!(r.allowed(&u("http://a.test/")));
        assert!(!r.allowed(&u("http://a.test/private/x")));
        assert!(r.allowed(&u("http://a.test/private/ok/1")));
        assert!(!r.allowed(&u("http://a.test/doc.pdf")));
        assert!(r.allowed(&u("http://a.test/doc.pdf?x")));
        assert!(r.allowed(&u("http://a.test/robots.txt")));
        assert_eq!(r.crawl_delay(), Some(Duration::from_secs(2)));
        assert_eq!(r.sitemaps(), [u("http://a.test/sitemap.xml")]);
        let other = Robots::parse(TXT, "OtherBot");
        assert!(!other.allowed(&u("http://a.test/")));
    }

    #[test]
    fn outcomes_per_rfc_9309() {
        let p = RobotsPolicy::default();
        let (r, ttl) = p.decide(
            RobotsFetch::Answer {
                status: 404,
                body: b"",
            },
            "warchest",
        );
        assert!(r.allowed(&u("http://a.test/x")));
        assert_eq!(ttl, p.ttl);
        let (r, ttl) = p.decide(
            RobotsFetch::Answer {
                status: 503,
                body: TXT,
            },
            "warchest",
        );
        assert!(!r.allowed(&u("http://a.test/x")));
        assert!(r.is_disallow_all());
        assert_eq!(ttl, p.unreachable_ttl);
        let (r, _) = p.decide(RobotsFetch::Unreachable, "warchest");
        assert!(!r.allowed(&u("http://a.test/")));
        let (r, _) = p.decide(
            RobotsFetch::Answer {
                status: 429,
                body: b"",
            },
            "warchest",
        );
        assert!(!r.allowed(&u("http://a.test/")));
        let (r, _) = p.decide(
            RobotsFetch::Answer {
                status: 200,
                body: TXT,
            },
            "warchest",
        );
        assert!(!r.allowed(&u("http://a.test/private")));
    }

    #[test]
    fn cache_expires_and_is_bounded() {
        let mut c = RobotsCache::new(2);
        let t0 = Instant::now();
        c.insert(
            &u("http://a.test/x"),
            Robots::disallow_all(),
            t0,
            Duration::from_secs(10),
        );
        assert!(c.get(&u("http://a.test/y"), t0).is_some());
        assert!(c.get(&u("https://a.test/y"), t0).is_none());
        assert!(
            c.get(&u("http://a.test/y"), t0 + Duration::from_secs(10))
                .is_none()
        );
        c.insert(
            &u("http://b.test/"),
            Robots::allow_all(),
            t0,
            Duration::from_secs(10),
        );
        c.insert(
            &u("http://c.test/"),
            Robots::allow_all(),
            t0,
            Duration::from_secs(10),
        );
        assert_eq!(c.len(), 2);
        assert!(c.get(&u("http://a.test/"), t0).is_none());
        assert!(c.get(&u("http://c.test/"), t0).is_some());
    }

    /// The back-off: a failed robots.txt holds until `now + ttl`, not a
    /// moment longer, and an absurd `ttl` does not overflow `Instant`.
    #[test]
    fn a_kept_answer_expires_at_its_ttl() {
        let p = RobotsPolicy {
            unreachable_ttl: Duration::from_millis(250),
            ..RobotsPolicy::default()
        };
        let (r, ttl) = p.decide(RobotsFetch::Unreachable, "warchest");
        assert_eq!(ttl, Duration::from_millis(250));
        let t0 = Instant::now();
        let k = Kept::new(r, t0, ttl);
        assert!(k.get(t0).is_some_and(Robots::is_disallow_all));
        assert!(k.get(t0 + ttl - Duration::from_nanos(1)).is_some());
        assert!(k.get(t0 + ttl).is_none());
        assert!(k.value().is_disallow_all());
        // A zero ttl is expired at once, yet its value is still there.
        let z = Kept::new(1, t0, Duration::ZERO);
        assert!(z.get(t0).is_none());
        assert_eq!(*z.value(), 1);
        let far = Kept::new((), t0, Duration::MAX);
        assert!(far.get(t0 + Duration::from_secs(86400 * 300)).is_some());
    }

    #[test]
    fn robots_urls() {
        assert_eq!(
            robots_url(&u("https://u:p@a.test:8443/x/y?q#f"))
                .unwrap()
                .as_str(),
            "https://a.test:8443/robots.txt"
        );
        assert!(robots_url(&u("mailto:x@a.test")).is_none());
    }

    #[test]
    fn oversized_and_garbage_bodies() {
        let mut big = b"User-agent: *\nDisallow: /a\n".to_vec();
        big.extend(std::iter::repeat_n(b'#', MAX_ROBOTS * 2));
        let r = Robots::parse(&big, "warchest");
        assert!(!r.allowed(&u("http://a.test/a")));
        let r = Robots::parse(&[0xff, 0xfe, 0, 1, 2], "warchest");
        assert!(r.allowed(&u("http://a.test/a")));
        // Wildcards cost no backtracking.
        let mut many = b"User-agent: *\nDisallow: /".to_vec();
        many.extend(std::iter::repeat_n(&b"a*"[..], 10_000).flatten());
        many.extend_from_slice(b"b$\n");
        let r = Robots::parse(&many, "warchest");
        let long = format!("http://a.test/{}", "a".repeat(20_000));
        assert!(r.allowed(&u(&long)));
    }

    fn gzip(b: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    /// decode_body of `body` under a head with these extra fields.
    fn decoded(fields: &str, body: &[u8], truncated: Option<&str>) -> Result<Vec<u8>, String> {
        let head = format!("HTTP/1.1 200 OK\r\n{fields}\r\n");
        let (head, _) = warchest::http::HttpHead::parse(head.as_bytes())
            .unwrap()
            .unwrap();
        decode_body(body, &head, truncated)
    }

    /// A clean gzip body decodes; one that is not gzip, gzip cut short, an
    /// unknown coding or a truncated fetch is an error saying why, never
    /// empty or shortened rules.
    #[test]
    fn bodies_that_do_not_decode_are_errors() {
        let z = gzip(TXT);
        assert_eq!(
            decoded("Content-Encoding: gzip\r\n", &z, None).as_deref(),
            Ok(TXT)
        );
        assert_eq!(decoded("", TXT, None).as_deref(), Ok(TXT));
        let e = decoded("Content-Encoding: gzip\r\n", TXT, None).unwrap_err();
        assert!(e.contains("did not decode"), "{e}");
        let e = decoded("Content-Encoding: gzip\r\n", &z[..z.len() / 2], None).unwrap_err();
        assert!(e.contains("cut short"), "{e}");
        let e = decoded("Content-Encoding: x-weird\r\n", TXT, None).unwrap_err();
        assert!(e.contains("content coding unknown"), "{e}");
        let e = decoded("Transfer-Encoding: chunked\r\n", b"5\r\nUser-", None).unwrap_err();
        assert!(e.contains("cut short"), "{e}");
        // Announced as chunked but not: whole, and read as it is.
        assert_eq!(
            decoded("Transfer-Encoding: chunked\r\n", TXT, None).as_deref(),
            Ok(TXT)
        );
        let e = decoded("", TXT, Some("disconnect")).unwrap_err();
        assert!(e.contains("truncated (disconnect)"), "{e}");
        // Truncated past the limit: the part parsed is whole.
        let big = vec![b'#'; MAX_ROBOTS + 10];
        assert_eq!(decoded("", &big, Some("length")).unwrap().len(), MAX_ROBOTS);
        // Undecodable disallows as unreachable does, for the back-off.
        let p = RobotsPolicy::default();
        let (r, ttl) = p.decide(RobotsFetch::Undecodable { why: "x" }, "warchest");
        assert!(r.is_disallow_all() && !r.allowed(&u("http://a.test/")));
        assert_eq!((r.undecoded(), ttl), (Some("x"), p.unreachable_ttl));
        assert_eq!(Robots::disallow_all().undecoded(), None);
    }

    /// Fetches robots.txt from a table of answers, one per URL.
    fn fetched(answers: &[(&str, RobotsStep<String>)]) -> (Robots, Vec<String>) {
        let mut asked = Vec::new();
        let r = fetch_robots(
            "http://a.test/robots.txt".to_string(),
            "warchest",
            &RobotsPolicy::default(),
            |u: &String| -> Result<_, ()> {
                asked.push(u.clone());
                Ok(answers
                    .iter()
                    .find(|(a, _)| a == u)
                    .map_or(RobotsStep::Unreachable, |(_, s)| s.clone()))
            },
        )
        .unwrap()
        .0;
        (r, asked)
    }

    #[test]
    fn the_fetch_loop_follows_five_redirects_then_gives_up() {
        let page = u("http://a.test/x");
        let ok = RobotsStep::Answer {
            status: 200,
            body: b"User-agent: *\nDisallow: /x\n".to_vec(),
        };
        let (r, asked) = fetched(&[
            ("http://a.test/robots.txt", RobotsStep::Redirect("1".into())),
            ("1", ok.clone()),
        ]);
        assert!(!r.allowed(&page) && !r.is_disallow_all());
        assert_eq!(asked, ["http://a.test/robots.txt", "1"]);
        // 4xx allows everything; 5xx and no answer disallow everything.
        let (r, _) = fetched(&[(
            "http://a.test/robots.txt",
            RobotsStep::Answer {
                status: 404,
                body: Vec::new(),
            },
        )]);
        assert!(r.allowed(&page));
        let (r, _) = fetched(&[(
            "http://a.test/robots.txt",
            RobotsStep::Answer {
                status: 503,
                body: Vec::new(),
            },
        )]);
        assert!(r.is_disallow_all());
        let (r, _) = fetched(&[]);
        assert!(r.is_disallow_all());
        // Five redirects are followed; a sixth is not.
        let chain: Vec<(String, RobotsStep<String>)> = (0..6)
            .map(|i| {
                let from = if i == 0 {
                    "http://a.test/robots.txt".to_string()
                } else {
                    i.to_string()
                };
                (from, RobotsStep::Redirect((i + 1).to_string()))
            })
            .collect();
        let mut five: Vec<(&str, RobotsStep<String>)> = chain[..5]
            .iter()
            .map(|(a, s)| (a.as_str(), s.clone()))
            .collect();
        five.push(("5", ok));
        let (r, asked) = fetched(&five);
        assert!(!r.allowed(&page) && !r.is_disallow_all());
        assert_eq!(asked.len(), 6);
        let six: Vec<(&str, RobotsStep<String>)> =
            chain.iter().map(|(a, s)| (a.as_str(), s.clone())).collect();
        let (r, asked) = fetched(&six);
        assert!(r.is_disallow_all());
        assert_eq!(asked.len(), 6);
    }
}
