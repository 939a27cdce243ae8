//! `warchest pack` and `warchest unpack`: local files as resource records
//! and back.

use std::path::PathBuf;

use anyhow::Result;
use warchest::warc::Version;
use warchest::write::RotatingWriter;
use warchest_ops::pack::{PackOptions, pack, unpack_with};

use super::write_flags::{OutputArgs, prefix_from};
use crate::report::{Global, Outcome};

/// Archive local files: each file a `resource` record (its URI `file://`
/// and its absolute path, or --base-uri and its relative path; its
/// Content-Type found from its bytes; its modification time as WARC-Date),
/// followed by a `metadata` record with its size, path and permissions
/// (ISO 28500 Annex D, use case two). Directories are walked in name order;
/// symbolic links are not followed. Files larger than --max-size are
/// segmented across files.
///
/// Example: `warchest pack ~/reports -o archive/ --base-uri https://example.org/reports/`
#[derive(clap::Args, Debug)]
pub struct PackArgs {
    /// Files and directories to archive.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output directory.
    #[arg(short, long)]
    output: PathBuf,
    /// Base URI for the records (default: file:// URIs of absolute paths).
    #[arg(long)]
    base_uri: Option<String>,
    #[command(flatten)]
    out: OutputArgs,
}

pub fn run_pack(_g: &Global, args: PackArgs) -> Result<Outcome> {
    // Every input there before the output directory is made: a name
    // mistyped leaves no empty directory behind.
    for p in &args.inputs {
        std::fs::symlink_metadata(p).map_err(|e| warchest::Error::from(e).in_file(p))?;
    }
    let first = args.inputs[0].to_string_lossy().to_string();
    let opts = args.out.rotating(
        &prefix_from(&first),
        "local files packed by warchest",
        Version::V1_1,
    )?;
    let mut w = RotatingWriter::new(&args.output, opts)?;
    let stats = pack(
        &args.inputs,
        &mut w,
        &PackOptions {
            base_uri: args.base_uri.clone(),
            ..PackOptions::default()
        },
    )?;
    for f in w.finish()? {
        println!("{}", f.display());
    }
    for (p, why) in &stats.skipped {
        eprintln!("warchest: {}: skipped: {why}", p.display());
    }
    eprintln!(
        "warchest: {} files, {} bytes packed",
        stats.files, stats.bytes
    );
    Ok(Outcome::Ok)
}

/// Write the resource records of WARC files back as files under a
/// directory, at the relative paths `warchest pack` recorded (else the
/// path of their URI), with their permissions and modification times.
/// Nothing is written outside the directory (paths with `..`, absolute
/// paths and symbolic links are refused) and no file is replaced; each
/// refusal is reported and makes the exit status 1. A file whose record
/// the archive ends inside is left as far as it was written, named as
/// truncated (exit status 1), as `tar` leaves what it read of a cut
/// archive; so is a file of segments when one is missing or cut short, and
/// one whose reassembled payload digest does not match is named as
/// damaged; a metadata record that does not parse is named too.
///
/// Example: `warchest unpack archive/*.warc.gz -o restored/`
#[derive(clap::Args, Debug)]
pub struct UnpackArgs {
    /// WARC files.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output directory.
    #[arg(short, long)]
    output: PathBuf,
}

pub fn run_unpack(g: &Global, args: UnpackArgs) -> Result<Outcome> {
    for p in &args.inputs {
        let name = p.to_string_lossy();
        crate::input::refuse_wacz("unpack", &[name.to_string()])?;
        crate::input::require_records(&name)?;
    }
    let stats = unpack_with(&args.inputs, &args.output, &mut |f, w| {
        g.warnings(&f.to_string_lossy(), w)
    })?;
    for (p, why) in &stats.refused {
        eprintln!("warchest: {p}: not written: {why}");
    }
    for (p, why) in &stats.truncated {
        eprintln!("warchest: {p}: truncated: {why}");
    }
    for (p, why) in &stats.damaged {
        eprintln!("warchest: {p}: damaged: {why}");
    }
    for (p, why) in &stats.metadata_problems {
        eprintln!("warchest: {p}: {why}");
    }
    let mut short = String::new();
    for (n, what) in [
        (stats.truncated.len(), "truncated"),
        (stats.damaged.len(), "damaged"),
    ] {
        if n > 0 {
            short.push_str(&format!(", {n} {what}"));
        }
    }
    eprintln!(
        "warchest: {} files{short}, {} bytes written",
        stats.files, stats.bytes
    );
    Ok(if stats.is_clean() {
        Outcome::Ok
    } else {
        Outcome::Problem
    })
}
