//! `warchest stats`: counts and bytes by record type, MIME type, HTTP
//! status and host.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use anyhow::Result;
use warchest_ops::stats::{Count, Stats};

use crate::report::{Global, Outcome, file_error};
use crate::tools::{Jobs, open_archive, progress};

/// Count records and their block bytes, in total and by record type,
/// payload MIME type (the HTTP Content-Type for HTTP records), HTTP status
/// (responses) and target host, over all the files given.
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
    let per_file = args.jobs.map(&args.files, |name| {
        let mut s = Stats::new();
        let mut warnings = Vec::new();
        let res = open_archive(g, name, &bar).and_then(|mut r| {
            let limits = r.as_warc().map(|w| w.options().limits).unwrap_or_default();
            let res = s.add_archive(&mut r, &limits);
            warnings = r.take_warnings();
            Ok(res?)
        });
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
