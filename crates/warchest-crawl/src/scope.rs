//! Which URIs a crawl fetches: a sequence of decide rules, as Heritrix's
//! `DecideRuleSequence`. Each rule answers accept, reject or pass for one
//! URI; the last rule that decides wins, and the verdict names it, so every
//! rejection can be logged with its rule.
//!
//! The sequence, in order (docs/crawl.md, "Scope", explains each):
//!
//! | rule                 | decides | when                                          |
//! |----------------------|---------|-----------------------------------------------|
//! | `default-reject`     | reject  | always (the start of every sequence)          |
//! | `scope-MODE`         | accept  | the URI is in the seeds' page/prefix/host/domain, or any |
//! | `accept-surt`        | accept  | its SURT starts with an `accept-surts` prefix |
//! | `include`            | accept  | an `include` regex matches                    |
//! | `max-hops`           | reject  | more than `max-hops` link hops from the seed  |
//! | `transclusion`       | accept  | it ends in 1..=`extra-hops` non-link hops (E X P R) |
//! | `reject-surt`        | reject  | its SURT starts with a `reject-surts` prefix  |
//! | `exclude`            | reject  | an `exclude` regex matches                    |
//! | `exclusion-file`     | reject  | a regex of the exclusion file matches         |
//! | `trap-url-length`    | reject  | longer than `max-url-length`                  |
//! | `trap-path-depth`    | reject  | more than `max-path-depth` path segments      |
//! | `trap-path-repeat`   | reject  | a run of segments repeats > `max-path-repeats`|
//! | `trap-calendar`      | reject  | a new date in a calendar-like URL past `max-calendar-variants` |
//! | `trap-query-variants`| reject  | a new query of one path past `max-query-variants` |
//! | `prerequisite`       | accept  | robots.txt or DNS for a URI accepted already  |
//! | `scheme`             | reject  | not http or https                             |
//!
//! Two trap rules need state across URIs (the variants seen per path).
//! [`Scope`] keeps it inside, behind a mutex, bounded in entries: `decide`
//! takes `&self` and can be shared between threads. The same URI decided
//! twice gets the same verdict. The state is not saved: a resumed crawl
//! starts counting variants again.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};
use std::time::SystemTime;

use regex::{RegexSet, RegexSetBuilder};
use serde::Deserialize;
use url::Url;

use crate::uri::{CrawlUri, Hop};

/// The scope mode: what counts as "the site" of the seeds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeMode {
    /// The seed pages only (and their embeds, by `extra-hops`).
    Page,
    /// Everything under a seed's URL up to its last `/` (Heritrix's
    /// seed-derived SURT prefixes, Browsertrix's `prefix`).
    #[default]
    Prefix,
    /// Everything on a seed's host (and port).
    Host,
    /// A seed's host without a leading `www.`, and its subdomains.
    Domain,
    /// Every http(s) URL (bounded by `max-hops` and the budgets).
    Any,
}

impl ScopeMode {
    /// The mode's name, as in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            ScopeMode::Page => "page",
            ScopeMode::Prefix => "prefix",
            ScopeMode::Host => "host",
            ScopeMode::Domain => "domain",
            ScopeMode::Any => "any",
        }
    }

    fn rule(self) -> &'static str {
        match self {
            ScopeMode::Page => "scope-page",
            ScopeMode::Prefix => "scope-prefix",
            ScopeMode::Host => "scope-host",
            ScopeMode::Domain => "scope-domain",
            ScopeMode::Any => "scope-any",
        }
    }
}

impl std::str::FromStr for ScopeMode {
    type Err = ScopeError;
    fn from_str(s: &str) -> Result<ScopeMode, ScopeError> {
        Ok(match s {
            "page" => ScopeMode::Page,
            "prefix" => ScopeMode::Prefix,
            "host" => ScopeMode::Host,
            "domain" => ScopeMode::Domain,
            "any" => ScopeMode::Any,
            _ => return Err(ScopeError::Mode(s.to_string())),
        })
    }
}

/// The scope's configuration: keys of the crawl's TOML file, and flags of
/// the same names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ScopeConfig {
    /// page, prefix (default), host, domain or any.
    pub scope: ScopeMode,
    /// Link hops (`L`, `I`) allowed from a seed; Heritrix's and
    /// Browsertrix's default depth is 20.
    pub max_hops: u32,
    /// Embed hops (`E`, `X`, `R`, `P` at the end of the path) allowed out
    /// of scope: Heritrix's TransclusionDecideRule `maxTransHops`, 2.
    pub extra_hops: u32,
    /// SURT prefixes accepted besides the mode's (URLs are turned into
    /// their SURT form).
    pub accept_surts: Vec<String>,
    /// SURT prefixes rejected.
    pub reject_surts: Vec<String>,
    /// Regexes over the whole URL that accept (Browsertrix `include`).
    pub include: Vec<String>,
    /// Regexes over the whole URL that reject (Browsertrix `exclude`).
    pub exclude: Vec<String>,
    /// A file of exclusion regexes, one a line (`#` starts a comment),
    /// reread while the crawl runs when it changes.
    pub exclusion_file: Option<PathBuf>,
    /// Whether the trap rules run (on by default).
    pub traps: bool,
    /// The longest URL fetched, in bytes (2083, as Heritrix).
    pub max_url_length: usize,
    /// The most path segments (20, Heritrix's TooManyPathSegmentsDecideRule).
    pub max_path_depth: usize,
    /// The most times a run of path segments may occur in a row (2,
    /// Heritrix's PathologicalPathDecideRule `maxRepetitions`: `/a/a/` is
    /// fetched, `/a/a/a/` is not).
    pub max_path_repeats: usize,
    /// The most distinct queries of one path (scheme, host and path).
    pub max_query_variants: usize,
    /// The most distinct dates in one calendar-like URL pattern (a path or
    /// query with its dates taken out); 0 turns the calendar rule off.
    pub max_calendar_variants: usize,
}

impl Default for ScopeConfig {
    fn default() -> ScopeConfig {
        ScopeConfig {
            scope: ScopeMode::Prefix,
            max_hops: 20,
            extra_hops: 2,
            accept_surts: Vec::new(),
            reject_surts: Vec::new(),
            include: Vec::new(),
            exclude: Vec::new(),
            exclusion_file: None,
            traps: true,
            max_url_length: 2083,
            max_path_depth: 20,
            max_path_repeats: 2,
            max_query_variants: 200,
            max_calendar_variants: 50,
        }
    }
}

/// A scope that cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScopeError {
    /// An unknown scope mode.
    #[error("unknown scope mode {0:?} (page, prefix, host, domain or any)")]
    Mode(String),
    /// A regex that does not compile or is too large.
    #[error("{what}: bad regex: {err}")]
    Regex {
        /// Which list (`include`, `exclude`, or the exclusion file's path).
        what: String,
        /// The regex crate's message.
        err: String,
    },
    /// Too many patterns, or a pattern too long.
    #[error("{what}: {msg}")]
    TooMany {
        /// Which list.
        what: String,
        /// What went over which bound.
        msg: String,
    },
    /// An accept or reject SURT prefix that is not a URL nor a SURT.
    #[error("bad SURT prefix {0:?}")]
    Surt(String),
    /// The exclusion file cannot be read.
    #[error("exclusion file {path}: {err}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        err: std::io::Error,
    },
}

/// A rule's answer for one URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Fetch it.
    Accept,
    /// Do not fetch it.
    Reject,
    /// This rule has no opinion.
    Pass,
}

/// The scope's answer for one URI, naming the last rule that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the URI is fetched.
    pub accepted: bool,
    /// The deciding rule (see the module's table).
    pub rule: &'static str,
}

/// The most patterns in one list (include, exclude, the exclusion file,
/// each SURT list).
pub const MAX_PATTERNS: usize = 10_000;
/// The longest pattern, in bytes.
pub const MAX_PATTERN_LEN: usize = 4096;
/// The compiled size bound of one regex set (the regex crate's
/// `size_limit`).
pub const REGEX_SIZE_LIMIT: usize = 16 << 20;
/// The longest exclusion file read, in bytes.
pub const MAX_EXCLUSION_FILE: u64 = 4 << 20;
/// The most URL patterns (paths, calendar patterns) whose variants are
/// counted by one trap rule; past it the counts start again from nothing.
pub const MAX_TRAP_PATTERNS: usize = 20_000;
/// The most variants remembered by one trap rule (8 bytes each, and the
/// hash set's overhead); past it the counts start again from nothing.
pub const MAX_TRAP_VARIANTS: usize = 500_000;

/// The scope of one crawl: built from its configuration and seeds.
#[derive(Debug)]
pub struct Scope {
    mode: ScopeMode,
    max_hops: usize,
    extra_hops: usize,
    /// The mode's SURT prefixes (page: whole SURTs), from the seeds.
    seed_surts: Vec<String>,
    /// Domain mode: the seeds' hosts without `www.`.
    domains: Vec<String>,
    accept_surts: Vec<String>,
    reject_surts: Vec<String>,
    include: Option<RegexSet>,
    exclude: Option<RegexSet>,
    exclusion_file: Option<PathBuf>,
    exclusions: RwLock<Exclusions>,
    traps: Option<Traps>,
}

#[derive(Debug, Default)]
struct Exclusions {
    set: Option<RegexSet>,
    modified: Option<SystemTime>,
    len: u64,
}

#[derive(Debug)]
struct Traps {
    max_url_length: usize,
    max_path_depth: usize,
    max_path_repeats: usize,
    max_query_variants: usize,
    max_calendar_variants: usize,
    query: Mutex<Variants>,
    calendar: Mutex<Variants>,
}

/// Distinct variants (hashed) per pattern (hashed), bounded.
#[derive(Debug, Default)]
struct Variants {
    map: HashMap<u64, HashSet<u64>>,
    total: usize,
}

impl Variants {
    /// Whether `variant` of `pattern` is within the first `max` seen.
    fn admit(&mut self, pattern: u64, variant: u64, max: usize) -> bool {
        if (self.map.len() >= MAX_TRAP_PATTERNS && !self.map.contains_key(&pattern))
            || self.total >= MAX_TRAP_VARIANTS
        {
            self.map.clear();
            self.total = 0;
        }
        let set = self.map.entry(pattern).or_default();
        if set.contains(&variant) {
            return true;
        }
        if set.len() >= max {
            return false;
        }
        set.insert(variant);
        self.total += 1;
        true
    }
}

fn hash_of<T: Hash + ?Sized>(t: &T) -> u64 {
    // A fixed hasher: the same pattern gets the same key in every run.
    std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
        .hash_one(t)
}

/// The SURT form of `url` for scope matching (warchest-index's: no scheme,
/// `www` dropped, lower case).
pub fn surt_of(url: &Url) -> String {
    warchest_index::surt::url_key(url.as_str())
}

/// A configured SURT prefix in SURT form: URLs (with `://`) are converted,
/// keeping their path's trailing `/` as a boundary; SURTs are kept.
fn surt_prefix(s: &str) -> Result<String, ScopeError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(ScopeError::Surt(s.to_string()));
    }
    // Heritrix writes SURT prefixes as `http://(org,example,)/`: drop the
    // scheme and parentheses into our form `org,example)/`.
    let heritrix = s
        .strip_prefix("http://(")
        .or_else(|| s.strip_prefix("https://("))
        .or_else(|| s.strip_prefix('('));
    if heritrix.is_none() && s.contains("://") {
        let u = Url::parse(s).map_err(|_| ScopeError::Surt(s.to_string()))?;
        return Ok(literal_prefix(&u));
    }
    let t = heritrix.unwrap_or(s).replacen(",)", ")", 1);
    Ok(t.to_ascii_lowercase())
}

/// A configured URL prefix in SURT form: the URL's SURT, as a literal
/// prefix; a path ending in `/` keeps that `/` (the SURT drops it).
fn literal_prefix(u: &Url) -> String {
    let mut surt = surt_of(u);
    if u.path().ends_with('/') && u.query().is_none() && !surt.ends_with('/') {
        surt.push('/');
    }
    surt
}

/// A seed's prefix scope in SURT form: its directory (the path up to its
/// last `/`), ending in `/` (`https://www.example.org/docs/intro.html` ->
/// `org,example)/docs/`).
pub fn seed_prefix(seed: &Url) -> String {
    let mut dir = seed.clone();
    dir.set_query(None);
    dir.set_fragment(None);
    let path = seed.path();
    let cut = path.rfind('/').map_or(0, |i| i + 1);
    dir.set_path(&path[..cut.max(1)]);
    let mut surt = surt_of(&dir);
    if !surt.ends_with('/') {
        surt.push('/');
    }
    surt
}

/// Whether a URI's SURT is under a SURT prefix ending in `/`. The SURT
/// form drops a path's trailing `/`, so `org,example)/docs` (the URL
/// `/docs/` itself) is under `org,example)/docs/` too.
fn under_prefix(surt: &str, prefix: &str) -> bool {
    if surt.starts_with(prefix) {
        return true;
    }
    let Some(p) = prefix.strip_suffix('/') else {
        return false;
    };
    let path_end = surt.find('?').unwrap_or(surt.len());
    surt[..path_end] == *p
}

fn compile(what: &str, patterns: &[String]) -> Result<Option<RegexSet>, ScopeError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    if patterns.len() > MAX_PATTERNS {
        return Err(ScopeError::TooMany {
            what: what.to_string(),
            msg: format!("{} patterns, at most {MAX_PATTERNS}", patterns.len()),
        });
    }
    if let Some(p) = patterns.iter().find(|p| p.len() > MAX_PATTERN_LEN) {
        return Err(ScopeError::TooMany {
            what: what.to_string(),
            msg: format!("a pattern of {} bytes, at most {MAX_PATTERN_LEN}", p.len()),
        });
    }
    RegexSetBuilder::new(patterns)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map(Some)
        .map_err(|e| ScopeError::Regex {
            what: what.to_string(),
            err: e.to_string(),
        })
}

/// The patterns of an exclusion file's text: one a line, blank lines and
/// lines starting with `#` skipped.
pub fn exclusion_patterns(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

impl Scope {
    /// The scope of a crawl of `seeds` under `cfg`.
    ///
    /// # Errors
    /// A regex that does not compile or is over the bounds, a bad SURT
    /// prefix, or an exclusion file that cannot be read.
    pub fn new(cfg: &ScopeConfig, seeds: &[Url]) -> Result<Scope, ScopeError> {
        let mut seed_surts = Vec::new();
        let mut domains = Vec::new();
        for s in seeds {
            let surt = surt_of(s);
            match cfg.scope {
                ScopeMode::Page => seed_surts.push(surt),
                ScopeMode::Prefix => seed_surts.push(seed_prefix(s)),
                ScopeMode::Host => {
                    // Up to and including `)`: this host and port only.
                    let end = surt.find(')').map_or(surt.len(), |i| i + 1);
                    seed_surts.push(surt[..end].to_string());
                }
                ScopeMode::Domain => {
                    if let Some(h) = s.host_str() {
                        let h = h.to_ascii_lowercase();
                        let h = h.strip_prefix("www.").unwrap_or(&h).to_string();
                        domains.push(h);
                    }
                }
                ScopeMode::Any => {}
            }
        }
        let surts = |list: &[String], what: &str| -> Result<Vec<String>, ScopeError> {
            if list.len() > MAX_PATTERNS {
                return Err(ScopeError::TooMany {
                    what: what.to_string(),
                    msg: format!("{} prefixes, at most {MAX_PATTERNS}", list.len()),
                });
            }
            list.iter().map(|s| surt_prefix(s)).collect()
        };
        let traps = cfg.traps.then(|| Traps {
            max_url_length: cfg.max_url_length,
            max_path_depth: cfg.max_path_depth,
            max_path_repeats: cfg.max_path_repeats,
            max_query_variants: cfg.max_query_variants,
            max_calendar_variants: cfg.max_calendar_variants,
            query: Mutex::default(),
            calendar: Mutex::default(),
        });
        let scope = Scope {
            mode: cfg.scope,
            max_hops: cfg.max_hops as usize,
            extra_hops: cfg.extra_hops as usize,
            seed_surts,
            domains,
            accept_surts: surts(&cfg.accept_surts, "accept-surts")?,
            reject_surts: surts(&cfg.reject_surts, "reject-surts")?,
            include: compile("include", &cfg.include)?,
            exclude: compile("exclude", &cfg.exclude)?,
            exclusion_file: cfg.exclusion_file.clone(),
            exclusions: RwLock::default(),
            traps,
        };
        scope.reload_exclusions()?;
        Ok(scope)
    }

    /// Rereads the exclusion file when its modification time or size
    /// changed since the last read; returns whether it was reread. On an
    /// error the previous exclusions stay in force.
    ///
    /// # Errors
    /// The file cannot be read, is larger than [`MAX_EXCLUSION_FILE`], or
    /// holds a bad regex.
    pub fn reload_exclusions(&self) -> Result<bool, ScopeError> {
        let Some(path) = &self.exclusion_file else {
            return Ok(false);
        };
        let io = |err| ScopeError::Io {
            path: path.clone(),
            err,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        let modified = meta.modified().ok();
        {
            let ex = self.exclusions.read().unwrap_or_else(|e| e.into_inner());
            if ex.modified.is_some() && ex.modified == modified && ex.len == meta.len() {
                return Ok(false);
            }
        }
        if meta.len() > MAX_EXCLUSION_FILE {
            return Err(ScopeError::TooMany {
                what: path.display().to_string(),
                msg: format!("{} bytes, at most {MAX_EXCLUSION_FILE}", meta.len()),
            });
        }
        let text = std::fs::read(path).map_err(io)?;
        let set = compile(
            &path.display().to_string(),
            &exclusion_patterns(&String::from_utf8_lossy(&text)),
        )?;
        let mut ex = self.exclusions.write().unwrap_or_else(|e| e.into_inner());
        *ex = Exclusions {
            set,
            modified,
            len: meta.len(),
        };
        Ok(true)
    }

    /// Replaces the exclusions with the patterns of `text` (an exclusion
    /// file's content), as a reread does.
    ///
    /// # Errors
    /// A bad regex, or too many.
    pub fn set_exclusions(&self, text: &str) -> Result<(), ScopeError> {
        let set = compile("exclusions", &exclusion_patterns(text))?;
        let mut ex = self.exclusions.write().unwrap_or_else(|e| e.into_inner());
        ex.set = set;
        Ok(())
    }

    /// The exclusion file, if any.
    pub fn exclusion_file(&self) -> Option<&Path> {
        self.exclusion_file.as_deref()
    }

    /// Runs the rule sequence over `uri`.
    pub fn decide(&self, uri: &CrawlUri) -> Verdict {
        let mut v = Verdict {
            accepted: false,
            rule: "default-reject",
        };
        let url = &uri.url;
        let surt = surt_of(url);
        let mut apply = |rule: &'static str, d: Decision| apply_rule(&mut v, rule, d);
        let when = |b: bool, d: Decision| if b { d } else { Decision::Pass };
        use Decision::{Accept, Reject};

        apply(self.mode.rule(), when(self.in_mode(url, &surt), Accept));
        apply(
            "accept-surt",
            when(
                self.accept_surts.iter().any(|p| under_prefix(&surt, p)),
                Accept,
            ),
        );
        apply(
            "include",
            when(
                self.include
                    .as_ref()
                    .is_some_and(|s| s.is_match(url.as_str())),
                Accept,
            ),
        );
        apply("max-hops", when(uri.links_hops() > self.max_hops, Reject));
        let t = uri.trailing_embeds();
        apply("transclusion", when(t > 0 && t <= self.extra_hops, Accept));
        apply(
            "reject-surt",
            when(
                self.reject_surts.iter().any(|p| under_prefix(&surt, p)),
                Reject,
            ),
        );
        apply(
            "exclude",
            when(
                self.exclude
                    .as_ref()
                    .is_some_and(|s| s.is_match(url.as_str())),
                Reject,
            ),
        );
        {
            let ex = self.exclusions.read().unwrap_or_else(|e| e.into_inner());
            apply(
                "exclusion-file",
                when(
                    ex.set.as_ref().is_some_and(|s| s.is_match(url.as_str())),
                    Reject,
                ),
            );
        }
        // The stateful trap rules only count URIs that are still accepted:
        // a URI rejected anyway uses up no variant.
        if let Some(traps) = &self.traps {
            for (rule, d) in traps.stateless(url) {
                apply_rule(&mut v, rule, d);
            }
            if v.accepted {
                let (rule, d) = traps.calendar(url);
                apply_rule(&mut v, rule, d);
            }
            if v.accepted {
                let (rule, d) = traps.query(url);
                apply_rule(&mut v, rule, d);
            }
        }
        apply_rule(
            &mut v,
            "prerequisite",
            when(uri.last_hop() == Some(Hop::Prerequisite), Accept),
        );
        apply_rule(
            &mut v,
            "scheme",
            when(!matches!(url.scheme(), "http" | "https"), Reject),
        );
        v
    }

    fn in_mode(&self, url: &Url, surt: &str) -> bool {
        match self.mode {
            ScopeMode::Any => true,
            ScopeMode::Page => self.seed_surts.iter().any(|s| s == surt),
            ScopeMode::Prefix => self.seed_surts.iter().any(|s| under_prefix(surt, s)),
            ScopeMode::Host => self.seed_surts.iter().any(|s| surt.starts_with(s.as_str())),
            ScopeMode::Domain => url.host_str().is_some_and(|h| {
                let h = h.to_ascii_lowercase();
                self.domains.iter().any(|d| {
                    h == *d
                        || h.strip_suffix(d.as_str())
                            .is_some_and(|rest| rest.ends_with('.'))
                })
            }),
        }
    }
}

/// One rule's decision applied to the verdict so far: the last rule
/// that decides wins.
fn apply_rule(v: &mut Verdict, rule: &'static str, d: Decision) {
    match d {
        Decision::Accept => {
            *v = Verdict {
                accepted: true,
                rule,
            }
        }
        Decision::Reject => {
            *v = Verdict {
                accepted: false,
                rule,
            }
        }
        Decision::Pass => {}
    }
}

impl Traps {
    /// The rules that need no state: URL length, path depth, path repeats.
    fn stateless(&self, url: &Url) -> [(&'static str, Decision); 3] {
        let pass = Decision::Pass;
        let long = url.as_str().len() > self.max_url_length;
        let segs: Vec<&str> = url
            .path_segments()
            .map(|s| s.filter(|s| !s.is_empty()).take(1024).collect())
            .unwrap_or_default();
        let deep = segs.len() > self.max_path_depth;
        let repeats = path_repeats(&segs) > self.max_path_repeats;
        let r = |b: bool| if b { Decision::Reject } else { pass };
        [
            ("trap-url-length", r(long)),
            ("trap-path-depth", r(deep)),
            ("trap-path-repeat", r(repeats)),
        ]
    }

    fn query(&self, url: &Url) -> (&'static str, Decision) {
        let Some(q) = url.query() else {
            return ("trap-query-variants", Decision::Pass);
        };
        let pattern = hash_of(&(url.scheme(), url.host_str(), url.port(), url.path()));
        let mut st = self.query.lock().unwrap_or_else(|e| e.into_inner());
        let ok = st.admit(pattern, hash_of(q), self.max_query_variants);
        (
            "trap-query-variants",
            if ok { Decision::Pass } else { Decision::Reject },
        )
    }

    fn calendar(&self, url: &Url) -> (&'static str, Decision) {
        if self.max_calendar_variants == 0 {
            return ("trap-calendar", Decision::Pass);
        }
        let Some((pattern, dates)) = calendar_pattern(url) else {
            return ("trap-calendar", Decision::Pass);
        };
        let mut st = self.calendar.lock().unwrap_or_else(|e| e.into_inner());
        let ok = st.admit(
            hash_of(&pattern),
            hash_of(&dates),
            self.max_calendar_variants,
        );
        (
            "trap-calendar",
            if ok { Decision::Pass } else { Decision::Reject },
        )
    }
}

/// The most times a run of path segments occurs in a row
/// (`/a/b/a/b/a/b/`: `a/b` 3 times; `/a/a`: 2; `/a/b`: 1; no segments: 0).
/// The first 64 segments are looked at.
pub fn path_repeats(segs: &[&str]) -> usize {
    let n = segs.len().min(64);
    let segs = &segs[..n];
    let mut most = usize::from(n > 0);
    for len in 1..=n / 2 {
        for start in 0..n {
            let mut reps = 1;
            let mut at = start + len;
            while at + len <= n && segs[at..at + len] == segs[start..start + len] {
                reps += 1;
                at += len;
            }
            most = most.max(reps);
        }
    }
    most
}

/// Whether `s` is a date-like token: a year 1900..=2199 alone or followed
/// by a month (and a day), joined by `-`, `_`, `.` or nothing
/// (`2024`, `2024-05`, `20240531`, `2024-5-31`).
fn is_date_token(s: &str) -> bool {
    let b = s.as_bytes();
    let year = |y: &[u8]| {
        y.len() == 4 && y.iter().all(u8::is_ascii_digit) && matches!(&y[..2], b"19" | b"20" | b"21")
    };
    if b.len() < 4 || !year(&b[..4]) {
        return false;
    }
    let rest = &s[4..];
    if rest.is_empty() {
        return true;
    }
    if rest.len() == 4 && rest.bytes().all(|c| c.is_ascii_digit()) {
        return in_range(&rest[..2], 1, 12) && in_range(&rest[2..], 1, 31);
    }
    let mut parts = rest.split(['-', '_', '.']);
    if parts.next() != Some("") {
        return false;
    }
    let parts: Vec<&str> = parts.collect();
    match parts.as_slice() {
        [m] => in_range(m, 1, 12),
        [m, d] => in_range(m, 1, 12) && in_range(d, 1, 31),
        _ => false,
    }
}

fn in_range(s: &str, lo: u32, hi: u32) -> bool {
    s.len() <= 2 && s.parse::<u32>().is_ok_and(|v| (lo..=hi).contains(&v))
}

/// A calendar-like URL's pattern (scheme, host, path and query with each
/// date taken out) and its dates, or `None` when it holds no date. A year
/// segment followed by a month segment (`/2024/05/`) counts as one date;
/// so does a query value that is a date or a year with a sibling month
/// key (`?year=2024&month=5`).
pub fn calendar_pattern(url: &Url) -> Option<(String, String)> {
    let mut pattern = format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    );
    let mut dates = String::new();
    let path = url.path();
    let segs: Vec<&str> = path
        .strip_prefix('/')
        .unwrap_or(path)
        .split('/')
        .take(1024)
        .collect();
    let mut i = 0;
    while i < segs.len() {
        let s = segs[i];
        let year_month =
            s.len() == 4 && is_date_token(s) && segs.get(i + 1).is_some_and(|m| in_range(m, 1, 12));
        if year_month || (is_date_token(s) && s.len() > 4) {
            pattern.push_str("/{date}");
            dates.push_str(s);
            dates.push('/');
            if year_month {
                dates.push_str(segs[i + 1]);
                dates.push('/');
                i += 1;
                if segs.get(i + 1).is_some_and(|d| in_range(d, 1, 31)) {
                    dates.push_str(segs[i + 1]);
                    i += 1;
                }
            }
        } else {
            pattern.push('/');
            pattern.push_str(s);
        }
        i += 1;
    }
    if let Some(q) = url.query() {
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(q.as_bytes())
            .take(256)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let has_month = pairs
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("month") && in_range(v, 1, 12));
        pattern.push('?');
        for (k, v) in &pairs {
            let date = (is_date_token(v) && (v.len() > 4 || has_month))
                || (has_month && k.eq_ignore_ascii_case("month"));
            if date {
                pattern.push_str(k);
                pattern.push_str("={date}&");
                dates.push_str(k);
                dates.push('=');
                dates.push_str(v);
                dates.push('&');
            } else {
                pattern.push_str(k);
                pattern.push('=');
                pattern.push_str(v);
                pattern.push('&');
            }
        }
    }
    (!dates.is_empty()).then_some((pattern, dates))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn scope(cfg: ScopeConfig, seeds: &[&str]) -> Scope {
        let seeds: Vec<Url> = seeds.iter().map(|s| u(s)).collect();
        Scope::new(&cfg, &seeds).unwrap()
    }

    fn link(s: &str) -> CrawlUri {
        CrawlUri::seed(u("http://seed.invalid/"), 0).child(u(s), Hop::Link)
    }

    fn embed(s: &str) -> CrawlUri {
        CrawlUri::seed(u("http://seed.invalid/"), 0).child(u(s), Hop::Embed)
    }

    fn with_mode(mode: ScopeMode) -> ScopeConfig {
        ScopeConfig {
            scope: mode,
            ..ScopeConfig::default()
        }
    }

    #[test]
    fn prefix_mode_is_the_seed_directory() {
        let s = scope(ScopeConfig::default(), &["http://www.example.org/a/b.html"]);
        let ok = s.decide(&link("https://example.org/a/c/d.html"));
        assert_eq!(
            ok,
            Verdict {
                accepted: true,
                rule: "scope-prefix"
            }
        );
        let no = s.decide(&link("http://example.org/b/"));
        assert_eq!(no.rule, "default-reject");
        assert!(!no.accepted);
        // A longer host is not under the prefix.
        assert!(!s.decide(&link("http://example.org.evil/a/x")).accepted);
    }

    #[test]
    fn prefix_of_a_directory_seed() {
        // The SURT form drops a trailing `/`: the seed directory itself,
        // with or without its query, is still in scope; a sibling is not.
        let s = scope(ScopeConfig::default(), &["https://www.example.org/docs/"]);
        for ok in [
            "https://example.org/docs/",
            "http://example.org/docs/?a=1",
            "https://example.org/docs/intro.html",
            "https://example.org/docs/sub/x",
        ] {
            assert!(s.decide(&link(ok)).accepted, "{ok}");
        }
        for no in [
            "https://example.org/docsx",
            "https://example.org/",
            "https://example.org/blog/",
        ] {
            assert!(!s.decide(&link(no)).accepted, "{no}");
        }
        assert_eq!(seed_prefix(&u("http://example.org")), "org,example)/");
        assert_eq!(
            seed_prefix(&u("http://example.org/a/b?c=1")),
            "org,example)/a/"
        );
        // A configured URL prefix is literal; a trailing `/` is kept.
        let lit = scope(
            ScopeConfig {
                accept_surts: vec!["http://other.test/keep/".into()],
                ..ScopeConfig::default()
            },
            &["http://example.org/"],
        );
        let v = lit.decide(&link("http://other.test/keep/"));
        assert!(v.accepted, "{v:?}");
        assert!(!lit.decide(&link("http://other.test/keeper")).accepted);
    }

    #[test]
    fn each_mode() {
        let seed = ["http://example.org/a/page.html"];
        let p = scope(with_mode(ScopeMode::Page), &seed);
        assert!(p.decide(&link("http://example.org/a/page.html")).accepted);
        assert!(!p.decide(&link("http://example.org/a/other.html")).accepted);
        // The page's embeds, wherever they are.
        assert_eq!(
            p.decide(&embed("http://cdn.test/x.png")).rule,
            "transclusion"
        );
        let h = scope(with_mode(ScopeMode::Host), &seed);
        assert!(h.decide(&link("http://example.org/z")).accepted);
        assert!(!h.decide(&link("http://sub.example.org/z")).accepted);
        assert!(!h.decide(&link("http://example.org:8080/z")).accepted);
        let d = scope(with_mode(ScopeMode::Domain), &["http://www.example.org/"]);
        assert!(d.decide(&link("http://sub.example.org/z")).accepted);
        assert!(d.decide(&link("http://example.org/z")).accepted);
        assert!(!d.decide(&link("http://badexample.org/z")).accepted);
        let a = scope(with_mode(ScopeMode::Any), &seed);
        let v = a.decide(&link("http://elsewhere.test/"));
        assert_eq!(v.rule, "scope-any");
        assert!(v.accepted);
    }

    #[test]
    fn non_http_schemes_are_rejected_last() {
        let a = scope(with_mode(ScopeMode::Any), &["http://example.org/"]);
        let v = a.decide(&link("ftp://elsewhere.test/"));
        assert_eq!(
            v,
            Verdict {
                accepted: false,
                rule: "scheme"
            }
        );
    }

    #[test]
    fn max_hops_and_transclusion() {
        let cfg = ScopeConfig {
            max_hops: 2,
            extra_hops: 1,
            ..ScopeConfig::default()
        };
        let s = scope(cfg, &["http://example.org/"]);
        let seed = CrawlUri::seed(u("http://example.org/"), 0);
        let l1 = seed.child(u("http://example.org/1"), Hop::Link);
        let l2 = l1.child(u("http://example.org/2"), Hop::Link);
        let l3 = l2.child(u("http://example.org/3"), Hop::Link);
        assert!(s.decide(&l2).accepted);
        assert_eq!(
            s.decide(&l3),
            Verdict {
                accepted: false,
                rule: "max-hops"
            }
        );
        // An embed of a page at the hop limit is still fetched, even off-site.
        let e = l2.child(u("http://cdn.test/x.png"), Hop::Embed);
        assert_eq!(
            s.decide(&e),
            Verdict {
                accepted: true,
                rule: "transclusion"
            }
        );
        // But not two embeds deep with extra-hops 1.
        let ee = e.child(u("http://cdn.test/y.woff"), Hop::Embed);
        assert_eq!(s.decide(&ee).rule, "default-reject");
        // And an off-site link is out.
        assert!(
            !s.decide(&l1.child(u("http://cdn.test/"), Hop::Link))
                .accepted
        );
    }

    #[test]
    fn surt_lists() {
        let cfg = ScopeConfig {
            accept_surts: vec![
                "http://other.test/keep/".into(),
                "(test,third,".into(),
                "http://(test,fourth,)/a/".into(),
            ],
            reject_surts: vec!["org,example)/private".into()],
            ..ScopeConfig::default()
        };
        let s = scope(cfg, &["http://example.org/"]);
        assert_eq!(
            s.decide(&link("http://other.test/keep/a")).rule,
            "accept-surt"
        );
        assert!(!s.decide(&link("http://other.test/drop/a")).accepted);
        assert!(s.decide(&link("http://x.third.test/")).accepted);
        assert!(s.decide(&link("http://fourth.test/a/b")).accepted);
        assert!(!s.decide(&link("http://fourth.test/b")).accepted);
        assert_eq!(
            s.decide(&link("http://example.org/private/x")),
            Verdict {
                accepted: false,
                rule: "reject-surt"
            }
        );
    }

    #[test]
    fn include_and_exclude() {
        let cfg = ScopeConfig {
            include: vec![r"^https?://cdn\.test/".into()],
            exclude: vec![r"\?replytocom=".into()],
            ..ScopeConfig::default()
        };
        let s = scope(cfg, &["http://example.org/"]);
        assert_eq!(s.decide(&link("http://cdn.test/a")).rule, "include");
        assert_eq!(
            s.decide(&link("http://example.org/p?replytocom=3")).rule,
            "exclude"
        );
        let bad = ScopeConfig {
            exclude: vec!["(".into()],
            ..ScopeConfig::default()
        };
        assert!(matches!(
            Scope::new(&bad, &[]),
            Err(ScopeError::Regex { .. })
        ));
        let huge = ScopeConfig {
            include: vec!["a{1000}{1000}".into()],
            ..ScopeConfig::default()
        };
        assert!(Scope::new(&huge, &[]).is_err());
    }

    #[test]
    fn exclusion_file_is_reread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("excl.txt");
        std::fs::write(&path, "# none yet\n").unwrap();
        let cfg = ScopeConfig {
            exclusion_file: Some(path.clone()),
            ..ScopeConfig::default()
        };
        let s = scope(cfg, &["http://example.org/"]);
        assert!(s.decide(&link("http://example.org/spam/1")).accepted);
        assert!(!s.reload_exclusions().unwrap());
        std::fs::write(&path, "# spam\n/spam/\n").unwrap();
        assert!(s.reload_exclusions().unwrap());
        assert_eq!(
            s.decide(&link("http://example.org/spam/1")),
            Verdict {
                accepted: false,
                rule: "exclusion-file"
            }
        );
        // A bad regex keeps the old exclusions.
        std::fs::write(&path, "(\n").unwrap();
        assert!(s.reload_exclusions().is_err());
        assert!(!s.decide(&link("http://example.org/spam/1")).accepted);
    }

    #[test]
    fn trap_url_length_depth_repeats() {
        let s = scope(ScopeConfig::default(), &["http://example.org/"]);
        let long = format!("http://example.org/{}", "a".repeat(2100));
        assert_eq!(s.decide(&link(&long)).rule, "trap-url-length");
        let deep: String = (0..21).map(|i| format!("/d{i}")).collect();
        let deep = format!("http://example.org{deep}");
        assert_eq!(s.decide(&link(&deep)).rule, "trap-path-depth");
        assert_eq!(
            s.decide(&link("http://example.org/a/b/a/b/a/b/x")).rule,
            "trap-path-repeat"
        );
        assert!(s.decide(&link("http://example.org/a/b/a/b/x")).accepted);
        let off = scope(
            ScopeConfig {
                traps: false,
                ..ScopeConfig::default()
            },
            &["http://example.org/"],
        );
        assert!(off.decide(&link(&long)).accepted);
    }

    #[test]
    fn path_repeat_counts() {
        assert_eq!(path_repeats(&["a", "a", "a"]), 3);
        assert_eq!(path_repeats(&["a", "b", "a", "b"]), 2);
        assert_eq!(path_repeats(&["a", "b", "c"]), 1);
        assert_eq!(path_repeats(&[]), 0);
    }

    #[test]
    fn query_variants_are_bounded_and_stable() {
        let cfg = ScopeConfig {
            max_query_variants: 3,
            ..ScopeConfig::default()
        };
        let s = scope(cfg, &["http://example.org/"]);
        for i in 0..3 {
            assert!(
                s.decide(&link(&format!("http://example.org/l?p={i}")))
                    .accepted
            );
        }
        let v = s.decide(&link("http://example.org/l?p=9"));
        assert_eq!(v.rule, "trap-query-variants");
        assert!(!v.accepted);
        // A variant seen before keeps its verdict; another path is counted
        // on its own.
        assert!(s.decide(&link("http://example.org/l?p=1")).accepted);
        assert!(s.decide(&link("http://example.org/m?p=9")).accepted);
    }

    #[test]
    fn trap_state_is_bounded() {
        let mut v = Variants::default();
        for p in 0..(MAX_TRAP_PATTERNS as u64 + 10) {
            assert!(v.admit(p, 1, 3));
        }
        assert!(v.map.len() <= MAX_TRAP_PATTERNS);
        let mut v = Variants::default();
        for i in 0..(MAX_TRAP_VARIANTS as u64 + 10) {
            v.admit(i % 1000, i, usize::MAX);
        }
        assert!(v.total <= MAX_TRAP_VARIANTS);
    }

    #[test]
    fn calendar_trap() {
        let cfg = ScopeConfig {
            max_calendar_variants: 3,
            ..ScopeConfig::default()
        };
        let s = scope(cfg, &["http://example.org/"]);
        for m in 1..=3 {
            assert!(
                s.decide(&link(&format!("http://example.org/cal/2024/{m:02}/")))
                    .accepted
            );
        }
        assert_eq!(
            s.decide(&link("http://example.org/cal/2024/04/")).rule,
            "trap-calendar"
        );
        // Blog posts under dates have patterns of their own.
        assert!(
            s.decide(&link("http://example.org/2024/04/a-post"))
                .accepted
        );
        assert!(
            s.decide(&link("http://example.org/2024/05/b-post"))
                .accepted
        );
        for d in ["2024-01-01", "2024-01-02", "2024-01-03"] {
            assert!(
                s.decide(&link(&format!("http://example.org/e?d={d}")))
                    .accepted
            );
        }
        assert_eq!(
            s.decide(&link("http://example.org/e?d=2024-01-04")).rule,
            "trap-calendar"
        );
    }

    #[test]
    fn calendar_patterns() {
        let (p, d) = calendar_pattern(&u("http://h.test/c/2024/5/x?y=1")).unwrap();
        assert_eq!(p, "http://h.test:80/c/{date}/x?y=1&");
        assert_eq!(d, "2024/5/");
        let (p, _) = calendar_pattern(&u("http://h.test/c?year=2024&month=5")).unwrap();
        assert_eq!(p, "http://h.test:80/c?year={date}&month={date}&");
        assert!(calendar_pattern(&u("http://h.test/c/2024-report.pdf")).is_none());
        assert!(calendar_pattern(&u("http://h.test/p?id=2024")).is_none());
        assert!(is_date_token("20240531"));
        assert!(!is_date_token("20241331"));
        assert!(is_date_token("2024-5-31"));
    }

    #[test]
    fn prerequisites_follow_their_uri() {
        let s = scope(ScopeConfig::default(), &["http://example.org/a/"]);
        let page = CrawlUri::seed(u("http://example.org/a/"), 0);
        let robots = page.child(u("http://example.org/robots.txt"), Hop::Prerequisite);
        assert_eq!(s.decide(&robots).rule, "prerequisite");
        assert!(s.decide(&robots).accepted);
    }

    #[test]
    fn config_from_toml_like_json() {
        let cfg: ScopeConfig =
            serde_json::from_str(r#"{"scope":"host","max-hops":3,"exclude":["x"]}"#).unwrap();
        assert_eq!(cfg.scope, ScopeMode::Host);
        assert_eq!(cfg.max_hops, 3);
        assert_eq!(cfg.extra_hops, 2);
        assert!(serde_json::from_str::<ScopeConfig>(r#"{"bogus":1}"#).is_err());
        assert_eq!("domain".parse::<ScopeMode>().unwrap(), ScopeMode::Domain);
        assert!("site".parse::<ScopeMode>().is_err());
    }
}
