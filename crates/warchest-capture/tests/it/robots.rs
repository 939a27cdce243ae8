//! robots.txt that could not be read, against a server on 127.0.0.1: the
//! origin is disallowed for `RobotsPolicy::unreachable_ttl` (the back-off),
//! then robots.txt is asked again; within the back-off it is not.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use warchest_capture::robots::RobotsPolicy;
use warchest_capture::{CaptureOptions, Capturer, Event, Summary};

/// What the site does with one request for /robots.txt.
#[derive(Clone, Copy)]
enum Robots {
    /// Answers this status (no rules).
    Status(u16),
    /// Reads the request and closes the connection: no answer at all.
    Drop,
    /// Answers 200 with this file.
    File(&'static str),
    /// Answers 200 with this body, `Content-Encoding: gzip`.
    Gzip(&'static [u8]),
}

/// A loopback site, one request a connection (`Connection: close`): its
/// n-th request for /robots.txt gets `robots[n]` (the last one for every
/// later request; a 3xx redirects to /robots.txt again), anything else a
/// 200. Serves at most 64 connections,
/// each read for at most 5 s, so a failing test cannot hang on it.
struct Site {
    port: u16,
    /// The request targets, in order.
    asked: Arc<Mutex<Vec<String>>>,
}

impl Site {
    fn start(robots: Vec<Robots>) -> Site {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        std::thread::spawn(move || {
            let mut robots_asked = 0;
            for c in l.incoming().take(64) {
                let Ok(mut c) = c else { return };
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut req = Vec::new();
                let mut b = [0u8; 1];
                while !req.ends_with(b"\r\n\r\n") {
                    if c.read(&mut b).unwrap_or(0) == 0 {
                        break;
                    }
                    req.push(b[0]);
                }
                let head = String::from_utf8_lossy(&req);
                let target = head.split(' ').nth(1).unwrap_or("").to_string();
                log.lock().unwrap().push(target.clone());
                let (status, body, coding) = if target == "/robots.txt" {
                    let step = robots[robots_asked.min(robots.len() - 1)];
                    robots_asked += 1;
                    match step {
                        Robots::Status(s) => (s, &b"no"[..], ""),
                        Robots::Drop => continue,
                        Robots::File(f) => (200, f.as_bytes(), ""),
                        Robots::Gzip(b) => (200, b, "Content-Encoding: gzip\r\n"),
                    }
                } else {
                    (200, &b"page"[..], "")
                };
                // A 3xx redirects to robots.txt itself (a loop).
                let loc = if (300..400).contains(&status) {
                    "Location: /robots.txt\r\n"
                } else {
                    ""
                };
                let _ = write!(
                    c,
                    "HTTP/1.1 {status} X\r\n{loc}{coding}Content-Type: text/plain\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = c.write_all(body);
            }
        });
        Site { port, asked }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// How many requests were for `target`.
    fn count(&self, target: &str) -> usize {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter(|t| *t == target)
            .count()
    }
}

const RULES: &str = "User-agent: *\nDisallow: /private\n";

/// Captures `urls` in order (one worker, robots.txt obeyed, back-off
/// `backoff`), sleeping `pause` after the event of each URL in
/// `pause_after`: the next URL is then asked after the back-off.
fn capture(
    urls: Vec<String>,
    backoff: Duration,
    pause_after: &[String],
    pause: Duration,
) -> (Vec<Event>, Summary) {
    capture_on(1, urls, backoff, pause_after, pause)
}

/// [`capture`] with `jobs` workers.
fn capture_on(
    jobs: usize,
    urls: Vec<String>,
    backoff: Duration,
    pause_after: &[String],
    pause: Duration,
) -> (Vec<Event>, Summary) {
    let dir = tempfile::tempdir().unwrap();
    let opts = CaptureOptions {
        timeout: Duration::from_secs(5),
        jobs,
        robots_policy: RobotsPolicy {
            unreachable_ttl: backoff,
            ..RobotsPolicy::default()
        },
        ..CaptureOptions::default()
    };
    let events = Mutex::new(Vec::new());
    let summary = Capturer::new(dir.path(), opts)
        .unwrap()
        .run(urls, &|e: &Event| {
            events.lock().unwrap().push(e.clone());
            if pause_after.contains(&e.url) {
                std::thread::sleep(pause);
            }
        })
        .unwrap();
    (events.into_inner().unwrap(), summary)
}

/// The event of `url` (exactly one).
fn event<'a>(events: &'a [Event], url: &str) -> &'a Event {
    let of: Vec<&Event> = events.iter().filter(|e| e.url == url).collect();
    assert_eq!(of.len(), 1, "{url}: {events:?}");
    of[0]
}

/// A 503 for robots.txt disallows the origin for the back-off, with its
/// reason on the URL's event; the URL asked after it has robots.txt asked
/// again (now a file that allows it) and is fetched; the rules then found
/// are kept (robots.txt asked twice in all) and obeyed.
#[test]
fn a_robots_txt_answering_503_is_asked_again_after_the_back_off() {
    let site = Site::start(vec![Robots::Status(503), Robots::File(RULES)]);
    let backoff = Duration::from_millis(300);
    let (a, b, private) = (site.url("/a"), site.url("/b"), site.url("/private"));
    let (events, summary) = capture(
        vec![a.clone(), b.clone(), private.clone()],
        backoff,
        std::slice::from_ref(&a),
        // The back-off is timed from robots.txt's answer, before /a's
        // event: past it whatever the machine's speed.
        backoff + Duration::from_millis(100),
    );
    // Every URL is named, none twice.
    assert_eq!(events.len(), 3, "{events:?}");

    let e = event(&events, &a);
    assert_eq!(e.outcome, "robots-disallowed", "{e:?}");
    let reason = e.reason.as_deref().unwrap_or_default();
    assert!(reason.contains("robots.txt unreachable"), "{reason}");
    assert!(reason.contains("/robots.txt answered 503"), "{reason}");
    assert!(reason.contains("asked again after 300ms"), "{reason}");
    assert!(e.error.is_none(), "{e:?}");

    let e = event(&events, &b);
    assert_eq!((e.outcome.as_str(), e.status), ("response", Some(200)));
    assert!(e.reason.is_none(), "{e:?}");

    let e = event(&events, &private);
    assert_eq!(e.outcome, "robots-disallowed", "{e:?}");
    assert_eq!(e.reason.as_deref(), Some("disallowed by robots.txt"));

    assert_eq!(site.count("/robots.txt"), 2, "{:?}", site.asked);
    assert_eq!(
        (site.count("/a"), site.count("/b"), site.count("/private")),
        (0, 1, 0)
    );
    assert_eq!(
        (summary.fetched, summary.disallowed, summary.failed),
        (1, 2, 0)
    );
    // Both robots.txt answers are recorded, and /b.
    assert_eq!(summary.records.responses, 3, "{:?}", summary.records);
}

/// Within the back-off (the default, 10 minutes) a failed robots.txt is
/// not asked again: every URL of the origin is disallowed with the first
/// answer's reason, one request for robots.txt in all.
#[test]
fn within_the_back_off_robots_txt_is_not_asked_again() {
    let site = Site::start(vec![Robots::Status(503), Robots::File(RULES)]);
    let urls: Vec<String> = ["/a", "/b", "/c"].iter().map(|p| site.url(p)).collect();
    let (events, summary) = capture(
        urls.clone(),
        RobotsPolicy::default().unreachable_ttl,
        &[],
        Duration::ZERO,
    );
    assert_eq!(events.len(), 3, "{events:?}");
    for u in &urls {
        let e = event(&events, u);
        assert_eq!(e.outcome, "robots-disallowed", "{e:?}");
        let reason = e.reason.as_deref().unwrap_or_default();
        assert!(reason.contains("answered 503"), "{reason}");
        assert!(reason.contains("asked again after 600s"), "{reason}");
    }
    assert_eq!(site.count("/robots.txt"), 1, "{:?}", site.asked);
    assert_eq!(site.asked.lock().unwrap().len(), 1);
    assert_eq!((summary.disallowed, summary.failed), (3, 0));

    // Four workers on the one origin: they wait for the one robots.txt
    // answer, not ask for it each.
    let site = Site::start(vec![Robots::Status(503), Robots::File(RULES)]);
    let urls: Vec<String> = (0..8).map(|k| site.url(&format!("/p{k}"))).collect();
    let (events, summary) = capture_on(
        4,
        urls.clone(),
        RobotsPolicy::default().unreachable_ttl,
        &[],
        Duration::ZERO,
    );
    assert_eq!(events.len(), 8, "{events:?}");
    for u in &urls {
        assert_eq!(event(&events, u).outcome, "robots-disallowed");
    }
    assert_eq!(site.count("/robots.txt"), 1, "{:?}", site.asked);
    assert_eq!((summary.disallowed, summary.failed), (8, 0));
}

/// A robots.txt request that got no answer at all (the connection closed
/// unanswered) makes the URL an error, as before, and is asked again after
/// the back-off too: the next URL is fetched.
#[test]
fn a_robots_txt_nothing_answered_is_asked_again_after_the_back_off() {
    let site = Site::start(vec![Robots::Drop, Robots::File(RULES)]);
    let backoff = Duration::from_millis(300);
    let (a, b) = (site.url("/a"), site.url("/b"));
    let (events, summary) = capture(
        vec![a.clone(), b.clone()],
        backoff,
        std::slice::from_ref(&a),
        backoff + Duration::from_millis(100),
    );
    assert_eq!(events.len(), 2, "{events:?}");
    let e = event(&events, &a);
    assert_eq!(e.outcome, "error", "{e:?}");
    let error = e.error.as_deref().unwrap_or_default();
    assert!(error.contains("robots.txt unreachable"), "{error}");
    assert!(error.contains("asked again after 300ms"), "{error}");
    let e = event(&events, &b);
    assert_eq!((e.outcome.as_str(), e.status), ("response", Some(200)));
    assert_eq!(site.count("/robots.txt"), 2, "{:?}", site.asked);
    assert_eq!((site.count("/a"), site.count("/b")), (0, 1));
    assert_eq!(
        (summary.fetched, summary.disallowed, summary.failed),
        (1, 0, 1)
    );
}

/// RFC 9309 2.3.1: robots.txt unreachable (5xx, or no answer at all)
/// disallows everything; unavailable (4xx) allows everything. The
/// crawler decides the same way. A 5xx is the site's answer: the URL
/// is skipped, its event saying why. No answer at all is an error (the
/// host could not be reached), counted failed, so that a run that
/// reached nothing does not end as a success.
#[test]
fn unreachable_robots_disallow_and_say_so_unavailable_allow() {
    let once = |url: String| {
        capture(
            vec![url],
            RobotsPolicy::default().unreachable_ttl,
            &[],
            Duration::ZERO,
        )
    };
    // A closed port: nothing answers robots.txt (nor the page).
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (events, summary) = once(format!("http://127.0.0.1:{closed}/page"));
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e.outcome, "error", "{e:?}");
    let error = e.error.as_deref().unwrap_or_default();
    assert!(error.contains("robots.txt unreachable"), "{error}");
    assert!(error.contains("/robots.txt"), "{error}");
    assert_eq!((summary.disallowed, summary.failed), (0, 1));

    let site = Site::start(vec![Robots::Status(503)]);
    let (events, summary) = once(site.url("/page"));
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e.outcome, "robots-disallowed", "{e:?}");
    let reason = e.reason.as_deref().unwrap_or_default();
    assert!(reason.contains("robots.txt unreachable"), "{reason}");
    assert!(reason.contains("answered 503"), "{reason}");
    assert!(e.error.is_none(), "{e:?}");
    assert_eq!((summary.disallowed, summary.failed), (1, 0));

    // Redirected round and round: skipped as for a 5xx, not an error.
    let site = Site::start(vec![Robots::Status(302)]);
    let (events, summary) = once(site.url("/page"));
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e.outcome, "robots-disallowed", "{e:?}");
    let reason = e.reason.as_deref().unwrap_or_default();
    assert!(reason.contains("redirected more than 5 times"), "{reason}");
    assert_eq!((summary.disallowed, summary.failed), (1, 0));
    assert_eq!(site.count("/page"), 0);

    let site = Site::start(vec![Robots::Status(404)]);
    let (events, summary) = once(site.url("/page"));
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0].outcome.as_str(), events[0].status),
        ("response", Some(200))
    );
    assert!(events[0].reason.is_none());
    assert_eq!((summary.fetched, summary.disallowed), (1, 0));
}

fn gzip(b: &[u8]) -> &'static [u8] {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap().leak()
}

/// A 200 robots.txt whose gzip coding does not decode (a body that is not
/// gzip, or gzip cut short) is not read as empty or shortened rules (allow
/// everything): the origin is disallowed for the back-off as for an
/// unreachable robots.txt, each URL's event saying the robots.txt could not
/// be decoded, no page fetched. A clean gzip robots.txt is obeyed.
#[test]
fn a_robots_txt_that_does_not_decode_disallows_the_origin() {
    // Allow first, so rules cut short would allow /private.
    let rules = "User-agent: *\nAllow: /\n# padding padding padding\nDisallow: /private\n";
    let z = gzip(rules.as_bytes());
    for (name, body) in [
        ("not gzip", rules.as_bytes()),
        ("gzip cut short", &z[..z.len() / 2]),
    ] {
        let site = Site::start(vec![Robots::Gzip(body)]);
        let urls = vec![site.url("/a"), site.url("/private")];
        let (events, summary) = capture(
            urls.clone(),
            RobotsPolicy::default().unreachable_ttl,
            &[],
            Duration::ZERO,
        );
        assert_eq!(events.len(), 2, "{name}: {events:?}");
        for u in &urls {
            let e = event(&events, u);
            assert_eq!(e.outcome, "robots-disallowed", "{name}: {e:?}");
            let reason = e.reason.as_deref().unwrap_or_default();
            assert!(
                reason.contains("robots.txt could not be decoded"),
                "{reason}"
            );
            assert!(reason.contains("/robots.txt answered 200"), "{reason}");
            assert!(reason.contains("asked again after 600s"), "{reason}");
        }
        assert_eq!(site.count("/robots.txt"), 1, "{name}: {:?}", site.asked);
        assert_eq!(site.asked.lock().unwrap().len(), 1, "{name}: no page asked");
        assert_eq!((summary.disallowed, summary.failed), (2, 0), "{name}");
    }
    let site = Site::start(vec![Robots::Gzip(z)]);
    let (a, private) = (site.url("/a"), site.url("/private"));
    let (events, summary) = capture(
        vec![a.clone(), private.clone()],
        RobotsPolicy::default().unreachable_ttl,
        &[],
        Duration::ZERO,
    );
    let e = event(&events, &a);
    assert_eq!((e.outcome.as_str(), e.status), ("response", Some(200)));
    let e = event(&events, &private);
    assert_eq!(e.outcome, "robots-disallowed", "{e:?}");
    assert_eq!(e.reason.as_deref(), Some("disallowed by robots.txt"));
    assert_eq!((summary.fetched, summary.disallowed), (1, 1));
}
