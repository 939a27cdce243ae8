//! `warchest derive wat|wet|text`: Common Crawl's WAT and WET files, and
//! text tables (Parquet or JSON lines), from any archives (docs/derive.md).

use std::io::{self, BufWriter, Write};

use anyhow::{Context, Result, bail};
use warchest::write::{Writer, WriterOptions};
use warchest_derive::derive::{self, Summary, WarcKind};
use warchest_derive::table::{Columns, ParquetWriter};

use crate::report::{Global, Outcome, file_error};
use crate::tools::{open_archive, progress};

/// Derivatives for text corpora and link graphs: WAT (metadata records
/// with Common Crawl's JSON envelope), WET (conversion records with the
/// text, in Common Crawl's layout), text tables (Parquet or JSON lines).
///
/// Examples:
///   warchest derive wet crawl.warc.gz -o crawl.warc.wet.gz
///   warchest derive wat crawl.warc.gz -o crawl.warc.wat.gz
///   warchest derive text 's3://bucket/crawl/*.warc.gz' -o text.parquet
///   warchest derive text crawl.warc.gz -o - | jq .title
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// One metadata record per request, response, revisit, resource,
    /// metadata and warcinfo record, with the JSON envelope.
    Wat(WarcArgs),
    /// One conversion record per HTML or plain-text response, with its
    /// text and languages.
    Wet(WarcArgs),
    /// One row per page: url, date, record id, WARC file and offset,
    /// content type, language and score, title, text, main-content text.
    Text(TextArgs),
}

#[derive(clap::Args, Debug)]
struct WarcArgs {
    /// Archives to read (paths, `-`, URLs, prefixes, globs; a `.wacz` as
    /// its archive files, each named `FILE.wacz#archive/NAME`).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    /// The output WARC file (a path or a URL); `.gz` gives a gzip member
    /// per record, `.zst` zstd, else none.
    #[arg(short, long, value_name = "OUT")]
    output: String,
}

#[derive(clap::Args, Debug)]
struct TextArgs {
    /// Archives to read (paths, `-`, URLs, prefixes, globs; a `.wacz` as
    /// its archive files, each named `FILE.wacz#archive/NAME`).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    /// The output (a path, a URL, or `-` for standard output).
    #[arg(short, long, value_name = "OUT")]
    output: String,
    /// `parquet` or `jsonl`; by default from the output's name
    /// (`.parquet` is Parquet, anything else JSON lines).
    #[arg(long)]
    format: Option<String>,
    /// Only these columns, comma-separated (`url,text`), as a Parquet
    /// reader projects them; only what they need is computed (without
    /// `main_text` and the language columns, neither is). Default: every
    /// column.
    #[arg(long, value_name = "LIST")]
    columns: Option<String>,
}

/// Where the output goes: a local file written as `NAME.open` and renamed
/// when complete, an object that appears when complete, or stdout.
enum Sink {
    File {
        file: BufWriter<std::fs::File>,
        open: std::path::PathBuf,
        path: std::path::PathBuf,
    },
    Remote(Box<BufWriter<crate::remote::Writer>>),
    Stdout(BufWriter<io::Stdout>),
}

impl Sink {
    fn create(name: &str) -> Result<Sink> {
        if name == "-" {
            return Ok(Sink::Stdout(BufWriter::new(io::stdout())));
        }
        if crate::remote::is_remote(name) {
            return Ok(Sink::Remote(Box::new(BufWriter::new(
                crate::remote::Writer::create(name).with_context(|| name.to_string())?,
            ))));
        }
        let path = std::path::PathBuf::from(name);
        if path.exists() {
            bail!("{name}: exists, not replaced");
        }
        let open = std::path::PathBuf::from(format!("{name}.open"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&open)
            .with_context(|| open.display().to_string())?;
        Ok(Sink::File {
            file: BufWriter::new(file),
            open,
            path,
        })
    }

    fn finish(self) -> Result<()> {
        match self {
            Sink::File { file, open, path } => {
                let f = file.into_inner().map_err(|e| e.into_error())?;
                warchest::write::atomic::commit(&f, &open, &path)
                    .with_context(|| format!("rename {}", open.display()))?;
            }
            Sink::Remote(w) => w.into_inner().map_err(|e| e.into_error())?.finish()?,
            Sink::Stdout(mut w) => w.flush()?,
        }
        Ok(())
    }

    /// Leaves an output that is not whole because an input failed, and says
    /// so: a local file stays `OUT.open` (not renamed, so not taken for
    /// complete), an object's upload is aborted.
    fn leave_incomplete(self, name: &str) -> Result<()> {
        match self {
            Sink::File { file, open, .. } => {
                file.into_inner().map_err(|e| e.into_error())?;
                eprintln!(
                    "warchest: {name}: left incomplete as {} (an input could not be read)",
                    open.display()
                );
            }
            Sink::Remote(w) => {
                drop(w);
                eprintln!(
                    "warchest: {name}: not written (an input could not be read; the upload is aborted)"
                );
            }
            Sink::Stdout(mut w) => w.flush()?,
        }
        Ok(())
    }

    /// Drops an unfinished output: a local `.open` file is removed.
    fn abandon(self) {
        if let Sink::File { file, open, .. } = self {
            drop(file);
            let _ = std::fs::remove_file(open);
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File { file, .. } => file.write(buf),
            Sink::Remote(w) => w.write(buf),
            Sink::Stdout(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File { file, .. } => file.flush(),
            Sink::Remote(w) => w.flush(),
            Sink::Stdout(w) => w.flush(),
        }
    }
}

pub fn run(g: &Global, args: Args) -> Result<Outcome> {
    match args.what {
        What::Wat(a) => run_warc(g, WarcKind::Wat, a),
        What::Wet(a) => run_warc(g, WarcKind::Wet, a),
        What::Text(a) => run_text(g, a),
    }
}

/// The name a record's file goes by in the output: its last path segment.
fn base_name(name: &str) -> &str {
    name.rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or(name)
}

/// Runs `each` on every input in turn, reporting each file's warnings and
/// errors; a file with no record is an error.
fn each_file(
    g: &Global,
    files: &[String],
    mut each: impl FnMut(
        &mut warchest::archive::Reader<warchest::codec::Decoder<crate::tools::In>>,
        &str,
    ) -> Result<Summary>,
) -> (Outcome, Summary) {
    let bar = progress(g, files, 1);
    let mut outcome = Outcome::Ok;
    let mut total = Summary::default();
    for name in files {
        let res = open_archive(g, name, &bar).and_then(|mut r| {
            let res = each(&mut r, name);
            g.warnings(name, &r.take_warnings());
            res
        });
        match res {
            Ok(s) if s.records_in == 0 => {
                outcome = outcome.and(file_error(name, &crate::input::NoRecords::new(name)))
            }
            Ok(mut s) => {
                // Listed under the name the file was given as, as the
                // reader's warnings are.
                s.payload_fallbacks = s.payload_fallbacks.in_file(name);
                total.add(s);
            }
            Err(e) => outcome = outcome.and(file_error(name, e.as_ref())),
        }
    }
    bar.finish_and_clear();
    crate::report::payload_fallbacks(g, &total.payload_fallbacks);
    if let Some(line) = total.texts_summary().filter(|_| !g.quiet) {
        eprintln!("warchest: {line}");
    }
    (outcome, total)
}

fn run_warc(g: &Global, kind: WarcKind, args: WarcArgs) -> Result<Outcome> {
    let files = crate::input::expand(&args.files);
    let compression = if args.output.ends_with(".gz") {
        crate::cmd::write_flags::compression("gzip")?
    } else if args.output.ends_with(".zst") {
        crate::cmd::write_flags::compression("zstd")?
    } else {
        crate::cmd::write_flags::compression("none")?
    };
    // Digests are the derivative's own (WET: WARC-Block-Digest of the
    // text), as Common Crawl writes them; the writer adds none.
    let opts = WriterOptions {
        compression,
        digest: None,
        ..WriterOptions::default()
    };
    let mut writer = Writer::new(Sink::create(&args.output)?, opts)?;
    let out_name = base_name(&args.output).to_string();
    let mut first = true;
    let (outcome, total) = each_file(g, &files, |r, name| {
        let s = derive::write_warc(kind, r, base_name(name), &out_name, first, &mut writer)?;
        first = false;
        Ok(s)
    });
    let sink = writer.finish()?;
    if total.records_in == 0 {
        sink.abandon();
        return Ok(outcome);
    }
    if outcome == Outcome::Failed {
        sink.leave_incomplete(&args.output)?;
        return Ok(outcome);
    }
    sink.finish()?;
    if !g.quiet {
        eprintln!(
            "warchest: {} records read, {} {} records written to {}",
            total.records_in,
            total.records_out,
            if kind == WarcKind::Wat {
                "metadata"
            } else {
                "conversion"
            },
            args.output
        );
    }
    Ok(outcome)
}

fn run_text(g: &Global, args: TextArgs) -> Result<Outcome> {
    let files = crate::input::expand(&args.files);
    let parquet = match args.format.as_deref() {
        Some("parquet") => true,
        Some("jsonl") | Some("json") => false,
        Some(other) => bail!("unknown format {other:?} (parquet, jsonl)"),
        None => args.output.ends_with(".parquet"),
    };
    if parquet && args.output == "-" {
        bail!("Parquet needs a file or URL, not standard output (--format jsonl)");
    }
    let columns = match &args.columns {
        Some(list) => Columns::parse(list).map_err(|e| anyhow::anyhow!("--columns: {e}"))?,
        None => Columns::ALL,
    };
    let mut pq = None;
    let mut lines = None;
    if parquet {
        pq = Some(ParquetWriter::with_columns(
            Sink::create(&args.output)?,
            columns,
        )?);
    } else {
        lines = Some(Sink::create(&args.output)?);
    }
    let (outcome, total) = each_file(g, &files, |r, name| {
        let s = derive::text_rows_with(r, name, columns, |rows| -> Result<()> {
            if let Some(w) = &mut pq {
                w.write(&rows)?;
            }
            if let Some(out) = &mut lines {
                for row in &rows {
                    out.write_all(derive::row_json_of(row, columns).as_bytes())?;
                    out.write_all(b"\n")?;
                }
            }
            Ok(())
        })?;
        Ok(s)
    });
    let sink = match (pq, lines) {
        (Some(w), _) => w.finish()?,
        (None, Some(s)) => s,
        (None, None) => unreachable!("one output is made"),
    };
    if total.records_in == 0 {
        sink.abandon();
        return Ok(outcome);
    }
    if outcome == Outcome::Failed {
        sink.leave_incomplete(&args.output)?;
        return Ok(outcome);
    }
    if let Err(e) = sink.finish() {
        return Ok(outcome.and(file_error(&args.output, e.as_ref())));
    }
    if !g.quiet && args.output != "-" {
        eprintln!(
            "warchest: {} records read, {} rows written to {}",
            total.records_in, total.records_out, args.output
        );
    }
    Ok(outcome)
}
