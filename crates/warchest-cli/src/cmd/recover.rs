//! `warchest recover`: salvage the intact records of a damaged file.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use warchest::archive::Format;
use warchest_ops::recover::{OutputCompression, RecoverOptions, recover};

use crate::report::{Global, Outcome};

/// Salvage every intact record of a damaged WARC (plain, gzip, zstd), ARC
/// or Web InfoMall file into OUT, in the same format, and report each
/// damaged range and the records lost in it. Records are found again
/// after damage by their starts (and gzip member headers); a start counts
/// only when its record's checksum verifies or the records after it follow
/// on correctly (three for Web InfoMall). A record whose digest fails, or
/// whose content does not inflate, is written only with --keep-damaged.
/// Exits 1 when anything was damaged.
///
/// Example: `warchest recover broken.warc.gz -o saved.warc.gz`
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The damaged file.
    input: String,
    /// Where the intact records go (compressed per record if its name
    /// ends in `.gz` or `.zst`).
    #[arg(short, long)]
    output: String,
    /// Also write damaged records, as they are.
    #[arg(long)]
    keep_damaged: bool,
    /// The format, when the damage hides it.
    #[arg(long, value_enum)]
    format: Option<Fmt>,
    /// The report as JSON on standard output.
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Fmt {
    Warc,
    Arc,
    Infomall,
}

pub fn run(_g: &Global, args: Args) -> Result<Outcome> {
    if args.input == args.output {
        bail!("the output {} is the input", args.output);
    }
    crate::input::refuse_wacz("recover", std::slice::from_ref(&args.input))?;
    crate::input::require_records(&args.input)?;
    let compression = if args.output.ends_with(".gz") {
        OutputCompression::Gzip
    } else if args.output.ends_with(".zst") {
        OutputCompression::Zstd
    } else {
        OutputCompression::None
    };
    let opts = RecoverOptions {
        keep_damaged: args.keep_damaged,
        format: args.format.map(|f| match f {
            Fmt::Warc => Format::Warc,
            Fmt::Arc => Format::Arc,
            Fmt::Infomall => Format::InfoMall,
        }),
        compression,
    };
    // Written as OUT.open, renamed when whole: a write error (a full disk)
    // leaves no short file under the final name.
    let mut out = warchest_ops::copy::OpenFile::create(&args.output)
        .with_context(|| format!("{}: cannot create", args.output))?;
    let report = match recover(Path::new(&args.input), &mut out, &opts) {
        Ok(r) => r,
        Err(e) => {
            // What was written stays as OUT.open, said; nothing (a missing
            // input) leaves no file.
            let open = out.open_path().to_path_buf();
            drop(out);
            if !super::copy::remove_if_empty(&open) {
                eprintln!(
                    "warchest: {}: left incomplete as {}",
                    args.output,
                    open.display()
                );
            }
            return Err(e.into());
        }
    };
    out.finish()?;
    let name = &args.input;
    // Each damaged range is a recovery: summed up in the line every
    // reading command ends with (the ranges are listed below anyway).
    let ranges: Vec<warchest::Warning> = report
        .ranges
        .iter()
        .map(|r| {
            warchest::Warning::new(warchest::error::WarningKind::Other, r.start, r.note.clone())
        })
        .collect();
    crate::report::tally_only(name, &ranges);
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        let mut err = std::io::stderr().lock();
        for r in &report.ranges {
            let dec = r
                .decompressed
                .map(|(s, e)| format!(" (decompressed {s}..{e})"))
                .unwrap_or_default();
            writeln!(
                err,
                "warchest: {name}: damaged bytes {}..{}{dec}: {}",
                r.start, r.end, r.note
            )?;
            for l in &r.lost {
                writeln!(
                    err,
                    "warchest: {name}:   record at {} {}: {}{}",
                    l.offset,
                    l.target_uri.as_deref().unwrap_or("(no URI)"),
                    if l.kept { "kept damaged: " } else { "lost: " },
                    l.reason
                )?;
            }
        }
        for n in &report.notes {
            writeln!(err, "warchest: {name}: note: {n}")?;
        }
        writeln!(
            err,
            "warchest: {name}: {} intact records written, {} damaged written, {} lost, {} damaged ranges",
            report.records_written,
            report.damaged_written,
            report.records_lost,
            report.ranges.len()
        )?;
    }
    Ok(if report.is_clean() {
        Outcome::Ok
    } else {
        Outcome::Problem
    })
}
