//! The test web answers what it says it does: every variant issue 29's
//! tests need, the expected URL sets, and the record of requests.

use std::collections::{BTreeSet, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use url::Url;
use warchest_crawl::links::{ExtractConfig, extract, headers::links_from_headers};
use warchest_crawl::robots::{Robots, RobotsFetch, RobotsPolicy};
use warchest_crawl::testweb::{SPECIAL_HOSTS, TestWeb, TestWebConfig};

/// A raw answer: status, headers, body as sent (chunked framing kept).
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn addr_of(web: &TestWeb, host: &str) -> SocketAddr {
    web.hosts()
        .into_iter()
        .find(|(h, _)| h == host)
        .map(|(_, a)| a)
        .unwrap_or_else(|| panic!("no host {host}"))
}

/// An HTTP/1.0 GET of `url` from the test web, as capture's client sends.
fn get(web: &TestWeb, url: &Url) -> std::io::Result<Answer> {
    let host = url.host_str().unwrap();
    let mut s = TcpStream::connect(addr_of(web, host))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
    write!(
        s,
        "GET {target} HTTP/1.0\r\nHost: {host}:{}\r\nUser-Agent: warchest-test\r\n\r\n",
        url.port().unwrap()
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no head"))?;
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok(Answer {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
    })
}

/// The payload of an answer: chunked framing and gzip undone.
fn payload(a: &Answer) -> Vec<u8> {
    let mut body = a.body.clone();
    if a.header("transfer-encoding") == Some("chunked") {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let nl = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let n = usize::from_str_radix(std::str::from_utf8(&rest[..nl]).unwrap(), 16).unwrap();
            rest = &rest[nl + 2..];
            if n == 0 {
                break;
            }
            out.extend_from_slice(&rest[..n]);
            rest = &rest[n + 2..];
        }
        body = out;
    }
    if a.header("content-encoding") == Some("gzip") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut out)
            .unwrap();
        body = out;
    }
    body
}

fn small() -> TestWeb {
    TestWeb::start(TestWebConfig {
        slow_delay: Duration::from_millis(200),
        big_size: 300 << 10,
        ..TestWebConfig::default()
    })
    .unwrap()
}

#[test]
fn every_expected_url_answers_and_disallowed_ones_exist() {
    let web = small();
    for host in SPECIAL_HOSTS {
        let (must, must_not) = web.expected(host);
        for u in must.iter().chain(&must_not) {
            let url = Url::parse(u).unwrap();
            if url.path() == "/robots.txt" {
                // A missing robots.txt is a listed variant.
                continue;
            }
            let a = get(&web, &url).unwrap();
            assert!(
                a.status != 404 && a.status != 405,
                "{u}: {} (the test web must answer every URL it lists)",
                a.status
            );
        }
    }
    // The reset host lists nothing, so check it on its own.
    assert!(web.expected("reset.test").0.is_empty());
}

#[test]
fn robots_variants() {
    let web = small();
    let robots = |host: &str| get(&web, &web.url(host, "/robots.txt")).unwrap();
    let r = robots("robots-disallow.test");
    assert_eq!(r.status, 200);
    let rules = Robots::parse(&r.body, "warchest");
    assert!(!rules.allowed(&web.url("robots-disallow.test", "/not-for-warchest.html")));
    assert!(rules.allowed(&web.url("robots-disallow.test", "/public/1.html")));
    let wild = Robots::parse(&robots("robots-wild.test").body, "warchest");
    assert!(!wild.allowed(&web.url("robots-wild.test", "/a.pdf")));
    assert!(wild.allowed(&web.url("robots-wild.test", "/a.pdf?x=1")));
    assert!(wild.allowed(&web.url("robots-wild.test", "/docs/b.pdf")));
    assert!(!wild.allowed(&web.url("robots-wild.test", "/list?session=3")));
    let delay = Robots::parse(&robots("robots-delay.test").body, "warchest");
    assert_eq!(delay.crawl_delay(), Some(Duration::from_secs(1)));
    assert_eq!(robots("robots-5xx.test").status, 503);
    assert_eq!(robots("robots-missing.test").status, 404);
    let sm = Robots::parse(&robots("sitemap.test").body, "warchest");
    assert_eq!(
        sm.sitemaps(),
        [web.url("sitemap.test", "/sitemap-index.xml")]
    );
}

#[test]
fn rate_limit_then_ok_and_the_log() {
    let web = small();
    let u = web.url("ratelimit.test", "/a.html");
    let first = get(&web, &u).unwrap();
    assert_eq!(first.status, 429);
    assert_eq!(first.header("retry-after"), Some("1"));
    assert_eq!(get(&web, &u).unwrap().status, 200);
    let served = web.served();
    assert_eq!(served.len(), 2);
    assert_eq!(served[0].status, 429);
    assert_eq!(served[1].status, 200);
    assert_eq!(served[0].version, "HTTP/1.0");
    assert_eq!(web.served_twice().get(u.as_str()), Some(&2));
    // robots.txt is not rate limited.
    let r = get(&web, &web.url("ratelimit.test", "/robots.txt")).unwrap();
    assert_eq!(r.status, 404);
    web.clear();
    assert!(web.served().is_empty());
}

#[test]
fn redirects_chain_loop_and_relative() {
    let web = small();
    let mut u = web.url("redirect.test", "/chain/1");
    let mut statuses = Vec::new();
    for _ in 0..10 {
        let a = get(&web, &u).unwrap();
        statuses.push(a.status);
        let hs: Vec<(&str, &[u8])> = a
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_bytes()))
            .collect();
        match links_from_headers(&u, hs).into_iter().next() {
            Some(l) => u = l.url,
            None => break,
        }
    }
    assert_eq!(statuses, [301, 302, 307, 200]);
    assert_eq!(u.path(), "/final.html");
    let a = get(&web, &web.url("redirect.test", "/loop/b")).unwrap();
    assert_eq!(a.header("location"), Some("/loop/a"));
    let a = get(&web, &web.url("redirect.test", "/relative")).unwrap();
    assert_eq!(a.header("location"), Some("rel/target.html"));
}

#[test]
fn calendar_never_ends() {
    let web = small();
    let mut u = web.url("calendar.test", "/cal/2026/11/");
    for _ in 0..30 {
        let a = get(&web, &u).unwrap();
        assert_eq!(a.status, 200);
        let e = extract(&u, Some("text/html"), &ExtractConfig::default(), &a.body);
        u = e.links[1].url.clone();
    }
    assert_eq!(u.path(), "/cal/2029/05/");
    let a = get(&web, &web.url("calendar.test", "/events?month=1999-01")).unwrap();
    assert!(String::from_utf8_lossy(&a.body).contains("month=1998-12"));
}

#[test]
fn slow_and_reset_hosts() {
    let web = small();
    let t = Instant::now();
    assert_eq!(get(&web, &web.url("slow.test", "/")).unwrap().status, 200);
    assert!(t.elapsed() >= Duration::from_millis(200));
    let r = get(&web, &web.url("reset.test", "/"));
    match r {
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        Ok(a) => panic!("reset.test answered {}", a.status),
    }
    assert_eq!(web.served().last().unwrap().status, 0);
    assert_ne!(addr_of(&web, "reset.test"), web.addr());
}

#[test]
fn chunked_gzip_and_big() {
    let web = small();
    let a = get(&web, &web.url("encoding.test", "/chunked.html")).unwrap();
    assert_eq!(a.header("transfer-encoding"), Some("chunked"));
    assert!(a.body.starts_with(b"7\r\n"));
    assert!(String::from_utf8_lossy(&payload(&a)).contains("/from-chunked.html"));
    let a = get(&web, &web.url("encoding.test", "/gzip.html")).unwrap();
    assert_eq!(a.header("content-encoding"), Some("gzip"));
    assert!(String::from_utf8_lossy(&payload(&a)).contains("/from-gzip.html"));
    let a = get(&web, &web.url("encoding.test", "/gzip-chunked.css")).unwrap();
    assert!(String::from_utf8_lossy(&payload(&a)).contains("/from-css.png"));
    let a = get(&web, &web.url("encoding.test", "/big.bin")).unwrap();
    assert_eq!(a.body.len(), 300 << 10);
    assert_eq!(a.header("content-length"), Some("307200"));
}

/// A little crawler over the test web with the crate's own extractor and
/// robots rules: what it reaches must be what the web says it holds.
fn reach(web: &TestWeb, seeds: &[Url], hosts: &BTreeSet<String>) -> BTreeSet<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<Url> = seeds.iter().cloned().collect();
    let mut robots = std::collections::HashMap::new();
    while let Some(u) = queue.pop_front() {
        let host = u.host_str().unwrap().to_string();
        if !hosts.contains(&host) || !seen.insert(u.to_string()) || seen.len() > 5000 {
            continue;
        }
        let rules = robots.entry(host.clone()).or_insert_with(|| {
            let r = web.url(&host, "/robots.txt");
            seen.insert(r.to_string());
            let a = get(web, &r).unwrap();
            let fetch = RobotsFetch::Answer {
                status: a.status,
                body: &a.body,
            };
            let rules = RobotsPolicy::default().decide(fetch, "warchest").0;
            queue.extend(rules.sitemaps().iter().cloned());
            rules
        });
        if !rules.allowed(&u) {
            seen.remove(u.as_str());
            continue;
        }
        let a = get(web, &u).unwrap();
        let hs: Vec<(&str, &[u8])> = a
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_bytes()))
            .collect();
        let mut links = links_from_headers(&u, hs);
        let body = payload(&a);
        links.extend(
            extract(
                &u,
                a.header("content-type"),
                &ExtractConfig::default(),
                &body,
            )
            .links,
        );
        queue.extend(links.into_iter().map(|l| l.url));
    }
    seen
}

#[test]
fn site_urls_are_exactly_what_the_sites_link() {
    let web = TestWeb::start(TestWebConfig {
        sites: 3,
        pages: 12,
        special: false,
        ..TestWebConfig::default()
    })
    .unwrap();
    let hosts: BTreeSet<String> = (0..3).map(|i| format!("site{i}.test")).collect();
    let got = reach(&web, &web.seeds()[..1], &hosts);
    assert_eq!(got, web.site_urls());
    // Nothing robots.txt disallows was fetched, and each URL once.
    let served: BTreeSet<String> = web.served_urls().into_iter().collect();
    assert!(served.is_disjoint(&web.site_disallowed()));
    assert!(web.served_twice().is_empty(), "{:?}", web.served_twice());
    assert_eq!(web.site_urls().len(), 3 * (5 + 12 + 11));
}

#[test]
fn special_hosts_reach_their_expected_urls() {
    let web = small();
    for host in [
        "robots-disallow.test",
        "robots-wild.test",
        "robots-5xx.test",
        "robots-missing.test",
        "redirect.test",
        "encoding.test",
        "html.test",
        "sitemap.test",
    ] {
        let only: BTreeSet<String> = [host.to_string()].into();
        let got = reach(&web, &[web.url(host, "/")], &only);
        let (must, must_not) = web.expected(host);
        let missing: Vec<_> = must.difference(&got).collect();
        assert!(missing.is_empty(), "{host}: not reached: {missing:?}");
        let wrong: Vec<_> = must_not.intersection(&got).collect();
        assert!(wrong.is_empty(), "{host}: reached: {wrong:?}");
    }
}

#[test]
fn hub_links_every_host() {
    let web = small();
    let hub = web.url("hub.test", "/");
    let a = get(&web, &hub).unwrap();
    let e = extract(&hub, Some("text/html"), &ExtractConfig::default(), &a.body);
    let hosts: BTreeSet<String> = e
        .links
        .iter()
        .map(|l| l.url.host_str().unwrap().to_string())
        .collect();
    for h in SPECIAL_HOSTS {
        assert!(hosts.contains(h), "{h}");
    }
    let reset = e
        .links
        .iter()
        .find(|l| l.url.host_str() == Some("reset.test"))
        .unwrap();
    assert_eq!(reset.url.port(), Some(addr_of(&web, "reset.test").port()));
}
