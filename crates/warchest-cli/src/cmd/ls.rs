//! `warchest ls`: one line per record.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use serde::Serialize;
use warchest::archive::{Reader, Record};
use warchest::chunks::{self, Lines, Progress};
use warchest::codec::Source;
use warchest::fields::Field;
use warchest::warc::{RecordEnd, WarcHeader, field};
use warchest_index::push_u64;

use crate::input::{self, Chunked};
use crate::report::{Global, Outcome, file_error};

/// List the records of archives: offset, stored length, type, date, target URI,
/// content type and Content-Length, one record a line.
///
/// Example: `warchest ls crawl.warc.gz` or `warchest ls --json *.warc.gz | jq .`
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(required = true, help = inputs_help!("Files to read"))]
    files: Vec<String>,
    /// JSON lines instead of tab-separated columns.
    #[arg(long)]
    json: bool,
    /// Each line starts with its file's name and a tab (as grep's `-H`):
    /// the lines of several files tell which file each record is in.
    /// (`--json` lines name it always, in `file`.)
    #[arg(short = 'H', long)]
    with_filename: bool,
    /// Read each file on N threads (default: one per core): a compressed
    /// file's members are decoded on them, a local uncompressed WARC file
    /// of 32 MiB or more is cut into chunks read on them. The output is
    /// the same whatever N is.
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    jobs: Option<usize>,
}

#[derive(Serialize)]
struct Line<'a> {
    file: &'a str,
    offset: u64,
    length: Option<u64>,
    #[serde(rename = "type")]
    record_type: Option<&'a str>,
    record_id: Option<&'a str>,
    date: Option<&'a str>,
    target_uri: Option<&'a str>,
    content_type: Option<&'a str>,
    content_length: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: Option<bool>,
    /// The header fields whose values hold RFC 2047 encoded words, by
    /// name, decoded (the values above stay as written).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    decoded: std::collections::BTreeMap<String, String>,
}

/// The fields of `h` whose values change when their RFC 2047 encoded
/// words are decoded, with the decoded values (the first value of a
/// repeated field).
fn decoded_fields(h: &warchest::warc::WarcHeader) -> std::collections::BTreeMap<String, String> {
    let mut m = std::collections::BTreeMap::new();
    for f in h.fields().iter() {
        if !f.raw_value().windows(2).any(|w| w == b"=?") {
            continue;
        }
        let d = f.value_decoded();
        if d != f.value_str() {
            m.entry(f.name_str().into_owned())
                .or_insert_with(|| d.into_owned());
        }
    }
    m
}

/// Appends a tab and the field's unfolded value as its text
/// ([`Field::value_str`]) is written, `-` for none: ASCII values (nearly
/// all) are copied as they are, with no UTF-8 check and no `str`.
fn push_text(out: &mut Vec<u8>, f: Option<Field<'_>>) {
    out.push(b'\t');
    let Some(f) = f else {
        out.push(b'-');
        return;
    };
    let v = f.value();
    if v.is_ascii() {
        out.extend_from_slice(&v);
    } else {
        out.extend_from_slice(f.value_str().as_bytes());
    }
}

/// [`push_text`] for WARC-Target-URI, as [`WarcHeader::target_uri`]
/// gives it (`<...>` removed): an ASCII value with no white space at
/// either end is cut as bytes, anything else goes through the text.
fn push_uri(out: &mut Vec<u8>, h: &WarcHeader, f: Option<Field<'_>>) {
    out.push(b'\t');
    let Some(f) = f else {
        out.push(b'-');
        return;
    };
    let v = f.value();
    let plain = v.is_ascii()
        && v.first().is_some_and(u8::is_ascii_graphic)
        && v.last().is_some_and(u8::is_ascii_graphic);
    if plain {
        let inner = match &v[..] {
            [b'<', inner @ .., b'>'] => inner,
            all => all,
        };
        out.extend_from_slice(inner);
    } else {
        let uri = h.target_uri();
        out.extend_from_slice(uri.as_deref().unwrap_or("-").as_bytes());
    }
}

/// Appends `n` in decimal, or `-` for none.
fn push_opt_u64(out: &mut Vec<u8>, n: Option<u64>) {
    match n {
        Some(n) => push_u64(out, n),
        None => out.push(b'-'),
    }
}

pub fn run(g: &Global, mut args: Args) -> Result<Outcome> {
    args.files = crate::input::expand(&args.files);
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut outcome = Outcome::Ok;
    for name in &args.files {
        let lines = Ls {
            name,
            json: args.json,
            with_name: args.with_filename,
        };
        let o = match list(g, &lines, args.jobs, &mut out) {
            Ok(o) => o,
            Err(e) => file_error(name, e.as_ref()),
        };
        outcome = outcome.and(o);
    }
    if let Err(e) = out.flush() {
        return Ok(file_error("stdout", &e));
    }
    Ok(outcome)
}

fn list(
    g: &Global,
    lines: &Ls<'_>,
    jobs: Option<usize>,
    out: &mut impl Write,
) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let name = lines.name;
    let threads = crate::tools::file_threads(jobs);
    let mut opts = g.reader_options(name);
    opts.decoder.threads = threads;
    let records = match input::chunked(name, threads, &opts)? {
        Chunked::No(opened) => {
            return input::with_reader!(opened, reader => list_records(g, name, lines, out, reader));
        }
        // An uncompressed WARC file is cut into chunks read on the threads
        // (the output is verified to be the sequential read's).
        Chunked::Chunks(c) => {
            let (records, trace) = chunks::read(g, name, c.input(name), lines, &opts, c.plan, out);
            input::write_trace(&trace);
            records?
        }
    };
    if records == 0 {
        return Err(input::NoRecords::new(name).into());
    }
    Ok(Outcome::Ok)
}

fn list_records<S: Source>(
    g: &Global,
    name: &str,
    lines: &Ls<'_>,
    out: &mut impl Write,
    mut reader: Reader<S>,
) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let mut progress = Progress::default();
    chunks::sequential(g, name, lines, &mut reader, out, &mut progress, |_| false)?;
    if progress.records == 0 {
        return Err(input::NoRecords::new(name).into());
    }
    Ok(Outcome::Ok)
}

/// `ls`'s lines of one file.
struct Ls<'a> {
    name: &'a str,
    json: bool,
    /// Each text line starts with `name` and a tab (`-H`).
    with_name: bool,
}

impl Lines for Ls<'_> {
    fn record<S: Source>(
        &self,
        rec: Record<'_, S>,
        out: &mut Vec<u8>,
    ) -> Result<RecordEnd, chunks::BoxError> {
        if self.json {
            let h = rec.header().clone();
            let loc = rec.location();
            let end = rec.finish()?;
            let typ = h.record_type_str();
            let id = h.record_id();
            let date = h.get(warchest::warc::field::DATE);
            let uri = h.target_uri();
            let ct = h.content_type();
            let line = Line {
                file: self.name,
                offset: loc.offset,
                length: end.stored_len,
                record_type: typ.as_deref(),
                record_id: id.as_deref(),
                date: date.as_deref(),
                target_uri: uri.as_deref(),
                content_type: ct.as_deref(),
                content_length: h.content_length(),
                truncated: end.truncated.then_some(true),
                decoded: decoded_fields(&h),
            };
            serde_json::to_writer(&mut *out, &line)?;
            out.push(b'\n');
            return Ok(end);
        }
        // The columns after the stored length are written while the
        // header is borrowed, the offset and length once the record is
        // finished, then moved in front of them: no copy of the header,
        // no String per field.
        if self.with_name {
            out.extend_from_slice(self.name.as_bytes());
            out.push(b'\t');
        }
        let at = out.len();
        let h = rec.header();
        let [typ, date, uri, ct] = h.fields().get_many([
            field::TYPE,
            field::DATE,
            field::TARGET_URI,
            field::CONTENT_TYPE,
        ]);
        push_text(out, typ);
        push_text(out, date);
        push_uri(out, h, uri);
        push_text(out, ct);
        out.push(b'\t');
        push_opt_u64(out, h.content_length());
        out.push(b'\n');
        let offset = rec.location().offset;
        let end = rec.finish()?;
        let mid = out.len();
        push_u64(out, offset);
        out.push(b'\t');
        push_opt_u64(out, end.stored_len);
        let head = out.len() - mid;
        out[at..].rotate_right(head);
        Ok(end)
    }
}

#[cfg(test)]
mod tests {
    use super::{push_opt_u64, push_u64};

    #[test]
    fn numbers_are_written_as_display_writes_them() {
        let mut v = Vec::new();
        for n in [0, 1, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            v.clear();
            push_u64(&mut v, n);
            assert_eq!(v, n.to_string().as_bytes());
        }
        v.clear();
        push_opt_u64(&mut v, None);
        push_opt_u64(&mut v, Some(7));
        assert_eq!(v, b"-7");
    }
}
