//! `warchest check`: verify every digest.

use std::io::{self, Write};

use anyhow::Result;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

use warchest::archive::Record;
use warchest::check::{DigestStatus, RecordCheck, check_record};
use warchest::chunks::{self, Progress, Tally};
use warchest::codec::Source;
use warchest::warc::RecordEnd;

use crate::input::{self, Chunked};
use crate::report::{Global, Outcome, file_error};

/// Verify the block and payload digests of every record; print each problem
/// and a summary. Exits 1 for anything that is not a clean file: a wrong
/// digest, a truncated record, or any lenient-reading recovery (trailing
/// garbage, skipped bytes or frames, a Content-Length past the end; -w
/// lists them). Exits 2 for a file in which no record is found.
///
/// A payload digest computed over the raw chunked bytes (as Wget, wpull and
/// older Heritrix wrote them) counts as valid and is counted apart.
///
/// Example: `warchest check crawl.warc.gz` or `warchest check --json *.warc.gz`
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(required = true, help = inputs_help!("Files to read"))]
    files: Vec<String>,
    /// One JSON object per problem record and one per file summary.
    #[arg(long)]
    json: bool,
    /// Also list records whose digests are fine.
    #[arg(short, long)]
    verbose: bool,
    /// Read each file on N threads (default: one per core): a compressed
    /// file's members are decoded on them, an uncompressed WARC file of
    /// 32 MiB or more is cut into chunks checked on them. The output is
    /// the same whatever N is.
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    jobs: Option<usize>,
}

#[derive(Debug, Default, Serialize)]
struct Summary {
    records: u64,
    block_valid: u64,
    block_invalid: u64,
    block_absent: u64,
    payload_valid: u64,
    payload_valid_raw_chunked: u64,
    payload_invalid: u64,
    payload_absent: u64,
    payload_not_applicable: u64,
    unchecked: u64,
    truncated: u64,
    /// Lenient-reading recoveries (trailing garbage, skipped bytes or
    /// frames, bad lengths...): a file with any is not clean.
    recoveries: u64,
}

impl Summary {
    fn add(&mut self, c: &RecordCheck) {
        self.records += 1;
        match &c.block {
            DigestStatus::Valid | DigestStatus::ValidRawChunked => self.block_valid += 1,
            DigestStatus::Invalid { .. } | DigestStatus::Malformed { .. } => {
                self.block_invalid += 1
            }
            DigestStatus::Absent | DigestStatus::NotApplicable => self.block_absent += 1,
            _ => self.unchecked += 1,
        }
        match &c.payload {
            DigestStatus::Valid => self.payload_valid += 1,
            DigestStatus::ValidRawChunked => self.payload_valid_raw_chunked += 1,
            DigestStatus::Invalid { .. } | DigestStatus::Malformed { .. } => {
                self.payload_invalid += 1
            }
            DigestStatus::Absent => self.payload_absent += 1,
            DigestStatus::NotApplicable => self.payload_not_applicable += 1,
            _ => self.unchecked += 1,
        }
    }

    /// Adds the counts of `part`.
    fn merge(&mut self, part: &Summary) {
        self.records += part.records;
        self.block_valid += part.block_valid;
        self.block_invalid += part.block_invalid;
        self.block_absent += part.block_absent;
        self.payload_valid += part.payload_valid;
        self.payload_valid_raw_chunked += part.payload_valid_raw_chunked;
        self.payload_invalid += part.payload_invalid;
        self.payload_absent += part.payload_absent;
        self.payload_not_applicable += part.payload_not_applicable;
        self.unchecked += part.unchecked;
        self.truncated += part.truncated;
        self.recoveries += part.recoveries;
    }

    fn failed(&self) -> bool {
        self.block_invalid + self.payload_invalid + self.truncated + self.recoveries > 0
    }
}

#[derive(Serialize)]
struct Problem<'a> {
    file: &'a str,
    offset: u64,
    record_id: Option<&'a str>,
    target_uri: Option<&'a str>,
    #[serde(flatten)]
    check: &'a RecordCheck,
    truncated: bool,
}

pub fn run(g: &Global, mut args: Args) -> Result<Outcome> {
    args.files = crate::input::expand(&args.files);
    let mut outcome = Outcome::Ok;
    for name in &args.files {
        let o = match check_file(g, name, &args) {
            Ok(o) => o,
            Err(e) => file_error(name, e.as_ref()),
        };
        outcome = outcome.and(o);
    }
    Ok(outcome)
}

fn describe(what: &str, s: &DigestStatus) -> Option<String> {
    match s {
        DigestStatus::Invalid { recorded, computed } => Some(format!(
            "{what} digest mismatch: recorded {recorded}, computed {computed}"
        )),
        DigestStatus::Malformed { recorded, error } => {
            Some(format!("{what} digest {recorded:?} unreadable: {error}"))
        }
        DigestStatus::UnknownAlgorithm { recorded } => Some(format!(
            "{what} digest {recorded:?}: unknown algorithm, not checked"
        )),
        _ => None,
    }
}

fn check_file(
    g: &Global,
    name: &str,
    args: &Args,
) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let mut opts = g.reader_options(name);
    let threads = crate::tools::file_threads(args.jobs);
    opts.decoder.threads = threads;
    // The jobs that inflate gzip members ahead also hash their blocks, so
    // the reading thread need not (as `validate` does; check::MemberDigests).
    opts.decoder.member_digests = true;
    let tally = Check {
        name,
        json: args.json,
        verbose: args.verbose,
        limits: opts.limits,
    };
    let counting = Counting {
        g,
        recoveries: AtomicU64::new(0),
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    // An uncompressed WARC file is cut into chunks checked on the threads
    // (the output and counts verified to be the sequential read's);
    // compressed members are decoded on them.
    let read = match input::chunked(name, threads, &opts)? {
        Chunked::No(opened) => input::with_reader!(opened, reader => {
            let mut reader = reader;
            let mut progress = Progress::default();
            let mut sum = Summary::default();
            chunks::sequential_tally(
                &counting, name, &tally, &mut reader, &mut out, &mut progress, &mut sum, |_| false,
            )
            .map(|_| (progress.records, sum))
        }),
        Chunked::Chunks(c) => {
            let from = c.input(name);
            let mut sum = Summary::default();
            let (r, trace) = chunks::read_tally(
                &counting, name, from, &tally, &opts, c.plan, &mut out, &mut sum,
            );
            input::write_trace(&trace);
            r.map(|n| (n, sum))
        }
    };
    let (_, mut sum) = read?;
    sum.recoveries = counting.recoveries.load(Ordering::Relaxed);
    summarize(name, args, &sum, &mut out)
}

/// Warnings reported as every command reports them, and counted.
struct Counting<'a> {
    g: &'a Global,
    recoveries: AtomicU64,
}

impl chunks::Report for Counting<'_> {
    fn warnings(&self, name: &str, warnings: &[warchest::Warning]) {
        self.recoveries
            .fetch_add(warnings.len() as u64, Ordering::Relaxed);
        self.g.warnings(name, warnings);
    }
}

/// `check`'s work on one record: its digests checked and counted, a line
/// for a problem (or every record with `--verbose`).
struct Check<'a> {
    name: &'a str,
    json: bool,
    verbose: bool,
    limits: warchest::Limits,
}

impl Tally for Check<'_> {
    type Sum = Summary;

    fn record<S: Source>(
        &self,
        mut rec: Record<'_, S>,
        out: &mut Vec<u8>,
        sum: &mut Summary,
    ) -> Result<RecordEnd, chunks::BoxError> {
        let name = self.name;
        let c = check_record(&mut rec, &self.limits)?;
        let h = rec.header().clone();
        let loc = rec.location();
        let end = rec.finish()?;
        let bad = !c.is_ok() || end.truncated;
        let notes: Vec<String> = [describe("block", &c.block), describe("payload", &c.payload)]
            .into_iter()
            .flatten()
            .chain(end.truncated.then(|| "record truncated".to_string()))
            .collect();
        if self.json {
            if bad || self.verbose || !notes.is_empty() {
                let (id, uri) = (h.record_id(), h.target_uri());
                let p = Problem {
                    file: name,
                    offset: loc.offset,
                    record_id: id.as_deref(),
                    target_uri: uri.as_deref(),
                    check: &c,
                    truncated: end.truncated,
                };
                serde_json::to_writer(&mut *out, &p)?;
                out.push(b'\n');
            }
        } else if !notes.is_empty() || self.verbose {
            let id = h.record_id().map(|s| s.into_owned()).unwrap_or_default();
            if notes.is_empty() {
                writeln!(out, "{name}: offset {} {id}: ok", loc.offset)?;
            }
            for n in notes {
                writeln!(out, "{name}: offset {} {id}: {n}", loc.offset)?;
            }
        }
        sum.add(&c);
        if end.truncated {
            sum.truncated += 1;
        }
        Ok(end)
    }

    fn add(&self, total: &mut Summary, part: Summary) {
        total.merge(&part);
    }
}

/// Writes the summary of `name`'s records; the outcome.
fn summarize(
    name: &str,
    args: &Args,
    sum: &Summary,
    out: &mut impl Write,
) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    if sum.records == 0 {
        return Err(input::NoRecords::new(name).into());
    }
    if args.json {
        #[derive(Serialize)]
        struct FileSummary<'a> {
            file: &'a str,
            summary: &'a Summary,
            ok: bool,
        }
        serde_json::to_writer(
            &mut *out,
            &FileSummary {
                file: name,
                summary: sum,
                ok: !sum.failed(),
            },
        )?;
        out.write_all(b"\n")?;
    } else {
        writeln!(
            out,
            "{name}: {} records; block digests {} valid, {} invalid, {} absent; payload digests {} valid, {} valid over raw chunked bytes, {} invalid, {} absent, {} not applicable; {} unchecked; {} truncated; {} recoveries: {}",
            sum.records,
            sum.block_valid,
            sum.block_invalid,
            sum.block_absent,
            sum.payload_valid,
            sum.payload_valid_raw_chunked,
            sum.payload_invalid,
            sum.payload_absent,
            sum.payload_not_applicable,
            sum.unchecked,
            sum.truncated,
            sum.recoveries,
            if sum.failed() { "FAILED" } else { "OK" }
        )?;
    }
    Ok(if sum.failed() {
        Outcome::Problem
    } else {
        Outcome::Ok
    })
}
