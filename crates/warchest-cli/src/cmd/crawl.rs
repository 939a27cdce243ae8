//! `warchest crawl`: crawl sites into WARC files (see docs/crawl.md).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use warchest_crawl::config::{CrawlConfig, SAVED_CONFIG, overlay};
use warchest_crawl::engine::{Crawl, Ending};

use crate::report::{Global, Outcome};

/// Crawl web sites into WARC files: the seeds' site (by default every URL
/// under the seed's prefix), the pages' embedded resources wherever they
/// are hosted, robots.txt obeyed, one connection per host with a delay
/// between fetches. Writes DIR/archive/*.warc.gz, DIR/indexes/index.cdxj,
/// DIR/pages/pages.jsonl and DIR/logs/crawl.log (Heritrix's format). Every
/// flag is also a key of the same name in --config's TOML file. Stop with
/// Ctrl-C and go on with --resume DIR; after a crash, --resume DIR too.
///
/// Example: `warchest crawl https://example.org/ -o crawl/`
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Seed URLs.
    seeds: Vec<String>,
    /// The crawl directory (created).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// A TOML file of keys named as these flags (`max-hops = 3`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Go on with the crawl in DIR (its saved configuration; flags given
    /// now replace its keys, e.g. a larger --max-pages).
    #[arg(long, value_name = "DIR")]
    resume: Option<PathBuf>,
    /// page, prefix (default), host, domain or any.
    #[arg(long)]
    scope: Option<String>,
    /// Most link hops from a seed (default 20).
    #[arg(long)]
    max_hops: Option<u32>,
    /// Embeds fetched out of scope up to this many hops past a page.
    #[arg(long)]
    extra_hops: Option<u32>,
    /// Delay after a fetch: this times its duration (clamped to the next two).
    #[arg(long)]
    delay_factor: Option<f64>,
    /// Shortest delay between two fetches from one host, seconds.
    #[arg(long)]
    min_delay: Option<f64>,
    /// Longest delay between two fetches from one host, seconds.
    #[arg(long)]
    max_delay: Option<f64>,
    /// URIs of one host fetched at once (default 1, one connection per
    /// host; e.g. --browsers N for a browser crawl of one site).
    #[arg(long, value_name = "N")]
    host_parallel: Option<u32>,
    /// Stop after this many pages (resumable).
    #[arg(long)]
    max_pages: Option<u64>,
    /// Stop after this many bytes received (resumable).
    #[arg(long)]
    max_bytes: Option<u64>,
    /// Stop after this many seconds (resumable).
    #[arg(long)]
    max_time: Option<f64>,
    /// Keep at most this many bytes of each response (WARC-Truncated: length).
    #[arg(long)]
    max_size: Option<u64>,
    /// At most this many pages from one host.
    #[arg(long)]
    max_pages_per_host: Option<u64>,
    /// At most this many bytes from one host.
    #[arg(long)]
    max_bytes_per_host: Option<u64>,
    /// A `warchest dedupe` database, or earlier crawls' CDXJ (a `.cdxj`
    /// file or a directory of them, as a crawl's indexes/): payloads in it
    /// become revisits.
    #[arg(long)]
    dedupe_index: Option<PathBuf>,
    /// An earlier crawl directory: conditional requests for its URLs.
    #[arg(long, value_name = "OLD")]
    recrawl: Option<PathBuf>,
    /// Pack the crawl into a WACZ at the end.
    #[arg(long)]
    wacz: bool,
    /// warc (default) or infomall.
    #[arg(long)]
    format: Option<String>,
    /// Serve JSON status and Prometheus metrics on this address.
    #[arg(long, value_name = "ADDR")]
    status_listen: Option<String>,
    /// This crawler's share of the hosts: K/N.
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// Where shards hand URLs to each other: a shared directory or an
    /// object store prefix (s3://bucket/prefix).
    #[arg(long, value_name = "DIR|URL")]
    handoff: Option<PathBuf>,
    /// The User-Agent header; put a contact URL in it (`+https://...`).
    /// robots.txt groups are matched against the config key `robots-agent`
    /// (default `warchest`), not this.
    #[arg(long)]
    user_agent: Option<String>,
    /// Worker threads (hosts fetched at once; default 8).
    #[arg(long)]
    workers: Option<usize>,
    /// HOST:ADDR instead of a DNS lookup (repeatable). ADDR: IPv4, IPv6
    /// (`[::1]` or `::1`), or several separated by commas; no port.
    #[arg(long, value_name = "HOST:ADDR")]
    resolve: Vec<String>,
    /// Reach only the --resolve hosts, localhost and 127.0.0.0/8, with no
    /// DNS lookup (tests, closed networks).
    #[arg(long)]
    resolve_only: bool,
    /// Neither fetch nor obey robots.txt.
    #[arg(long)]
    ignore_robots: bool,
    /// Include regex (repeatable): URLs matching are in scope.
    #[arg(long)]
    include: Vec<String>,
    /// Exclude regex (repeatable): URLs matching are out of scope.
    #[arg(long)]
    exclude: Vec<String>,
    /// Warcinfo `operator`: who runs the crawl (name and contact).
    #[arg(long)]
    operator: Option<String>,
    /// WARC file name prefix.
    #[arg(long)]
    prefix: Option<String>,
    /// Load pages (seeds and links' targets) in headless Chromium, their
    /// traffic recorded through warchest's recording proxy into the same
    /// files and dedupe index; the rendered DOM's links are followed, and
    /// what the browser fetched is not fetched again (docs/crawl.md,
    /// "Browser capture").
    #[arg(long)]
    browser: bool,
    /// With --browser: browsers at once (one tab each; default 1).
    #[arg(long, value_name = "N")]
    browsers: Option<usize>,
    /// With --browser: the Chromium executable (default: found on PATH).
    #[arg(long, value_name = "PATH")]
    chromium: Option<PathBuf>,
    /// With --browser: seconds a page may take in all (default 60).
    #[arg(long, value_name = "SECONDS")]
    page_timeout: Option<f64>,
    /// With --browser: your own behaviour script, run in each page.
    #[arg(long, value_name = "FILE")]
    behaviors: Option<PathBuf>,
    /// A new connection for every request (key `keep-alive = false`);
    /// by default a host's connection is kept between its fetches.
    #[arg(long)]
    no_keep_alive: bool,
    /// Seconds between two checkpoints of the frontier (default 10): what
    /// a power loss may take back (docs/crawl.md, "The journal and
    /// checkpoints").
    #[arg(long, value_name = "SECONDS")]
    checkpoint_interval: Option<f64>,
}

/// The flags given, as TOML keys.
fn flags(a: &Args) -> Result<toml::Table> {
    use toml::Value;
    let mut t = toml::Table::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            t.insert(k.to_string(), v);
        }
    };
    let s = |x: &Option<String>| x.clone().map(Value::String);
    let u = |x: Option<u64>| {
        x.map(|x| i64::try_from(x).map(Value::Integer))
            .transpose()
            .map_err(|_| anyhow::anyhow!("a number too large"))
    };
    let f = |x: Option<f64>| x.map(Value::Float);
    let p = |x: &Option<PathBuf>| x.as_ref().map(|p| Value::String(p.display().to_string()));
    if !a.seeds.is_empty() {
        put(
            "seeds",
            Some(Value::Array(
                a.seeds.iter().cloned().map(Value::String).collect(),
            )),
        );
    }
    put("output", p(&a.output));
    put("scope", s(&a.scope));
    put("max-hops", u(a.max_hops.map(u64::from))?);
    put("extra-hops", u(a.extra_hops.map(u64::from))?);
    put("delay-factor", f(a.delay_factor));
    put("min-delay", f(a.min_delay));
    put("max-delay", f(a.max_delay));
    put("host-parallel", u(a.host_parallel.map(u64::from))?);
    put("max-pages", u(a.max_pages)?);
    put("max-bytes", u(a.max_bytes)?);
    put("max-time", f(a.max_time));
    put("max-size", u(a.max_size)?);
    put("max-pages-per-host", u(a.max_pages_per_host)?);
    put("max-bytes-per-host", u(a.max_bytes_per_host)?);
    put("dedupe-index", p(&a.dedupe_index));
    put("recrawl", p(&a.recrawl));
    put("wacz", a.wacz.then_some(Value::Boolean(true)));
    put("format", s(&a.format));
    put("status-listen", s(&a.status_listen));
    put("shard", s(&a.shard));
    put("handoff", p(&a.handoff));
    put("user-agent", s(&a.user_agent));
    put("workers", u(a.workers.map(|w| w as u64))?);
    put("operator", s(&a.operator));
    put("prefix", s(&a.prefix));
    put("browser", a.browser.then_some(Value::Boolean(true)));
    put("browsers", u(a.browsers.map(|n| n as u64))?);
    put("chromium", p(&a.chromium));
    put("page-timeout", f(a.page_timeout));
    put("behaviors", p(&a.behaviors));
    put(
        "keep-alive",
        a.no_keep_alive.then_some(Value::Boolean(false)),
    );
    put("checkpoint-interval", f(a.checkpoint_interval));
    if a.resolve_only {
        put("resolve-only", Some(Value::Boolean(true)));
    }
    if a.ignore_robots {
        put("robots", Some(Value::String("ignore".into())));
    }
    if !a.include.is_empty() {
        put(
            "include",
            Some(Value::Array(
                a.include.iter().cloned().map(Value::String).collect(),
            )),
        );
    }
    if !a.exclude.is_empty() {
        put(
            "exclude",
            Some(Value::Array(
                a.exclude.iter().cloned().map(Value::String).collect(),
            )),
        );
    }
    if !a.resolve.is_empty() {
        let mut m = toml::Table::new();
        for r in &a.resolve {
            let (h, addrs) = warchest_crawl::config::resolve_entry(r)?;
            m.insert(h, Value::String(addrs));
        }
        t.insert("resolve".into(), Value::Table(m));
    }
    Ok(t)
}

fn read_table(p: &Path) -> Result<toml::Table> {
    let text = std::fs::read_to_string(p).with_context(|| p.display().to_string())?;
    toml::from_str(&text).with_context(|| p.display().to_string())
}

pub fn run(g: &Global, args: Args) -> Result<Outcome> {
    let mut table = toml::Table::new();
    let dir = if let Some(dir) = &args.resume {
        let saved = dir.join(SAVED_CONFIG);
        if !saved.exists() {
            bail!(
                "--resume {}: no {SAVED_CONFIG} there (not a crawl directory)",
                dir.display()
            );
        }
        table = read_table(&saved)?;
        if args.config.is_some() {
            bail!("--resume takes the crawl's saved configuration; give changed keys as flags");
        }
        dir.clone()
    } else {
        if let Some(c) = &args.config {
            table = read_table(c)?;
        }
        PathBuf::new()
    };
    let given = flags(&args)?;
    if args.resume.is_some() && (given.contains_key("seeds") || given.contains_key("output")) {
        bail!("--resume DIR needs no seeds or --output: they are the crawl's");
    }
    overlay(&mut table, given);
    let dir = if args.resume.is_some() {
        dir
    } else {
        let out = table
            .get("output")
            .and_then(|v| v.as_str())
            .map(PathBuf::from)
            .context("no crawl directory: give -o DIR (or `output` in --config)")?;
        if out.join(SAVED_CONFIG).exists() {
            bail!(
                "{} holds a crawl already: go on with `warchest crawl --resume {}`, or choose another -o",
                out.display(),
                out.display()
            );
        }
        out
    };
    let saved = toml::to_string(&table).context("the configuration")?;
    let cfg = CrawlConfig::from_table(table)?;
    if cfg.engine.seeds.is_empty() {
        bail!("no seed URL given");
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("signal handler")?;
    }
    let crawl_wacz = cfg.engine.wacz;
    let wacz_prefix = cfg.engine.prefix.clone();
    let seeds_text = cfg.engine.seeds.join(" ");
    let mut crawl = Crawl::open(&dir, cfg, &saved, stop)?;
    if crawl.config().render.browser {
        let r = super::browser::crawl_renderer(&crawl)?;
        crawl.set_renderer(r);
    }
    if let Some(a) = crawl.status_addr
        && !g.quiet
    {
        eprintln!("status on http://{a}/status and http://{a}/metrics");
    }
    let summary_start = Instant::now();
    let bar = if !g.quiet && std::io::stderr().is_terminal() {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        Some(pb)
    } else {
        None
    };
    let max_pages = crawl.config().engine.max_pages;
    let tick = |c: &Crawl| {
        if let Some(pb) = &bar {
            pb.set_message(warchest_crawl::engine::progress_line(
                c,
                summary_start,
                max_pages,
            ));
            pb.tick();
        }
    };
    let summary = crawl.run(&tick)?;
    if let Some(pb) = &bar {
        pb.finish_and_clear();
    }
    // The notes say why a damaged journal makes the run exit 1: said
    // under -q too then.
    if !g.quiet || summary.journal_lost {
        for n in &summary.notes {
            eprintln!("{n}");
        }
    }
    if !g.quiet {
        for r in &summary.recovered {
            eprintln!("recovered {r}");
        }
        if summary.requeued > 0 {
            eprintln!(
                "{} URIs in flight when the last run stopped were queued again",
                summary.requeued
            );
        }
        for f in &summary.files {
            eprintln!("wrote {}", f.display());
        }
        let c = &summary.counts;
        eprintln!(
            "{} URIs done ({} failed), {} pages, {} bytes; {} queued",
            c.done, c.failed, c.pages, c.bytes, c.queued
        );
        for l in lost_lines(&summary) {
            eprintln!("{l}");
        }
        match summary.ending {
            Ending::Finished => {}
            Ending::Interrupted | Ending::Budget => eprintln!(
                "stopped ({}); go on with: warchest crawl --resume {}",
                if summary.ending == Ending::Budget {
                    "budget reached"
                } else {
                    "interrupted"
                },
                dir.display()
            ),
        }
    }
    // A browser's exchanges not recorded: the scope's refusals are what
    // was asked; any other is a resource the archive lacks.
    let lost = summary
        .unrecorded
        .as_ref()
        .map_or(0, |u| super::capture::report_unrecorded(g, u, true));
    if crawl_wacz && summary.ending == Ending::Finished {
        let mut warcs: Vec<PathBuf> = std::fs::read_dir(dir.join("archive"))
            .with_context(|| dir.display().to_string())?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
            .collect();
        warcs.sort();
        let out = dir.join(format!("{wacz_prefix}.wacz"));
        let r = warchest_wacz::create_with(
            &warcs,
            &out,
            &warchest_wacz::CreateOptions {
                title: Some(format!("warchest crawl of {}", seeds_text)),
                description: None,
                // The crawl's own pages (not every HTML response: a frame's
                // or a fragment a script fetched are no pages).
                pages: Some(dir.join("pages/pages.jsonl")),
                // The crawl's own files: read as any command reads them.
                strict: g.strict,
            },
            &mut |f, w| g.warnings(&f.to_string_lossy(), w),
        )?;
        if !g.quiet {
            eprintln!(
                "wrote {}: {} archive files, {} index entries, {} pages",
                out.display(),
                r.archives,
                r.index_entries,
                r.pages
            );
        }
        crate::cmd::wacz::left_out(g, &out.to_string_lossy(), &r);
        crate::report::unparsed_heads(g, &r.unparsed_heads);
    }
    // 1: URIs failed (logged with negative codes), a browser's exchange
    // lost, changes of a damaged journal discarded, or stopped by a signal
    // before the end (resumable); a budget reached is an end as asked.
    Ok(
        if summary.counts.failed > 0
            || summary.ending == Ending::Interrupted
            || lost > 0
            || summary.journal_lost
        {
            Outcome::Problem
        } else {
            Outcome::Ok
        },
    )
}

/// The end lines of what a run may have missed, each when it happened:
/// links lost (each page named in crawl.log) and pages whose browser
/// tracker lost events.
fn lost_lines(summary: &warchest_crawl::engine::Summary) -> Vec<String> {
    let mut lines = Vec::new();
    if summary.links_stopped > 0 {
        lines.push(format!(
            "{} URIs' link extraction stopped before their end (`linksStopped:` in logs/crawl.log)",
            summary.links_stopped
        ));
    }
    if summary.links_dropped > 0 {
        lines.push(format!(
            "{} links left out over the extraction bounds (`dol:N` in logs/crawl.log)",
            summary.links_dropped
        ));
    }
    // Their resource and link lists may be short, as capture --browser
    // says at its end.
    let incomplete = summary
        .unrecorded
        .as_ref()
        .map_or(0, |u| u.incomplete_pages);
    if incomplete > 0 {
        lines.push(format!(
            "{incomplete} pages' trackers incomplete (events lost; `trackerIncomplete` in logs/crawl.log)"
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// The flags added with the frontier journal and keep-alive reach
    /// the configuration as the keys of the same meaning.
    #[test]
    fn keep_alive_and_checkpoint_flags_are_keys() {
        let cli = Cli::try_parse_from([
            "crawl",
            "http://127.0.0.1/",
            "--no-keep-alive",
            "--checkpoint-interval",
            "2.5",
        ])
        .unwrap();
        let t = flags(&cli.args).unwrap();
        assert_eq!(t.get("keep-alive"), Some(&toml::Value::Boolean(false)));
        assert_eq!(t.get("checkpoint-interval"), Some(&toml::Value::Float(2.5)));
        let c = CrawlConfig::from_toml(&toml::to_string(&t).unwrap()).unwrap();
        assert!(!c.politeness.keep_alive);
        assert_eq!(c.engine.checkpoint_interval, 2.5);
        let none = Cli::try_parse_from(["crawl", "http://127.0.0.1/"]).unwrap();
        let t = flags(&none.args).unwrap();
        assert!(!t.contains_key("keep-alive") && !t.contains_key("checkpoint-interval"));
    }

    /// The end lines count pages whose browser tracker lost events
    /// (`trackerIncomplete` on their crawl.log lines), beside the links
    /// lost; a run without any has none of these lines.
    #[test]
    fn the_end_lines_count_incomplete_trackers() {
        let mut s = warchest_crawl::engine::Summary {
            ending: Ending::Finished,
            counts: Default::default(),
            files: Vec::new(),
            requeued: 0,
            recovered: Vec::new(),
            notes: Vec::new(),
            journal_lost: false,
            indexed_as_written: 0,
            links_stopped: 0,
            links_dropped: 0,
            unrecorded: None,
        };
        assert!(lost_lines(&s).is_empty());
        // A browser's crawl whose trackers lost nothing.
        s.unrecorded = Some(Default::default());
        assert!(lost_lines(&s).is_empty());
        s.unrecorded.as_mut().unwrap().incomplete_pages = 2;
        s.links_stopped = 1;
        assert_eq!(
            lost_lines(&s),
            [
                "1 URIs' link extraction stopped before their end (`linksStopped:` in logs/crawl.log)",
                "2 pages' trackers incomplete (events lost; `trackerIncomplete` in logs/crawl.log)",
            ]
        );
    }
}
