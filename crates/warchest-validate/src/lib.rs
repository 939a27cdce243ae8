//! Conformance checking: every rule of ISO 28500 (WARC 1.0 and 1.1), the
//! compression containers, ARC and Web InfoMall, as [`Finding`]s.
//!
//! The rules are a table ([`rules::ALL`]): each has an id, a severity, the
//! clause it comes from and what it applies to. A [`Validator`] reads each
//! file once (header checks, digests, container checks and lenient-reader
//! recoveries in the same pass), reports every finding to a sink as it is
//! found and never stops at the first, and keeps a compact index of record
//! ids so that references between records, within a file and across the
//! files validated together, are checked at the end ([`Validator::finish`]).
//!
//! ```
//! use warchest_validate::{Options, Severity, Validator};
//! let data = b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n";
//! let mut findings = Vec::new();
//! let mut v = Validator::new(Options::default());
//! v.validate_reader("mem.warc", &data[..], &mut |f| findings.push(f))?;
//! let summary = v.finish(&mut |f| findings.push(f));
//! assert!(findings.iter().any(|f| f.rule == "warc.field.missing-mandatory"));
//! assert!(findings.iter().all(|f| f.severity != Severity::Info));
//! assert!(!summary.files[0].is_valid());
//! # Ok::<(), warchest::Error>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::Serialize;

use warchest::Limits;
use warchest::archive::{self, Format};
use warchest::codec::{Decoder, DecoderOptions, Source};
use warchest::error::{Error, Result};
use warchest::warc::{ReaderOptions, Version};

mod ahead;
mod arc;
mod container;
mod cross;
mod grammar;
mod infomall;
mod raw;
pub mod rules;
mod warc;

pub use rules::{AppliesTo, Rule, Severity};

/// One problem found: which rule, where, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's severity.
    pub severity: Severity,
    /// The rule's id (see [`rules::ALL`]).
    pub rule: &'static str,
    /// The clause of the specification the rule comes from.
    pub clause: &'static str,
    /// The file, as named to the validator.
    pub file: String,
    /// Byte offset in the file as stored (for compressed files, the start of
    /// the member holding the record), when the finding has a place.
    pub offset: Option<u64>,
    /// The WARC-Record-ID (or ARC/InfoMall URL) of the record, when known.
    pub record_id: Option<String>,
    /// What was found, in a sentence.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(o) = self.offset {
            write!(f, ": offset {o}")?;
        }
        if let Some(id) = &self.record_id {
            write!(f, " {id}")?;
        }
        write!(
            f,
            ": {} [{}] {} ({})",
            self.severity, self.rule, self.message, self.clause
        )
    }
}

/// The WARC version whose rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SpecVersion {
    /// ISO 28500:2009 (and the 0.16-0.18 drafts).
    #[serde(rename = "1.0")]
    V1_0,
    /// ISO 28500:2017.
    #[serde(rename = "1.1")]
    V1_1,
}

impl SpecVersion {
    /// Parses `1.0` or `1.1`.
    pub fn parse(s: &str) -> Option<SpecVersion> {
        match s.trim() {
            "1.0" => Some(SpecVersion::V1_0),
            "1.1" => Some(SpecVersion::V1_1),
            _ => None,
        }
    }

    /// The version line this spec version writes.
    pub fn version(self) -> Version {
        match self {
            SpecVersion::V1_0 => Version::V1_0,
            SpecVersion::V1_1 => Version::V1_1,
        }
    }
}

/// How to validate.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Judge every WARC record by this version's rules and report records
    /// whose version line says otherwise (default: each record by its own
    /// version line; 0.16-0.18 drafts by the 1.0 rules, unknown versions by
    /// the 1.1 rules).
    pub spec: Option<SpecVersion>,
    /// Report fields, record types, truncation reasons and profiles the
    /// specification does not define (`extension.*` rules).
    pub forbid_extensions: bool,
    /// Bounds on what the reader buffers.
    pub limits: Limits,
    /// Threads one file's validation may use (0: one per core). With more
    /// than one, records are judged on a thread of their own while the
    /// file is read and digested, and the members of a gzip file given by
    /// path are decoded ahead as `check` decodes them (on `threads - 1`
    /// threads and the reading one).
    pub threads: usize,
}

impl Options {
    /// [`Options::threads`], 0 resolved to the number of cores.
    fn threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }
}

/// Counts for one file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileSummary {
    /// The file, as named.
    pub file: String,
    /// Its format, when it could be read.
    pub format: Option<Format>,
    /// Records read.
    pub records: u64,
    /// Findings of each severity.
    pub errors: u64,
    /// Warnings.
    pub warnings: u64,
    /// Infos.
    pub infos: u64,
    /// True when the file could not be read (I/O error): its findings are
    /// incomplete.
    pub unreadable: bool,
}

impl FileSummary {
    /// No error (warnings allowed).
    pub fn is_valid(&self) -> bool {
        self.errors == 0 && !self.unreadable
    }

    /// No error and no warning (what JWAT calls compliant).
    pub fn is_clean(&self) -> bool {
        self.is_valid() && self.warnings == 0
    }

    fn count(&mut self, s: Severity) {
        match s {
            Severity::Error => self.errors += 1,
            Severity::Warning => self.warnings += 1,
            Severity::Info => self.infos += 1,
        }
    }
}

/// Counts over all files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Each file, in the order validated.
    pub files: Vec<FileSummary>,
    /// Findings per rule id.
    pub by_rule: BTreeMap<&'static str, u64>,
}

impl Summary {
    /// Records in all files.
    pub fn records(&self) -> u64 {
        self.files.iter().map(|f| f.records).sum()
    }

    /// Errors in all files.
    pub fn errors(&self) -> u64 {
        self.files.iter().map(|f| f.errors).sum()
    }

    /// Warnings in all files.
    pub fn warnings(&self) -> u64 {
        self.files.iter().map(|f| f.warnings).sum()
    }

    /// Infos in all files.
    pub fn infos(&self) -> u64 {
        self.files.iter().map(|f| f.infos).sum()
    }

    /// Files that could not be read.
    pub fn unreadable(&self) -> usize {
        self.files.iter().filter(|f| f.unreadable).count()
    }
}

/// Everything one run found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Every finding, in the order found (cross-record findings last).
    pub findings: Vec<Finding>,
    /// The counts.
    pub summary: Summary,
}

impl Report {
    /// The ids of the rules found, each once, sorted.
    pub fn rule_ids(&self) -> std::collections::BTreeSet<&'static str> {
        self.findings.iter().map(|f| f.rule).collect()
    }
}

/// Where a finding is: offset and record.
#[derive(Debug, Clone, Default)]
pub(crate) struct At {
    pub offset: Option<u64>,
    pub record_id: Option<String>,
}

impl At {
    pub(crate) fn offset(offset: u64) -> At {
        At {
            offset: Some(offset),
            record_id: None,
        }
    }

    pub(crate) fn record(offset: u64, record_id: Option<&str>) -> At {
        At {
            offset: Some(offset),
            record_id: record_id.map(str::to_owned),
        }
    }
}

/// Where findings go: the caller's sink (through [`Out`]), or a [`Batch`]
/// carried back from the thread that checks WARC records.
pub(crate) trait Emit {
    /// The file being validated.
    fn file(&self) -> usize;
    /// The name of file `i`.
    fn file_name(&self, i: usize) -> String;
    /// A finding of `rule` in file `file`.
    fn emit(&mut self, file: usize, rule: &'static Rule, at: &At, message: String);
    /// True when a finding of `rule` in the current file would only be
    /// counted: an info reported before in the file (see [`Out::push_to`]),
    /// whose place and message are not shown.
    fn counted_only(&self, rule: &'static Rule) -> bool;
}

impl dyn Emit + '_ {
    pub(crate) fn push(&mut self, rule: &'static Rule, at: &At, message: impl Into<String>) {
        let f = self.file();
        self.emit(f, rule, at, message.into());
    }

    pub(crate) fn push_to(
        &mut self,
        file: usize,
        rule: &'static Rule,
        at: &At,
        message: impl Into<String>,
    ) {
        self.emit(file, rule, at, message.into());
    }

    /// [`push`](Self::push) with the message built only when it is shown:
    /// for infos that may be made on every record, which are counted, not
    /// shown, after the first.
    pub(crate) fn push_with(
        &mut self,
        rule: &'static Rule,
        at: &At,
        message: impl FnOnce() -> String,
    ) {
        let f = self.file();
        if self.counted_only(rule) {
            self.emit(f, rule, &At::default(), String::new());
        } else {
            self.emit(f, rule, at, message());
        }
    }
}

/// Findings gathered away from the sink, to be passed on in order.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub(crate) file: usize,
    pub(crate) names: Vec<String>,
    pub(crate) items: Vec<(usize, &'static Rule, At, String)>,
    /// Infos of the file made so far (by this batch and those before it).
    pub(crate) infos: Vec<&'static str>,
}

impl Emit for Batch {
    fn file(&self) -> usize {
        self.file
    }

    fn file_name(&self, i: usize) -> String {
        self.names.get(i).cloned().unwrap_or_default()
    }

    fn emit(&mut self, file: usize, rule: &'static Rule, at: &At, message: String) {
        if rule.severity == Severity::Info && file == self.file && !self.infos.contains(&rule.id) {
            self.infos.push(rule.id);
        }
        self.items.push((file, rule, at.clone(), message));
    }

    fn counted_only(&self, rule: &'static Rule) -> bool {
        rule.severity == Severity::Info && self.infos.contains(&rule.id)
    }
}

impl Emit for Out<'_> {
    fn file(&self) -> usize {
        self.file
    }

    fn file_name(&self, i: usize) -> String {
        Out::file_name(self, i)
    }

    fn emit(&mut self, file: usize, rule: &'static Rule, at: &At, message: String) {
        self.push_to(file, rule, at, message);
    }

    fn counted_only(&self, rule: &'static Rule) -> bool {
        rule.severity == Severity::Info && self.infos.iter().any(|i| i.0.rule == rule.id)
    }
}

/// Where findings go: the caller's sink, counted per file.
pub(crate) struct Out<'a> {
    sink: &'a mut dyn FnMut(Finding),
    summary: &'a mut Summary,
    pub(crate) file: usize,
    /// Infos of the file, each rule reported once with a count: they
    /// describe how a writer works and would repeat on every record.
    infos: Vec<(Finding, u64)>,
}

impl Out<'_> {
    pub(crate) fn push(&mut self, rule: &'static Rule, at: &At, message: impl Into<String>) {
        self.push_to(self.file, rule, at, message);
    }

    /// A finding in another file (cross-record findings at the end).
    pub(crate) fn push_to(
        &mut self,
        file: usize,
        rule: &'static Rule,
        at: &At,
        message: impl Into<String>,
    ) {
        let Some(fs) = self.summary.files.get_mut(file) else {
            return;
        };
        if rule.severity == Severity::Info
            && let Some(i) = self.infos.iter_mut().find(|i| i.0.rule == rule.id)
        {
            i.1 += 1;
            return;
        }
        fs.count(rule.severity);
        *self.summary.by_rule.entry(rule.id).or_default() += 1;
        let f = Finding {
            severity: rule.severity,
            rule: rule.id,
            clause: rule.clause,
            file: fs.file.clone(),
            offset: at.offset,
            record_id: at.record_id.clone(),
            message: message.into(),
        };
        if rule.severity == Severity::Info {
            self.infos.push((f, 1));
        } else {
            (self.sink)(f);
        }
    }

    /// Reports the infos held back, each with the number of its records.
    pub(crate) fn flush_infos(&mut self) {
        for (mut f, n) in std::mem::take(&mut self.infos) {
            if n > 1 {
                f.message = format!("{} ({n} times in the file; the first is shown)", f.message);
            }
            (self.sink)(f);
        }
    }

    /// The name of file `i`.
    pub(crate) fn file_name(&self, i: usize) -> String {
        self.summary
            .files
            .get(i)
            .map(|f| f.file.clone())
            .unwrap_or_default()
    }

    /// The names of the files so far.
    pub(crate) fn file_names(&self) -> Vec<String> {
        self.summary.files.iter().map(|f| f.file.clone()).collect()
    }

    /// Passes on what a [`Batch`] gathered.
    pub(crate) fn forward(&mut self, batch: Batch) {
        for (file, rule, at, message) in batch.items {
            self.push_to(file, rule, &at, message);
        }
    }

    pub(crate) fn file_summary(&mut self) -> &mut FileSummary {
        let i = self.file;
        &mut self.summary.files[i]
    }
}

/// Validates files one after the other, then the references between them.
pub struct Validator {
    opts: Options,
    index: cross::Index,
    summary: Summary,
}

impl Validator {
    /// A validator with `opts`.
    pub fn new(opts: Options) -> Validator {
        Validator {
            opts,
            index: cross::Index::default(),
            summary: Summary::default(),
        }
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Validates the file at `path`, reporting each finding to `sink`.
    ///
    /// # Errors
    /// The file cannot be opened or read (an I/O error): what was found
    /// before is reported, and the file is counted as unreadable.
    pub fn validate_path(
        &mut self,
        path: impl AsRef<Path>,
        sink: &mut dyn FnMut(Finding),
    ) -> Result<FileSummary> {
        let path = path.as_ref();
        let name = path.display().to_string();
        match File::open(path) {
            Ok(f) => {
                let threads = self.opts.threads();
                self.validate_with(&name, sink, |dopts| open_file(f, threads, dopts))
            }
            Err(e) => {
                self.summary.files.push(FileSummary {
                    file: name,
                    unreadable: true,
                    ..FileSummary::default()
                });
                Err(Error::from(e).in_file(path))
            }
        }
    }

    /// Validates the source `src` (an object in a store, say), named `name`
    /// in findings: as [`Validator::validate_path`] does a file, a gzip
    /// source is decoded ahead, as `check` decodes it, on threads that
    /// read it at offsets.
    ///
    /// # Errors
    /// Reading failed (an I/O error); see [`Validator::validate_path`].
    pub fn validate_read_at(
        &mut self,
        name: &str,
        src: std::sync::Arc<dyn warchest::io::ReadAt>,
        sink: &mut dyn FnMut(Finding),
    ) -> Result<FileSummary> {
        let threads = self.opts.threads();
        self.validate_with(name, sink, |dopts| open_read_at(src, name, threads, dopts))
    }

    /// Validates the file read from `input`, named `name` in findings. The
    /// counts returned do not include the cross-record findings
    /// [`Validator::finish`] reports later (its [`Summary`] does).
    ///
    /// # Errors
    /// Reading failed (an I/O error); see [`Validator::validate_path`].
    pub fn validate_reader<R: Read>(
        &mut self,
        name: &str,
        input: R,
        sink: &mut dyn FnMut(Finding),
    ) -> Result<FileSummary> {
        self.validate_with(name, sink, |dopts| {
            Ok((
                Decoder::new(container::Observed::new(input), dopts),
                false,
                None,
            ))
        })
    }

    /// Validates the file `open` gives a decoder over (and whether that
    /// decoder inflates on threads of its own).
    fn validate_with<R: Read>(
        &mut self,
        name: &str,
        sink: &mut dyn FnMut(Finding),
        open: impl FnOnce(DecoderOptions) -> Result<Opened<R>>,
    ) -> Result<FileSummary> {
        let file = self.summary.files.len();
        self.summary.files.push(FileSummary {
            file: name.to_owned(),
            ..FileSummary::default()
        });
        let mut out = Out {
            sink,
            summary: &mut self.summary,
            file,
            infos: Vec::new(),
        };
        let r = run_file(&self.opts, &mut self.index, name, open, &mut out);
        out.flush_infos();
        if r.is_err() {
            out.file_summary().unreadable = true;
        }
        let snapshot = self.summary.files[file].clone();
        // The error names the file (a read failing past the open did not).
        r.map(|()| snapshot).map_err(|e| e.in_file(name))
    }

    /// Checks the references between all the records read (missing
    /// targets, continuation chains, capture-event dates), reports those
    /// findings, and returns the counts.
    pub fn finish(mut self, sink: &mut dyn FnMut(Finding)) -> Summary {
        let mut out = Out {
            sink,
            summary: &mut self.summary,
            file: 0,
            infos: Vec::new(),
        };
        self.index.finish(&mut out);
        out.flush_infos();
        self.summary
    }
}

/// A decoder over a file to validate, whether it inflates on threads (the
/// parallel member decoder) rather than on the reading one, and, for an
/// uncompressed local file read on more than one thread, the file read at
/// offsets (its records hashed ahead: [`ahead`]).
type Opened<R> = (
    Decoder<container::Observed<R>>,
    bool,
    Option<std::sync::Arc<dyn warchest::io::ReadAt>>,
);

/// Reads one file and validates it.
fn run_file<R: Read>(
    opts: &Options,
    index: &mut cross::Index,
    name: &str,
    open: impl FnOnce(DecoderOptions) -> Result<Opened<R>>,
    out: &mut Out<'_>,
) -> Result<()> {
    let mut ropts = ReaderOptions::lenient().file(name);
    ropts.limits = opts.limits;
    let (mut src, decoded_on_threads, plain) = open(ropts.decoder.clone())?;
    let first = src.fill_buf()?;
    let mut format = Format::sniff(first).unwrap_or(Format::Warc);
    // An ARC file that lost its version block starts with a record's
    // header line: read it as ARC, whose rules report the missing block.
    if format == Format::Warc && Format::sniff(first).is_none() {
        let line = first.split(|&b| b == b'\n').next().unwrap_or_default();
        if arc::looks_like_header(line) {
            format = Format::Arc;
        }
    }
    out.file_summary().format = Some(format);
    match format {
        Format::Arc | Format::InfoMall => {
            // ARC and InfoMall rules run over the decompressed bytes of the
            // source, where they see what the readers would have repaired.
            if format == Format::Arc {
                arc::validate_source(&mut src, opts, out)?;
            } else {
                infomall::validate_source(&mut src, opts, out)?;
            }
            container::finish_file(&mut src, out);
            Ok(())
        }
        _ => {
            let mut reader = archive::Reader::from_source_as(src, ropts, Format::Warc);
            // The rules run on a thread of their own when there is a core
            // for it. With `-j 2` and a gzip file decoded on both cores,
            // there is none: the pool and the reading thread share out the
            // inflate and the hashing (the reading thread takes a job when
            // the pool has not started it), so the rules, judged on the
            // reading thread, cost only their own CPU. A third thread cost
            // more: the hand-over, its wake-ups and the headers read on
            // another core (docs/performance-history.md, "Round twelve").
            let threads = opts.threads();
            // With two, a plain file's second core hashes ahead (below):
            // the rules are judged on the reading thread.
            let checking_thread =
                threads > 2 || (threads == 2 && !decoded_on_threads && plain.is_none());
            // An uncompressed file's records are hashed ahead on a thread
            // of their own, the reading thread hashing only those it
            // reaches first (see `ahead`).
            let Some(plain) = plain else {
                return warc::validate_file(&mut reader, checking_thread, opts, index, None, out);
            };
            let ahead = ahead::Ahead::default();
            std::thread::scope(|scope| {
                scope.spawn(|| ahead.walk(plain, name, opts.limits));
                // Stopped however the reading ends (the scope waits for
                // the walker).
                let _stop = ahead::StopOnDrop(&ahead);
                warc::validate_file(&mut reader, checking_thread, opts, index, Some(&ahead), out)
            })
        }
    }
}

/// A decoder over a file to validate. A gzip file is decoded ahead on
/// `threads` threads (the reading one among them; the zstd frame walker, which must see every stored byte, has
/// nothing to watch there); any other file is read in order, as a stream.
fn open_file(mut f: File, threads: usize, mut dopts: DecoderOptions) -> Result<Opened<File>> {
    let mut magic = [0u8; MAGIC];
    let n = warchest::io::read_up_to(&mut f, &mut magic)?;
    f.seek(SeekFrom::Start(0))?;
    if threads > 1 && n >= 2 && magic[..2] == [0x1f, 0x8b] {
        // Decoded as `check` decodes (`threads` jobs in flight and a
        // pool of `threads - 1`): with `threads - 1` (half the jobs in
        // flight on 2 cores) the reading thread ran more of the inflate
        // jobs itself (0.1 s of CPU more on the benchmark corpus; see
        // docs/performance-history.md, validate round six). The rules then run on
        // the reading thread with `-j 2`, on a thread of their own with
        // more (see `run_file`). Peak RSS stays under the 64 MiB bound
        // because the hand-over holds fewer records (see `warc::GROUP`).
        dopts.threads = threads;
        // The jobs also hash each member's block: the reading thread,
        // the critical one, frames and hands over, the pool inflates and
        // digests (docs/performance-history.md, "validate, round eleven").
        dopts.member_digests = true;
        let shared = f.try_clone()?;
        let src = container::Observed::unwatched(f);
        return Ok((
            Decoder::new_seekable_threaded(src, Some(shared), dopts)?,
            true,
            None,
        ));
    }
    let plain = if threads > 1 && uncompressed(&magic[..n]) {
        let shared: std::sync::Arc<dyn warchest::io::ReadAt> = std::sync::Arc::new(f.try_clone()?);
        Some(shared)
    } else {
        None
    };
    Ok((
        Decoder::new(container::Observed::new(f), dopts),
        false,
        plain,
    ))
}

/// Bytes looked at to tell a compressed file.
const MAGIC: usize = 16;

/// Whether a file starting with `magic` is not compressed in any codec
/// the decoder knows.
fn uncompressed(magic: &[u8]) -> bool {
    !magic.is_empty() && warchest::codec::Codec::sniff(magic).is_none()
}

/// [`open_file`] for a [`warchest::io::ReadAt`] source.
fn open_read_at(
    src: std::sync::Arc<dyn warchest::io::ReadAt>,
    name: &str,
    threads: usize,
    mut dopts: DecoderOptions,
) -> Result<Opened<warchest::io::AtCursor>> {
    let mut magic = [0u8; MAGIC];
    let mut cur = warchest::io::AtCursor::new(std::sync::Arc::clone(&src), name, 0);
    let n = warchest::io::read_up_to(&mut cur, &mut magic)?;
    cur.seek(SeekFrom::Start(0))?;
    if threads > 1 && n >= 2 && magic[..2] == [0x1f, 0x8b] {
        // As for a file (see there): decoded as `check` decodes, the
        // jobs hashing each member's block.
        dopts.threads = threads;
        dopts.member_digests = true;
        let obs = container::Observed::unwatched(cur);
        return Ok((
            Decoder::new_seekable_shared(obs, Some(src), dopts)?,
            true,
            None,
        ));
    }
    // Not hashed ahead: a second reader of every byte of an object in a
    // store would fetch it twice.
    Ok((
        Decoder::new(container::Observed::new(cur), dopts),
        false,
        None,
    ))
}

/// Validates `paths` together and returns every finding. A file that cannot
/// be read is counted as unreadable ([`Summary::unreadable`]) and the others
/// are still validated.
pub fn validate_files<P: AsRef<Path>>(paths: &[P], opts: &Options) -> Report {
    let mut findings = Vec::new();
    let mut v = Validator::new(opts.clone());
    for p in paths {
        let _ = v.validate_path(p, &mut |f| findings.push(f));
    }
    let summary = v.finish(&mut |f| findings.push(f));
    Report { findings, summary }
}
