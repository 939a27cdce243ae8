//! `warchest filter`: copy the records an expression selects.

use anyhow::{Result, anyhow, bail};
use warchest_ops::copy::CopyOptions;
use warchest_ops::filter::Filter;

use crate::cmd::copy::{Plan, copy_to_one};
use crate::report::{Global, Outcome};
use crate::tools::{CompressionArgs, Jobs, progress, sniff_to};

/// Copy the records an expression selects into one file. Each record is
/// copied as it was read (header and block bytes unchanged), compressed on
/// its own with the first input's compression unless --to says otherwise.
///
/// The expression language is jwarc's (see docs/commands.md): WARC fields
/// by name, `http:NAME` for HTTP header fields, `http:status` or `:status`,
/// `:method`, `:content-type`, `:uri`, `:host`, `:type`, `:length`,
/// `:offset`; `==`, `!=`, `=~`, `!~` (regex matching the whole value), `<`,
/// `<=`, `>`, `>=` on numbers; `&&`, `||`, `!` and parentheses.
///
/// Example:
///   warchest filter crawl.warc.gz -o html.warc.gz \
///     'warc-type == "response" && http:status == 200 && :content-type =~ "text/html"'
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[arg(
        required = true,
        num_args = 1..,
        value_name = "IN... EXPR",
        help = inputs_help!("Files to read", ", then the filter expression (the last argument)")
    )]
    args: Vec<String>,
    /// The output file (`-` for standard output).
    #[arg(short, long, value_name = "OUT")]
    output: String,
    #[command(flatten)]
    compression: CompressionArgs,
    #[command(flatten)]
    jobs: Jobs,
}

pub fn run(g: &Global, args: Args) -> Result<Outcome> {
    let (expr, files) = match args.args.split_last() {
        Some((e, f)) if !f.is_empty() => (e, f),
        _ => bail!("give the input files, then the expression"),
    };
    let filter = Filter::parse(expr).map_err(|e| anyhow!("{e}"))?;
    // A WACZ is read as its archive files, as `ls` reads it.
    let files = &crate::input::expand(files);
    crate::input::require_records_all(files)?;
    let default = sniff_to(&files[0]);
    let comp = args.compression.resolve(default)?;
    let bar = progress(g, files, 1);
    let plan = Plan {
        opts: &CopyOptions::new(comp),
        filter: Some(&filter),
        jobs: args.jobs,
        bar: &bar,
    };
    let (o, _) = copy_to_one(g, files, &args.output, &plan)?;
    bar.finish_and_clear();
    Ok(o)
}
