//! The crawl's configuration: one flat TOML table whose keys are the
//! command's flags (`--max-hops 3` is `max-hops = 3`).
//!
//! The table holds the engine's keys ([`CrawlConfig`]) and those of the
//! rules: scope ([`ScopeConfig`]), link extraction ([`ExtractConfig`]) and
//! politeness ([`PolitenessConfig`]). Each part reads its own keys; a key
//! no part knows is an error naming it. The command line's flags are laid
//! over the file's keys, and the result is saved in the crawl directory
//! (`crawl.toml`), which is all `--resume DIR` needs.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use serde::Deserialize;

use crate::links::ExtractConfig;
use crate::politeness::PolitenessConfig;
use crate::scope::ScopeConfig;

/// The file a crawl directory keeps its configuration in.
pub const SAVED_CONFIG: &str = "crawl.toml";

/// A configuration error: the key and why.
#[derive(Debug, thiserror::Error)]
#[error("configuration: {0}")]
pub struct ConfigError(pub String);

/// What a crawl writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    /// WARC files (request, response, revisit, dns, metadata records).
    #[default]
    Warc,
    /// Web InfoMall files (one record per response: url, origin, date, ip).
    Infomall,
}

/// Whether robots.txt is obeyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RobotsMode {
    /// robots.txt and `meta robots` (Heritrix's `obey`).
    #[default]
    Obey,
    /// Neither fetched nor obeyed.
    Ignore,
}

/// The engine's keys. Defaults are those of `warchest crawl URL -o DIR`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct EngineConfig {
    /// The seeds (also the command's arguments).
    pub seeds: Vec<String>,
    /// The crawl directory.
    pub output: Option<PathBuf>,
    /// Crawl budget: pages (HTML documents) fetched; 0 none.
    pub max_pages: u64,
    /// Crawl budget: bytes received; 0 none.
    pub max_bytes: u64,
    /// Crawl budget: seconds of crawling (over all runs); 0 none.
    pub max_time: f64,
    /// Per-host budget: pages; 0 none.
    pub max_pages_per_host: u64,
    /// Per-host budget: bytes; 0 none.
    pub max_bytes_per_host: u64,
    /// Bytes kept of each response body; longer ones are cut and written
    /// with `WARC-Truncated: length`. 0 none.
    pub max_size: u64,
    /// Worker threads: at most this many URIs fetched at once (one per
    /// host unless `host-parallel` says more).
    pub workers: usize,
    /// The User-Agent; its `+URL` says who to contact.
    pub user_agent: String,
    /// robots.txt: `obey` or `ignore`.
    pub robots: RobotsMode,
    /// The product token robots.txt groups are matched against (`warchest`),
    /// apart from the User-Agent as in `capture`: a site names one token
    /// for the tool, whatever contact URL the operator puts in the agent.
    pub robots_agent: String,
    /// Connect and read timeout, seconds.
    pub timeout: f64,
    /// `HOST = "ADDR"` answers instead of DNS (tests, private crawls).
    pub resolve: BTreeMap<String, String>,
    /// Reach only the hosts of `resolve` (and loopback addresses), with no
    /// DNS lookup: what the tests set, so a crawler under test never
    /// reaches another address.
    pub resolve_only: bool,
    /// Earlier captures to dedupe against: a `warchest dedupe` database,
    /// or earlier crawls' CDXJ (a `.cdxj` file or a directory of them).
    pub dedupe_index: Option<PathBuf>,
    /// An earlier crawl's directory: URLs it captured are asked for with
    /// If-None-Match / If-Modified-Since, identical payloads become
    /// revisits of its records.
    pub recrawl: Option<PathBuf>,
    /// Pack the crawl into `DIR/PREFIX.wacz` at the end.
    pub wacz: bool,
    /// `warc` or `infomall`.
    pub format: OutputFormat,
    /// Serve JSON status (`/status`) and Prometheus metrics (`/metrics`)
    /// on this address.
    pub status_listen: Option<String>,
    /// This crawler's share of the hosts, `K/N` (1-based).
    pub shard: Option<String>,
    /// Where URLs of other shards are handed off: a directory shared by
    /// the shards, or an object store prefix (`s3://bucket/prefix`,
    /// feature `remote`).
    pub handoff: Option<PathBuf>,
    /// WARC file name prefix (Annex B).
    pub prefix: String,
    /// WARC files are closed before they pass this many bytes.
    pub warc_size: u64,
    /// WARC files written at once: a pool of writers, each filling a file
    /// of its own (as Heritrix's writer pool), so that workers compress
    /// their records in parallel. The files share one serial counter.
    pub warc_writers: usize,
    /// Warcinfo `operator`: who runs the crawl.
    pub operator: Option<String>,
    /// Warcinfo `description`.
    pub description: Option<String>,
    /// Redirects followed in a row before giving up (loops end here).
    pub max_redirects: u32,
    /// Seconds between two stats lines in `logs/progress.log`.
    pub stats_interval: f64,
    /// Seconds between two checkpoints of the frontier (redb committed
    /// durably, its journal started afresh; docs/crawl.md "Frontier,
    /// resume and crash safety").
    pub checkpoint_interval: f64,
}

impl EngineConfig {
    /// Whether `host` may be reached: always, unless `resolve-only`, where
    /// only the hosts of the `resolve` table, `localhost` and addresses of
    /// 127.0.0.0/8 may. IPv6's `::1` is refused there: the rule the tests
    /// keep is 127.0.0.0/8, and a server on `[::1]` is another socket than
    /// the one on 127.0.0.1 (see [`test_loopback`]).
    pub fn may_reach(&self, host: &str) -> bool {
        let loopback = host == "localhost"
            || host
                .trim_matches(['[', ']'])
                .parse::<IpAddr>()
                .is_ok_and(test_loopback);
        !self.resolve_only || loopback || self.resolve.keys().any(|h| h.eq_ignore_ascii_case(host))
    }
}

/// Whether `ip` is in 127.0.0.0/8: the one check of `resolve-only`,
/// shared with the resolver of the crawl and of its browser's proxy.
pub use warchest_capture::dns::test_loopback;

/// Parses a `resolve` value: one address or several separated by commas,
/// each IPv4 (`127.0.0.2`) or IPv6, bare (`::1`) or in brackets (`[::1]`).
/// A port is refused: the URL's port is the one connected to.
///
/// # Errors
/// A part is not an address (the message names it).
pub fn resolve_addrs(value: &str) -> Result<Vec<IpAddr>, ConfigError> {
    value
        .split(',')
        .map(|a| {
            let a = a.trim();
            let bare = a
                .strip_prefix('[')
                .and_then(|x| x.strip_suffix(']'))
                .unwrap_or(a);
            bare.parse::<IpAddr>().map_err(|_| {
                let port = a.parse::<std::net::SocketAddr>().is_ok();
                ConfigError(format!(
                    "{a:?}: not an IP address{}",
                    if port {
                        " (no port: the URL's port is used)"
                    } else {
                        ""
                    }
                ))
            })
        })
        .collect()
}

/// Parses `--resolve HOST:ADDR` once: the host is what comes before the
/// first colon (a host name has none), the rest is [`resolve_addrs`]'s
/// value, so `a.test:127.0.0.2`, `a.test:[::1]`, `a.test:::1` and
/// `a.test:127.0.0.2,127.0.0.3` all read as meant. Returns the host in
/// lower case and the addresses as the `resolve` table keeps them.
///
/// # Errors
/// No colon, an empty host, or an address that does not parse.
pub fn resolve_entry(s: &str) -> Result<(String, String), ConfigError> {
    let bad = |why: &str| ConfigError(format!("--resolve {s}: {why}"));
    let (host, addrs) = s
        .split_once(':')
        .filter(|(h, a)| !h.is_empty() && !a.is_empty())
        .ok_or_else(|| bad("not HOST:ADDR"))?;
    if host.contains(['[', ']', '/']) {
        return Err(bad("the host is a name (HOST:ADDR)"));
    }
    resolve_addrs(addrs).map_err(|e| bad(&e.0))?;
    Ok((host.to_ascii_lowercase(), addrs.to_string()))
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            seeds: Vec::new(),
            output: None,
            max_pages: 0,
            max_bytes: 0,
            max_time: 0.0,
            max_pages_per_host: 0,
            max_bytes_per_host: 0,
            max_size: 0,
            workers: 8,
            user_agent: default_user_agent(),
            robots: RobotsMode::Obey,
            robots_agent: "warchest".into(),
            timeout: 30.0,
            resolve: BTreeMap::new(),
            resolve_only: false,
            dedupe_index: None,
            recrawl: None,
            wacz: false,
            format: OutputFormat::Warc,
            status_listen: None,
            shard: None,
            handoff: None,
            prefix: "crawl".into(),
            warc_size: warchest::write::rotate::DEFAULT_MAX_SIZE,
            warc_writers: 2,
            operator: None,
            description: None,
            max_redirects: 20,
            stats_interval: 60.0,
            checkpoint_interval: 10.0,
        }
    }
}

/// `warchest-crawl/VERSION (+https://example.invalid/warchest)`: a
/// crawler names itself and where to learn about it; an operator puts
/// their own contact URL in `user-agent`.
pub fn default_user_agent() -> String {
    format!(
        "Mozilla/5.0 (compatible; warchest-crawl/{}; +{})",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_REPOSITORY")
    )
}

/// The whole configuration.
#[derive(Debug, Clone, Default)]
pub struct CrawlConfig {
    /// The engine's keys.
    pub engine: EngineConfig,
    /// Scope rules.
    pub scope: ScopeConfig,
    /// Link extraction.
    pub extract: ExtractConfig,
    /// Delays between fetches.
    pub politeness: PolitenessConfig,
    /// Pages in a browser (`crawl --browser`).
    pub render: crate::render::RenderConfig,
}

/// Whether a part's error says the key is not one of its own.
fn unknown_key(e: &str) -> bool {
    e.contains("unknown field")
}

impl CrawlConfig {
    /// Reads a configuration from TOML text.
    ///
    /// # Errors
    /// Not TOML, a key no part knows, or a value of the wrong kind.
    pub fn from_toml(text: &str) -> Result<CrawlConfig, ConfigError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| ConfigError(e.to_string()))?;
        CrawlConfig::from_table(table)
    }

    /// Reads a configuration from a TOML table: each key goes to the part
    /// that knows it.
    ///
    /// # Errors
    /// As [`CrawlConfig::from_toml`].
    pub fn from_table(table: toml::Table) -> Result<CrawlConfig, ConfigError> {
        let mut parts: [toml::Table; 5] = Default::default();
        for (k, v) in table {
            let mut one = toml::Table::new();
            one.insert(k.clone(), v.clone());
            let tries: [fn(toml::Table) -> Result<(), String>; 5] = [
                |t| {
                    EngineConfig::deserialize(t)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                },
                |t| {
                    ScopeConfig::deserialize(t)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                },
                |t| {
                    ExtractConfig::deserialize(t)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                },
                |t| {
                    PolitenessConfig::deserialize(t)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                },
                |t| {
                    crate::render::RenderConfig::deserialize(t)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                },
            ];
            let mut placed = false;
            for (i, f) in tries.iter().enumerate() {
                match f(one.clone()) {
                    Ok(()) => {
                        parts[i].insert(k.clone(), v.clone());
                        placed = true;
                        break;
                    }
                    Err(e) if unknown_key(&e) => continue,
                    Err(e) => return Err(ConfigError(format!("{k}: {e}"))),
                }
            }
            if !placed {
                return Err(ConfigError(format!("unknown key `{k}`")));
            }
        }
        let [e, s, x, p, r] = parts;
        let err = |e: toml::de::Error| ConfigError(e.to_string());
        let engine = EngineConfig::deserialize(e).map_err(err)?;
        if engine.workers == 0 || engine.workers > 1024 {
            return Err(ConfigError("workers: from 1 to 1024".into()));
        }
        if engine.warc_writers == 0 || engine.warc_writers > 64 {
            return Err(ConfigError("warc-writers: from 1 to 64".into()));
        }
        if !(engine.timeout > 0.0 && engine.timeout.is_finite()) {
            return Err(ConfigError("timeout: a positive number of seconds".into()));
        }
        if !(engine.max_time >= 0.0 && engine.max_time.is_finite()) {
            return Err(ConfigError("max-time: seconds, 0 for none".into()));
        }
        if !(engine.stats_interval > 0.0 && engine.stats_interval.is_finite()) {
            return Err(ConfigError(
                "stats-interval: a positive number of seconds".into(),
            ));
        }
        if !(engine.checkpoint_interval > 0.0 && engine.checkpoint_interval.is_finite()) {
            return Err(ConfigError(
                "checkpoint-interval: a positive number of seconds".into(),
            ));
        }
        if engine.warc_size == 0 {
            return Err(ConfigError("warc-size: above 0".into()));
        }
        if let Some(s) = &engine.shard {
            // Each crawler has its own directory: a hand-off in it would
            // be seen by no other shard, and none would ever finish.
            if parse_shard(s)?.1 > 1 && engine.handoff.is_none() {
                return Err(ConfigError(format!(
                    "shard {s}: needs handoff, the directory or object store prefix every shard shares"
                )));
            }
        }
        let render = crate::render::RenderConfig::deserialize(r).map_err(err)?;
        render.check()?;
        let politeness = PolitenessConfig::deserialize(p).map_err(err)?;
        if !(1..=64).contains(&politeness.host_parallel) {
            return Err(ConfigError("host-parallel: from 1 to 64".into()));
        }
        Ok(CrawlConfig {
            engine,
            scope: ScopeConfig::deserialize(s).map_err(err)?,
            extract: ExtractConfig::deserialize(x).map_err(err)?,
            politeness,
            render,
        })
    }
}

/// `K/N` as (K, N), 1 <= K <= N.
///
/// # Errors
/// Not of that form.
pub fn parse_shard(s: &str) -> Result<(u32, u32), ConfigError> {
    let bad = || ConfigError(format!("shard {s:?}: not K/N with 1 <= K <= N"));
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (u32, u32) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// Lays `over` on `base`: its keys replace those of `base`.
pub fn overlay(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        base.insert(k, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_only_reaches_the_table_and_loopback_only() {
        let c =
            CrawlConfig::from_toml("resolve-only = true\n[resolve]\n\"a.test\" = \"127.0.0.1\"\n")
                .unwrap()
                .engine;
        assert!(c.resolve_only);
        for ok in [
            "a.test",
            "A.TEST",
            "127.0.0.5",
            "[::ffff:127.0.0.3]",
            "localhost",
        ] {
            assert!(c.may_reach(ok), "{ok}");
        }
        // ::1 is loopback but not 127.0.0.0/8, the one rule for tests.
        for no in [
            "b.test",
            "example.com",
            "10.0.0.1",
            "192.0.2.1",
            "[2001:db8::1]",
            "[::1]",
            "[::ffff:10.0.0.1]",
        ] {
            assert!(!c.may_reach(no), "{no}");
        }
        // Without the key every host may be reached, as a real crawl needs.
        let open = CrawlConfig::from_toml("").unwrap().engine;
        assert!(open.may_reach("example.com"));
    }

    #[test]
    fn resolve_entries_parse_once_ipv6_whole() {
        let ok = |s: &str| resolve_entry(s).unwrap();
        assert_eq!(
            ok("A.test:127.0.0.2"),
            ("a.test".into(), "127.0.0.2".into())
        );
        // IPv6, bare or in brackets: the host ends at the first colon.
        assert_eq!(ok("a.test:::1"), ("a.test".into(), "::1".into()));
        assert_eq!(ok("a.test:[::1]"), ("a.test".into(), "[::1]".into()));
        assert_eq!(
            ok("a.test:[2001:db8::1],127.0.0.3"),
            ("a.test".into(), "[2001:db8::1],127.0.0.3".into())
        );
        assert_eq!(
            resolve_addrs("[2001:db8::1], 127.0.0.3").unwrap(),
            [
                "2001:db8::1".parse::<IpAddr>().unwrap(),
                "127.0.0.3".parse().unwrap()
            ]
        );
        for bad in [
            "a.test",
            ":127.0.0.1",
            "a.test:",
            "a.test:nope",
            "[::1]:127.0.0.1",
        ] {
            assert!(resolve_entry(bad).is_err(), "{bad}");
        }
        // A port is refused, and the message says why.
        let e = resolve_entry("a.test:[::1]:8080").unwrap_err().to_string();
        assert!(e.contains("no port"), "{e}");
        let e = resolve_entry("a.test:127.0.0.1:8080")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no port"), "{e}");
    }

    #[test]
    fn keys_go_to_their_parts() {
        let c = CrawlConfig::from_toml(
            "seeds = [\"http://a.test/\"]\nworkers = 3\nmax-hops = 4\ndelay-factor = 0.5\nmax-size = 1000\nrobots-agent = \"mybot\"\n",
        )
        .unwrap();
        assert_eq!(c.engine.seeds, ["http://a.test/"]);
        assert_eq!(c.engine.robots_agent, "mybot");
        assert_eq!(CrawlConfig::default().engine.robots_agent, "warchest");
        assert_eq!(c.engine.workers, 3);
        assert_eq!(c.engine.max_size, 1000);
        assert_eq!(c.scope.max_hops, 4);
        assert_eq!(c.politeness.delay_factor, 0.5);
    }

    #[test]
    fn unknown_and_bad_keys_are_named() {
        let e = CrawlConfig::from_toml("max-hopz = 4")
            .unwrap_err()
            .to_string();
        assert!(e.contains("max-hopz"), "{e}");
        let e = CrawlConfig::from_toml("workers = \"many\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("workers"), "{e}");
        assert!(CrawlConfig::from_toml("workers = 0").is_err());
        assert!(CrawlConfig::from_toml("shard = \"3/2\"").is_err());
    }

    #[test]
    fn shards_parse() {
        assert_eq!(parse_shard("1/2").unwrap(), (1, 2));
        assert!(parse_shard("0/2").is_err());
        assert!(parse_shard("x").is_err());
        let e = CrawlConfig::from_toml("shard = \"1/2\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs handoff"), "{e}");
        assert!(CrawlConfig::from_toml("shard = \"1/2\"\nhandoff = \"/h\"").is_ok());
        assert!(CrawlConfig::from_toml("shard = \"1/1\"").is_ok());
    }
}
