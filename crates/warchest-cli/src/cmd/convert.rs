//! `warchest convert`: ARC and Web InfoMall to WARC, responses to Web InfoMall.

use std::io::{self, BufWriter, Write};

use anyhow::{Context, Result};
use warchest::archive::Reader;
use warchest::warc::Version;
use warchest::write::{Compression, Writer, WriterOptions};
use warchest_ops::convert::{InfoMallOptions, Report, WarcOptions, to_infomall, to_warc};

use crate::input;
use crate::report::{Global, Outcome, file_error};

/// Convert archives: ARC and Web InfoMall files to WARC (a warcinfo record,
/// each capture as a response or resource record with both digests, and a
/// metadata record for what WARC has no field for), or the responses of
/// any archive to Web InfoMall (zlib-compressed content). A WARC input
/// converted to WARC is copied record by record. The format of each input
/// is read from its bytes; the output is compressed per record as its name
/// says (`.gz`, `.zst`, `.lz4`) unless --compression says otherwise.
///
/// Example: `warchest convert crawl.arc.gz -o crawl.warc.gz` or
/// `warchest convert page.dat -o page.warc.gz`, and back with
/// `warchest convert page.warc.gz -o page2.dat --to infomall`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(required = true, help = inputs_help!("Files to convert", ", all into one output"))]
    inputs: Vec<String>,
    /// The output file (`-` for standard output).
    #[arg(short, long)]
    output: String,
    /// The output format.
    #[arg(long, value_enum, default_value = "warc")]
    to: Target,
    /// WARC version of the output.
    #[arg(long = "version", value_name = "VERSION", default_value = "1.1", value_parser = ["1.1", "1.0"])]
    warc_version: String,
    /// Per-record compression of a WARC output (default: from the output
    /// name: `.gz` gzip, `.zst` zstd, else none).
    #[arg(long, value_enum)]
    compression: Option<Comp>,
    /// Web InfoMall output: store the content as is instead of compressing
    /// it with zlib.
    #[arg(long)]
    store: bool,
    /// One JSON report per input on standard output.
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Warc,
    Infomall,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Comp {
    None,
    Gzip,
    Zstd,
    Lz4,
}

fn compression(args: &Args) -> Compression {
    let c = args.compression.unwrap_or(if args.output.ends_with(".gz") {
        Comp::Gzip
    } else if args.output.ends_with(".zst") {
        Comp::Zstd
    } else if args.output.ends_with(".lz4") {
        Comp::Lz4
    } else {
        Comp::None
    });
    match c {
        Comp::None => Compression::None,
        Comp::Gzip => Compression::Gzip(6),
        Comp::Zstd => Compression::Zstd {
            level: 3,
            dictionary: None,
        },
        Comp::Lz4 => Compression::Lz4,
    }
}

/// What closing the output does: for a file, rename it from `NAME.open`
/// (and `NAME`) when every input was converted, synced
/// ([`warchest::write::atomic::commit_path`]), so that a write error (a
/// full disk) leaves no short file under its final name; for an object,
/// complete its upload (or abort it: nothing appears).
enum Close {
    Nothing,
    File(std::path::PathBuf, std::path::PathBuf),
    Remote(String, SharedRemote),
}

/// The remote writer, shared between the record writer that owns the
/// output and [`close_output`], which completes it.
#[derive(Clone)]
struct SharedRemote(std::rc::Rc<std::cell::RefCell<Option<BufWriter<crate::remote::Writer>>>>);

impl Write for SharedRemote {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self.0.borrow_mut().as_mut() {
            Some(w) => w.write(b),
            None => Err(io::Error::other("the upload is closed")),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self.0.borrow_mut().as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

/// The output and what closing it does.
type Output = (Box<dyn Write>, Close);

fn open_output(name: &str) -> Result<Output> {
    Ok(if name == "-" {
        (Box::new(BufWriter::new(io::stdout())), Close::Nothing)
    } else if crate::remote::is_remote(name) {
        let w = crate::remote::Writer::create(name)?;
        let shared = SharedRemote(std::rc::Rc::new(std::cell::RefCell::new(Some(
            BufWriter::with_capacity(1 << 20, w),
        ))));
        (
            Box::new(shared.clone()),
            Close::Remote(name.to_string(), shared),
        )
    } else {
        let f = warchest_ops::copy::OpenFile::create(name)
            .with_context(|| format!("{name}: cannot create"))?;
        let names = (f.open_path().to_path_buf(), f.path().to_path_buf());
        (Box::new(f), Close::File(names.0, names.1))
    })
}

/// Renames a whole output to its final name, or completes its upload; an
/// incomplete file keeps its `.open` name, an incomplete upload is aborted,
/// and the message says so.
fn close_output(close: Close, outcome: Outcome) -> Result<()> {
    match close {
        Close::Nothing => Ok(()),
        Close::Remote(name, shared) => {
            let Some(w) = shared.0.borrow_mut().take() else {
                return Ok(());
            };
            if outcome == Outcome::Failed {
                drop(w);
                eprintln!(
                    "warchest: {name}: not written (an input could not be converted; the upload is aborted)"
                );
                return Ok(());
            }
            let w = w.into_inner().map_err(|e| e.into_error())?;
            w.finish()?;
            Ok(())
        }
        Close::File(open, path) => {
            if outcome == Outcome::Failed {
                if super::copy::remove_if_empty(&open) {
                    eprintln!(
                        "warchest: {}: not written (no record of any input could be converted)",
                        path.display()
                    );
                    return Ok(());
                }
                eprintln!(
                    "warchest: {}: incomplete, left under that name",
                    open.display()
                );
                return Ok(());
            }
            warchest::write::atomic::commit_path(&open, &path)
                .with_context(|| format!("rename {} to {}", open.display(), path.display()))
        }
    }
}

fn summary(name: &str, r: &Report, json: bool) -> Result<Outcome> {
    if r.records_read == 0 {
        // Standard input, which is not looked at before.
        return Ok(file_error(name, &crate::input::NoRecords::new(name)));
    }
    if json {
        #[derive(serde::Serialize)]
        struct Line<'a> {
            file: &'a str,
            #[serde(flatten)]
            report: &'a Report,
            warnings: u64,
        }
        let line = Line {
            file: name,
            report: r,
            warnings: r.recoveries.total(),
        };
        println!("{}", serde_json::to_string(&line)?);
    } else {
        let skipped: Vec<String> = r.skipped.iter().map(|(t, n)| format!("{n} {t}")).collect();
        eprintln!(
            "warchest: {name}: {} records read, {} written ({} metadata), {} truncated{}{}",
            r.records_read,
            r.records_written,
            r.metadata_written,
            r.truncated,
            if skipped.is_empty() {
                String::new()
            } else {
                format!(", skipped {}", skipped.join(", "))
            },
            if r.recoveries.is_empty() {
                String::new()
            } else {
                format!(", {} warnings (-w shows them)", r.recoveries.total())
            }
        );
    }
    Ok(if r.truncated > 0 {
        Outcome::Problem
    } else {
        Outcome::Ok
    })
}

pub fn run(g: &Global, args: Args) -> Result<Outcome> {
    crate::input::refuse_overwriting(&args.output, &args.inputs)?;
    // A WACZ is read as its archive files, as `ls` reads it.
    let inputs = crate::input::expand(&args.inputs);
    crate::input::require_records_all(&inputs)?;
    crate::input::warn_repeated(g, &inputs);
    let (out, names) = open_output(&args.output)?;
    let mut outcome = Outcome::Ok;
    match args.to {
        Target::Warc => {
            let version = if args.warc_version == "1.0" {
                Version::V1_0
            } else {
                Version::V1_1
            };
            let wopts = WriterOptions {
                compression: compression(&args),
                ..WriterOptions::default()
            };
            let mut w = Writer::new(out, wopts)?;
            let opts = WarcOptions {
                version,
                output_name: (args.output != "-").then(|| args.output.clone()),
                ..WarcOptions::default()
            };
            for name in &inputs {
                // The report holds the recoveries, those before an error too.
                let mut rep = Report::default();
                let r = (|| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
                    let mut reader =
                        Reader::with_options(input::open_stream(name)?, g.reader_options(name))?;
                    Ok(to_warc(&mut reader, name, &mut w, &opts, &mut rep)?)
                })();
                g.recoveries(name, &rep.recoveries);
                outcome = outcome.and(match r {
                    Ok(()) => summary(name, &rep, args.json)?,
                    Err(e) => file_error(name, e.as_ref()),
                });
            }
            w.finish()?.flush()?;
        }
        Target::Infomall => {
            let mut w = warchest::infomall::Writer::new(out);
            let opts = InfoMallOptions {
                compress: !args.store,
                ..InfoMallOptions::default()
            };
            for name in &inputs {
                // The report holds the recoveries, those before an error too.
                let mut rep = Report::default();
                let r = (|| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
                    let mut reader =
                        Reader::with_options(input::open_stream(name)?, g.reader_options(name))?;
                    Ok(to_infomall(&mut reader, name, &mut w, &opts, &mut rep)?)
                })();
                g.recoveries(name, &rep.recoveries);
                outcome = outcome.and(match r {
                    Ok(()) => summary(name, &rep, args.json)?,
                    Err(e) => file_error(name, e.as_ref()),
                });
            }
            w.finish()?.flush()?;
        }
    }
    close_output(names, outcome)?;
    Ok(outcome)
}
