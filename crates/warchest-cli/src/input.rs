//! Opening inputs: files by path (seekable, so skipped payloads are sought
//! past), `-` for standard input, and WARC files inside a WACZ, named
//! `FILE.wacz#archive/NAME` ([`expand`] turns a WACZ into those names),
//! and objects named by URL (`s3://`, `gs://`, `az://`, `http(s)://`: read
//! by range requests; [`expand`] lists a prefix or a `*` glob).

use std::fs::File;
use std::io::{Stdin, Write};
use std::sync::Arc;

use warchest::archive::Reader;
use warchest::codec::Decoder;
use warchest::io::ReadAt;
use warchest::warc::ReaderOptions;

/// A reader over a file or standard input.
pub enum Opened {
    /// A file.
    File(Reader<Decoder<File>>),
    /// Standard input.
    Stdin(Reader<Decoder<Stdin>>),
    /// A WARC file stored in a WACZ.
    Wacz(Reader<Decoder<warchest_wacz::Section>>),
    /// An object in a store or on an HTTP server.
    #[cfg(feature = "remote")]
    Remote(Reader<Decoder<crate::remote::File>>),
    /// A source read at offsets by several threads (`-j` more than 1): an
    /// object by URL, read in blocks fetched ahead, or a WARC file stored
    /// in a WACZ (see [`positioned`]).
    At(Reader<Decoder<warchest::io::AtCursor>>),
}

/// The names to read for `files`: each WACZ becomes the names of the
/// archive files inside it (`FILE.wacz#archive/NAME`, `URL#archive/NAME`
/// for one named by URL); other names stay. A WACZ that cannot be listed
/// stays as it is, for opening to report. A URL ending in `/` or with `*`
/// in its last component becomes the URLs of the objects it lists (a URL
/// of one object stays).
pub fn expand(files: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        if crate::remote::is_remote(f) {
            let last = f.rsplit('/').next().unwrap_or("");
            let urls = if f.ends_with('/') || last.contains('*') {
                crate::remote::expand(f)
            } else {
                vec![f.clone()]
            };
            for u in urls {
                if warchest_wacz::is_wacz(std::path::Path::new(&u))
                    && let Ok(entries) = crate::remote::wacz_archive_entries(&u)
                    && !entries.is_empty()
                {
                    out.extend(entries.into_iter().map(|e| format!("{u}#{}", e.name)));
                } else {
                    out.push(u);
                }
            }
            continue;
        }
        let p = std::path::Path::new(f);
        // One with no archive file stays too: opening it says so.
        if f != "-"
            && warchest_wacz::is_wacz(p)
            && let Ok(entries) = warchest_wacz::archive_entries(p)
            && !entries.is_empty()
        {
            out.extend(entries.into_iter().map(|e| format!("{f}#{}", e.name)));
        } else {
            out.push(f.clone());
        }
    }
    out
}

/// Refuses an `output` that is one of `inputs`: the same name (a URL
/// too), or, for local files, another name of one (`./a.warc`, a hard
/// link) or its `.open` file (`warchest_ops::copy::output_overwrites`).
/// Writing it would destroy the input being read.
pub fn refuse_overwriting(output: &str, inputs: &[String]) -> anyhow::Result<()> {
    if output == "-" {
        return Ok(());
    }
    if inputs.iter().any(|i| i == output) {
        anyhow::bail!("the output {output} is also an input");
    }
    if crate::remote::is_remote(output) {
        return Ok(());
    }
    let local: Vec<&str> = inputs
        .iter()
        .map(String::as_str)
        .filter(|i| *i != "-" && !crate::remote::is_remote(i))
        .collect();
    if let Some(i) = warchest_ops::copy::output_overwrites(std::path::Path::new(output), &local) {
        anyhow::bail!("the output {output} is also an input ({i})");
    }
    Ok(())
}

/// Inputs named more than once (the same name, or for local files another
/// name of the same file, `./a.warc` or a hard link:
/// `warchest_ops::copy::file_id`), each with how many times, in the order
/// first named. Standard input is not counted (read once).
pub fn repeated(inputs: &[String]) -> Vec<(&str, usize)> {
    #[derive(PartialEq, Eq, Hash)]
    enum Key {
        File(warchest_ops::copy::FileId),
        Name(String),
    }
    let mut order: Vec<(&str, usize)> = Vec::new();
    let mut at: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
    for i in inputs.iter().filter(|i| *i != "-") {
        let key = (!crate::remote::is_remote(i))
            .then(|| warchest_ops::copy::file_id(std::path::Path::new(i)))
            .flatten()
            .map_or_else(|| Key::Name(i.clone()), Key::File);
        match at.get(&key) {
            Some(&k) => order[k].1 += 1,
            None => {
                at.insert(key, order.len());
                order.push((i, 1));
            }
        }
    }
    order.retain(|(_, n)| *n > 1);
    order
}

/// Says on stderr (unless `-q`) of each input named more than once
/// ([`repeated`]) that a command writing every input's records into one
/// sequence writes its records that many times (a copy repeats their
/// WARC-Record-IDs): as `cat` would, but not silently.
pub fn warn_repeated(g: &crate::report::Global, inputs: &[String]) {
    if g.quiet {
        return;
    }
    for (name, n) in repeated(inputs) {
        eprintln!("warchest: {name} is named {n} times: its records are written {n} times");
    }
}

/// Why the local `.wacz` file `name` gives no archive file to read, when
/// it gives none: it has nothing under `archive/`, or it cannot be listed
/// (not a ZIP, an archive file compressed in it). [`expand`] leaves such
/// a name as it is; opening it says why, instead of reading the ZIP's
/// bytes as an archive or reading nothing.
pub fn unlisted_wacz(name: &str) -> Option<warchest::Error> {
    let p = std::path::Path::new(name);
    if name == "-" || !warchest_wacz::is_wacz(p) {
        return None;
    }
    if crate::remote::is_remote(name) {
        return match crate::remote::wacz_archive_entries(name) {
            Ok(entries) => warchest_wacz::some_of(entries, p).err(),
            Err(e) => Some(e),
        };
    }
    if !p.is_file() {
        return None;
    }
    warchest_wacz::some_archive_entries(p).err()
}

/// The WACZ URL and the entry of `name` when it names an archive file in
/// a WACZ by URL (`URL#archive/NAME`, as [`expand`] names them).
pub fn remote_member(name: &str) -> Option<(&str, &str)> {
    if !crate::remote::is_remote(name) {
        return None;
    }
    warchest_wacz::split_at_wacz(name)
}

/// The archive file `entry` of the WACZ object at `url`, read at offsets
/// where it lies in the object (one range request per block).
///
/// # Errors
/// The WACZ cannot be listed, has no such archive file, its server
/// answers no byte ranges (a ZIP is read from its end, by ranges), or it
/// is not the size it was listed at (replaced during the run: the
/// archive file is no longer where its directory said).
pub fn open_remote_member(url: &str, entry: &str) -> warchest::Result<Arc<dyn ReadAt>> {
    let named = |what: String| {
        warchest::Error::new(warchest::ErrorKind::Usage(what)).in_file(std::path::Path::new(url))
    };
    let (listed, entries) = crate::remote::wacz_listing(url)?;
    let e = entries
        .into_iter()
        .find(|e| e.name == entry)
        .ok_or_else(|| named(format!("no archive file {entry} in the WACZ")))?;
    let src = crate::remote::open_read_at(url)
        .map_err(|e| warchest::Error::from(e).in_file(std::path::Path::new(url)))?
        .ok_or_else(|| {
            named("its server answers no byte ranges, which a WACZ is read by".into())
        })?;
    let now = src
        .size()
        .map_err(|e| warchest::Error::from(e).in_file(std::path::Path::new(url)))?;
    if now != listed {
        return Err(warchest_wacz::replaced_since_listed(
            std::path::Path::new(url),
            listed,
            now,
        ));
    }
    Ok(Arc::new(warchest::io::Slice::new(
        src,
        e.data_start,
        e.compressed_size,
    )))
}

/// Opens `FILE.wacz#ENTRY`, when `name` is such a name.
fn open_member(name: &str) -> Option<warchest::Result<warchest_wacz::Section>> {
    let (wacz, entry) = warchest_wacz::split_member_name(name)?;
    Some(warchest_wacz::open_member(
        std::path::Path::new(wacz),
        entry,
    ))
}

/// The source of `name` read at offsets by several threads at once, for a
/// read on more than one thread: an object named by URL (one range
/// request per block, blocks fetched ahead of the readers) or a WARC file
/// stored in a WACZ (a byte range of the ZIP file). `None` for standard
/// input and local files (read through handles of their own, mapped), and
/// for a server that answers no byte ranges (read as a stream instead).
///
/// # Errors
/// The object or the WACZ cannot be opened (the error names it).
pub fn positioned(name: &str) -> warchest::Result<Option<Arc<dyn ReadAt>>> {
    let locate = |e: std::io::Error| warchest::Error::from(e).in_file(std::path::Path::new(name));
    if name == "-" {
        Ok(None)
    } else if let Some((url, entry)) = remote_member(name) {
        open_remote_member(url, entry).map(Some)
    } else if crate::remote::is_remote(name) {
        crate::remote::open_read_at(name).map_err(locate)
    } else if let Some((wacz, entry)) = warchest_wacz::split_member_name(name) {
        let s = warchest_wacz::open_member_at(std::path::Path::new(wacz), entry)?;
        Ok(Some(Arc::new(s)))
    } else {
        Ok(None)
    }
}

/// Opens `src`, the source of `name` (from [`positioned`]), for reading
/// with `opts`: compressed members are decoded on `opts.decoder.threads`
/// threads reading it at offsets.
pub fn open_positioned(
    name: &str,
    src: Arc<dyn ReadAt>,
    opts: ReaderOptions,
) -> warchest::Result<Opened> {
    let locate = |e: std::io::Error| warchest::Error::from(e).in_file(std::path::Path::new(name));
    let d = Decoder::new_read_at(src, name, opts.decoder.clone()).map_err(locate)?;
    Ok(Opened::At(Reader::from_source(d, opts)?))
}

/// Environment knob (tests): a file to which one line of counts is
/// appended per file read in chunks.
const TRACE_KNOB: &str = "WARCHEST_PLAIN_TRACE";

/// How a command that reads records in order reads one input on its
/// threads ([`chunked`]).
pub enum Chunked {
    /// An uncompressed WARC file, in chunks.
    Chunks(Chunks),
    /// Anything else, opened (compressed members decoded on the threads).
    No(Opened),
}

/// An uncompressed WARC file to read in chunks, as `plan` says.
pub struct Chunks {
    /// Read at offsets (a URL, a WACZ member), or `None`: a local file,
    /// read by its name.
    src: Option<Arc<dyn ReadAt>>,
    pub plan: warchest::chunks::Plan,
}

impl Chunks {
    /// Where the chunks of `name` are read.
    pub fn input<'a>(&'a self, name: &'a str) -> warchest::chunks::Input<'a> {
        match &self.src {
            Some(src) => warchest::chunks::Input::At(src),
            None => warchest::chunks::Input::Path(std::path::Path::new(name)),
        }
    }
}

/// How `name` is read on `threads`: in chunks when it is an uncompressed
/// WARC file worth it, a local file or a source read at offsets (the
/// library's [`warchest::chunks::plan`] and [`warchest::chunks::plan_at`]), else opened as
/// [`input::open`] does, the source read at offsets shared.
pub fn chunked(name: &str, threads: usize, opts: &ReaderOptions) -> warchest::Result<Chunked> {
    if let Some(e) = unlisted_wacz(name) {
        return Err(e);
    }
    let knob = warchest::chunks::knob;
    if threads > 1
        && let Some(src) = positioned(name)?
    {
        if let Some(plan) = warchest::chunks::plan_at(&*src, threads, knob()) {
            let src = Some(src);
            return Ok(Chunked::Chunks(Chunks { src, plan }));
        }
        return Ok(Chunked::No(open_positioned(name, src, opts.clone())?));
    }
    if threads > 1
        && name != "-"
        && !crate::remote::is_remote(name)
        && warchest_wacz::split_member_name(name).is_none()
        && let Some(plan) = warchest::chunks::plan(std::path::Path::new(name), threads, knob())
    {
        return Ok(Chunked::Chunks(Chunks { src: None, plan }));
    }
    // On more than one thread `positioned` was asked above: not again (for
    // a server that answers no ranges, its probe is a request).
    Ok(Chunked::No(if threads > 1 {
        open_in_order(name, opts.clone())?
    } else {
        open_listed(name, opts.clone())?
    }))
}

/// Appends the counts of a chunked read to the trace knob's file.
pub fn write_trace(trace: &warchest::chunks::Trace) {
    if let Some(t) = std::env::var_os(TRACE_KNOB) {
        let line = format!(
            "chunks {} used {} false_starts {} sequential_runs {} sequential_records {}\n",
            trace.chunks,
            trace.used,
            trace.false_starts,
            trace.sequential_runs,
            trace.sequential_records
        );
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(t)
            .and_then(|mut f| f.write_all(line.as_bytes()));
    }
}

/// Opens `name` (`-` is standard input) for reading with `opts`; on more
/// than one thread a URL or a WACZ member is read at offsets
/// ([`positioned`]).
pub fn open(name: &str, opts: ReaderOptions) -> warchest::Result<Opened> {
    if let Some(e) = unlisted_wacz(name) {
        return Err(e);
    }
    open_listed(name, opts)
}

/// Opens `name` as [`open`] does, its WACZ already listed (a WACZ is
/// listed once a command: the listing reads its central directory).
fn open_listed(name: &str, opts: ReaderOptions) -> warchest::Result<Opened> {
    if opts.decoder.threads > 1
        && let Some(src) = positioned(name)?
    {
        return open_positioned(name, src, opts);
    }
    open_in_order(name, opts)
}

/// Opens `name` as [`open`] does when it is not read at offsets.
fn open_in_order(name: &str, opts: ReaderOptions) -> warchest::Result<Opened> {
    Ok(if name == "-" {
        Opened::Stdin(Reader::with_options(std::io::stdin(), opts)?)
    } else if let Some((url, entry)) = remote_member(name) {
        open_positioned(name, open_remote_member(url, entry)?, opts)?
    } else if crate::remote::is_remote(name) {
        open_remote(name, opts)?
    } else if let Some(section) = open_member(name) {
        let src = Decoder::new_seekable(section?, opts.decoder.clone())?;
        Opened::Wacz(Reader::from_source(src, opts)?)
    } else {
        Opened::File(Reader::open_with(name, opts)?)
    })
}

#[cfg(feature = "remote")]
fn open_remote(name: &str, opts: ReaderOptions) -> warchest::Result<Opened> {
    // One thread, or a server that answers no ranges (see [`open`]): read
    // from the start by one thread, as a sequential read needs no ranges.
    let locate = |e: std::io::Error| warchest::Error::from(e).in_file(std::path::Path::new(name));
    let f = crate::remote::open(name).map_err(locate)?;
    let src = Decoder::new_seekable(f, opts.decoder.clone()).map_err(locate)?;
    Ok(Opened::Remote(Reader::from_source(src, opts)?))
}

#[cfg(not(feature = "remote"))]
fn open_remote(name: &str, _opts: ReaderOptions) -> warchest::Result<Opened> {
    Err(warchest::Error::from(
        crate::remote::open_stream(name)
            .err()
            .unwrap_or_else(|| std::io::Error::other("remote")),
    )
    .in_file(std::path::Path::new(name)))
}

/// Opens `name` (`-` is standard input) as a plain byte stream, for
/// commands that read every byte anyway.
pub fn open_stream(name: &str) -> std::io::Result<Box<dyn std::io::Read + Send>> {
    Ok(if name == "-" {
        Box::new(std::io::stdin())
    } else if let Some((url, entry)) = remote_member(name) {
        let src = open_remote_member(url, entry).map_err(std::io::Error::other)?;
        Box::new(warchest::io::AtCursor::new(src, name, 0))
    } else if crate::remote::is_remote(name) {
        crate::remote::open_stream(name)?
    } else if let Some(section) = open_member(name) {
        Box::new(section.map_err(std::io::Error::other)?)
    } else {
        Box::new(
            File::open(name).map_err(|e| std::io::Error::new(e.kind(), format!("{name}: {e}")))?,
        )
    })
}

/// Runs `$body` with `$r` bound to the reader, whichever kind it is.
macro_rules! with_reader {
    ($opened:expr, $r:ident => $body:expr) => {
        match $opened {
            $crate::input::Opened::File($r) => $body,
            $crate::input::Opened::Stdin($r) => $body,
            $crate::input::Opened::Wacz($r) => $body,
            #[cfg(feature = "remote")]
            $crate::input::Opened::Remote($r) => $body,
            $crate::input::Opened::At($r) => $body,
        }
    };
}
pub(crate) use with_reader;

use warchest::archive::no_records_message;

/// An input in which no record of any format is found (an empty file
/// included), or a WACZ none of whose archive files can be read (said as
/// its own error): every command refuses it with exit 2. The message gives the
/// file's size when it is a file.
#[derive(Debug)]
pub struct NoRecords {
    name: String,
    bytes: Option<u64>,
    /// Why a WACZ gives no archive file to read ([`unlisted_wacz`]): said
    /// instead.
    wacz: Option<warchest::Error>,
}

impl NoRecords {
    /// The error for `name`.
    pub fn new(name: &str) -> NoRecords {
        let bytes = if name == "-" {
            None
        } else if crate::remote::is_remote(name) {
            crate::remote::size(name).ok()
        } else {
            std::fs::metadata(name).ok().map(|m| m.len())
        };
        NoRecords {
            name: name.to_string(),
            bytes,
            wacz: None,
        }
    }
}

impl std::fmt::Display for NoRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(e) = &self.wacz {
            return write!(f, "{e}");
        }
        f.write_str(&no_records_message(&self.name))?;
        match self.bytes {
            Some(n) => write!(f, " ({n} bytes read)"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for NoRecords {}

/// The WARC version of `name`'s first record (1.1 when it has none, or
/// is not WARC), read as every command opens it (a WACZ's archive file,
/// an object by URL): what a file written from it declares.
pub fn version_of(name: &str) -> anyhow::Result<warchest::warc::Version> {
    // The errors name the file already (the reader is told it).
    let opened = open(name, ReaderOptions::lenient().file(name))?;
    let v = with_reader!(opened, r => {
        let mut r = r;
        match r.next_record()? {
            Some(rec) if rec.header().version() < warchest::warc::Version::V1_1 => {
                warchest::warc::Version::V1_0
            }
            _ => warchest::warc::Version::V1_1,
        }
    });
    Ok(v)
}

/// Refuses a WACZ, or an archive file in one (`FILE.wacz#archive/NAME`),
/// among `names`, for `command`, which reads its inputs as files on disk
/// (it writes beside them, or reads their bytes as stored): without
/// this, the ZIP's bytes were read as an archive and found to hold none.
pub fn refuse_wacz(command: &str, names: &[String]) -> anyhow::Result<()> {
    for n in names {
        let p = std::path::Path::new(n);
        let whole = n != "-" && warchest_wacz::is_wacz(p);
        if whole || warchest_wacz::split_member_name(n).is_some() {
            anyhow::bail!(
                "{n}: `warchest {command}` reads archive files on disk, not a WACZ or an archive \
                 file inside one; `unzip -j FILE.wacz 'archive/*'` gives them"
            );
        }
    }
    Ok(())
}

/// Fails with [`NoRecords`] when a lenient reader finds no record in
/// `name`. Only the first record's header is read (and what precedes it).
/// A file that cannot be opened or whose first record cannot be read
/// passes: the command reports that itself. Standard input is not looked
/// at (it can be read once only); the commands count what they read.
pub fn require_records(name: &str) -> Result<(), NoRecords> {
    if name == "-" {
        return Ok(());
    }
    // A WACZ none of whose archive files can be read: why, not "no record"
    // after its ZIP bytes were read by a command that opens streams.
    if let Some(e) = unlisted_wacz(name) {
        return Err(NoRecords {
            name: name.to_string(),
            bytes: None,
            wacz: Some(e),
        });
    }
    let opts = ReaderOptions::lenient().file(name);
    let Ok(opened) = open(name, opts) else {
        return Ok(());
    };
    let found = with_reader!(opened, r => {
        let mut r = r;
        !matches!(r.next_record(), Ok(None))
    });
    if found {
        Ok(())
    } else {
        Err(NoRecords::new(name))
    }
}

/// [`require_records`] for every input, before anything is written.
pub fn require_records_all(names: &[String]) -> anyhow::Result<()> {
    for n in names {
        require_records(n)?;
    }
    Ok(())
}

/// The HTTP server with ranges of warchest-remote's tests.
#[cfg(all(test, feature = "remote"))]
#[path = "../../warchest-remote/tests/it/servers.rs"]
mod test_servers;

#[cfg(all(test, feature = "remote"))]
mod tests {
    use super::*;

    /// A WACZ by URL replaced after it was listed (another size) is
    /// refused when an archive file of it is opened, naming both sizes,
    /// rather than read at offsets the new bytes do not keep.
    #[test]
    fn a_remote_wacz_replaced_after_its_listing_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sample =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.warc.gz");
        let wacz = dir.path().join("w.wacz");
        warchest_wacz::create(&[&sample], &wacz, &Default::default()).unwrap();
        let srv = test_servers::RangeServer::start(dir.path(), 5.0);
        let url = srv.url("w.wacz");
        let entry = "archive/sample.warc.gz";
        // As listed: read where the directory says.
        let src = open_remote_member(&url, entry).unwrap();
        let mut head = [0u8; 8];
        src.read_at(&mut head, 0).unwrap();
        assert_eq!(&head[..2], b"\x1f\x8b");
        // Replaced by a WACZ of two archive files: another size.
        let two = dir.path().join("two.wacz");
        let other = dir.path().join("other.warc.gz");
        std::fs::copy(&sample, &other).unwrap();
        warchest_wacz::create(&[&other, &sample], &two, &Default::default()).unwrap();
        std::fs::rename(&two, &wacz).unwrap();
        let err = open_remote_member(&url, entry).err().expect("refused");
        let msg = err.to_string();
        assert!(msg.starts_with(&url), "{msg}");
        assert!(msg.contains("it was replaced since"), "{msg}");
    }
}
