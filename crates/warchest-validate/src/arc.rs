//! ARC files (Internet Archive ARC format, 1996; version 1 and 2): the
//! version block and the header line grammar, field by field.
//!
//! The rules are functions of a header line ([`check_header_line`]) and of
//! the version block's lines ([`check_version_lines`]), so that they apply
//! unchanged to the records of an ARC reader. Until `archive` has one, the
//! file is framed here from the decompressed bytes by the lengths the
//! header lines declare ([`validate_source`]).

use super::raw::Cursor;
use super::rules;
use super::{At, Options, Out, grammar};
use warchest::codec::{Codec, Source};
use warchest::error::Result;
use warchest::warc::WarcDate;

/// The field names of a version 1 header line.
const V1_FIELDS: &str = "URL IP-address Archive-date Content-type Archive-length";
/// The field names of a version 2 header line.
const V2_FIELDS: &str = "URL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length";

/// Longest header line kept; a longer one is read but cut.
const MAX_LINE: usize = 64 * 1024;

/// What a header line says, as far as it parses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HeaderLine {
    /// The URL (fields joined when the URL held spaces).
    pub url: String,
    /// Archive-length, when it is a number.
    pub length: Option<u64>,
}

/// Number of fields of a header line of `version`.
fn field_count(version: u8) -> usize {
    if version == 2 { 10 } else { 5 }
}

/// True when `line` could be an ARC header line: a URL with a scheme and
/// at least four more fields.
pub(crate) fn looks_like_header(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut fields = line.split(|&b| b == b' ');
    let url_ok = fields.next().is_some_and(|u| {
        u.iter().position(|&b| b == b':').is_some_and(|c| {
            c > 0
                && c + 1 < u.len()
                && u[0].is_ascii_alphabetic()
                && u[..c]
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
        })
    });
    url_ok && fields.count() >= 4
}

/// Checks one header line (without its LF) of an ARC file of `version`
/// (1 or 2), reported at `at`. `record_offset` is where the record starts
/// in a plain file (checked against a v2 Offset field).
pub(crate) fn check_header_line(
    line: &[u8],
    version: u8,
    record_offset: Option<u64>,
    at: &At,
    out: &mut Out<'_>,
) -> HeaderLine {
    let mut line = line;
    if let Some(l) = line.strip_suffix(b"\r") {
        line = l;
        out.push(
            &rules::ARC_HEADER_FIELDS,
            at,
            "the header line ends in CR LF; ARC lines end in LF",
        );
    }
    let text = String::from_utf8_lossy(line);
    let fields: Vec<&str> = text.split(' ').collect();
    let want = field_count(version);
    if fields.len() != want {
        out.push(
            &rules::ARC_HEADER_FIELDS,
            at,
            format!(
                "the header line has {} space-separated fields; a version {version} line has {want} ({})",
                fields.len(),
                if version == 2 { V2_FIELDS } else { V1_FIELDS }
            ),
        );
    }
    if fields.len() < want {
        let length = fields.last().and_then(|l| grammar::check_integer(l).ok());
        return HeaderLine {
            url: fields.first().map_or(String::new(), |s| s.to_string()),
            length,
        };
    }
    // A URL with spaces: the fields after it are the last want-1.
    let split = fields.len() - (want - 1);
    let url = fields[..split].join(" ");
    let rest = &fields[split..];
    if let Err(why) = grammar::check_uri(&url) {
        out.push(&rules::ARC_HEADER_URL, at, format!("the URL {url:?} {why}"));
    }
    let (ip, date, ct) = (rest[0], rest[1], rest[2]);
    if grammar::check_ip(ip).is_err() {
        out.push(
            &rules::ARC_HEADER_IP,
            at,
            format!("the IP-address field {ip:?} is not an IP address"),
        );
    }
    let date_ok = date.len() == 14 && WarcDate::from_timestamp14(date).is_some();
    if !date_ok {
        out.push(
            &rules::ARC_HEADER_DATE,
            at,
            format!(
                "the Archive-date field {date:?} is not a 14-digit date YYYYMMDDhhmmss{}",
                if date.bytes().all(|b| b.is_ascii_digit()) && !date.is_empty() {
                    format!(" ({} digits)", date.len())
                } else {
                    String::new()
                }
            ),
        );
    }
    if ct != "no-type" && grammar::check_media_type(ct).is_err() {
        out.push(
            &rules::ARC_HEADER_CONTENT_TYPE,
            at,
            format!("the Content-type field {ct:?} is not type/subtype"),
        );
    }
    if version == 2 {
        let (code, offset) = (rest[3], rest[6]);
        let code_ok = code == "-"
            || (code.len() == 3
                && grammar::check_integer(code).is_ok_and(|c| (100..=999).contains(&c)));
        if !code_ok {
            out.push(
                &rules::ARC_HEADER_RESULT_CODE,
                at,
                format!("the Result-code field {code:?} is not a number from 100 to 999"),
            );
        }
        match grammar::check_integer(offset) {
            Err(_) => out.push(
                &rules::ARC_HEADER_OFFSET,
                at,
                format!("the Offset field {offset:?} is not a non-negative number"),
            ),
            Ok(o) => {
                if let Some(real) = record_offset
                    && o != real
                {
                    out.push(
                        &rules::ARC_HEADER_OFFSET,
                        at,
                        format!("the Offset field says {o} but the record is at offset {real}"),
                    );
                }
            }
        }
    }
    let len_field = rest[want - 2];
    let length = match grammar::check_integer(len_field) {
        Ok(n) => Some(n),
        Err(_) => {
            out.push(
                &rules::ARC_HEADER_LENGTH,
                at,
                format!("the Archive-length field {len_field:?} is not a non-negative number"),
            );
            None
        }
    };
    HeaderLine { url, length }
}

/// Checks the version block's second and third lines; returns the
/// version they declare (1 when they declare none that is known).
pub(crate) fn check_version_lines(
    version_line: &[u8],
    fields_line: &[u8],
    at: &At,
    out: &mut Out<'_>,
) -> u8 {
    let strip = |l: &[u8]| -> String {
        let l = l.strip_suffix(b"\n").unwrap_or(l);
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        String::from_utf8_lossy(l).into_owned()
    };
    let v = strip(version_line);
    let parts: Vec<&str> = v.splitn(3, ' ').collect();
    let version = match parts.as_slice() {
        ["1", r, _] if matches!(*r, "0" | "1") => 1,
        ["2", "0", _] => 2,
        _ => {
            out.push(
                &rules::ARC_VERSION_BLOCK_SYNTAX,
                at,
                format!("the version line {v:?} is not `1 0 origin`, `1 1 origin` or `2 0 origin`"),
            );
            1
        }
    };
    let f = strip(fields_line);
    let want = if version == 2 { V2_FIELDS } else { V1_FIELDS };
    if f != want {
        out.push(
            &rules::ARC_VERSION_BLOCK_SYNTAX,
            at,
            format!("the field line of a version {version} block is {want:?}, not {f:?}"),
        );
    }
    version
}

/// Validates an ARC file from its decompressed bytes.
pub(crate) fn validate_source<S: Source>(
    src: &mut S,
    opts: &Options,
    out: &mut Out<'_>,
) -> Result<()> {
    let _ = opts;
    let mut cur = Cursor::new(src);
    let mut line = Vec::new();
    let mut records = 0u64;
    let start = cur.pos();
    if cur.read_line(&mut line, MAX_LINE)? == 0 {
        out.push(
            &rules::FILE_EMPTY,
            &At::offset(0),
            "the file holds no ARC record",
        );
        return Ok(());
    }
    let mut version = 1;
    let mut pending: Option<(Vec<u8>, u64)> = None;
    if line.starts_with(b"filedesc://") {
        let at = At::record(start, Some(&first_field(&line)));
        // The version block: its length decides where it ends, unless it
        // is not a number; then it is its two lines.
        let declared = header_length(&line);
        let mut block = Vec::new();
        let mut v_line = Vec::new();
        let mut f_line = Vec::new();
        match declared {
            Some(n) => {
                let got = cur.take(n, |b| {
                    let room = MAX_LINE.saturating_sub(block.len()).min(b.len());
                    block.extend_from_slice(&b[..room]);
                })?;
                if got < n {
                    out.push(
                        &rules::ARC_RECORD_TRUNCATED,
                        &at,
                        format!(
                            "the version block declares {n} bytes but the input ends after {got}"
                        ),
                    );
                }
                let mut lines = block.split_inclusive(|&b| b == b'\n');
                v_line = lines.next().unwrap_or_default().to_vec();
                f_line = lines.next().unwrap_or_default().to_vec();
                if !block.ends_with(b"\n") || f_line.is_empty() {
                    out.push(
                        &rules::ARC_VERSION_BLOCK_LENGTH,
                        &at,
                        format!(
                            "the version block's length {n} ends before the end of its last line: it does not count the line's LF"
                        ),
                    );
                    // Finish the cut line.
                    let mut rest = Vec::new();
                    cur.read_line(&mut rest, MAX_LINE)?;
                }
            }
            None => {
                cur.read_line(&mut v_line, MAX_LINE)?;
                cur.read_line(&mut f_line, MAX_LINE)?;
            }
        }
        version = check_version_lines(&v_line, &f_line, &at, out);
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        check_header_line(body, version, None, &at, out);
        trailer(&mut cur, &at, out)?;
        records += 1;
    } else {
        out.push(
            &rules::ARC_VERSION_BLOCK_MISSING,
            &At::offset(start),
            "the file does not begin with a filedesc:// version block",
        );
        let fields = line.split(|&b| b == b' ').count();
        if fields == 10 {
            version = 2;
        }
        pending = Some((std::mem::take(&mut line), start));
    }
    loop {
        let (header, offset) = match pending.take() {
            Some(p) => p,
            None => {
                let offset = cur.pos();
                if cur.read_line(&mut line, MAX_LINE)? == 0 {
                    break;
                }
                (std::mem::take(&mut line), offset)
            }
        };
        if !looks_like_header(&header) {
            // Not a record: skip to the next line that starts one.
            let skipped = header.len() as u64
                + cur.skip_to_line(MAX_LINE, |l| looks_like_header(l) && l.ends_with(b"\n"))?;
            let at_end = cur.peek()?.is_none();
            let rule = if at_end {
                &rules::FILE_TRAILING_GARBAGE
            } else {
                &rules::FILE_GARBAGE
            };
            out.push(
                rule,
                &At::offset(offset),
                format!("{skipped} bytes that are not an ARC record"),
            );
            continue;
        }
        let body = header.strip_suffix(b"\n").unwrap_or(&header);
        let url = first_field(body);
        let at = At::record(offset, Some(&url));
        let plain = cur.codec() == Codec::None;
        let h = check_header_line(body, version, plain.then_some(offset), &at, out);
        if !header.ends_with(b"\n") {
            out.push(
                &rules::ARC_RECORD_TRUNCATED,
                &at,
                "the input ends inside the header line",
            );
            records += 1;
            break;
        }
        if let Some(n) = h.length {
            let got = cur.take(n, |_| {})?;
            if got < n {
                out.push(
                    &rules::ARC_RECORD_TRUNCATED,
                    &at,
                    format!("Archive-length is {n} but the input ends after {got} bytes"),
                );
                records += 1;
                break;
            }
        }
        trailer(&mut cur, &at, out)?;
        records += 1;
    }
    out.file_summary().records = records;
    Ok(())
}

/// Reads the LF after a record and reports anything else.
fn trailer<S: Source>(cur: &mut Cursor<'_, S>, at: &At, out: &mut Out<'_>) -> Result<()> {
    match cur.peek()? {
        None => {
            out.push(
                &rules::ARC_RECORD_TRAILER,
                at,
                "the record is not followed by LF (the input ends)",
            );
            return Ok(());
        }
        Some(b'\n') => cur.consume(1),
        Some(b'\r') => {
            // CR LF: one line end, written the DOS way.
            cur.consume(1);
            if cur.peek()? == Some(b'\n') {
                cur.consume(1);
            }
            out.push(
                &rules::ARC_RECORD_TRAILER,
                at,
                "the record is followed by CR LF, not LF",
            );
        }
        Some(_) => {
            out.push(
                &rules::ARC_RECORD_TRAILER,
                at,
                "the record is not followed by LF: Archive-length may be wrong",
            );
            return Ok(());
        }
    }
    let mut extra = 0u64;
    while matches!(cur.peek()?, Some(b'\n' | b'\r')) {
        cur.consume(1);
        extra += 1;
    }
    if extra > 0 {
        out.push(
            &rules::ARC_RECORD_TRAILER,
            at,
            format!("the record is followed by {extra} more line-end bytes than the one LF"),
        );
    }
    Ok(())
}

fn first_field(line: &[u8]) -> String {
    let end = line
        .iter()
        .position(|&b| b == b' ' || b == b'\n' || b == b'\r')
        .unwrap_or(line.len());
    String::from_utf8_lossy(&line[..end]).into_owned()
}

/// The last field of a header line, as a number.
fn header_length(line: &[u8]) -> Option<u64> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let last = line.rsplit(|&b| b == b' ').next()?;
    grammar::check_integer(std::str::from_utf8(last).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_line_shapes() {
        assert!(looks_like_header(
            b"http://example.com/ 93.184.216.119 20140216050221 text/html 1591\n"
        ));
        assert!(looks_like_header(
            b"dns:www.rebels.dk 10.6.0.10 20110922131 text/dns 56\n"
        ));
        assert!(!looks_like_header(b"http://www.bt.dk/node/100"));
        assert!(!looks_like_header(b"<html>\n"));
        assert!(looks_like_header(b"http://a/ 1.2.3.4 2014 text/html abc\n"));
        assert!(!looks_like_header(
            b"Content-Type: text/html; charset=utf-8 a\n"
        ));
        assert_eq!(
            header_length(b"filedesc://x 0.0.0.0 2014 text/plain 76\n"),
            Some(76)
        );
        assert_eq!(
            header_length(b"filedesc://x 0.0.0.0 2014 text/plain -1\n"),
            None
        );
        assert_eq!(first_field(b"http://a/ b c"), "http://a/");
    }
}
