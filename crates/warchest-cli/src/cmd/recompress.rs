//! `warchest recompress`: any readable archive to one member per record.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use indicatif::ProgressBar;
use warchest::write::Compression;
use warchest_ops::copy::{CopyOptions, DictTraining, train_dictionary};

use crate::cmd::copy::{Plan, copy_to_one};
use crate::report::{Global, Outcome, file_error};
use crate::tools::{CompressionArgs, Jobs, To, open_archive, output_name_in, parse_size, progress};

/// Rewrite archives with one gzip member (or zstd frame) per record, as
/// ISO 28500 Annex D recommends and CDX offsets need: whole-file gzip,
/// zstd, LZ4 and plain input alike. Header and block bytes are unchanged.
/// A record whose block is shorter than its Content-Length (truncated) is
/// not copied; it is reported and the exit code is 1.
///
/// With one input, OUT is the output file (`-` for standard output); with
/// several, or when OUT is a directory, each input goes to OUT/NAME with
/// the extension of the new compression. OUT may be a URL: an object, or
/// with several inputs (or a final `/`) a prefix in a bucket; each object
/// appears only when complete (a multipart upload completed last).
///
/// Examples:
///   warchest recompress whole-file.warc.gz -o fixed.warc.gz
///   warchest recompress crawl.warc.gz -o crawl.warc.zst --to zstd --level 19 --train-dict
///   warchest recompress -j 8 *.warc -o compressed/
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[arg(required = true, value_name = "IN", help = inputs_help!("Files to read"))]
    files: Vec<String>,
    /// The output file, or directory for several inputs.
    #[arg(short, long, value_name = "OUT")]
    output: String,
    #[command(flatten)]
    compression: CompressionArgs,
    /// Train a zstd dictionary on samples of each input's records and
    /// store it in the output's dictionary frame (implies --to zstd; reads
    /// the input twice, so not for standard input).
    #[arg(long, conflicts_with = "dict")]
    train_dict: bool,
    /// Largest trained dictionary (default 110KiB).
    #[arg(long, value_name = "SIZE", requires = "train_dict", value_parser = parse_size)]
    dict_size: Option<u64>,
    #[command(flatten)]
    jobs: Jobs,
}

pub fn run(g: &Global, mut args: Args) -> Result<Outcome> {
    // A WACZ is read as its archive files, as `ls` reads it.
    args.files = crate::input::expand(&args.files);
    crate::input::require_records_all(&args.files)?;
    let default = if args.train_dict { To::Zstd } else { To::Gzip };
    if args.train_dict && args.compression.to.is_some_and(|t| t != To::Zstd) {
        bail!("--train-dict makes a zstd dictionary: it needs --to zstd");
    }
    if args.train_dict && args.files.iter().any(|f| f == "-") {
        bail!("--train-dict reads the input twice: give a file, not standard input");
    }
    let comp = args.compression.resolve(default)?;
    let train = args.train_dict.then(|| {
        let mut t = DictTraining::default();
        if let Some(s) = args.dict_size {
            t.max_size = usize::try_from(s).unwrap_or(usize::MAX);
        }
        t
    });
    let passes = if train.is_some() { 2 } else { 1 };
    let bar = progress(g, &args.files, passes);
    let out = Path::new(&args.output);
    let remote = crate::remote::is_remote(&args.output);
    let one = args.files.len() == 1
        && if remote {
            !args.output.ends_with('/')
        } else {
            !out.is_dir()
        };
    let outcome = if one {
        recompress_one(g, &args.files[0], &args.output, &comp, train, &bar)
            .unwrap_or_else(|e| file_error(&args.files[0], e.as_ref()))
    } else {
        if args.output == "-" {
            bail!("several inputs need an output directory, not standard output");
        }
        let names: Vec<PathBuf> = if remote {
            // Objects under the prefix, each written by its own upload.
            let mut prefix = args.output.clone();
            if !prefix.ends_with('/') {
                prefix.push('/');
            }
            args.files
                .iter()
                .map(|f| {
                    let name = output_name_in(Path::new(""), f, &comp);
                    PathBuf::from(format!("{prefix}{}", name.display()))
                })
                .collect()
        } else {
            std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
            args.files
                .iter()
                .map(|f| output_name_in(out, f, &comp))
                .collect()
        };
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                bail!("two inputs would both be written to {}", n.display());
            }
        }
        let items: Vec<(&String, &PathBuf)> = args.files.iter().zip(&names).collect();
        args.jobs
            .map(&items, |(name, dest)| {
                let dest = dest.to_string_lossy();
                recompress_one(g, name, &dest, &comp, train, &bar)
                    .unwrap_or_else(|e| file_error(name, e.as_ref()))
            })
            .into_iter()
            .fold(Outcome::Ok, Outcome::and)
    };
    bar.finish_and_clear();
    Ok(outcome)
}

fn recompress_one(
    g: &Global,
    name: &str,
    out: &str,
    comp: &Compression,
    train: Option<DictTraining>,
    bar: &ProgressBar,
) -> Result<Outcome> {
    let comp = match (train, comp) {
        (Some(t), Compression::Zstd { level, .. }) => {
            let mut reader = open_archive(g, name, bar)?;
            let dict = train_dictionary(&mut reader, &t)?;
            Compression::Zstd {
                level: *level,
                dictionary: Some(dict),
            }
        }
        _ => comp.clone(),
    };
    let plan = Plan {
        opts: &CopyOptions::new(comp),
        filter: None,
        jobs: Jobs { jobs: Some(1) },
        bar,
    };
    let (o, _) = copy_to_one(g, &[name.to_string()], out, &plan)?;
    Ok(o)
}
