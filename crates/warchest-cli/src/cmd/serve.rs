//! `warchest serve`: browse and replay archives in a web browser.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use warchest_serve::{ServeOptions, Server};

use crate::report::{Global, Outcome};

/// Serve archive files (WARC, ARC, Web InfoMall, WACZ; files or
/// directories) to a web browser: search, captures, records, replay with
/// rewritten links (`/{collection}/{timestamp}/{url}`), a CDX API
/// (`/{collection}/cdx?url=...`: pywb's parameters, filters, outputs,
/// pages and fuzzy answer, the Internet Archive's `collapse`, `limit=-N`,
/// `fastLatest`, `offset`, `showResumeKey`/`resumeKey` and counters; the
/// same at `/cdx/search/cdx` in the Internet Archive's outputs) and
/// Memento (RFC 7089). The index is kept
/// in the user's cache directory ($XDG_CACHE_HOME/warchest/serve/, keyed
/// by the paths served), never in the directories served, or where
/// --index-db says; new files are picked up while running. See
/// docs/serve.md.
///
/// Example: `warchest serve crawls/ --listen 127.0.0.1:8080`, then open
/// http://127.0.0.1:8080/
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files and directories to serve, and objects named by URL (one
    /// object, a prefix ending in `/` or a `*` glob: s3://BUCKET/crawl/,
    /// https://HOST/x.warc.gz), indexed once into the local index and read
    /// a record per range request (docs/remote.md).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// The collection's name in URLs.
    #[arg(long, default_value = "archive")]
    collection: String,
    /// The index store (default: a file in $XDG_CACHE_HOME/warchest/serve/
    /// or ~/.cache/warchest/serve/, named after the first path and keyed
    /// by the paths served).
    #[arg(long)]
    index_db: Option<PathBuf>,
    /// Use this CDXJ index (as `warchest index` writes it, plain or
    /// gzip-compressed; a path or a URL) instead of reading the files; its file names are found among
    /// the paths.
    #[arg(long)]
    cdxj: Option<PathBuf>,
    /// Seconds between looks for new files (0: never; default 10). Given,
    /// a directory still without archives may be served: it is watched.
    #[arg(long, value_name = "SECS")]
    poll: Option<u64>,
    /// The replay origin's address: archived pages, records and files are
    /// served only there (default: the same IP as --listen, the next port).
    #[arg(long, value_name = "ADDR")]
    replay_listen: Option<String>,
    /// Behind a reverse proxy: requests for this host name are the replay
    /// origin (no second listener unless --replay-listen is given too).
    /// The first --host is then the UI's name.
    #[arg(long, value_name = "NAME")]
    replay_host: Option<String>,
    /// Requests handled at once (each on a thread of its own); the others
    /// wait.
    #[arg(long, default_value_t = 64)]
    threads: usize,
    /// Connections open at once; past it, new ones wait to be accepted.
    /// Keep it under the open-file limit (ulimit -n).
    #[arg(long, default_value_t = 4096, value_name = "N")]
    max_connections: usize,
    /// A host name (with or without a port) requests may name in their
    /// Host header; repeatable. Default: localhost, 127.0.0.1, [::1] and
    /// the address listened on. Any other Host gets 421, so a DNS name
    /// rebound to this machine reaches nothing.
    #[arg(long = "host", value_name = "NAME")]
    hosts: Vec<String>,
    /// Listen on an address other than loopback (the archive on the
    /// network). Without it such an address is refused. Name the public
    /// host names with --host. See docs/serve.md for putting serve on the
    /// public web.
    #[arg(long)]
    public: bool,
    /// Requests a second each client may make of the CDX and Memento APIs
    /// (bursts of twice that); past it, 429 with Retry-After. Default: no
    /// limit, 50 with --public; 0: no limit.
    #[arg(long, value_name = "N")]
    rate_limit: Option<u32>,
    /// More fuzzy-matching rules (cache busters, session ids, JSONP
    /// callbacks that do not pick the resource), in the form of the shipped
    /// ones (docs/serve.md, "Fuzzy matching"); added to them.
    #[arg(long, value_name = "FILE")]
    fuzzy_rules: Option<PathBuf>,
    /// A full-text index made by `warchest search-index`: a search page at
    /// /{coll}/fulltext (hits with snippet and replay link, facets, date
    /// histogram, paging) and its JSON API (`&output=json`).
    #[arg(long, value_name = "INDEX")]
    search: Option<PathBuf>,
    /// Access control rules, pywb's `.aclj` files (a directory: its
    /// `.aclj` files); repeatable. Each line `SURT-PREFIX - {"access":
    /// "allow"|"block"|"exclude"|"allow_ignore_embargo"}` (a key ending in
    /// `###` is that URL alone, `*,` every URL), optionally for one
    /// "user" and "before"/"after"/"newer"/"older" a time. Excluded
    /// captures are in no index and 404; blocked ones are listed and 451.
    /// Read again when they change (looked at every --poll). See
    /// docs/serve.md, "Access control".
    #[arg(long = "acl", value_name = "PATH")]
    acl: Vec<PathBuf>,
    /// The access of a capture no rule matches.
    #[arg(long, value_name = "ACCESS", default_value = "allow",
          value_parser = ["allow", "block", "exclude"])]
    default_access: String,
    /// Embargo the captures made before this time (a timestamp: 2010,
    /// 20101201...).
    #[arg(long, value_name = "TS")]
    embargo_before: Option<String>,
    /// Embargo the captures made after this time.
    #[arg(long, value_name = "TS")]
    embargo_after: Option<String>,
    /// Embargo the captures newer than this period (`1y`, `6m`, `2w3d`:
    /// years, months, weeks, days, in that order).
    #[arg(long, value_name = "PERIOD")]
    embargo_newer: Option<String>,
    /// Embargo the captures older than this period.
    #[arg(long, value_name = "PERIOD")]
    embargo_older: Option<String>,
    /// What an embargoed capture gets, unless a rule says
    /// allow_ignore_embargo.
    #[arg(long, value_name = "ACCESS", default_value = "exclude",
          value_parser = ["exclude", "block"])]
    embargo_access: String,
    /// The request header naming the user of rules written for one user
    /// (pywb's `X-Pywb-ACL-User`). Without it, every request is the
    /// public's. Give it only behind a front end that sets the header and
    /// removes any a client sent: a client can send any header.
    #[arg(long, value_name = "NAME")]
    acl_user_header: Option<String>,
}

/// The access rules, default access and embargo the options name.
fn access_rules(args: &Args) -> Result<warchest_replay::access::AccessRules> {
    use warchest_replay::access::{Access, AccessRules, Embargo, Period, Verdict, When};
    let rules = AccessRules::load(&args.acl).context("--acl")?;
    let mut when = Vec::new();
    for (name, v, make) in [
        (
            "--embargo-before",
            &args.embargo_before,
            When::Before as fn(i64) -> When,
        ),
        ("--embargo-after", &args.embargo_after, When::After),
    ] {
        if let Some(v) = v {
            let Some(t) = When::at(v) else {
                bail!("{name} {v}: a timestamp (2010, 20101201...)");
            };
            when.push(make(t));
        }
    }
    for (name, v, make) in [
        (
            "--embargo-newer",
            &args.embargo_newer,
            When::Newer as fn(Period) -> When,
        ),
        ("--embargo-older", &args.embargo_older, When::Older),
    ] {
        if let Some(v) = v {
            let Some(p) = Period::parse(v) else {
                bail!("{name} {v}: a period (1y, 6m, 2w3d: years, months, weeks, days)");
            };
            when.push(make(p));
        }
    }
    let verdict = if args.embargo_access == "block" {
        Verdict::Block
    } else {
        Verdict::Exclude
    };
    let embargo = (!when.is_empty()).then_some(Embargo { when, verdict });
    let embargoed = embargo.is_some();
    let default = Access::parse(&args.default_access).unwrap_or(Access::Allow);
    let rules = rules.with_default(default).with_embargo(embargo);
    if rules.has_user_rules() && args.acl_user_header.is_none() {
        eprintln!(
            "warchest: warning: some access rules are for one user, and no --acl-user-header \
             names the header that says who: they apply to no request"
        );
    }
    if !rules.is_open() {
        eprintln!(
            "warchest: access control: {} rule(s), default {}, {}",
            rules.len(),
            args.default_access,
            if embargoed {
                "an embargo"
            } else {
                "no embargo"
            }
        );
    }
    Ok(rules)
}

pub fn run(_g: &Global, args: Args) -> Result<Outcome> {
    if args.collection.is_empty()
        || !args
            .collection
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        bail!("--collection: letters, digits, '-', '_' and '.' only");
    }
    let loopback = |addr: &str| {
        addr.parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.ip().is_loopback())
            || addr.starts_with("localhost:")
    };
    for addr in std::iter::once(&args.listen).chain(args.replay_listen.as_ref()) {
        if !loopback(addr) && !args.public {
            bail!(
                "refusing to listen on {addr}: pass --public to serve the archive on the network \
                 (and --host NAME for the names it is reached by)"
            );
        }
    }
    check_paths(&args.paths, args.poll.is_some_and(|p| p > 0))?;
    let poll = args.poll.unwrap_or(10);
    let fuzzy = match &args.fuzzy_rules {
        Some(f) => warchest_replay::fuzzy::FuzzyRules::load(f)?,
        None => warchest_replay::fuzzy::FuzzyRules::default(),
    };
    let access = access_rules(&args)?;
    let opts = ServeOptions {
        access,
        access_files: args.acl.clone(),
        access_user_header: args.acl_user_header,
        fuzzy,
        search: args.search,
        listen: args.listen,
        collection: args.collection,
        paths: args.paths,
        store: args.index_db,
        cdxj: args.cdxj,
        poll: (poll > 0).then(|| Duration::from_secs(poll)),
        replay_listen: args.replay_listen,
        replay_host: args.replay_host,
        threads: args.threads.clamp(1, 1024),
        max_connections: args.max_connections.clamp(1, 1_000_000),
        allowed_hosts: args.hosts,
        rate_limit: match args.rate_limit {
            Some(0) => None,
            Some(n) => Some(n),
            None => args.public.then_some(50),
        },
    };
    let opts_replay_host = opts.replay_host.clone();
    let server = Server::bind(opts)?;
    let addr = server.local_addr()?;
    // The addresses on stdout, so that scripts (and tests) can wait for
    // them.
    match (server.replay_addr()?, &opts_replay_host) {
        (Some(r), _) => println!("warchest: listening on http://{addr} (ui), http://{r} (replay)"),
        (None, Some(h)) => println!("warchest: listening on http://{addr} (ui), host {h} (replay)"),
        (None, None) => println!("warchest: listening on http://{addr} (ui)"),
    }
    use std::io::Write;
    std::io::stdout().flush()?;
    server.run()?;
    Ok(Outcome::Ok)
}

/// Refuses what cannot be served, before anything is indexed: a path
/// that does not exist, a file in which no record is found, and a
/// directory holding no archive file (unless `watched`: --poll given, so
/// that archives may come). Without this a typo gave a server answering
/// 404 to everything. URLs are listed and reported by the index's sync.
fn check_paths(paths: &[PathBuf], watched: bool) -> Result<()> {
    for p in paths {
        let name = p.to_string_lossy();
        if crate::remote::is_remote(&name) {
            continue;
        }
        let meta =
            std::fs::metadata(p).with_context(|| format!("{}: cannot serve", p.display()))?;
        if meta.is_dir() {
            if !watched && !holds_archive(p, 0) {
                bail!(
                    "{}: no archive file in this directory (.warc, .arc, .wacz, .dat, \
                     plain or .gz/.zst/.lz4); give --poll SECS to serve it while archives come",
                    p.display()
                );
            }
        } else if !warchest_wacz::is_wacz(p) {
            crate::input::require_records(&name)?;
        }
    }
    Ok(())
}

/// Whether `dir` holds an archive file, at most 32 levels down (hidden
/// files and directories skipped, as serve's walk does).
fn holds_archive(dir: &std::path::Path, depth: usize) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            return false;
        }
        match e.file_type() {
            Ok(t) if t.is_dir() => depth < 32 && holds_archive(&e.path(), depth + 1),
            _ => warchest_replay::store::is_archive_name(&name),
        }
    })
}
