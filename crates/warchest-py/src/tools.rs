//! The library's whole-file tools: index, check, validate, convert. Each
//! runs with the interpreter lock released and returns JSON text that the
//! Python wrappers (warchest/__init__.py) turn into dicts, so the shapes
//! are the library's serde ones, the same as the command's `--json`.

use std::fs::File;
use std::path::{Path, PathBuf};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;
use warchest::Warning;
use warchest::archive::Reader;
use warchest::check::check_record;
use warchest::codec::Source;
use warchest::recoveries::Recoveries;
use warchest::warc::{ReaderOptions, Version};
use warchest::write::{Compression, Writer, WriterOptions};
use warchest_index::{Format, IndexOptions, IndexOutput, Indexer, ParquetOptions, UnparsedHead};
use warchest_ops::convert::Report;
use warchest_ops::copy::OpenFile;
use warchest_validate::{Options as ValidateOptions, Validator};

use crate::io::{Target, targets_from_py};
use crate::to_py;
use crate::wacz::ArchiveFile;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(index, m)?)?;
    m.add_function(wrap_pyfunction!(check_json, m)?)?;
    m.add_function(wrap_pyfunction!(validate_json, m)?)?;
    m.add_function(wrap_pyfunction!(convert_json, m)?)?;
    m.add_function(wrap_pyfunction!(select_parquet, m)?)?;
    Ok(())
}

/// Gives each of `told` as a RecoveryWarning, then `result`: the
/// recoveries met before an error are said too. Called holding the
/// interpreter lock, at the end of a call.
fn warn_then<T>(py: Python<'_>, told: Vec<String>, result: PyResult<T>) -> PyResult<T> {
    for t in &told {
        crate::scan::warn_now(py, t)?;
    }
    result
}

fn base_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// One selected row: (filename, offset, length, url, urlkey, timestamp,
/// mime, status).
type SelectedRow = (
    String,
    u64,
    u64,
    String,
    String,
    String,
    String,
    Option<u16>,
);

/// The rows of a cc-index Parquet table (a path, or a URL read by range
/// requests) that the filters select, as `warchest fetch` selects them
/// (warchest-index's `select::select_parquet_counted`), in the table's
/// order. Rows passed over for want of a usable offset or length (null or
/// negative) are counted and told in a `RecoveryWarning`, in the words
/// `warchest fetch` prints them (`select::skipped_rows_message`).
#[pyfunction]
#[pyo3(signature = (index, url_prefix = None, surt_prefix = None, host = None, mime = None,
    status = None, from_ = None, to = None, limit = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn select_parquet(
    py: Python<'_>,
    index: String,
    url_prefix: Option<String>,
    surt_prefix: Option<String>,
    host: Option<String>,
    mime: Option<String>,
    status: Option<u16>,
    from_: Option<String>,
    to: Option<String>,
    limit: Option<u64>,
) -> PyResult<Vec<SelectedRow>> {
    use warchest_index::select::{self, Selection};
    let sel = Selection {
        url_prefix,
        surt_prefix,
        host,
        mime,
        status,
        from: from_,
        to,
        limit,
    };
    let rows = py.detach(|| -> Result<_, String> {
        let fail = |e: &dyn std::fmt::Display| format!("{index}: reading the Parquet index: {e}");
        #[cfg(feature = "remote")]
        if warchest_remote::is_remote(&index) {
            let size = warchest_remote::size(&index).map_err(|e| fail(&e))?;
            let url = index.clone();
            let chunks = select::RangeChunks::new(size, move |start, len| {
                warchest_remote::open_range(&url, start, len)
            });
            return select::select_parquet_counted(chunks, &sel).map_err(|e| fail(&e));
        }
        let f = File::open(&index).map_err(|e| format!("{index}: {e}"))?;
        select::select_parquet_counted(f, &sel).map_err(|e| fail(&e))
    });
    let (rows, skipped) = rows.map_err(pyo3::exceptions::PyOSError::new_err)?;
    let said = select::skipped_rows_message(&index, skipped);
    warn_then(py, said.into_iter().collect(), Ok(()))?;
    Ok(rows
        .into_iter()
        .map(|e| {
            (
                e.filename,
                e.offset,
                e.length,
                e.url,
                e.surt,
                e.timestamp,
                e.mime,
                e.status,
            )
        })
        .collect())
}

/// Indexes `paths` into `output`: `cdxj` (default, as cdxj-indexer), `cdx`
/// (CDX 11), `json` or `parquet` (Common Crawl's cc-index columns, sorted by
/// SURT key). `sort` sorts text formats bytewise (Parquet always is);
/// `all_records` indexes every record, not only captures. Returns the
/// number of entries written. Each file is named by its base name. A path
/// may be a URL (`s3://`, `gs://`, `az://`, `http(s)://`), the object read
/// by range requests, as `ArchiveIterator` reads it; `output` is a local
/// path. A `.wacz` (local or by URL) is indexed as its archive files, each
/// named by its own base name (as `warchest index x.wacz` does). An
/// input with no record is an `ArchiveError`; an object that cannot be
/// read an `OSError` naming it. The output is written as `OUTPUT.open` and
/// renamed when whole (removed on an error); an output that is one of the
/// inputs (by any name) is refused with ValueError.
#[pyfunction]
#[pyo3(signature = (paths, output, format = "cdxj", sort = false, all_records = false,
    int32_offsets = false))]
pub(crate) fn index(
    py: Python<'_>,
    paths: &Bound<'_, PyAny>,
    output: PathBuf,
    format: &str,
    sort: bool,
    all_records: bool,
    int32_offsets: bool,
) -> PyResult<u64> {
    let targets = targets_from_py(paths)?;
    let format = match format {
        "cdxj" => Format::Cdxj,
        "cdx" => Format::cdx11(),
        "json" => Format::Json,
        "parquet" => Format::Parquet(ParquetOptions {
            int32_offsets,
            ..ParquetOptions::default()
        }),
        other => {
            return Err(PyValueError::new_err(format!(
                "format must be cdxj, cdx, json or parquet, not {other:?}"
            )));
        }
    };
    refuse_overwriting(&output, &local_paths(&targets))?;
    let mut said = Vec::new();
    let result = py.detach(|| -> PyResult<u64> {
        // Every WACZ listed (and a URL refused by a build without the
        // `remote` feature) before the output is made.
        let inputs = Input::all(&targets)?;
        // Written as OUTPUT.open and renamed when whole (removed on error).
        let file = OpenFile::create(&output).map_err(to_py)?;
        let open = file.open_path().to_path_buf();
        let written = index_into(file, &inputs, &format, sort, all_records, &mut said);
        if written.is_err() {
            let _ = std::fs::remove_file(&open);
        }
        written
    });
    warn_then(py, said, result)
}

/// Refuses an `output` that is one of `inputs` (or its `.open` file):
/// writing it would destroy the input being read.
fn refuse_overwriting(output: &Path, inputs: &[PathBuf]) -> PyResult<()> {
    match warchest_ops::copy::output_overwrites(output, inputs) {
        Some(i) => Err(PyValueError::new_err(format!(
            "the output {} is the input {}",
            output.display(),
            i.display()
        ))),
        None => Ok(()),
    }
}

/// What a tool reads of a path or URL it is given: the file, the object,
/// or each archive file of a WACZ (`FILE.wacz#archive/NAME`,
/// `URL#archive/NAME`), as the command line expands one and
/// `ArchiveIterator` reads one (crate::wacz, one home for both).
enum Input {
    File(PathBuf),
    /// An object named by URL, read by range requests
    /// (crate::remote::open_reader, as `ArchiveIterator` reads one).
    #[cfg(feature = "remote")]
    Url(String),
    Archive(ArchiveFile),
}

impl Input {
    /// The inputs of `target`.
    ///
    /// # Errors
    /// A WACZ that cannot be listed or has no archive file
    /// ([`crate::wacz::archive_files_of`]); a URL in a build without the
    /// `remote` feature ([`crate::io::no_remote`]).
    fn of(target: &Target) -> PyResult<Vec<Input>> {
        match target {
            // Refused before it is taken for a WACZ, in the words the
            // iterator and `scan` refuse it with.
            #[cfg(not(feature = "remote"))]
            Target::Url(u) => Err(crate::io::no_remote(u)),
            t if crate::wacz::is_wacz_target(t) => {
                let files = crate::wacz::archive_files_of(t).map_err(to_py)?;
                Ok(files.into_iter().map(Input::Archive).collect())
            }
            Target::Path(p) => Ok(vec![Input::File(p.clone())]),
            #[cfg(feature = "remote")]
            Target::Url(u) => Ok(vec![Input::Url(u.clone())]),
        }
    }

    /// The inputs of all `targets`, in order: every WACZ listed (and every
    /// URL refused by a build without the `remote` feature) before any
    /// file is read or an output made.
    fn all(targets: &[Target]) -> PyResult<Vec<Input>> {
        let mut out = Vec::new();
        for t in targets {
            out.extend(Input::of(t)?);
        }
        Ok(out)
    }

    /// What messages and rows name it: the path or URL as given, or the
    /// archive file's `FILE.wacz#archive/NAME` (`URL#archive/NAME`).
    fn name(&self) -> String {
        match self {
            Input::File(p) => p.to_string_lossy().into_owned(),
            #[cfg(feature = "remote")]
            Input::Url(u) => u.clone(),
            Input::Archive(f) => f.name.clone(),
        }
    }
}

/// The local paths among `targets` (what an output could overwrite).
fn local_paths(targets: &[Target]) -> Vec<PathBuf> {
    targets
        .iter()
        .filter_map(|t| match t {
            Target::Path(p) => Some(p.clone()),
            Target::Url(_) => None,
        })
        .collect()
}

/// Runs `$body` with `$r` bound to a reader of the [`Input`] `$input`
/// (opened with `$opts`), whichever kind it is.
macro_rules! with_input {
    ($input:expr, $opts:expr, $r:ident => $body:expr) => {
        match $input {
            Input::File(p) => {
                let mut $r = Reader::open_with(p, $opts).map_err(to_py)?;
                $body
            }
            #[cfg(feature = "remote")]
            Input::Url(u) => {
                let mut $r = crate::remote::open_reader(u, $opts).map_err(to_py)?;
                $body
            }
            Input::Archive(f) => {
                let mut $r = f.open($opts).map_err(to_py)?;
                $body
            }
        }
    };
}

/// The body of [`index`]: `inputs` indexed into `file`, committed when
/// whole; the number of entries.
fn index_into(
    file: OpenFile,
    inputs: &[Input],
    format: &Format,
    sort: bool,
    all_records: bool,
    said: &mut Vec<String>,
) -> PyResult<u64> {
    let mut out = IndexOutput::new(file, format, sort).map_err(to_py)?;
    let opts = IndexOptions {
        all: all_records,
        ..IndexOptions::default()
    };
    let mut n = 0u64;
    for input in inputs {
        let name = input.name();
        // The index names a file (or an object) by its base name, an
        // archive file of a WACZ by its own (as `warchest index` does).
        let indexer = Indexer::new(base_name(Path::new(&name)), opts.clone());
        with_input!(input, ReaderOptions::default(), reader => {
            index_file(&mut reader, &indexer, &name, &mut out, &mut n, said)?
        });
    }
    let w = out.finish().map_err(to_py)?;
    w.finish().map_err(to_py)?;
    Ok(n)
}

/// Indexes the records of `reader` (the input `name`) into `out`, `n`
/// counting the entries; what it recovered from goes to `said`.
fn index_file<S: Source>(
    reader: &mut Reader<S>,
    indexer: &Indexer,
    name: &str,
    out: &mut IndexOutput<OpenFile>,
    n: &mut u64,
    said: &mut Vec<String>,
) -> PyResult<()> {
    // Taken as the file is read (a file of millions of recoveries costs
    // counts, not memory), and said before an error is given.
    let mut recovered = Recoveries::keeping(0);
    // Records indexed without status and MIME are said too.
    let mut unparsed = Recoveries::keeping(0);
    // A file not compressed record at a time is refused, as `warchest
    // index` refuses it: its entries would not address its records (the
    // read stops where that is found).
    let r = indexer.index_addressable(
        reader,
        name,
        |e| {
            *n += 1;
            out.push(&e)
        },
        |ws| recovered.add_all(name, &ws),
        &mut unparsed,
    );
    said.extend(crate::scan::describe(&recovered, &Recoveries::new()));
    said.extend(UnparsedHead::summary(&unparsed).map(|l| format!("{name}: {l}")));
    let records = r
        .map_err(to_py)?
        .map_err(|refusal| PyValueError::new_err(refusal.to_string()))?;
    if records == 0 {
        return Err(no_records(name));
    }
    Ok(())
}

/// The error for an input in which no record is found (an empty file
/// included): as every CLI command refuses it (exit 2), an input with no
/// record is not an empty archive but one not read. An `ArchiveError`
/// (a `ValueError`), with the command line's words.
fn no_records(name: &str) -> PyErr {
    crate::ArchiveError::new_err(warchest::archive::no_records_message(name))
}

/// Checks every digest of the file at `path` (a path or a URL, the object
/// read by range requests): JSON, one object per record, `file` naming
/// where it is (the path or URL as given, or a WACZ's archive file
/// `FILE.wacz#archive/NAME`, `URL#archive/NAME`: a WACZ is read as its
/// archive files). An input with no record is an `ArchiveError`, as
/// `warchest check` refuses it.
#[pyfunction]
pub(crate) fn check_json(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<String> {
    let target = Target::from_py(path)?;
    let mut said = Vec::new();
    let result = py.detach(|| -> PyResult<String> {
        let mut out = Vec::new();
        for input in Input::of(&target)? {
            let name = input.name();
            let opts = ReaderOptions::default();
            let limits = opts.limits;
            with_input!(&input, opts, reader => {
                check_file(&mut reader, &name, &limits, &mut out, &mut said)?
            });
        }
        serde_json::to_string(&out).map_err(|e| PyValueError::new_err(e.to_string()))
    });
    warn_then(py, said, result)
}

/// The JSON objects of [`check_json`] for the records of `reader` (the
/// input `name`), into `out`; what it recovered from goes to `said`, error
/// or not. No record is an error.
fn check_file<S: Source>(
    reader: &mut Reader<S>,
    name: &str,
    limits: &warchest::Limits,
    out: &mut Vec<serde_json::Value>,
    said: &mut Vec<String>,
) -> PyResult<()> {
    let before = out.len();
    let mut recovered = Recoveries::keeping(0);
    let checked = check_records(reader, name, limits, out, |ws| recovered.add_all(name, &ws));
    recovered.add_all(name, &reader.take_warnings());
    // Records read through recoveries are said to be, error or not.
    said.extend(crate::scan::describe(&recovered, &Recoveries::new()));
    checked?;
    if out.len() == before {
        return Err(no_records(name));
    }
    Ok(())
}

/// The JSON objects of [`check_json`], one per record of `reader`, into
/// `out`; the reader's warnings handed to `warned` after each record, so
/// that they are not all held to the end (the caller takes what is left
/// after an error).
fn check_records<S: Source>(
    reader: &mut Reader<S>,
    name: &str,
    limits: &warchest::Limits,
    out: &mut Vec<serde_json::Value>,
    mut warned: impl FnMut(Vec<Warning>),
) -> PyResult<()> {
    while let Some(mut rec) = reader.next_record().map_err(to_py)? {
        let (offset, kind, id) = (
            rec.location().offset,
            rec.header().record_type_str().map(|s| s.into_owned()),
            rec.header().record_id().map(|s| s.into_owned()),
        );
        let c = check_record(&mut rec, limits).map_err(to_py)?;
        // A record cut short is a failure, as in `warchest check`.
        let truncated = rec.finish().map_err(to_py)?.truncated;
        out.push(json!({
            "file": name,
            "offset": offset,
            "type": kind,
            "record_id": id,
            "ok": c.is_ok() && !truncated,
            "block": c.block,
            "payload": c.payload,
            "block_len": c.block_len,
            "truncated": truncated,
        }));
        warned(reader.take_warnings());
    }
    Ok(())
}

/// Validates `paths` together: JSON with `findings` and `summary`, as
/// `warchest validate --json` gives them. A path may be a URL, the object
/// read from its start by range requests and named by the URL as given.
/// A `.wacz` (local or by URL) is validated as its archive files, each
/// named `FILE.wacz#archive/NAME` (`URL#archive/NAME`) in its findings and
/// summary (as the command names it); a WACZ that cannot be listed or has
/// no archive file raises `ArchiveError`, as `check` and `index` refuse
/// it; so does an input in which no record is found (empty, or not an
/// archive). A file or object that cannot be opened or read raises
/// `OSError` naming it, as `warchest validate` fails for it (exit 2).
#[pyfunction]
pub(crate) fn validate_json(py: Python<'_>, paths: &Bound<'_, PyAny>) -> PyResult<String> {
    let targets = targets_from_py(paths)?;
    py.detach(move || {
        // Every WACZ listed before any file is read: one that is refused
        // is refused before the work.
        let inputs = Input::all(&targets)?;
        let mut findings = Vec::new();
        let mut v = Validator::new(ValidateOptions::default());
        for input in &inputs {
            let mut sink = |f| findings.push(f);
            // A file that cannot be opened or read raises, naming it, as
            // an object that cannot be does (and as `check` and `index`
            // do): its error was dropped, the file only counted
            // `unreadable` in the summary.
            let file = match input {
                Input::File(p) => v.validate_path(p, &mut sink).map_err(to_py)?,
                // Read as a stream from its start, by range requests, as
                // `warchest validate URL` reads it on one thread.
                #[cfg(feature = "remote")]
                Input::Url(u) => match warchest_remote::open(u) {
                    Ok(f) => v.validate_reader(u, f, &mut sink).map_err(to_py)?,
                    Err(e) => return Err(crate::io_to_py(e)),
                },
                Input::Archive(f) => match f.section() {
                    Ok(s) => v.validate_reader(&f.name, s, &mut sink).map_err(to_py)?,
                    Err(e) => return Err(to_py(e)),
                },
            };
            // An input with no record (empty, or not an archive) is not
            // judged but refused, as `warchest validate` refuses it
            // (exit 2) and `check` and `index` raise for it.
            if file.records == 0 {
                return Err(no_records(&input.name()));
            }
        }
        let summary = v.finish(&mut |f| findings.push(f));
        serde_json::to_string(&json!({
            "findings": findings,
            "summary": summary,
        }))
        .map_err(|e| PyValueError::new_err(e.to_string()))
    })
}

/// Converts the ARC, Web InfoMall (or WARC) file at `source` (a path or a
/// URL, the object read by range requests) to a WARC at `output` (a local
/// path; gzip per record): JSON of what was done. A `.wacz` (local or by
/// URL) is read as its archive files, all converted into the one output,
/// as `warchest convert x.wacz -o OUT` does (one report for them all; what
/// each recovered from told under its `FILE.wacz#archive/NAME`,
/// `URL#archive/NAME`). A source (or
/// an archive file of a WACZ) with no record is an `ArchiveError` and no
/// output is left.
#[pyfunction]
#[pyo3(signature = (source, output, warc_version = "1.1"))]
pub(crate) fn convert_json(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    output: PathBuf,
    warc_version: &str,
) -> PyResult<String> {
    let source = Target::from_py(source)?;
    let version = match warc_version {
        "1.1" => Version::V1_1,
        "1.0" => Version::V1_0,
        other => {
            return Err(PyValueError::new_err(format!(
                "warc_version must be '1.1' or '1.0', not {other:?}"
            )));
        }
    };
    refuse_overwriting(&output, &local_paths(std::slice::from_ref(&source)))?;
    let mut said = Vec::new();
    let mut open = None;
    let result = py.detach(|| -> PyResult<String> {
        // A WACZ refused before the output is made.
        let inputs = Input::of(&source)?;
        // Written as OUTPUT.open and renamed when whole (removed on error).
        let out = OpenFile::create(&output).map_err(to_py)?;
        open = Some(out.open_path().to_path_buf());
        let mut w = Writer::new(
            out,
            WriterOptions {
                compression: Compression::Gzip(6),
                ..WriterOptions::default()
            },
        )
        .map_err(to_py)?;
        let opts = warchest_ops::convert::WarcOptions {
            version,
            output_name: Some(base_name(&output)),
            ..Default::default()
        };
        let mut report = Report::default();
        for input in &inputs {
            let name = input.name();
            // The input's report holds its recoveries, those before an
            // error too: told for each input, as for each file of `index`.
            let mut rep = Report::default();
            let converted = with_input!(input, ReaderOptions::default(), reader => {
                warchest_ops::convert::to_warc(&mut reader, &name, &mut w, &opts, &mut rep)
            });
            said.extend(crate::scan::describe(&rep.recoveries, &Recoveries::new()));
            let read = rep.records_read;
            report.append(rep);
            converted.map_err(to_py)?;
            // As `warchest convert` refuses it: nothing converted is not
            // an empty archive but an input not read (the output is
            // removed).
            if read == 0 {
                return Err(no_records(&name));
            }
        }
        let out = w.finish().map_err(to_py)?;
        out.finish().map_err(to_py)?;
        serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))
    });
    if let (Err(_), Some(open)) = (&result, open) {
        let _ = std::fs::remove_file(open);
    }
    warn_then(py, said, result)
}
