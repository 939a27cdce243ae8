//! Web InfoMall (Tianwang) page files: the eight rules of section 2 of
//! "Web InfoMall page storage format V1.0" (Peking University, 2003) and
//! the property rules of its section 3.
//!
//! [`check_head`] judges a record's head (its property lines) and
//! [`DataCheck`] its data as they stream past, so that both apply unchanged
//! to the records of an InfoMall reader. Until `archive` has one, the file
//! is framed here from the decompressed bytes ([`validate_source`]).

use flate2::{Decompress, FlushDecompress, Status};

use super::raw::Cursor;
use super::rules;
use super::{At, Options, Out, grammar};
use warchest::codec::Source;
use warchest::error::Result;

/// Longest property line kept.
const MAX_LINE: usize = 64 * 1024;
/// Most properties read in one head before giving up on it.
const MAX_PROPERTIES: usize = 1000;

/// The properties version 1.0 defines (section 3).
const KNOWN: [&str; 7] = [
    "version",
    "url",
    "origin",
    "date",
    "ip",
    "unzip-length",
    "length",
];

/// What a head says that the data checks need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Head {
    /// `length`, when it is a number.
    pub length: Option<u64>,
    /// `unzip-length`: absent, or its value when it is a number (`Some(None)`
    /// when it is not).
    pub unzip_length: Option<Option<u64>>,
    /// `url`.
    pub url: Option<String>,
}

/// Checks a head: `lines` are its property lines, each with its line end.
pub(crate) fn check_head(lines: &[Vec<u8>], opts: &Options, at: &At, out: &mut Out<'_>) -> Head {
    let mut head = Head::default();
    let mut names: Vec<String> = Vec::new();
    let mut cr = false;
    for (i, raw) in lines.iter().enumerate() {
        let mut l = raw.strip_suffix(b"\n").unwrap_or(raw);
        if let Some(s) = l.strip_suffix(b"\r") {
            l = s;
            cr = true;
        }
        let text = String::from_utf8_lossy(l);
        let Some((name, value)) = text.split_once(':') else {
            out.push(
                &rules::INFOMALL_PROPERTY_SYNTAX,
                at,
                format!("the head line {:?} has no ':'", clip(&text)),
            );
            continue;
        };
        let value = value.trim_matches([' ', '\t']);
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            out.push(
                &rules::INFOMALL_NAME_LOWERCASE,
                at,
                format!("the property name {name:?} is not lower case"),
            );
        }
        let lname = name.trim().to_ascii_lowercase();
        if i == 0 && lname != "version" {
            out.push(
                &rules::INFOMALL_VERSION_FIRST,
                at,
                format!("the first property is {name:?}, not version"),
            );
        }
        if i + 1 == lines.len() && lname != "length" {
            out.push(
                &rules::INFOMALL_LENGTH_LAST,
                at,
                format!("the last property is {name:?}, not length"),
            );
        }
        if names.contains(&lname) {
            out.push(
                &rules::INFOMALL_PROPERTY_REPEATED,
                at,
                format!("the property {lname} appears more than once"),
            );
            continue;
        }
        names.push(lname.clone());
        match lname.as_str() {
            "version" if value != "1.0" => out.push(
                &rules::INFOMALL_VERSION_UNKNOWN,
                at,
                format!("version {value:?} is not 1.0"),
            ),
            "url" => head.url = Some(value.to_owned()),
            "date" if !is_rfc822_date(value) => out.push(
                &rules::INFOMALL_DATE_SYNTAX,
                at,
                format!("date {value:?} is not an RFC 822 date"),
            ),
            "ip" if value != "unknown" && grammar::check_ip(value).is_err() => out.push(
                &rules::INFOMALL_IP,
                at,
                format!("ip {value:?} is neither an IP address nor unknown"),
            ),
            "length" => match grammar::check_integer(value) {
                Ok(n) => head.length = Some(n),
                Err(_) => out.push(
                    &rules::INFOMALL_LENGTH_MISMATCH,
                    at,
                    format!("length {value:?} is not a number"),
                ),
            },
            "unzip-length" => {
                let n = grammar::check_integer(value).ok();
                if n.is_none() {
                    out.push(
                        &rules::INFOMALL_UNZIP_LENGTH,
                        at,
                        format!("unzip-length {value:?} is not a number"),
                    );
                }
                head.unzip_length = Some(n);
            }
            n if !KNOWN.contains(&n) && opts.forbid_extensions => out.push(
                &rules::EXTENSION_PROPERTY,
                at,
                format!("{name:?} is not a property of version 1.0"),
            ),
            _ => {}
        }
    }
    if cr {
        out.push(
            &rules::INFOMALL_PROPERTY_SYNTAX,
            at,
            "head lines end in CR LF; a property ends in one LF",
        );
    }
    for required in ["url", "date"] {
        if !names.iter().any(|n| n == required) {
            out.push(
                &rules::INFOMALL_PROPERTY_MISSING,
                at,
                format!("the record has no {required}"),
            );
        }
    }
    if !names.iter().any(|n| n == "ip") {
        out.push(&rules::INFOMALL_IP, at, "the record has no ip");
    }
    head
}

fn clip(s: &str) -> String {
    s.chars().take(60).collect()
}

/// An RFC 822 date-time: `[day ","] 1*2DIGIT month 2*4DIGIT hh:mm[:ss]
/// zone` (zones: UT, GMT, the US zones, military letters, +/-hhmm).
pub(crate) fn is_rfc822_date(s: &str) -> bool {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mut s = s.trim();
    if let Some((day, rest)) = s.split_once(',') {
        if !DAYS.contains(&day.trim()) {
            return false;
        }
        s = rest.trim_start();
    }
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [day, month, year, time, zone] = parts.as_slice() else {
        return false;
    };
    let digits = |t: &str, lo: usize, hi: usize| {
        (lo..=hi).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit())
    };
    let time_ok = {
        let t: Vec<&str> = time.split(':').collect();
        matches!(t.len(), 2 | 3) && t.iter().all(|p| digits(p, 2, 2))
    };
    let zone_ok = matches!(
        *zone,
        "UT" | "GMT" | "EST" | "EDT" | "CST" | "CDT" | "MST" | "MDT" | "PST" | "PDT"
    ) || (zone.len() == 1
        && zone
            .bytes()
            .all(|b| b.is_ascii_alphabetic() && b != b'J' && b != b'j'))
        || (zone.len() == 5
            && (zone.starts_with('+') || zone.starts_with('-'))
            && digits(&zone[1..], 4, 4));
    digits(day, 1, 2)
        && MONTHS.contains(month)
        && (digits(year, 2, 2) || digits(year, 4, 4))
        && time_ok
        && zone_ok
}

/// Follows a record's data as it streams past: is it a zlib stream, and
/// how long is it inflated.
#[derive(Default)]
pub(crate) struct DataCheck {
    seen: u64,
    head: Vec<u8>,
    inflate: Option<Decompress>,
    out: Vec<u8>,
    inflated: u64,
    broken: Option<String>,
    ended: bool,
}

/// A zlib header (RFC 1950): deflate, a window it allows, and the check bits.
fn is_zlib_header(b: &[u8]) -> bool {
    matches!(b, [cmf, flg, ..] if cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) * 256 + u16::from(*flg)) % 31 == 0)
}

impl DataCheck {
    /// Feeds the next data bytes.
    pub(crate) fn update(&mut self, mut data: &[u8]) {
        self.seen += data.len() as u64;
        if self.head.len() < 2 {
            let k = (2 - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..k]);
            data = &data[k..];
            if self.head.len() == 2 && is_zlib_header(&self.head) {
                self.out.resize(64 * 1024, 0);
                let mut d = Decompress::new(true);
                let head = self.head.clone();
                self.inflate_some(&mut d, &head);
                self.inflate = Some(d);
            }
        }
        if let Some(mut d) = self.inflate.take() {
            self.inflate_some(&mut d, data);
            self.inflate = Some(d);
        }
    }

    fn inflate_some(&mut self, d: &mut Decompress, mut data: &[u8]) {
        while !data.is_empty() && self.broken.is_none() && !self.ended {
            let (i0, o0) = (d.total_in(), d.total_out());
            let r = d.decompress(data, &mut self.out, FlushDecompress::None);
            let used = (d.total_in() - i0) as usize;
            let made = d.total_out() - o0;
            self.inflated += made;
            data = &data[used.min(data.len())..];
            match r {
                Ok(Status::StreamEnd) => self.ended = true,
                Ok(_) if used == 0 && made == 0 => {
                    self.broken = Some("inflating makes no progress".into());
                }
                Ok(_) => {}
                Err(e) => {
                    self.broken = Some(format!(
                        "the zlib data is corrupt ({})",
                        e.message().unwrap_or("invalid data")
                    ));
                }
            }
        }
    }

    /// Judges the data against the head's unzip-length.
    pub(crate) fn finish(self, head: &Head, at: &At, out: &mut Out<'_>) {
        let compressed = self.inflate.is_some();
        match (compressed, head.unzip_length) {
            (false, Some(_)) => out.push(
                &rules::INFOMALL_UNZIP_LENGTH,
                at,
                "unzip-length is given but the data is not compressed (not a zlib stream)",
            ),
            (true, None) => out.push(
                &rules::INFOMALL_UNZIP_LENGTH,
                at,
                "the data is compressed (a zlib stream) but the head has no unzip-length",
            ),
            (true, Some(want)) => {
                if let Some(why) = &self.broken {
                    out.push(&rules::INFOMALL_UNZIP_LENGTH, at, why.clone());
                } else if !self.ended {
                    out.push(
                        &rules::INFOMALL_UNZIP_LENGTH,
                        at,
                        "the zlib stream of the data does not end within length",
                    );
                } else if let Some(want) = want
                    && want != self.inflated
                {
                    out.push(
                        &rules::INFOMALL_UNZIP_LENGTH,
                        at,
                        format!(
                            "unzip-length is {want} but the data inflates to {} bytes",
                            self.inflated
                        ),
                    );
                }
            }
            (false, None) => {}
        }
    }
}

/// True when a line starts a record (`version:`, the string section 4
/// searches for).
fn starts_record(line: &[u8]) -> bool {
    line.len() >= 8 && line[..8].eq_ignore_ascii_case(b"version:")
}

/// True when a line could be a property: a name of letters, digits and
/// '-' or '_', then ':'.
fn looks_like_property(line: &[u8]) -> bool {
    match line.iter().position(|&b| b == b':') {
        Some(c) => {
            c > 0
                && line[..c]
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
        }
        None => false,
    }
}

/// Validates an InfoMall file from its decompressed bytes.
pub(crate) fn validate_source<S: Source>(
    src: &mut S,
    opts: &Options,
    out: &mut Out<'_>,
) -> Result<()> {
    let mut cur = Cursor::new(src);
    let mut records = 0u64;
    let mut line = Vec::new();
    loop {
        let start = cur.pos();
        let n = cur.read_line(&mut line, MAX_LINE)?;
        if n == 0 {
            break;
        }
        // Rule 1: records follow each other with nothing between. A line
        // that is no property is damage: skip to the next `version:`.
        if !looks_like_property(&line) {
            let skipped = n + cur.skip_to_line(MAX_LINE, starts_record)?;
            let rule = if cur.peek()?.is_none() {
                &rules::FILE_TRAILING_GARBAGE
            } else {
                &rules::FILE_GARBAGE
            };
            out.push(
                rule,
                &At::offset(start),
                format!("{skipped} bytes that are not an InfoMall record"),
            );
            continue;
        }
        // The head: property lines up to the blank line, or up to the
        // next record's `version:` line when the blank line is missing (a
        // second `version:` line: the first need not lead the head).
        let mut has_version = starts_record(&line);
        let mut lines = vec![std::mem::take(&mut line)];
        let mut blank: Option<Vec<u8>> = None;
        let mut next_record = false;
        while lines.len() < MAX_PROPERTIES {
            if cur.next_line_is(MAX_LINE, starts_record)? {
                if has_version {
                    next_record = true;
                    break;
                }
                has_version = true;
            }
            if cur.read_line(&mut line, MAX_LINE)? == 0 {
                break;
            }
            if line == b"\n" || line == b"\r\n" {
                blank = Some(std::mem::take(&mut line));
                break;
            }
            lines.push(std::mem::take(&mut line));
        }
        let url = lines
            .iter()
            .find(|l| l.len() > 4 && l[..4].eq_ignore_ascii_case(b"url:"))
            .map(|l| String::from_utf8_lossy(&l[4..]).trim().to_owned());
        let at = At::record(start, url.as_deref());
        records += 1;
        let Some(blank) = blank else {
            // Without the blank line the data cannot be found: report
            // the record and go on at the next record.
            let why = if next_record {
                "the head has no blank line after it: the next record's `version:` line follows"
                    .to_string()
            } else if cur.peek()?.is_none() {
                "the head has no blank line after it: the input ends".to_string()
            } else {
                let skipped = cur.skip_to_line(MAX_LINE, starts_record)?;
                format!(
                    "the head has no blank line after its first {MAX_PROPERTIES} lines; {skipped} bytes up to the next record skipped"
                )
            };
            out.push(&rules::INFOMALL_RECORD_SYNTAX, &at, why);
            continue;
        };
        if blank != b"\n" {
            out.push(
                &rules::INFOMALL_RECORD_SYNTAX,
                &at,
                "the blank line after the head is CR LF, not one LF",
            );
        }
        let head = check_head(&lines, opts, &at, out);
        let Some(length) = head.length else {
            // Without a length the data cannot be found: look for the next record.
            continue;
        };
        let mut data = DataCheck::default();
        let got = cur.take(length, |b| data.update(b))?;
        if got < length {
            out.push(
                &rules::INFOMALL_LENGTH_MISMATCH,
                &at,
                format!("length is {length} but the input ends after {got} data bytes"),
            );
            break;
        }
        data.finish(&head, &at, out);
        // Rule 2 and 8: one LF after the data.
        match cur.peek()? {
            Some(b'\n') => cur.consume(1),
            None => out.push(
                &rules::INFOMALL_RECORD_SYNTAX,
                &at,
                "the data is not followed by a blank line (the input ends)",
            ),
            Some(_) => out.push(
                &rules::INFOMALL_LENGTH_MISMATCH,
                &at,
                format!(
                    "the {length} data bytes are not followed by a blank line: length may be wrong"
                ),
            ),
        }
    }
    out.file_summary().records = records;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc822_dates() {
        for ok in [
            "Tue, 28 Feb 2006 05:42:09 GMT",
            "28 Feb 06 05:42 +0800",
            "Mon, 1 Jan 2001 00:00:00 Z",
        ] {
            assert!(is_rfc822_date(ok), "{ok}");
        }
        for bad in [
            "Tue,15Apr200308:13:06GMT",
            "2006-02-28T05:42:09Z",
            "Tue, 28 Foo 2006 05:42:09 GMT",
            "Tue, 28 Feb 2006 05:42:09",
            "",
        ] {
            assert!(!is_rfc822_date(bad), "{bad}");
        }
    }

    #[test]
    fn zlib_data_is_measured() {
        use std::io::Write;
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&b"<html>".repeat(1000)).unwrap();
        let z = e.finish().unwrap();
        let mut d = DataCheck::default();
        for c in z.chunks(7) {
            d.update(c);
        }
        assert!(d.inflate.is_some() && d.ended && d.broken.is_none());
        assert_eq!(d.inflated, 6000);
        let mut d = DataCheck::default();
        d.update(b"HTTP/1.1 200 OK\r\n");
        assert!(d.inflate.is_none());
    }
}
