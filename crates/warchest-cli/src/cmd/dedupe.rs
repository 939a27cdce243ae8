//! `warchest dedupe`: duplicate responses rewritten as revisits.

use std::path::PathBuf;

use anyhow::Result;
use warchest_ops::dedupe::{DedupeOptions, DigestIndex, dedupe_with};

use super::write_flags::{OutputArgs, prefix_from};
use crate::report::{Global, Outcome};

/// Copy WARC files to OUTDIR, rewriting every HTTP response whose payload
/// was already seen (earlier in these files, or in the index of earlier
/// runs) as an identical-payload-digest revisit (WARC 1.1 section 6.7.2):
/// the HTTP head is kept, the body is not, WARC-Refers-To names the
/// original. Other records are copied untouched. Prints the bytes saved.
///
/// The index (`--index`) is a database file that persists between runs;
/// without it, duplicates are found within the files given only.
///
/// Example: `warchest dedupe crawl-*.warc.gz -o deduped/ --index digests.redb`
#[derive(clap::Args, Debug)]
pub struct Args {
    /// WARC files, read in order (the first copy of a payload stays whole).
    #[arg(required = true)]
    inputs: Vec<String>,
    /// Output directory.
    #[arg(short, long)]
    output: PathBuf,
    /// Digest index file (created when missing, updated).
    #[arg(long)]
    index: Option<PathBuf>,
    /// Keep payloads shorter than this many bytes whole.
    #[arg(long, default_value_t = 1)]
    min_size: u64,
    /// The summary as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    out: OutputArgs,
}

pub fn run(g: &Global, args: Args) -> Result<Outcome> {
    crate::input::refuse_wacz("dedupe", &args.inputs)?;
    crate::input::require_records_all(&args.inputs)?;
    let index = match &args.index {
        Some(p) => DigestIndex::open(p)?,
        None => DigestIndex::temporary()?,
    };
    let first = &args.inputs[0];
    // The error names the file (once).
    let version = crate::input::version_of(first)?;
    let mut output = args.out.rotating(
        &format!("{}-dedup", prefix_from(first)),
        "deduplicated copy: repeated payloads stored as revisits",
        version,
    )?;
    // Copies keep their own warcinfo association.
    output.link_warcinfo = false;
    let opts = DedupeOptions {
        output,
        min_payload: args.min_size,
    };
    let (stats, files) = dedupe_with(&args.inputs, &args.output, &index, &opts, &mut |f, w| {
        g.warnings(&f.to_string_lossy(), w)
    })?;
    if args.json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            #[serde(flatten)]
            stats: &'a warchest_ops::dedupe::DedupeStats,
            bytes_saved: u64,
            files: &'a [PathBuf],
        }
        println!(
            "{}",
            serde_json::to_string(&Out {
                stats: &stats,
                bytes_saved: stats.bytes_saved(),
                files: &files,
            })?
        );
    } else {
        for f in &files {
            println!("{}", f.display());
        }
        let pct = if stats.bytes_in > 0 {
            100.0 * stats.bytes_saved() as f64 / stats.bytes_in as f64
        } else {
            0.0
        };
        println!(
            "{} records, {} responses, {} revisits written, {} digests indexed, {} recorded payload digests wrong; {} bytes in, {} out, {} saved ({pct:.1}%)",
            stats.records,
            stats.responses,
            stats.revisits,
            stats.indexed,
            stats.digest_mismatches,
            stats.bytes_in,
            stats.bytes_out,
            stats.bytes_saved(),
        );
    }
    Ok(Outcome::Ok)
}
