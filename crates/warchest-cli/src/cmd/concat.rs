//! `warchest concat`: many archives into one.

use anyhow::Result;
use warchest_ops::copy::CopyOptions;

use crate::cmd::copy::{Plan, copy_to_one};
use crate::report::{Global, Outcome};
use crate::tools::{CompressionArgs, Jobs, progress, sniff_to};

/// Join archives into one file, records in the order of the inputs, each
/// copied unchanged and compressed on its own (the first input's
/// compression unless --to says otherwise). Any mix of gzip, zstd, LZ4 and
/// plain inputs, whole-file gzip included.
///
/// Example:
///   warchest concat day1/*.warc.gz day2/*.warc.gz -o all.warc.gz
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[arg(required = true, value_name = "IN", help = inputs_help!("Files to read"))]
    files: Vec<String>,
    /// The output file (`-` for standard output).
    #[arg(short, long, value_name = "OUT")]
    output: String,
    #[command(flatten)]
    compression: CompressionArgs,
    #[command(flatten)]
    jobs: Jobs,
}

pub fn run(g: &Global, mut args: Args) -> Result<Outcome> {
    // A WACZ is read as its archive files, as `ls` reads it.
    args.files = crate::input::expand(&args.files);
    crate::input::require_records_all(&args.files)?;
    let comp = args.compression.resolve(sniff_to(&args.files[0]))?;
    let bar = progress(g, &args.files, 1);
    let plan = Plan {
        opts: &CopyOptions::new(comp),
        filter: None,
        jobs: args.jobs,
        bar: &bar,
    };
    let (o, _) = copy_to_one(g, &args.files, &args.output, &plan)?;
    bar.finish_and_clear();
    Ok(o)
}
