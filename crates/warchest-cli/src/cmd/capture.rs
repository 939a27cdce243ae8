//! `warchest capture` and `warchest proxy`: fetch into WARC files, as a
//! crawler of a URL list or as a recording proxy (see docs/capture.md).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use warchest::warc::Version;
use warchest::write::CaptureLimits;
use warchest_capture::{self as capture, CaptureOptions, Capturer, Event, dns, proxy, tls};
use warchest_ops::dedupe::DigestIndex;

use super::write_flags::{OutputArgs, nonzero_size};
use crate::report::{Global, Outcome};

/// Output flags of capture and proxy (`--max-size` is the body limit
/// here, so the file size is `--warc-size`).
#[derive(clap::Args, Debug, Clone)]
pub struct CaptureOutput {
    /// Output directory.
    #[arg(short, long)]
    output: PathBuf,
    /// File name prefix (Annex B `Prefix`).
    #[arg(long)]
    prefix: Option<String>,
    /// Start a new file before one would pass this size (default 1GB).
    #[arg(long, value_parser = nonzero_size, default_value = "1GB")]
    warc_size: u64,
    /// Compression of each record: gzip, zstd, lz4 or none.
    #[arg(long, default_value = "gzip")]
    compress: String,
    /// Host name in file names and warcinfo (default this machine's).
    #[arg(long)]
    crawlhost: Option<String>,
    /// Warcinfo `operator` field.
    #[arg(long)]
    operator: Option<String>,
    /// Warcinfo `isPartOf` field.
    #[arg(long)]
    is_part_of: Option<String>,
    /// Warcinfo `description` field.
    #[arg(long)]
    description: Option<String>,
}

/// Network flags of capture and proxy.
#[derive(clap::Args, Debug, Clone)]
pub struct NetArgs {
    /// Keep at most this much of each response body (bytes, or 10MB...);
    /// the record gets WARC-Truncated: length.
    #[arg(long, value_parser = nonzero_size)]
    max_size: Option<u64>,
    /// Stop reading a response body after this many seconds; the record
    /// gets WARC-Truncated: time.
    #[arg(long)]
    max_time: Option<f64>,
    /// Connect and read timeout, seconds. The proxy also gives a client
    /// this long (20 s at most) to send a request head, and waits this
    /// long for exchanges under way when it stops.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
    /// Accept any server certificate (expired, self-signed, wrong name).
    #[arg(long)]
    insecure: bool,
    /// Also trust the certificates in this PEM file (repeatable).
    #[arg(long = "ca-cert")]
    ca_certs: Vec<PathBuf>,
    /// DNS server to ask (IP or IP:PORT); default the first nameserver of
    /// /etc/resolv.conf.
    #[arg(long)]
    dns_server: Option<String>,
    /// Resolve HOST to ADDR without a lookup: HOST=ADDR\[,ADDR\] (repeatable).
    #[arg(long)]
    resolve: Vec<String>,
    /// Dedupe index (the database of `warchest dedupe`): a payload already
    /// archived is written as an identical-payload-digest revisit.
    #[arg(long)]
    dedupe_index: Option<PathBuf>,
}

impl NetArgs {
    fn seconds(s: f64, what: &str) -> Result<Duration> {
        Duration::try_from_secs_f64(s)
            .ok()
            .filter(|d| !d.is_zero())
            .with_context(|| format!("{what}: not a positive number of seconds"))
    }

    fn limits(&self) -> Result<CaptureLimits> {
        Ok(CaptureLimits {
            max_len: self.max_size,
            max_time: self
                .max_time
                .map(|t| Self::seconds(t, "--max-time"))
                .transpose()?,
        })
    }

    fn resolver(&self) -> Result<dns::ResolverOptions> {
        let server = match &self.dns_server {
            None => None,
            Some(s) => Some(match s.parse::<SocketAddr>() {
                Ok(a) => a,
                Err(_) => SocketAddr::new(
                    s.parse::<IpAddr>()
                        .with_context(|| format!("--dns-server {s}: not an address"))?,
                    53,
                ),
            }),
        };
        let mut overrides = HashMap::new();
        for r in &self.resolve {
            let (host, addrs) = r
                .split_once('=')
                .with_context(|| format!("--resolve {r}: not HOST=ADDR"))?;
            let addrs = addrs
                .split(',')
                .map(|a| a.trim().parse::<IpAddr>())
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| format!("--resolve {r}: bad address"))?;
            overrides.insert(host.trim().to_ascii_lowercase(), addrs);
        }
        Ok(dns::ResolverOptions {
            server,
            overrides,
            timeout: None,
            loopback_only: false,
        })
    }
}

impl CaptureOutput {
    fn rotating(
        &self,
        prefix: &str,
        description: &str,
    ) -> Result<warchest::write::RotatingOptions> {
        let o = OutputArgs {
            prefix: self.prefix.clone(),
            max_size: self.warc_size,
            compress: self.compress.clone(),
            crawlhost: self.crawlhost.clone(),
            operator: self.operator.clone(),
            is_part_of: self.is_part_of.clone(),
            description: self.description.clone(),
        };
        o.rotating(prefix, description, Version::V1_1)
    }
}

/// Fetch URLs into WARC files: each HTTP(S) exchange as a response, a
/// request and a metadata record (redirects followed, each hop recorded),
/// each host lookup as a `dns:` record, each ftp:// file as a resource
/// record with its control conversation. robots.txt is obeyed unless
/// --ignore-robots (RFC 9309): a 4xx allows everything; a 5xx, a 429 or
/// more than 5 redirects skips the origin's URLs (robots-disallowed); no
/// answer at all fails them (exit 1). Progress on stderr, one line per
/// fetch.
///
/// Example: `warchest capture https://example.com/ -o crawl/ -j 4 --delay 1`
#[derive(clap::Args, Debug)]
pub struct CaptureArgs {
    /// URLs (http, https, ftp).
    urls: Vec<String>,
    /// A file of URLs, one a line (`#` starts a comment); `-` for stdin.
    #[arg(short, long)]
    input: Option<String>,
    #[command(flatten)]
    out: CaptureOutput,
    #[command(flatten)]
    net: NetArgs,
    /// Redirects followed from each URL.
    #[arg(long, default_value_t = 10)]
    max_redirects: u32,
    /// With --dedupe-index: ask for URLs captured before with
    /// If-None-Match / If-Modified-Since; a 304 is written as a
    /// server-not-modified revisit.
    #[arg(long)]
    conditional: bool,
    /// Do not fetch or obey robots.txt.
    #[arg(long)]
    ignore_robots: bool,
    /// Seconds to wait between two requests to one host.
    #[arg(long, default_value_t = 0.0)]
    delay: f64,
    /// Parallel connections.
    #[arg(short, long, default_value_t = 1)]
    jobs: usize,
    /// The User-Agent header (default names warchest and its version).
    #[arg(long)]
    user_agent: Option<String>,
    /// Each fetch as a JSON line on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    browser: super::browser::BrowserArgs,
}

fn read_urls(args: &CaptureArgs) -> Result<Vec<String>> {
    let mut urls = args.urls.clone();
    if let Some(f) = &args.input {
        let r: Box<dyn BufRead> = if f == "-" {
            Box::new(std::io::stdin().lock())
        } else {
            Box::new(std::io::BufReader::new(
                std::fs::File::open(f).with_context(|| f.clone())?,
            ))
        };
        for line in r.lines() {
            let line = line.with_context(|| f.clone())?;
            let t = line.split('#').next().unwrap_or("").trim();
            if !t.is_empty() {
                urls.push(t.to_string());
            }
        }
    }
    if urls.is_empty() {
        bail!("no URL given (arguments or --input)");
    }
    Ok(urls)
}

pub fn run_capture(g: &Global, args: CaptureArgs) -> Result<Outcome> {
    let urls = read_urls(&args)?;
    if args.browser.browser {
        return run_capture_browser(g, args, urls);
    }
    let mut opts = CaptureOptions {
        output: args
            .out
            .rotating("capture", "captured by warchest capture")?,
        limits: args.net.limits()?,
        timeout: NetArgs::seconds(args.net.timeout, "--timeout")?,
        max_redirects: args.max_redirects,
        insecure: args.net.insecure,
        ca_certs: args.net.ca_certs.clone(),
        resolver: args.net.resolver()?,
        dedupe_index: args.net.dedupe_index.clone(),
        conditional: args.conditional,
        robots: !args.ignore_robots,
        delay: Duration::try_from_secs_f64(args.delay).context("--delay")?,
        jobs: args.jobs.max(1),
        ..CaptureOptions::default()
    };
    if let Some(ua) = &args.user_agent {
        opts.user_agent = ua.clone();
    }
    // Ctrl-C stops after the fetches under way, and the files are closed.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("signal handler")?;
    }
    opts.stop = Some(stop);
    let capturer = Capturer::new(&args.out.output, opts)?;
    let quiet = g.quiet;
    let json = args.json;
    let stdout = std::sync::Mutex::new(std::io::stdout());
    let progress = move |e: &Event| {
        if json && let Ok(mut o) = stdout.lock() {
            crate::report::json_line(&mut *o, e);
        }
        if quiet {
            return;
        }
        match (&e.error, e.status) {
            (Some(err), _) => eprintln!("error {} {err}", e.url),
            (None, Some(s)) => eprintln!(
                "{s} {} {} {} ms{}{}",
                e.url,
                e.bytes,
                e.ms,
                if e.outcome == "revisit" {
                    " revisit"
                } else {
                    ""
                },
                e.truncated
                    .as_ref()
                    .map(|t| format!(" truncated: {t}"))
                    .unwrap_or_default(),
            ),
            (None, None) => eprintln!("{} {}", e.outcome, e.url),
        }
    };
    let summary = match capturer.run(urls, &progress) {
        Ok(s) => s,
        Err(f) => {
            // The write error ends the run (exit 2); the files written and
            // what the run did are said as at its end, then what it lost,
            // as a stop's is.
            if !quiet {
                print_summary(&f.summary);
            }
            for u in &f.unwritten {
                eprintln!("not written: {u}");
            }
            report_not_fetched(g, &f.summary, "the output failed");
            if let Some(e) = &f.close_error {
                eprintln!("warchest: closing the output failed too: {e}");
            }
            return Err(anyhow::Error::new(f.error));
        }
    };
    if !quiet {
        print_summary(&summary);
    }
    // A stop leaves the queue behind: those URLs are lost to this run, so
    // they are named and the run is not a success (as crawl's interruption).
    report_not_fetched(g, &summary, "interrupted");
    Ok(if summary.failed > 0 || summary.not_fetched > 0 {
        Outcome::Problem
    } else {
        Outcome::Ok
    })
}

/// The files a run wrote and its counts, on stderr.
fn print_summary(summary: &capture::Summary) {
    for f in &summary.files {
        eprintln!("wrote {}", f.display());
    }
    eprintln!(
        "{} URLs: {} fetched, {} failed, {} disallowed by robots.txt; {} records ({} warcinfo, {} responses, {} revisits, {} dns, {} ftp, {} truncated)",
        summary.urls,
        summary.fetched,
        summary.failed,
        summary.disallowed,
        // Every record written: each file's warcinfo too.
        summary.records.records + summary.files.len() as u64,
        summary.files.len(),
        summary.records.responses,
        summary.records.revisits,
        summary.records.dns,
        summary.records.ftp,
        summary.records.truncated,
    );
}

/// Says the URLs a run never attempted, `why` (a stop, a write error):
/// with `-w` each of the first named, then `K URLs not fetched (why)`,
/// also under `-q`.
fn report_not_fetched(g: &Global, summary: &capture::Summary, why: &str) {
    if summary.not_fetched == 0 {
        return;
    }
    if g.show_warnings {
        for u in &summary.not_fetched_urls {
            eprintln!("not fetched: {u}");
        }
        let more = summary.not_fetched - summary.not_fetched_urls.len() as u64;
        if more > 0 {
            eprintln!("... and {more} more URLs not fetched");
        }
    }
    eprintln!(
        "{} URL{} not fetched ({why})",
        summary.not_fetched,
        if summary.not_fetched == 1 { "" } else { "s" },
    );
}

/// The recorder and upstream fetch settings of a recording proxy (`proxy`
/// and `capture --browser`): the output, the dedupe index, TLS, limits.
fn recording(
    out: &CaptureOutput,
    net: &NetArgs,
    prefix: &str,
    description: &str,
    limits: CaptureLimits,
) -> Result<(Arc<capture::Recorder>, capture::client::FetchOptions)> {
    let index = net
        .dedupe_index
        .as_ref()
        .map(DigestIndex::open)
        .transpose()?;
    let rotating = out.rotating(prefix, description)?;
    let digest = rotating
        .writer
        .digest
        .unwrap_or(warchest::digest::Algorithm::Sha1);
    let spool_threshold = capture::SPOOL_IN_MEMORY.min(rotating.writer.spool_threshold);
    let recorder = Arc::new(capture::Recorder::new(&out.output, rotating, index)?);
    let roots: Vec<&std::path::Path> = net.ca_certs.iter().map(|p| p.as_path()).collect();
    let fetch = capture::client::FetchOptions {
        tls: tls::client_config(net.insecure, &roots)?,
        timeout: NetArgs::seconds(net.timeout, "--timeout")?,
        read: capture::client::ReadOptions {
            limits,
            digest,
            spool_threshold,
            max_head: warchest::Limits::default().max_http_head,
        },
    };
    Ok((recorder, fetch))
}

/// `capture --browser`: the pages in Chromium through an in-process
/// recording proxy with a CA of its own, trusted by that browser only.
fn run_capture_browser(g: &Global, args: CaptureArgs, urls: Vec<String>) -> Result<Outcome> {
    let ca_dir = tempfile::tempdir().context("temporary directory")?;
    let ca = Arc::new(tls::CertAuthority::load_or_create(
        &ca_dir.path().join("ca.pem"),
    )?);
    // A response the page is still receiving when its time is up is
    // recorded as truncated (time) rather than left open.
    let mut limits = args.net.limits()?;
    if limits.max_time.is_none() {
        limits.max_time = Some(args.browser.options()?.page_timeout);
    }
    let (recorder, fetch) = recording(
        &args.out,
        &args.net,
        "capture",
        "captured by warchest capture --browser",
        limits,
    )?;
    let opts = proxy::ProxyOptions {
        fetch,
        ca,
        resolver: args.net.resolver()?,
        // The browser reaches what `capture` reaches: the proxy listens on
        // loopback for our own browser only, so it is no open relay.
        access: proxy::Access {
            credentials: None,
            allow: vec!["0.0.0.0/0".parse()?, "::/0".parse()?],
            deny: Vec::new(),
            filter: None,
        },
    };
    let (outcome, _files) =
        super::browser::run_capture(g, urls, &args.browser, recorder, opts, args.json)?;
    Ok(outcome)
}

/// A recording HTTP proxy, like warcprox: everything passing through is
/// forwarded and written as response, request and metadata records. HTTPS
/// by CONNECT, with a certificate per host signed by the proxy's CA (made
/// in --ca on first use; clients must trust it). Prints the address it
/// listens on; stops on SIGINT or SIGTERM, closing its files.
///
/// Example: `warchest proxy --listen 127.0.0.1:8000 -o crawl/`, then
/// `curl --proxy http://127.0.0.1:8000 --cacert warchest-proxy-ca.pem https://example.com/`
#[derive(clap::Args, Debug)]
pub struct ProxyArgs {
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8000")]
    listen: SocketAddr,
    /// The CA certificate and key (PEM), created when missing.
    #[arg(long, default_value = "warchest-proxy-ca.pem")]
    ca: PathBuf,
    /// Listen on an address other than loopback. Without it such an
    /// address is refused: a proxy reachable from the network relays for
    /// anyone who reaches it (use --auth with it).
    #[arg(long)]
    public: bool,
    /// Require these credentials (Basic) in every request's
    /// Proxy-Authorization: USER:PASSWORD.
    #[arg(long, value_name = "USER:PASSWORD")]
    auth: Option<String>,
    /// Allow destinations in this range (CIDR, e.g. 127.0.0.0/8 or
    /// 10.1.0.0/16) although it is loopback, private or link-local, which
    /// are denied by default. Repeatable.
    #[arg(long, value_name = "CIDR")]
    allow_dest: Vec<ipnet::IpNet>,
    /// Deny destinations in this range (CIDR) too. Repeatable.
    #[arg(long, value_name = "CIDR")]
    deny_dest: Vec<ipnet::IpNet>,
    #[command(flatten)]
    out: CaptureOutput,
    #[command(flatten)]
    net: NetArgs,
}

pub fn run_proxy(g: &Global, args: ProxyArgs) -> Result<Outcome> {
    if !args.listen.ip().is_loopback() && !args.public {
        bail!(
            "refusing to listen on {}: a proxy reachable from the network relays for anyone \
             who reaches it; pass --public (and --auth USER:PASSWORD) to do so",
            args.listen
        );
    }
    let credentials = match &args.auth {
        Some(a) => match a.split_once(':') {
            Some((u, p)) if !u.is_empty() => Some((u.to_string(), p.to_string())),
            _ => bail!("--auth takes USER:PASSWORD"),
        },
        None => None,
    };
    if args.public && credentials.is_none() && !g.quiet {
        eprintln!(
            "warning: --public without --auth: anyone who reaches {} may use the proxy",
            args.listen
        );
    }
    let ca = Arc::new(
        tls::CertAuthority::load_or_create(&args.ca)
            .with_context(|| args.ca.display().to_string())?,
    );
    let (recorder, fetch) = recording(
        &args.out,
        &args.net,
        "proxy",
        "recorded by warchest proxy",
        args.net.limits()?,
    )?;
    let opts = proxy::ProxyOptions {
        fetch,
        ca,
        resolver: args.net.resolver()?,
        access: proxy::Access {
            credentials,
            allow: args.allow_dest.clone(),
            deny: args.deny_dest.clone(),
            filter: None,
        },
    };
    let p = proxy::Proxy::bind(args.listen, recorder.clone(), opts)?;
    let unrecorded = p.unrecorded();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("signal handler")?;
    }
    let addr = p.local_addr()?;
    println!("listening on {addr}");
    std::io::stdout().flush()?;
    if !g.quiet {
        eprintln!(
            "recording to {}; CA certificate in {}",
            args.out.output.display(),
            args.ca.display()
        );
    }
    let served = p.serve(&stop);
    let stats = recorder.stats();
    let files = recorder.finish()?;
    served?;
    if !g.quiet {
        for f in &files {
            eprintln!("wrote {}", f.display());
        }
        eprintln!(
            "{} records ({} warcinfo, {} responses, {} revisits, {} dns)",
            stats.records + files.len() as u64,
            files.len(),
            stats.responses,
            stats.revisits,
            stats.dns
        );
    }
    // The proxy's clients were each answered why (a 502, a 403); the
    // requests were theirs, not the command's, so the run is not failed
    // for them (docs/capture.md, "Exchanges not recorded").
    report_unrecorded(g, &unrecorded.summary(), false);
    Ok(Outcome::Ok)
}

/// Prints what a recording proxy did not record: the count line by reason
/// (also under `-q` when an exchange was lost), and with `-w` each
/// exchange, the first [`proxy::NAMED_UNRECORDED`] by name. With
/// `pages` (a browser's proxy) the line says how many of the lost were
/// the pages'. Returns the exchanges lost: with `pages`, those of the
/// pages (or of no known URL, or all unclaimed ones once a page's
/// tracker lost events); without, all but a filter's refusals. Either
/// way, losses a later exchange of their URL superseded are counted on
/// the line but not returned.
pub fn report_unrecorded(g: &Global, s: &proxy::UnrecordedSummary, pages: bool) -> u64 {
    let lost = if pages {
        s.lost_by_pages()
    } else {
        s.lost().saturating_sub(s.superseded)
    };
    if let Some(line) = s.line()
        && (!g.quiet || lost > 0)
    {
        if g.show_warnings {
            for l in s.listing() {
                eprintln!("{l}");
            }
        }
        eprintln!("{}", unrecorded_line(&line, s, pages));
    }
    lost
}

/// [`report_unrecorded`]'s line: the count by reason, then, when some
/// were lost, whose (with `pages`) and how many a later recording of
/// their URL superseded.
fn unrecorded_line(line: &str, s: &proxy::UnrecordedSummary, pages: bool) -> String {
    let mut parts = Vec::new();
    if pages && s.lost() > 0 {
        let mut theirs = format!("{} of the pages", s.lost_by_pages());
        if s.incomplete_pages > 0 {
            theirs.push_str(&format!(
                " (all not claimed: {} pages' trackers incomplete)",
                s.incomplete_pages
            ));
        }
        parts.push(theirs);
        parts.push(format!(
            "{} of the browser's own requests",
            s.browsers_own()
        ));
    }
    if s.superseded > 0 {
        parts.push(format!("{} recorded later", s.superseded));
    }
    if parts.is_empty() {
        line.to_string()
    } else {
        format!("{line}; {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(lost: u64) -> proxy::UnrecordedSummary {
        proxy::UnrecordedSummary {
            counts: vec![(proxy::NotRecorded::Connect, lost)],
            ..Default::default()
        }
    }

    /// The end line says whose the losses were, that an incomplete
    /// tracker makes the unclaimed ones the pages', and how many a later
    /// recording superseded (which fail nothing).
    #[test]
    fn the_unrecorded_line_says_whose_and_what_was_recorded_later() {
        let mut s = summary(4);
        s.claimed = 1;
        s.superseded = 1;
        assert_eq!(
            unrecorded_line("L", &s, true),
            "L; 1 of the pages, 2 of the browser's own requests, 1 recorded later"
        );
        assert_eq!(unrecorded_line("L", &s, false), "L; 1 recorded later");
        s.incomplete_pages = 2;
        assert_eq!(
            unrecorded_line("L", &s, true),
            "L; 3 of the pages (all not claimed: 2 pages' trackers incomplete), \
             0 of the browser's own requests, 1 recorded later"
        );
        let g = Global {
            strict: false,
            show_warnings: false,
            quiet: true,
        };
        assert_eq!(report_unrecorded(&g, &s, true), 3);
        assert_eq!(report_unrecorded(&g, &s, false), 3);
        assert_eq!(unrecorded_line("L", &summary(0), true), "L");
    }
}
