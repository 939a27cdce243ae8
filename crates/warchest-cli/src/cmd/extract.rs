//! `warchest extract`: one record, or its headers, or its payload.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use anyhow::{Context, Result, bail};
use warchest::archive::Reader;

use crate::report::{Global, Outcome};

/// Write the record at a stored offset to standard output: the whole record
/// (decompressed), or its headers, or its payload.
///
/// The offset is the one `warchest ls` and CDX indexes give (the start of the
/// gzip member for compressed files).
///
/// Examples:
///   warchest extract crawl.warc.gz --offset 1234 --payload --decode > page.html
///   warchest extract crawl.warc.gz --offset 1234 --headers
// Verbatim, so the examples keep their lines in --help.
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The file (`-` for standard input: the offset is then skipped by reading).
    file: String,
    /// Stored offset of the record.
    #[arg(long, default_value_t = 0)]
    offset: u64,
    /// Stored length of the record (as an index gives it): only these
    /// bytes are read. With a URL, the record is fetched with exactly one
    /// range request.
    #[arg(long, value_parser = crate::cmd::write_flags::nonzero_size)]
    length: Option<u64>,
    /// Only the WARC header block and, for HTTP records, the HTTP head.
    #[arg(long, conflicts_with = "payload")]
    headers: bool,
    /// With --headers: field values with RFC 2047 encoded words
    /// (`=?UTF-8?B?...?=`, WARC 1.1 section 4) decoded, as UTF-8, one line a
    /// field (folded values unfolded). Without it the header is printed as
    /// stored.
    #[arg(long, requires = "headers")]
    decode_words: bool,
    /// Only the payload: for HTTP records the body after the head with its
    /// transfer coding (chunked) removed; otherwise the whole block.
    #[arg(long)]
    payload: bool,
    /// With --payload: also remove the content coding (gzip, deflate, br, zstd).
    #[arg(long, requires = "payload")]
    decode: bool,
    /// With --payload, for a revisit: the payload of its original, found in
    /// these WARC files (by WARC-Refers-To, target URI and date, or digest).
    #[arg(long, num_args = 1.., requires = "payload")]
    resolve_revisit: Vec<String>,
    /// With --payload, for a revisit: its original found through this
    /// digest index (`warchest dedupe --index`).
    #[arg(long, requires = "payload")]
    revisit_index: Option<std::path::PathBuf>,
}

/// Reading from inside a `.warc.zst` file: its dictionary frame, at the
/// start of the file, is loaded first (as a reader from the start does).
/// `r` is at the file's start and stays there.
fn load_file_dictionary<R: Read + Seek>(
    r: &mut R,
    dec: &mut warchest::codec::DecoderOptions,
) -> io::Result<()> {
    if dec.start_offset == 0 {
        return Ok(());
    }
    let (lo, hi) = warchest::codec::zstd_frame::WINDOW_LOG_RANGE;
    if let Some(dict) = warchest::codec::zstd_frame::file_dictionary(
        r,
        0,
        dec.max_zstd_dictionary_size,
        dec.max_zstd_window_log.clamp(lo, hi),
    )? {
        dec.zstd_dictionary = Some(dict);
    }
    Ok(())
}

pub fn run(g: &Global, args: Args) -> Result<Outcome> {
    // An archive file in a WACZ by URL is read where it lies, as a local
    // WACZ's is (below).
    let member = crate::input::remote_member(&args.file);
    let remote = member.is_none() && crate::remote::is_remote(&args.file);
    // A remote record named by offset and length costs one request: the
    // whole-file check would cost more.
    if warchest_wacz::is_wacz(std::path::Path::new(&args.file)) {
        // An offset is within one archive file, not the ZIP.
        anyhow::bail!(
            "{}: a WACZ holds archive files, and an offset is within one: name it as \
             {}#archive/NAME (`warchest index {}` gives each record's file and offset)",
            args.file,
            args.file,
            args.file
        );
    }
    if !(crate::remote::is_remote(&args.file) && args.length.is_some()) {
        crate::input::require_records(&args.file)?;
    }
    let mut opts = g.reader_options(&args.file);
    opts.decoder.start_offset = args.offset;
    let input: Box<dyn Read + Send> = if let Some((url, entry)) = member {
        let src = crate::input::open_remote_member(url, entry)?;
        let mut s = warchest::io::AtCursor::new(src, &args.file, 0);
        load_file_dictionary(&mut s, &mut opts.decoder)?;
        s.seek(SeekFrom::Start(args.offset))?;
        // Only the record's stored bytes, as of a file.
        match args.length {
            Some(len) => Box::new(s.take(len)),
            None => Box::new(s),
        }
    } else if remote {
        match args.length {
            // A .warc.zst's dictionary is at the file's start: one more
            // request for it.
            Some(len) if !args.file.ends_with(".zst") => {
                crate::remote::open_range(&args.file, args.offset, len)?
            }
            _ => {
                let mut f = crate::remote::open_seekable(&args.file)?;
                load_file_dictionary(&mut f, &mut opts.decoder)
                    .with_context(|| format!("{}: reading its first frame", args.file))?;
                f.seek(SeekFrom::Start(args.offset))?;
                match args.length {
                    Some(len) => Box::new(f.take(len)),
                    None => Box::new(f),
                }
            }
        }
    } else if args.file == "-" {
        let mut stdin = io::stdin();
        let skipped = io::copy(&mut (&mut stdin).take(args.offset), &mut io::sink())?;
        if skipped < args.offset {
            bail!("-: input ends at {skipped}, before offset {}", args.offset);
        }
        Box::new(stdin)
    } else if let Some((wacz, entry)) = warchest_wacz::split_member_name(&args.file) {
        let mut s = warchest_wacz::open_member(std::path::Path::new(wacz), entry)?;
        load_file_dictionary(&mut s, &mut opts.decoder)?;
        s.seek(SeekFrom::Start(args.offset))?;
        // Only the record's stored bytes, as of a file.
        match args.length {
            Some(len) => Box::new(s.take(len)),
            None => Box::new(s),
        }
    } else {
        let mut f = File::open(&args.file).with_context(|| args.file.clone())?;
        load_file_dictionary(&mut f, &mut opts.decoder)
            .with_context(|| format!("{}: reading its first frame", args.file))?;
        f.seek(SeekFrom::Start(args.offset))
            .with_context(|| format!("{}: seek to {}", args.file, args.offset))?;
        match args.length {
            Some(len) => Box::new(f.take(len)),
            None => Box::new(f),
        }
    };
    let limits = opts.limits;
    let mut reader = Reader::with_options(input, opts)?;
    let Some(mut rec) = reader.next_record()? else {
        bail!("{}: no record at offset {}", args.file, args.offset);
    };
    let found = rec.location().offset;
    if found != args.offset {
        bail!(
            "{}: no record starts at offset {} (the next one is at {found})",
            args.file,
            args.offset
        );
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let header = rec.header().clone();
    // The file is also read whole to resolve a revisit in (`extract F
    // --resolve-revisit F`): that reading tells its recoveries, this
    // record's among them, so this reader's are not told again.
    let mut read_whole = false;
    if args.headers && args.decode_words {
        writeln!(out, "{}\r", header.version())?;
        for f in header.fields().iter() {
            writeln!(out, "{}: {}\r", f.name_str(), f.value_decoded())?;
        }
        out.write_all(b"\r\n")?;
        if let Some(head) = rec.http_with(&limits)? {
            out.write_all(head.raw())?;
        }
    } else if args.headers {
        out.write_all(header.as_bytes())?;
        if let Some(head) = rec.http_with(&limits)? {
            out.write_all(head.raw())?;
        }
    } else if args.payload
        && header.record_type() == warchest::warc::RecordType::Revisit
        && (!args.resolve_revisit.is_empty() || args.revisit_index.is_some())
    {
        let index = args.revisit_index.as_deref();
        read_whole = args
            .resolve_revisit
            .iter()
            .any(|f| super::resolve::same_file(f, &args.file));
        let resolved = super::resolve::payload(
            g,
            &header,
            &args.resolve_revisit,
            index,
            args.decode,
            &mut out,
        );
        if let Err(e) = resolved {
            // This record's recoveries are told before the error.
            drop(rec);
            if !read_whole {
                g.warnings(&args.file, &reader.take_warnings());
            }
            return Err(e);
        }
    } else if args.payload {
        rec.http_with(&limits)?;
        let mut p = rec
            .payload(args.decode)
            .with_context(|| format!("{}: offset {}", args.file, args.offset))?;
        io::copy(&mut p, &mut out)?;
    } else {
        out.write_all(header.as_bytes())?;
        io::copy(&mut rec.block(), &mut out)?;
        out.write_all(b"\r\n\r\n")?;
    }
    out.flush()?;
    let end = rec.finish()?;
    let warnings = reader.take_warnings();
    if !read_whole {
        g.warnings(&args.file, &warnings);
    }
    Ok(if end.truncated {
        Outcome::Problem
    } else {
        Outcome::Ok
    })
}
