//! `warchest fetch`: the records an index selects, fetched by byte range
//! and written as a new archive, byte for byte as stored.

use std::io::{Read, Seek, SeekFrom, Write};

use anyhow::{Context, Result, bail};

use warchest_index::select::{CDX11, IndexEntry as Entry, Selection, parse_cdx, parse_cdxj};

use crate::report::{Global, Outcome};

/// Fetch the records an index selects into a new archive.
///
/// The index is a CDXJ or CDX file or a cc-index Parquet file (local or a
/// URL). Each selected record is read with one range request (its offset
/// and length) from the file the index names, resolved against --prefix,
/// and copied as stored: the output is the records' members, after a
/// warcinfo record that says which index and selection made it. Records
/// that follow each other in the index and lie close together in one object
/// are read with one request (--max-gap). Many requests are in flight at
/// once (--concurrency); a record that cannot be fetched is reported and the
/// rest go on (exit 1 at the end), as are index lines (or Parquet rows
/// without a usable offset or length) not understood. When nothing is
/// fetched no output is written.
///
/// Examples:
///   warchest fetch cc.cdxj --prefix https://data.commoncrawl.org/ \
///       --url-prefix https://example.com/ --status 200 -o sample.warc.gz
///   warchest fetch s3://bucket/index.cdxj --mime text/html --limit 1000 \
///       -j 64 -o s3://bucket/out/html.warc.gz
// Verbatim, so the examples keep their lines in --help.
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The index: CDXJ (`SURT TIMESTAMP {json}`), CDX (with its ` CDX `
    /// header line, or the 11 standard fields), plain or gzip-compressed
    /// (Common Crawl's `cdx-*.gz`), or a cc-index Parquet file (name ending
    /// in `.parquet`: Common Crawl's columns), a path or a URL.
    index: String,
    /// The output file or URL (`-` for standard output).
    #[arg(short, long)]
    output: String,
    /// Base that relative file names in the index are resolved against (a
    /// URL or a directory); default: the index's own directory.
    #[arg(long)]
    prefix: Option<String>,
    /// Only records whose URL starts with this.
    #[arg(long)]
    url_prefix: Option<String>,
    /// Only records whose SURT key starts with this.
    #[arg(long)]
    surt_prefix: Option<String>,
    /// Only records of this host (or its subdomains).
    #[arg(long)]
    host: Option<String>,
    /// Only records of this MIME type (as the index gives it).
    #[arg(long)]
    mime: Option<String>,
    /// Only records with this HTTP status.
    #[arg(long)]
    status: Option<u16>,
    /// Only records captured at or after this time (a 14-digit timestamp
    /// or any prefix of one: 2024, 202403...).
    #[arg(long)]
    from: Option<String>,
    /// Only records captured at or before this time (a prefix covers the
    /// whole period it names).
    #[arg(long)]
    to: Option<String>,
    /// At most this many records (0 selects none: nothing is written).
    #[arg(long)]
    limit: Option<u64>,
    /// Requests in flight at once.
    #[arg(short = 'j', long, default_value_t = 16)]
    concurrency: usize,
    /// Records of the same object at most this many bytes apart (and in
    /// the index's order) are read with one request, the bytes between them
    /// read and dropped; 0 makes one request per record. The default, 1 MiB,
    /// is object_store's for coalescing ranges.
    #[arg(long, value_name = "BYTES", default_value_t = MAX_GAP)]
    max_gap: u64,
}

/// The default of --max-gap: object_store's `OBJECT_STORE_COALESCE_DEFAULT`
/// (the remote crate's `DEFAULT_MAX_GAP`, checked by a test).
const MAX_GAP: u64 = 1 << 20;

/// The selection flags (warchest-index's [`Selection`]).
fn selection(a: &Args) -> Selection {
    Selection {
        url_prefix: a.url_prefix.clone(),
        surt_prefix: a.surt_prefix.clone(),
        host: a.host.clone(),
        mime: a.mime.clone(),
        status: a.status,
        from: a.from.clone(),
        to: a.to.clone(),
        limit: a.limit,
    }
}

/// Where the file `name` of an index entry is: as is when it is a URL or an
/// absolute path, else under `base`.
fn resolve(base: &str, name: &str) -> String {
    if crate::remote::is_remote(name) || name.starts_with('/') || base.is_empty() {
        return name.to_string();
    }
    if base.ends_with('/') {
        format!("{base}{name}")
    } else {
        format!("{base}/{name}")
    }
}

/// The selected entries of the index, in its order, and the number of its
/// lines (or Parquet rows) not understood.
fn select(args: &Args) -> Result<(Vec<Entry>, u64)> {
    if args.index.ends_with(".parquet") {
        return select_parquet(args, &selection(args));
    }
    let input =
        crate::input::open_stream(&args.index).with_context(|| format!("index {}", args.index))?;
    // A gzip index (Common Crawl's cdx-*.gz) is decoded as it is read.
    let mut input = warchest_index::reader::open(input, &args.index)
        .with_context(|| format!("index {}", args.index))?;
    let sel = selection(args);
    let mut fields: Option<Vec<String>> = None;
    let mut out = Vec::new();
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut bad = 0u64;
    let mut buf = Vec::new();
    let mut n = 0u64;
    // Lines are bounded: a corrupt index cannot exhaust memory. Reading
    // stops once `limit` entries are selected (none for --limit 0): the
    // rest of the index is neither read nor judged.
    while (out.len() as u64) < limit
        && warchest_index::reader::next_line(&mut input, &mut buf, &mut n).context("index")?
    {
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if let Some(h) = line.strip_prefix(" CDX ") {
            fields = Some(h.split_whitespace().map(str::to_string).collect());
            continue;
        }
        if line.starts_with('!') || line.starts_with('#') {
            continue;
        }
        // An archive given for its index would otherwise be read as lines
        // of nonsense CDX; say what it is and what to do instead.
        if n == 1 && (line.starts_with("WARC/") || line.starts_with("filedesc://")) {
            bail!(
                "{}: an archive, not an index (make one with `warchest index`)",
                args.index
            );
        }
        let entry = if line.contains(" {") {
            parse_cdxj(line)
        } else {
            let f = fields.get_or_insert_with(|| CDX11.iter().map(|s| s.to_string()).collect());
            parse_cdx(line, f)
        };
        let Some(e) = entry else {
            bad += 1;
            if bad <= 10 {
                eprintln!(
                    "warchest: {}: line {}: not an index line with a file, offset and length",
                    args.index, n
                );
            }
            continue;
        };
        if sel.matches(&e) {
            out.push(e);
        }
    }
    if bad > 10 {
        eprintln!(
            "warchest: {}: {} more lines not understood",
            args.index,
            bad - 10
        );
    }
    Ok((out, bad))
}

/// The bytes of one record from a local file.
fn read_local(path: &str, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{path}: {e}")))?;
    f.seek(SeekFrom::Start(offset))?;
    let mut v = Vec::with_capacity(len.min(64 << 20) as usize);
    f.take(len).read_to_end(&mut v)?;
    if (v.len() as u64) < len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "{path}: at byte {}: the file ends before the record's {len} bytes",
                offset + v.len() as u64
            ),
        ));
    }
    Ok(v)
}

/// The warcinfo record that opens the output, compressed as `out` says.
fn warcinfo(args: &Args, sel: &Selection, count: usize) -> Result<Vec<u8>> {
    use warchest::write::{Compression, Writer, WriterOptions};
    let compression = if args.output.ends_with(".gz") {
        Compression::Gzip(6)
    } else {
        Compression::None
    };
    let name = args.output.rsplit('/').next().unwrap_or("");
    let fields = vec![
        (
            "software".to_string(),
            format!("warchest {}", env!("CARGO_PKG_VERSION")),
        ),
        (
            "description".to_string(),
            format!(
                "records fetched by warchest fetch from index {} ({}, {count} records selected)",
                args.index,
                sel.describe()
            ),
        ),
        ("index".to_string(), args.index.clone()),
        ("selection".to_string(), sel.describe()),
    ];
    let (mut rec, block) =
        warchest::write::records::warcinfo(warchest::warc::Version::V1_1, Some(name), &fields)?;
    let mut w = Writer::new(
        Vec::new(),
        WriterOptions {
            compression,
            ..WriterOptions::default()
        },
    )?;
    w.write(&mut rec, warchest::write::Body::Bytes(&block))?;
    Ok(w.finish()?)
}

/// Where the output goes: a local file written as `.open` and renamed, an
/// object completed only at the end, or standard output.
enum Out {
    Stdout(std::io::Stdout),
    File(warchest_ops::copy::OpenFile),
    Remote(Box<crate::remote::Writer>),
}

impl Write for Out {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::Stdout(s) => s.write(b),
            Out::File(f) => f.write(b),
            Out::Remote(r) => r.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Stdout(s) => s.flush(),
            Out::File(f) => f.flush(),
            Out::Remote(r) => r.flush(),
        }
    }
}

pub fn run(g: &Global, args: Args) -> Result<Outcome> {
    if args.output != "-"
        && !crate::remote::is_remote(&args.output)
        && std::path::Path::new(&args.output).exists()
    {
        bail!("{}: exists, not replaced", args.output);
    }
    let (entries, bad) = select(&args)?;
    if bad > 0 {
        eprintln!(
            "warchest: {}: {bad} index {} not understood (exit 1)",
            args.index,
            if bad == 1 { "entry" } else { "entries" }
        );
    }
    let sel = selection(&args);
    let base = match &args.prefix {
        Some(p) => p.clone(),
        None => match args.index.rfind('/') {
            Some(i) => args.index[..=i].to_string(),
            None => String::new(),
        },
    };
    if !g.quiet {
        eprintln!(
            "warchest: {}: {} records selected ({})",
            args.index,
            entries.len(),
            sel.describe()
        );
    }
    let mut out = if args.output == "-" {
        Out::Stdout(std::io::stdout())
    } else if crate::remote::is_remote(&args.output) {
        Out::Remote(Box::new(crate::remote::Writer::create(&args.output)?))
    } else {
        Out::File(
            warchest_ops::copy::OpenFile::create(&args.output)
                .with_context(|| args.output.clone())?,
        )
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut out);
    // Written before the first record fetched: nothing is written when
    // nothing is fetched.
    let mut info = Some(warcinfo(&args, &sel, entries.len())?);
    let names: Vec<String> = entries
        .iter()
        .map(|e| resolve(&base, &e.filename))
        .collect();
    let (mut done, mut failed, mut bytes) = (0u64, 0u64, 0u64);
    let total = entries.len();
    let t0 = std::time::Instant::now();
    let mut last_report = t0;
    let mut gone = Gone::default();
    let mut handle =
        |i: usize, r: std::io::Result<bytes::Bytes>, w: &mut dyn Write| -> std::io::Result<()> {
            let e = &entries[i];
            match r {
                Ok(b) => {
                    if let Some(info) = info.take() {
                        w.write_all(&info)?;
                    }
                    w.write_all(&b)?;
                    done += 1;
                    bytes += b.len() as u64;
                }
                Err(err) => {
                    failed += 1;
                    // A missing or unreadable object is one line at the
                    // end, with its count, not one error per record.
                    if !gone.add(&names[i], &err) {
                        eprintln!(
                            "warchest: {} (offset {}, length {}, {}): not fetched: {err}",
                            names[i], e.offset, e.length, e.url
                        );
                    }
                }
            }
            if !g.quiet && last_report.elapsed().as_secs() >= 2 {
                last_report = std::time::Instant::now();
                eprintln!(
                    "warchest: fetched {}/{total} records ({} MB, {failed} failed)",
                    done,
                    bytes >> 20
                );
            }
            Ok(())
        };
    let mut i = 0;
    let mut requests = 0u64;
    let mut missing_local = std::collections::HashMap::new();
    while i < total {
        if crate::remote::is_remote(&names[i]) {
            let j = (i..total)
                .find(|&k| !crate::remote::is_remote(&names[k]))
                .unwrap_or(total);
            requests += fetch_remote(&names[i..j], &entries[i..j], &args, &mut |k, r| {
                handle(i + k, r, &mut w)
            })?;
            i = j;
        } else {
            let r = match missing_local.get(&names[i]) {
                Some(kind) => Err(std::io::Error::new(*kind, "no such file")),
                None => read_local(&names[i], entries[i].offset, entries[i].length),
            };
            if let Err(e) = &r
                && e.kind() == std::io::ErrorKind::NotFound
            {
                missing_local.insert(names[i].clone(), e.kind());
            }
            handle(i, r.map(bytes::Bytes::from), &mut w)?;
            i += 1;
        }
    }
    w.flush()?;
    drop(w);
    let gone = gone.lines;
    for (name, what, n) in &gone {
        let records = if *n == 1 { "record" } else { "records" };
        eprintln!("warchest: {name}: {what}: {n} {records} not fetched");
    }
    if !g.quiet {
        eprintln!(
            "warchest: fetched {done} of {total} records ({bytes} bytes) with {requests} requests in {:.1} s{}",
            t0.elapsed().as_secs_f64(),
            if failed > 0 {
                format!("; {failed} not fetched")
            } else {
                String::new()
            }
        );
    }
    // Index entries not understood are input not read: never exit 0.
    let outcome = if failed > 0 || bad > 0 {
        Outcome::Problem
    } else {
        Outcome::Ok
    };
    if done == 0 {
        // Nothing fetched (nothing selected, or nothing selected could be
        // read): no output rather than an empty one or a warcinfo only.
        match out {
            Out::File(f) => {
                let open = f.open_path().to_path_buf();
                drop(f);
                std::fs::remove_file(&open).with_context(|| open.display().to_string())?;
            }
            // An object is only completed by finish: dropped, none is made.
            Out::Remote(r) => drop(r),
            Out::Stdout(_) => {}
        }
        // Said under -q too when something failed (then it is why).
        if !g.quiet || outcome != Outcome::Ok {
            eprintln!(
                "warchest: {}: not written (nothing fetched{})",
                args.output,
                if total == 0 {
                    ": no records selected"
                } else {
                    ""
                }
            );
        }
        return Ok(outcome);
    }
    match out {
        Out::Stdout(_) => {}
        Out::File(f) => {
            f.finish()?;
        }
        Out::Remote(r) => r.finish()?,
    }
    Ok(outcome)
}

/// The objects that could not be read at all (missing, refused, a server
/// without ranges): one line each, with the records they cost.
#[derive(Default)]
struct Gone {
    /// (object, what went wrong, records not fetched), in order of finding.
    lines: Vec<(String, String, u64)>,
    /// Where each object's line is.
    at: std::collections::HashMap<String, usize>,
}

impl Gone {
    /// Counts `err` for `name` when it holds for the whole object; whether
    /// it did.
    fn add(&mut self, name: &str, err: &std::io::Error) -> bool {
        let what = match whole_object(err) {
            Some(w) => w,
            None if !crate::remote::is_remote(name)
                && err.kind() == std::io::ErrorKind::NotFound =>
            {
                "no such file".to_string()
            }
            None => return false,
        };
        match self.at.get(name) {
            Some(&k) => self.lines[k].2 += 1,
            None => {
                self.at.insert(name.to_string(), self.lines.len());
                self.lines.push((name.to_string(), what, 1));
            }
        }
        true
    }
}

/// What makes every record of an object fail, when `err` says so: the
/// status line (`404 Not Found`), or that its server answers no ranges.
#[cfg(feature = "remote")]
fn whole_object(err: &std::io::Error) -> Option<String> {
    let r = warchest_remote::remote_error(err).filter(|r| r.whole_object())?;
    Some(match r.problem() {
        warchest_remote::Problem::NoRanges => format!("{}: needed for fetch", r.summary()),
        _ => r.summary(),
    })
}

#[cfg(not(feature = "remote"))]
fn whole_object(_err: &std::io::Error) -> Option<String> {
    None
}

/// Fetches the ranges of `entries` in `names`, handing each to `each` in
/// order; the number of requests made (retries included).
#[cfg(feature = "remote")]
fn fetch_remote(
    names: &[String],
    entries: &[Entry],
    args: &Args,
    each: &mut dyn FnMut(usize, std::io::Result<bytes::Bytes>) -> std::io::Result<()>,
) -> Result<u64> {
    // Parsed once per file name: the store for a bucket is shared.
    let mut locs: std::collections::HashMap<&str, std::io::Result<warchest_remote::Location>> =
        std::collections::HashMap::new();
    let mut reqs = Vec::with_capacity(names.len());
    let mut bad = Vec::new();
    for (k, (n, e)) in names.iter().zip(entries).enumerate() {
        let loc = locs
            .entry(n.as_str())
            .or_insert_with(|| warchest_remote::Location::parse(n));
        match loc {
            Ok(l) => reqs.push((
                k,
                warchest_remote::RangeRequest {
                    location: l.clone(),
                    offset: e.offset,
                    len: e.length,
                },
            )),
            Err(err) => bad.push((k, std::io::Error::new(err.kind(), err.to_string()))),
        }
    }
    for (k, err) in bad {
        each(k, Err(err))?;
    }
    let idx: Vec<usize> = reqs.iter().map(|(k, _)| *k).collect();
    let plan = warchest_remote::FetchPlan {
        concurrency: args.concurrency,
        max_gap: args.max_gap,
        ..Default::default()
    };
    let stats = warchest_remote::fetch_ranges_with(
        reqs.into_iter().map(|(_, r)| r),
        &plan,
        &warchest_remote::Options::from_env(),
        |j, r| each(idx[j], r),
    )?;
    Ok(stats.requests)
}

#[cfg(not(feature = "remote"))]
fn fetch_remote(
    names: &[String],
    _entries: &[Entry],
    _args: &Args,
    each: &mut dyn FnMut(usize, std::io::Result<bytes::Bytes>) -> std::io::Result<()>,
) -> Result<u64> {
    for (k, n) in names.iter().enumerate() {
        each(
            k,
            crate::remote::open_stream(n).map(|_| bytes::Bytes::new()),
        )?;
    }
    Ok(0)
}

/// The selected rows of a cc-index Parquet table (warchest-index's
/// [`select_parquet`](warchest_index::select::select_parquet)), read
/// through range requests when it is a URL: the footer, then only the
/// column chunks asked for.
fn select_parquet(args: &Args, sel: &Selection) -> Result<(Vec<Entry>, u64)> {
    use warchest_index::select::{RangeChunks, select_parquet_counted as select_parquet};
    let rows = if crate::remote::is_remote(&args.index) {
        let size = crate::remote::size(&args.index)?;
        let url = args.index.clone();
        select_parquet(
            RangeChunks::new(size, move |start, len| {
                crate::remote::open_range(&url, start, len)
            }),
            sel,
        )
    } else {
        select_parquet(
            std::fs::File::open(&args.index).with_context(|| args.index.clone())?,
            sel,
        )
    };
    let (rows, skipped) =
        rows.with_context(|| format!("{}: reading the Parquet index", args.index))?;
    if let Some(m) = warchest_index::select::skipped_rows_message(&args.index, skipped) {
        eprintln!("warchest: {m}");
    }
    Ok((rows, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cdxj_and_cdx() {
        let e = parse_cdxj(r#"com,example)/ 20240101000000 {"url": "https://example.com/", "mime": "text/html", "status": "200", "offset": "12", "length": 34, "filename": "a.warc.gz"}"#).unwrap();
        assert_eq!((e.offset, e.length, e.status), (12, 34, Some(200)));
        assert_eq!(e.filename, "a.warc.gz");
        let f: Vec<String> = CDX11.iter().map(|s| s.to_string()).collect();
        let e = parse_cdx("com,example)/ 20240101000000 https://example.com/ text/html 200 XYZ - - 345 678 b.warc.gz", &f).unwrap();
        assert_eq!((e.offset, e.length), (678, 345));
        assert!(parse_cdx("a b c", &f).is_none());
        assert!(parse_cdxj("a b {\"offset\": 1}").is_none());
    }

    #[cfg(feature = "remote")]
    #[test]
    fn max_gap_default_is_the_remote_crates() {
        assert_eq!(MAX_GAP, warchest_remote::DEFAULT_MAX_GAP);
    }

    #[test]
    fn names() {
        assert_eq!(
            resolve("s3://b/crawl/", "x.warc.gz"),
            "s3://b/crawl/x.warc.gz"
        );
        assert_eq!(resolve("https://h", "x.warc.gz"), "https://h/x.warc.gz");
        assert_eq!(resolve("d/", "s3://b/x"), "s3://b/x");
        assert_eq!(resolve("", "x"), "x");
    }
}
