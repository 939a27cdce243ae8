//! `warchest index`: CDXJ, CDX, JSON lines or Parquet indexes.

use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use tempfile::SpooledTempFile;
use warchest::recoveries::Recoveries;
use warchest_index::{
    Carry, Encoder, Format, IndexOptions, IndexOutput, Indexer, NotAddressable, ParquetOptions,
    UnparsedHead,
};

use crate::input;
use crate::report::{Global, Outcome, file_error};

/// Index archives: one entry per response, revisit, resource and metadata
/// record (every record with --all), as CDXJ the way pywb and cdxj-indexer
/// write it (default), CDX 11 or 9 with a legend line, JSON lines, or
/// Parquet with Common Crawl's cc-index columns (always sorted).
///
/// Files are read in parallel; the output is the same whatever -j, in the
/// order of the files given (or sorted with --sort).
///
/// Example: `warchest index --sort -o index.cdxj crawl-*.warc.gz`
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(required = true, help = inputs_help!("Files to index"))]
    files: Vec<String>,
    /// Output format (default cdxj; cdx when --fields is given).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// CDX legend, field letters separated by spaces (`N b a m s k r V g`);
    /// implies --format cdx.
    #[arg(long, value_name = "LEGEND")]
    fields: Option<String>,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Sort the lines in byte order (as `LC_ALL=C sort`), dropping repeated
    /// identical lines; bounded memory, spilling to temporary files.
    #[arg(short, long)]
    sort: bool,
    /// Index every record, requests and warcinfo included.
    #[arg(short, long)]
    all: bool,
    /// Do not append `__wb_method=post&...` to the keys of POST and PUT
    /// requests and their responses.
    #[arg(long)]
    no_post_append: bool,
    /// Threads (default: all cores): files read at once, and the threads
    /// each file is decoded on when there are fewer files.
    #[arg(short, long, value_name = "N")]
    jobs: Option<usize>,
    /// Memory for sorting before spilling to temporary files, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    sort_memory: usize,
    /// Parquet: 32-bit warc_record_offset and warc_record_length columns,
    /// as in Common Crawl's table (files under 2 GiB only).
    #[arg(long)]
    int32_offsets: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FormatArg {
    Cdxj,
    /// CDX 11: N b a m s k r M S V g.
    Cdx,
    /// CDX 9: N b a m s k r V g.
    Cdx9,
    Json,
    Parquet,
}

/// What a worker hands back for one file.
struct FileResult {
    spool: Option<SpooledTempFile>,
    /// The reader's recoveries, the first of them kept (a file of
    /// millions costs counts, not memory).
    warnings: Recoveries,
    /// Its records indexed without status and MIME.
    unparsed: Recoveries<UnparsedHead>,
    error: Option<Box<dyn std::error::Error + Send + Sync>>,
    /// Entries written to its spool (none stands of a refused file).
    entries: u64,
}

/// Output of one file kept in memory up to this size, then on disk.
const SPOOL_MEMORY: usize = 8 << 20;

/// Encoded lines gathered before they are written to the spool.
const LINES_BUFFER: usize = 64 << 10;

fn format(args: &Args) -> Result<Format> {
    let f = match (args.format, &args.fields) {
        (None | Some(FormatArg::Cdx), Some(legend)) => Format::cdx_legend(legend)?,
        (Some(other), Some(_)) => bail!("--fields is for --format cdx, not {other:?}"),
        (None | Some(FormatArg::Cdxj), None) => Format::Cdxj,
        (Some(FormatArg::Cdx), None) => Format::cdx11(),
        (Some(FormatArg::Cdx9), None) => Format::cdx9(),
        (Some(FormatArg::Json), None) => Format::Json,
        (Some(FormatArg::Parquet), None) => Format::Parquet(ParquetOptions {
            int32_offsets: args.int32_offsets,
            ..ParquetOptions::default()
        }),
    };
    Ok(f)
}

pub fn run(g: &Global, mut args: Args) -> Result<Outcome> {
    args.files = crate::input::expand(&args.files);
    let format = format(&args)?;
    if matches!(format, Format::Parquet(_)) && args.output.is_none() && io::stdout().is_terminal() {
        // As gzip does: binary output is not written to a terminal.
        bail!(
            "Parquet is binary and standard output is a terminal: give -o FILE or redirect the output"
        );
    }
    // A file is written as NAME.open and renamed when complete: an index
    // cut short by a write error never passes for a whole one.
    let mut rename = None;
    // Taken before anything is written to it.
    let stdout_at = if args.output.is_none() {
        stdout_file()
    } else {
        None
    };
    if let Some(p) = &args.output {
        crate::input::refuse_overwriting(&p.display().to_string(), &args.files)?;
    }
    let out: Box<dyn Write + Send> = match &args.output {
        Some(p) => {
            let f = warchest_ops::copy::OpenFile::create(p)
                .with_context(|| format!("cannot create {}", p.display()))?;
            rename = Some((f.open_path().to_path_buf(), f.path().to_path_buf()));
            Box::new(f)
        }
        None => Box::new(BufWriter::with_capacity(1 << 16, io::stdout())),
    };
    let mut output = IndexOutput::with_sort_memory(
        out,
        &format,
        args.sort,
        args.sort_memory.saturating_mul(1 << 20),
    )?;
    let encoder = output.encoder();
    let opts = IndexOptions {
        all: args.all,
        post_append: !args.no_post_append,
        ..IndexOptions::default()
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // A lone file's lines go straight to the output (docs/indexing.md,
    // "A file refused as a whole"): nothing else is waiting for its turn,
    // and a refusal is undone below (the file we write is cut back) or
    // failed loudly (standard output), instead of every line passing
    // through a spool that overflows to disk past 8 MiB.
    let lone = args.files.len() == 1 && !args.sort && !matches!(format, Format::Parquet(_));
    if lone {
        let mut outcome = Outcome::Ok;
        let name = &args.files[0];
        let legend = encoder.legend().map_or(0, |l| l.len() as u64);
        let mut out_err = None;
        let (warnings, error, entries, unparsed) =
            index_into(g, name, &encoder, &opts, jobs, &mut |b| {
                output.push_encoded(b).map_err(|e| {
                    let msg = e.to_string();
                    out_err = Some(e);
                    io::Error::other(msg)
                })
            });
        if let Some(e) = out_err {
            return Ok(file_error("output", &e));
        }
        // Closed before a cut below, so that nothing buffered lands after it.
        if let Err(failed) = finish_output(output) {
            return Ok(failed);
        }
        // No entry stands of a failed file that wrote none, or was refused
        // (its lines cut back, where they can be).
        let none_indexed = error.is_some() && (refused(error.as_deref()) || entries == 0);
        if let Some(mut e) = error {
            if let Some(refusal) = e.downcast_mut::<NotAddressable>() {
                // A file (ours, or standard output redirected to one) is
                // cut back to before the file's lines, before anything
                // more (warnings, with 2>&1) is written to it.
                let cut = match (&rename, &stdout_at) {
                    (Some((open, _)), _) => Some((
                        open.display().to_string(),
                        std::fs::OpenOptions::new()
                            .write(true)
                            .open(open)
                            .and_then(|f| f.set_len(legend)),
                    )),
                    (None, Some((f, start))) => {
                        Some(("standard output".to_string(), cut_back(f, start + legend)))
                    }
                    // A pipe cannot be taken back: the error says what
                    // is there.
                    (None, None) => {
                        refusal.written = entries;
                        None
                    }
                };
                if let Some((what, Err(e))) = cut {
                    return Ok(file_error(&what, &e));
                }
            }
            g.recoveries(name, &warnings);
            // A refusal's entries stand only on a pipe (counted in its
            // error): then their heads that did not parse are told too.
            let stand = e
                .downcast_ref::<NotAddressable>()
                .is_none_or(|r| r.written > 0);
            if stand {
                crate::report::unparsed_heads(g, &unparsed.in_file(name));
            }
            outcome = file_error(name, e.as_ref());
        } else {
            g.recoveries(name, &warnings);
            crate::report::unparsed_heads(g, &unparsed.in_file(name));
        }
        rename_unless_none_indexed(rename, none_indexed)?;
        return Ok(outcome);
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    // Threads left for each file when fewer files than threads are read.
    let file_threads = (jobs / args.files.len().clamp(1, jobs)).max(1);
    let progress = if io::stderr().is_terminal() && args.files.len() > 1 {
        let pb = indicatif::ProgressBar::new(args.files.len() as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        pb
    } else {
        indicatif::ProgressBar::hidden()
    };

    let mut outcome = Outcome::Ok;
    // Entries written: none, and a file failed, leaves `-o`'s file as it
    // was.
    let mut written = 0u64;
    // Records indexed without status and MIME, told after the files.
    let mut unparsed = Recoveries::new();
    // Files in windows: workers index a window in parallel, each into its
    // own spool; the spools are then written in file order, so the output
    // does not depend on -j and memory stays bounded.
    for window in args.files.chunks(jobs.saturating_mul(2)) {
        let results: Vec<FileResult> = pool.install(|| {
            window
                .par_iter()
                .map(|name| index_file(g, name, &encoder, &opts, file_threads))
                .collect()
        });
        for (name, r) in window.iter().zip(results) {
            if let Some(spool) = r.spool
                && let Err(e) = copy_spool(spool, &mut output)
            {
                progress.finish_and_clear();
                return Ok(file_error("output", e.as_ref()));
            }
            g.recoveries(name, &r.warnings);
            // A file refused as a whole has no entry to tell of.
            if !refused(r.error.as_deref()) {
                unparsed.append(r.unparsed.in_file(name));
            }
            written += r.entries;
            if let Some(e) = r.error {
                progress.suspend(|| outcome = outcome.and(file_error(name, e.as_ref())));
            }
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    crate::report::unparsed_heads(g, &unparsed);
    if let Err(failed) = finish_output(output) {
        return Ok(outcome.and(failed));
    }
    rename_unless_none_indexed(rename, outcome == Outcome::Failed && written == 0)?;
    Ok(outcome)
}

/// [`rename_done`], unless `none_indexed` (an input failed and no entry of
/// any was written): then `-o`'s `FILE.open` is removed and an existing
/// FILE left as it was, said on standard error. A mistyped input name
/// does not replace a good index with an empty one; an index of the
/// inputs that could be read (some entries) is written, exit 2 naming the
/// others (docs/indexing.md).
fn rename_unless_none_indexed(
    rename: Option<(PathBuf, PathBuf)>,
    none_indexed: bool,
) -> Result<()> {
    match rename {
        Some((open, path)) if none_indexed => {
            let _ = std::fs::remove_file(&open);
            let was = if path.exists() {
                "the existing one is left as it was"
            } else {
                "none is made"
            };
            eprintln!(
                "warchest: {}: not written, as no entry of any input could be indexed; {was}",
                path.display()
            );
            Ok(())
        }
        r => rename_done(r),
    }
}

/// Writes the output's last lines and flushes it (and closes it: `-o`'s
/// file is dropped here); a failure is the command's outcome.
fn finish_output(output: IndexOutput<Box<dyn Write + Send>>) -> std::result::Result<(), Outcome> {
    let mut w = output.finish().map_err(|e| file_error("output", &e))?;
    w.flush().map_err(|e| file_error("output", &e))
}

/// Gives `-o FILE`, written as `FILE.open`, its name once it is whole
/// (synced, renamed, the directory synced:
/// [`warchest::write::atomic::commit_path`]).
fn rename_done(rename: Option<(PathBuf, PathBuf)>) -> Result<()> {
    if let Some((open, path)) = rename {
        warchest::write::atomic::commit_path(&open, &path)
            .with_context(|| format!("rename {} to {}", open.display(), path.display()))?;
    }
    Ok(())
}

/// The name an index gives a file: its base name, as cdxj-indexer does.
fn index_name(name: &str) -> String {
    if name == "-" {
        return "-".to_string();
    }
    Path::new(name)
        .file_name()
        .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned())
}

fn index_file(
    g: &Global,
    name: &str,
    encoder: &Encoder,
    opts: &IndexOptions,
    threads: usize,
) -> FileResult {
    let mut spool = SpooledTempFile::new(SPOOL_MEMORY);
    let (warnings, error, entries, unparsed) =
        index_into(g, name, encoder, opts, threads, &mut |b| spool.write_all(b));
    // A file refused as a whole writes no entry.
    let stands = !refused(error.as_deref());
    FileResult {
        spool: stands.then_some(spool),
        warnings,
        unparsed,
        error,
        entries: if stands { entries } else { 0 },
    }
}

type FileError = Box<dyn std::error::Error + Send + Sync>;

/// Indexes the file `name`, handing its encoded lines to `sink` in large
/// pieces (once a spool is on disk, each write is a system call): its
/// warnings, its error, the number of entries handed over, and its records
/// whose HTTP head did not parse (under the name the index gives the file).
fn index_into(
    g: &Global,
    name: &str,
    encoder: &Encoder,
    opts: &IndexOptions,
    threads: usize,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> (Recoveries, Option<FileError>, u64, Recoveries<UnparsedHead>) {
    let mut warnings = Recoveries::new();
    let mut entries = 0u64;
    let mut unparsed = Recoveries::new();
    let error = (|| -> Result<(), FileError> {
        input::require_records(name)?;
        let mut ropts = g.reader_options(name);
        ropts.decoder.threads = threads;
        let indexer = Indexer::new(index_name(name), opts.clone());
        // An uncompressed WARC file is cut into chunks indexed on the
        // threads (the lines verified to be those of a read in order);
        // compressed members are decoded on them.
        let records = match input::chunked(name, threads, &ropts)? {
            input::Chunked::Chunks(c) => {
                let tally = ChunkIndex {
                    indexer: &indexer,
                    encoder,
                };
                let noted = std::cell::RefCell::new(std::mem::take(&mut warnings));
                let mut part = Part::default();
                let mut out = Sink::new(sink);
                let (r, trace) = warchest::chunks::read_tally(
                    &noted,
                    name,
                    c.input(name),
                    &tally,
                    &ropts,
                    c.plan,
                    &mut out,
                    &mut part,
                );
                input::write_trace(&trace);
                warnings = noted.into_inner();
                entries = part.entries;
                unparsed = part.unparsed;
                // The entries before an error are kept, as read in order.
                out.flush()?;
                r?
            }
            input::Chunked::No(opened) => {
                let mut out = Sink::new(sink);
                input::with_reader!(opened, reader => {
                    let mut reader = reader;
                    // A file not compressed record at a time is refused,
                    // the read stopped where that is found.
                    let r = indexer.index_addressable(
                        &mut reader,
                        name,
                        |e| {
                            encoder.encode(&e, &mut out.lines);
                            entries += 1;
                            out.spill()?;
                            Ok(())
                        },
                        |ws| warnings.add_all(name, &ws),
                        &mut unparsed,
                    );
                    // The entries before an error are kept, as with one thread.
                    out.flush()?;
                    r??
                })
            }
        };
        // Standard input is not looked at before (`require_records`):
        // one that held no record is told here, as for a file.
        if records == 0 {
            return Err(input::NoRecords::new(name).into());
        }
        Ok(())
    })()
    .err();
    (warnings, error, entries, unparsed)
}

/// `index`'s work on the records of a chunk of an uncompressed WARC file
/// (`warchest::chunks`): entries encoded as lines, the record held back
/// for pairing carried from chunk to chunk ([`warchest_index::Carry`]).
struct ChunkIndex<'a> {
    indexer: &'a Indexer,
    encoder: &'a Encoder,
}

/// A chunk's counts: the indexer's carry, entries written, heads that did
/// not parse.
#[derive(Default)]
struct Part {
    carry: Carry,
    entries: u64,
    unparsed: Recoveries<UnparsedHead>,
}

impl warchest::chunks::Tally for ChunkIndex<'_> {
    type Sum = Part;

    fn record<S: warchest::codec::Source + Send>(
        &self,
        rec: warchest::archive::Record<'_, S>,
        out: &mut Vec<u8>,
        sum: &mut Part,
    ) -> Result<warchest::warc::RecordEnd, warchest::chunks::BoxError> {
        let Part {
            carry,
            entries,
            unparsed,
        } = sum;
        let end = self.indexer.step(rec, carry, Some(unparsed), |e| {
            self.encoder.encode(&e, out);
            *entries += 1;
            Ok(())
        })?;
        Ok(end)
    }

    fn add(&self, total: &mut Part, part: Part) {
        total.carry.append(part.carry);
        total.entries += part.entries;
        total.unparsed.append(part.unparsed);
    }

    fn continues(&self, total: &Part, part: &Part) -> bool {
        self.indexer.continues(&total.carry, &part.carry)
    }

    fn flush(&self, sum: &mut Part, out: &mut Vec<u8>) {
        let entries = &mut sum.entries;
        // Encoding into a vector cannot fail.
        let _ = self.indexer.flush(&mut sum.carry, |e| {
            self.encoder.encode(&e, out);
            *entries += 1;
            Ok(())
        });
    }
}

/// The sink, handed pieces of at least [`LINES_BUFFER`] bytes (once a
/// spool is on disk, each piece is a system call): entries encoded into
/// `lines`, then [`Sink::spill`]; or, as a writer, a chunk's lines.
struct Sink<'a> {
    sink: &'a mut dyn FnMut(&[u8]) -> io::Result<()>,
    lines: Vec<u8>,
}

impl<'a> Sink<'a> {
    fn new(sink: &'a mut dyn FnMut(&[u8]) -> io::Result<()>) -> Self {
        Sink {
            sink,
            lines: Vec::with_capacity(LINES_BUFFER + 4096),
        }
    }

    /// Hands the lines gathered on once they are [`LINES_BUFFER`] bytes.
    fn spill(&mut self) -> io::Result<()> {
        if self.lines.len() >= LINES_BUFFER {
            self.flush()?;
        }
        Ok(())
    }
}

impl Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.lines.len() + buf.len() > LINES_BUFFER && !self.lines.is_empty() {
            self.flush()?;
        }
        if buf.len() >= LINES_BUFFER {
            return (self.sink)(buf);
        }
        self.lines.extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.lines.is_empty() {
            (self.sink)(&self.lines)?;
            self.lines.clear();
        }
        Ok(())
    }
}

/// Standard output when it is a regular file written at its end (`>` or
/// `>>`): a handle on it and where the index begins there.
#[cfg(unix)]
fn stdout_file() -> Option<(std::fs::File, u64)> {
    use std::os::fd::AsFd;
    let f = std::fs::File::from(io::stdout().as_fd().try_clone_to_owned().ok()?);
    let len = f.metadata().ok().filter(|m| m.is_file())?.len();
    let at = (&f).stream_position().ok()?;
    (at == len).then_some((f, at))
}

#[cfg(not(unix))]
fn stdout_file() -> Option<(std::fs::File, u64)> {
    None
}

/// Cuts standard output's file back to `len`, its offset too (shared with
/// a standard error sent to the same file).
fn cut_back(mut f: &std::fs::File, len: u64) -> io::Result<()> {
    f.set_len(len)?;
    f.seek(io::SeekFrom::Start(len)).map(|_| ())
}

/// The file was refused as a whole (no entry of it may stand).
fn refused(error: Option<&(dyn std::error::Error + Send + Sync + 'static)>) -> bool {
    error.is_some_and(|e| e.downcast_ref::<NotAddressable>().is_some())
}

fn copy_spool(
    mut spool: SpooledTempFile,
    output: &mut IndexOutput<Box<dyn Write + Send>>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    spool.rewind()?;
    let mut r = BufReader::with_capacity(1 << 16, spool);
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        // Whole lines only; a line longer than the buffer is gathered.
        match memchr_last_newline(buf) {
            Some(end) => {
                output.push_encoded(&buf[..=end])?;
                r.consume(end + 1);
            }
            None => {
                let mut line = Vec::new();
                r.read_until(b'\n', &mut line)?;
                output.push_encoded(&line)?;
            }
        }
    }
}

fn memchr_last_newline(b: &[u8]) -> Option<usize> {
    b.iter().rposition(|&c| c == b'\n')
}
