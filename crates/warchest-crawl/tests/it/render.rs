//! The browser hook's check (`Crawl::embed_filter`): what a browser's
//! recording proxy may fetch for the crawl's pages.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use warchest_crawl::config::CrawlConfig;
use warchest_crawl::engine::Crawl;

#[test]
fn the_proxy_check_is_the_crawls_scope_and_resolve_only() {
    let dir = tempfile::tempdir().unwrap();
    let toml = "seeds = [\"http://a.test/\"]\nresolve-only = true\n\
exclude = ['^http://127\\.0\\.0\\.9/.*']\n[resolve]\n\"a.test\" = \"127.0.0.1\"\n\"b.test\" = \"127.0.0.1\"\n";
    let cfg = CrawlConfig::from_toml(toml).unwrap();
    let c = Crawl::open(dir.path(), cfg, toml, Arc::new(AtomicBool::new(false))).unwrap();
    let check = c.embed_filter();
    // The site, and an embed on another host of the table (transclusion).
    assert_eq!(check("http://a.test/page.html"), Ok(()));
    assert_eq!(check("http://b.test/logo.png"), Ok(()));
    // Loopback literals are reachable; this one the scope excludes.
    let out = check("http://127.0.0.9/x.png").unwrap_err();
    assert!(out.contains("scope"), "{out}");
    // A host outside the table under resolve-only: refused before any lookup.
    let out = check("http://outside.example/y").unwrap_err();
    assert!(out.contains("resolve-only"), "{out}");
    assert!(check("not a url").is_err());
    // The proxy resolves with the crawl's resolver options: `localhost`
    // passes the check above, and resolves to 127.0.0.1 only, never `::1`.
    assert_eq!(check("http://localhost:9/"), Ok(()));
    let (_, resolver) = c.fetch_options();
    let r = warchest_capture::dns::Resolver::new(resolver);
    let got = r.resolve("localhost").unwrap().addrs;
    assert_eq!(got, vec![std::net::IpAddr::from([127, 0, 0, 1])]);
    assert!(r.resolve("::1").is_err());
}
