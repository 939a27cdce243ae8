//! `warchest stats`: counts and bytes by record type, MIME type, HTTP
//! status and host.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use anyhow::Result;
use warchest_ops::stats::{Count, RecordFacts, Stats};

use crate::report::{Global, Outcome, file_error};
use crate::tools::{Jobs, open_archive, progress};

/// Count records and their block bytes, in total and by record type,
/// payload MIME type (the HTTP Content-Type for HTTP records), HTTP status
/// (responses) and target host, over all the files given.
///
/// With fewer files than threads, each file is read on the threads left
/// over (an uncompressed WARC file in chunks, a compressed one's members
/// decoded ahead); the counts are the same whatever -j.
///
/// Examples:
///   warchest stats crawl.warc.gz
///   warchest stats -j 8 --json *.warc.gz | jq .by_status
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[arg(required = true, value_name = "FILE", help = inputs_help!("Files to read"))]
    files: Vec<String>,
    /// One JSON object with every count.
    #[arg(long)]
    json: bool,
    /// Rows shown per table in the text output (the JSON has all).
    #[arg(long, default_value_t = 20, value_name = "N")]
    top: usize,
    #[command(flatten)]
    jobs: Jobs,
}

pub fn run(g: &Global, mut args: Args) -> Result<Outcome> {
    args.files = crate::input::expand(&args.files);
    let bar = progress(g, &args.files, 1);
    // Threads left for each file when fewer files than threads are read:
    // an uncompressed WARC file is then counted in chunks on them, a
    // compressed one's members decoded on them.
    let threads = args.jobs.threads();
    let file_threads = (threads / args.files.len().clamp(1, threads)).max(1);
    let per_file = args.jobs.map(&args.files, |name| {
        let mut s = Stats::new();
        let mut warnings = Vec::new();
        let res = if file_threads > 1 {
            count_on_threads(g, name, file_threads, &bar, &mut s, &mut warnings)
        } else {
            open_archive(g, name, &bar).and_then(|mut r| {
                let limits = r.as_warc().map(|w| w.options().limits).unwrap_or_default();
                let res = s.add_archive(&mut r, &limits);
                warnings = r.take_warnings();
                Ok(res?)
            })
        };
        (s, res, warnings)
    });
    bar.finish_and_clear();
    let mut total = Stats::new();
    let mut outcome = Outcome::Ok;
    for (name, (s, res, warnings)) in args.files.iter().zip(per_file) {
        g.warnings(name, &warnings);
        // Counts up to a failure are kept, and the failure reported.
        total.merge(&s);
        if let Err(e) = res {
            outcome = outcome.and(file_error(name, e.as_ref()));
        } else if s.records == 0 {
            outcome = outcome.and(file_error(name, &crate::input::NoRecords::new(name)));
        }
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &total)?;
        writeln!(out)?;
    } else {
        print_text(&mut out, &total, args.top)?;
    }
    if let Err(e) = out.flush() {
        return Ok(outcome.and(file_error("stdout", &e)));
    }
    Ok(outcome)
}

/// Counts the records of `name` on `threads` into `s` (the file counted
/// too), its warnings into `warnings`: an uncompressed WARC file in chunks,
/// merged as one read counts them ([`Stats::merges_as_read`]), anything
/// else opened with its members decoded on the threads. The bar moves by
/// each record's stored bytes.
fn count_on_threads(
    g: &Global,
    name: &str,
    threads: usize,
    bar: &indicatif::ProgressBar,
    s: &mut Stats,
    warnings: &mut Vec<warchest::Warning>,
) -> Result<()> {
    use warchest::chunks;
    let mut opts = g.reader_options(name);
    opts.decoder.threads = threads;
    let limits = opts.limits;
    s.files += 1;
    match crate::input::chunked(name, threads, &opts)? {
        crate::input::Chunked::Chunks(c) => {
            let tally = Counter { limits, bar };
            let noted = std::cell::RefCell::new(std::mem::take(warnings));
            let mut part = Stats::new();
            let (r, trace) = chunks::read_tally(
                &noted,
                name,
                c.input(name),
                &tally,
                &opts,
                c.plan,
                &mut io::sink(),
                &mut part,
            );
            crate::input::write_trace(&trace);
            *warnings = noted.into_inner();
            s.merge(&part);
            r.map_err(|e| anyhow::anyhow!(e))?;
        }
        crate::input::Chunked::No(opened) => crate::input::with_reader!(opened, reader => {
            let mut reader = reader;
            let res = (|| -> warchest::Result<()> {
                while let Some(rec) = reader.next_record()? {
                    let facts = RecordFacts::read(rec, &limits)?;
                    bar.inc(facts.stored_len.unwrap_or(0));
                    s.add(&facts);
                }
                Ok(())
            })();
            warnings.extend(reader.take_warnings());
            res?
        }),
    }
    Ok(())
}

/// `stats`' work on the records of a chunk: each counted.
struct Counter<'a> {
    limits: warchest::Limits,
    bar: &'a indicatif::ProgressBar,
}

impl warchest::chunks::Tally for Counter<'_> {
    type Sum = Stats;

    fn record<S: warchest::codec::Source + Send>(
        &self,
        rec: warchest::archive::Record<'_, S>,
        _: &mut Vec<u8>,
        sum: &mut Stats,
    ) -> Result<warchest::warc::RecordEnd, warchest::chunks::BoxError> {
        let facts = RecordFacts::read(rec, &self.limits)?;
        sum.add(&facts);
        self.bar.inc(facts.stored_len.unwrap_or(0));
        Ok(warchest::warc::RecordEnd {
            block_len: facts.block_bytes,
            stored_len: facts.stored_len,
            truncated: facts.truncated,
        })
    }

    fn add(&self, total: &mut Stats, part: Stats) {
        total.merge(&part);
    }

    fn continues(&self, total: &Stats, part: &Stats) -> bool {
        total.merges_as_read(part)
    }
}

fn print_text(out: &mut impl Write, s: &Stats, top: usize) -> io::Result<()> {
    writeln!(
        out,
        "{} records in {} files: {} block bytes, {} stored bytes{}",
        s.records,
        s.files,
        s.block_bytes,
        s.stored_bytes,
        if s.truncated > 0 {
            format!(", {} truncated", s.truncated)
        } else {
            String::new()
        }
    )?;
    for (title, table) in [
        ("type", &s.by_type),
        ("MIME type", &s.by_mime),
        ("HTTP status", &s.by_status),
        ("host", &s.by_host),
    ] {
        table_text(out, title, table, top)?;
    }
    Ok(())
}

fn table_text(
    out: &mut impl Write,
    title: &str,
    t: &BTreeMap<String, Count>,
    top: usize,
) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{:>10} {:>14} {:>12}  {title}",
        "records", "bytes", "average"
    )?;
    let mut rows: Vec<(&String, &Count)> = t.iter().collect();
    // Most records first; ties by name, so the output is stable.
    rows.sort_by(|a, b| b.1.records.cmp(&a.1.records).then(a.0.cmp(b.0)));
    for (k, c) in rows.iter().take(top) {
        let avg = c.bytes.checked_div(c.records).unwrap_or(0);
        writeln!(out, "{:>10} {:>14} {:>12}  {k}", c.records, c.bytes, avg)?;
    }
    if rows.len() > top {
        let rest: u64 = rows[top..].iter().map(|r| r.1.records).sum();
        writeln!(
            out,
            "{:>10} {:>14} {:>12}  ({} more)",
            rest,
            "",
            "",
            rows.len() - top
        )?;
    }
    Ok(())
}
