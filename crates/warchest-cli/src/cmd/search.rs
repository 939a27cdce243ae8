//! `warchest search-index` and `warchest search`: full-text search over
//! archives (the `warchest-search` crate).

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use warchest_search::{
    AddStats, Added, IndexedFile, SearchIndex, SearchRequest, SearchResults, WriterOptions,
};

use crate::report::{Global, Outcome, file_error};
use crate::tools::{Jobs, open_archive, parse_size, progress};

/// Build or extend a full-text search index of archives.
///
/// One document per response and resource record (text and title of
/// HTML and plain-text pages, URL, host, SURT, date, media type, status,
/// language, file and offset). Files already in the index are skipped;
/// the index is searched with `warchest search` or `serve --search`.
///
/// Examples:
///   warchest search-index crawl/*.warc.gz -o crawl.idx
///   warchest search-index new.warc.gz -o crawl.idx     (adds to it)
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct IndexArgs {
    /// Archives to index (WARC, ARC, Web InfoMall, WACZ; paths or URLs).
    #[arg(required = true, value_name = "ARCHIVE")]
    files: Vec<String>,
    /// The index directory (created when missing; extended when it holds
    /// an index).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// Memory for the index's buffers, all threads together (at least
    /// 16 MiB a thread).
    #[arg(long, default_value = "256MiB", value_parser = parse_size, value_name = "SIZE")]
    memory: u64,
    /// Print the counts as JSON on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    jobs: Jobs,
}

/// Search a full-text index made by `warchest search-index`.
///
/// Hits with a snippet (the words matched in brackets), then the facets
/// (host, year, media type, language) and the captures per month, all
/// counted over every hit, not just the page shown.
///
/// The query: words (all must match), "a phrase", -word, a OR b,
/// field:value (title:, url:, host:, surt:, mime:, language:, status:,
/// year:), date:[2020-01-01T00:00:00Z TO *]; * matches everything, and
/// host:* any value (also mime, language, file, year, status, date).
///
/// Examples:
///   warchest search crawl.idx 'climate "sea level"'
///   warchest search crawl.idx 'election -poll' --host www.bbc.co.uk --page 2
///   warchest search crawl.idx '*' --year 2014 --json | jq .facets.mime
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct SearchArgs {
    /// The index directory.
    #[arg(value_name = "INDEX")]
    index: PathBuf,
    /// The query.
    #[arg(value_name = "QUERY")]
    query: String,
    /// Page of hits, from 1.
    #[arg(long, default_value_t = 1, value_name = "N")]
    page: usize,
    /// Hits per page (at most 100).
    #[arg(long, default_value_t = 10, value_name = "N")]
    per_page: usize,
    /// Only hits of this host.
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// Only hits captured in this year.
    #[arg(long, value_name = "YEAR")]
    year: Option<u64>,
    /// Only hits of this media type (text/html...).
    #[arg(long, value_name = "TYPE")]
    mime: Option<String>,
    /// Only hits in this language (ISO 639-3: eng, deu...).
    #[arg(long, value_name = "CODE")]
    language: Option<String>,
    /// The results as one JSON object.
    #[arg(long)]
    json: bool,
}

/// The name documents give a file: its base name (a WACZ member's own).
fn doc_name(name: &str) -> String {
    let tail = name.rsplit_once('#').map_or(name, |(_, m)| m);
    let tail = tail.split(['?', '#']).next().unwrap_or(tail);
    tail.rsplit(['/', '\\'])
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(tail)
        .to_string()
}

/// The identity of an input: its size and the digest of its head.
fn identify(name: &str) -> Result<IndexedFile> {
    let path = warchest_wacz::split_at_wacz(name).map_or(name, |(w, _)| w);
    let size = if crate::remote::is_remote(name) {
        crate::remote::size(name)?
    } else {
        let meta = std::fs::metadata(path);
        // The caller names `name`: the WACZ is named only when it is not.
        if path == name {
            meta?.len()
        } else {
            meta.with_context(|| path.to_string())?.len()
        }
    };
    let stream = crate::input::open_stream(name)?;
    Ok(IndexedFile::identify(&doc_name(name), size, stream)?)
}

pub fn run_index(g: &Global, mut args: IndexArgs) -> Result<Outcome> {
    args.files = crate::input::expand(&args.files);
    if args.files.iter().any(|f| f == "-") {
        anyhow::bail!(
            "search-index reads files, not standard input: a file in the index is known by its name and contents"
        );
    }
    // An index this run makes, and removes again when no input could be
    // indexed, as `index -o` leaves no index of nothing.
    let made = !args.output.exists();
    let index = SearchIndex::create_or_open(&args.output)?;
    let opts = WriterOptions {
        threads: args.jobs.threads(),
        memory: usize::try_from(args.memory).unwrap_or(usize::MAX),
    };
    let writer = index.writer(&opts)?;
    let bar = progress(g, &args.files, 1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .build()?;
    let open = |name: &str| -> Result<_, warchest_search::Error> {
        let file = identify(name).map_err(|e| {
            warchest_search::Error::Archive(warchest::Error::from(io::Error::other(format!(
                "{e:#}"
            ))))
        })?;
        let r = open_archive(g, name, &bar).map_err(|e| {
            warchest_search::Error::Archive(warchest::Error::from(io::Error::other(format!(
                "{e:#}"
            ))))
        })?;
        Ok((r, file))
    };
    let results = pool.install(|| warchest_search::add_archives(&writer, &args.files, open));
    bar.finish_and_clear();
    let mut total = AddStats::default();
    let mut outcome = Outcome::Ok;
    let (mut indexed, mut skipped) = (0u64, 0u64);
    for (name, o) in args.files.iter().zip(&results) {
        let stats = &o.stats;
        g.warnings(name, &o.warnings);
        total.merge(stats);
        match &o.result {
            Ok(Added::Indexed) if stats.records == 0 => {
                outcome = outcome.and(file_error(name, &crate::input::NoRecords::new(name)));
            }
            Ok(Added::Indexed) => indexed += 1,
            Ok(Added::AlreadyIndexed) => {
                skipped += 1;
                if !g.quiet {
                    eprintln!("warchest: {name}: already in the index, skipped");
                }
            }
            Err(e) => {
                outcome = outcome.and(file_error(name, e));
                if stats.dropped > 0 {
                    eprintln!(
                        "warchest: {name}: its {} documents read before the error were taken out of the index (a file is indexed whole or not at all)",
                        stats.dropped
                    );
                }
            }
        }
    }
    let files = writer.commit()?;
    if made && indexed == 0 && outcome == Outcome::Failed {
        drop(index);
        std::fs::remove_dir_all(&args.output)
            .with_context(|| format!("remove {}", args.output.display()))?;
        eprintln!(
            "warchest: {}: not made, as no input could be indexed",
            args.output.display()
        );
        return Ok(outcome);
    }
    crate::report::payload_fallbacks(g, &total.fallbacks);
    if args.json {
        let v = serde_json::json!({
            "index": args.output,
            "files_indexed": indexed,
            "files_skipped": skipped,
            "files_in_index": files.len(),
            "counts": total,
        });
        println!("{v}");
    }
    if !g.quiet {
        eprintln!(
            "warchest: {} documents ({} with text) from {} records of {indexed} file(s) into {}; \
             not indexed: {} revisits, {} without URL, {} other records; {} cut at 8 MiB of payload or 512 KiB of text; \
             {skipped} file(s) already indexed; {} file(s) in the index",
            total.documents,
            total.with_text,
            total.records,
            args.output.display(),
            total.revisits,
            total.no_url,
            total.other,
            total.cut,
            files.len(),
        );
    }
    if total.urls_cut > 0 && !g.quiet {
        let (what, link) = if total.urls_cut == 1 {
            ("document", "its replay link does not lead to it")
        } else {
            ("documents", "their replay links do not lead to them")
        };
        eprintln!(
            "warchest: {} {what} with a URL longer than {} KiB, indexed cut there ({link})",
            total.urls_cut,
            warchest_search::doc::MAX_URL >> 10
        );
    }
    Ok(outcome)
}

pub fn run_search(_g: &Global, args: SearchArgs) -> Result<Outcome> {
    let index = SearchIndex::open(&args.index)?;
    let req = SearchRequest {
        query: args.query,
        page: args.page,
        per_page: args.per_page,
        host: args.host,
        year: args.year,
        mime: args.mime,
        language: args.language,
    };
    let found = index.search(&req)?;
    let stdout = io::stdout();
    let tty = stdout.is_terminal();
    let mut out = BufWriter::new(stdout.lock());
    let res = if args.json {
        serde_json::to_writer(&mut out, &found)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        print_results(&mut out, &found, tty)
    };
    if let Err(e) = res.and_then(|()| out.flush()) {
        return Ok(file_error("stdout", &e));
    }
    Ok(Outcome::Ok)
}

fn print_results(out: &mut impl Write, r: &SearchResults, tty: bool) -> io::Result<()> {
    let q = &r.request;
    writeln!(
        out,
        "{} hits for {:?}{}",
        r.total,
        q.query,
        if r.total > 0 {
            format!(" (page {} of {})", q.page, r.pages.max(1))
        } else {
            String::new()
        }
    )?;
    let (on, off) = if tty {
        ("\x1b[1m", "\x1b[0m")
    } else {
        ("[", "]")
    };
    for (i, h) in r.hits.iter().enumerate() {
        writeln!(out)?;
        let n = (q.page - 1) * q.per_page + i + 1;
        let title = if h.title.is_empty() {
            "(no title)"
        } else {
            &h.title
        };
        writeln!(out, "{n}. {}", one_line(title))?;
        writeln!(
            out,
            "   {}  {}  {}{}{}",
            one_line(&h.url),
            warchest_search::web::pretty_timestamp(&h.timestamp),
            h.mime,
            h.status.map(|s| format!(" {s}")).unwrap_or_default(),
            h.language
                .as_ref()
                .map(|l| format!(" {l}"))
                .unwrap_or_default(),
        )?;
        let s = &h.snippet;
        if !s.text.is_empty() {
            let mut line = String::new();
            let mut at = 0;
            for &(a, b) in &s.highlights {
                if a < at
                    || b > s.text.len()
                    || !s.text.is_char_boundary(a)
                    || !s.text.is_char_boundary(b)
                {
                    continue;
                }
                line.push_str(&one_line(&s.text[at..a]));
                line.push_str(on);
                line.push_str(&one_line(&s.text[a..b]));
                line.push_str(off);
                at = b;
            }
            line.push_str(&one_line(&s.text[at..]));
            writeln!(out, "   {line}")?;
        }
        writeln!(out, "   {} @ {}", h.file, h.offset)?;
    }
    if r.total == 0 {
        return Ok(());
    }
    writeln!(out)?;
    for (name, values) in [
        ("hosts", &r.facets.host),
        ("years", &r.facets.year),
        ("types", &r.facets.mime),
        ("languages", &r.facets.language),
    ] {
        let list: Vec<String> = values
            .iter()
            .map(|v| format!("{} {}", v.value, v.count))
            .collect();
        writeln!(
            out,
            "{name:>10}: {}",
            if list.is_empty() {
                "-".to_string()
            } else {
                list.join(", ")
            }
        )?;
    }
    let most = r.histogram_max();
    writeln!(out)?;
    for b in &r.histogram {
        let width = (b.count * 40).div_ceil(most) as usize;
        writeln!(out, "   {} {:>8} {}", b.month, b.count, "#".repeat(width))?;
    }
    Ok(())
}

/// `s` on one line: control characters (an archived page's escape
/// sequences among them) as spaces.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
