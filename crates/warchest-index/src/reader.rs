//! Index files as text: a CDX or CDXJ file read plain or compressed.
//!
//! Common Crawl publishes its CDXJ index as `cdx-00000.gz` (gzip, one member
//! per block of lines) and py-wacz writes `indexes/index.cdx.gz` the same
//! way, so whoever reads an index ([`open`]) takes it either way. The
//! compression is sniffed from the first bytes (never from the name) and
//! decoded as a stream by the format crate's [`Decoder`], in strict mode: a
//! corrupt or cut member is an error, never a shorter index.

use std::io::{self, BufRead, BufReader, Read};

use warchest::codec::{Codec, Decoder, DecoderOptions, Source};

/// Opens the index text that `r` reads: gzip, zstd or LZ4 (sniffed from
/// its magic bytes; every member in turn) is decoded as it is read, any
/// other bytes are the text as they are. `name` (the file's path or URL)
/// is what a decoding error names; a caller adds the line.
///
/// # Errors
/// The first bytes cannot be read.
pub fn open<R: Read + Send + 'static>(mut r: R, name: &str) -> io::Result<Box<dyn BufRead + Send>> {
    // Enough bytes to sniff, read however the source splits them.
    let mut head = Vec::with_capacity(4);
    while head.len() < 4 {
        let mut b = [0u8; 4];
        let n = match r.read(&mut b[..4 - head.len()]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        head.extend_from_slice(&b[..n]);
    }
    let compressed = Codec::sniff(&head).is_some();
    let all = io::Cursor::new(head).chain(r);
    Ok(if compressed {
        let opts = DecoderOptions {
            lenient: false,
            ..DecoderOptions::default()
        };
        Box::new(BufReader::with_capacity(
            1 << 16,
            Members {
                decoder: Decoder::new(all, opts),
                name: name.to_string(),
                ended: false,
            },
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, all))
    })
}

/// The longest index line read whole: a longer one is cut there (its rest
/// is read as the next line and is not understood), so that a corrupt
/// index cannot exhaust memory.
pub const MAX_LINE: u64 = 1 << 20;

/// Reads the next line of an index (its `\n` included) into `line`,
/// cleared first, at most [`MAX_LINE`] bytes of it. `number` counts the
/// lines read; an error names the line it stopped in. `Ok(false)` at the
/// end of the index.
///
/// # Errors
/// The index cannot be read (the error message starts with `line N:`).
pub fn next_line<R: BufRead + ?Sized>(
    r: &mut R,
    line: &mut Vec<u8>,
    number: &mut u64,
) -> io::Result<bool> {
    line.clear();
    let n = r
        .take(MAX_LINE)
        .read_until(b'\n', line)
        .map_err(|e| io::Error::new(e.kind(), format!("line {}: {e}", *number + 1)))?;
    if n == 0 {
        return Ok(false);
    }
    *number += 1;
    Ok(true)
}

/// The fields of a CDXJ line that locate a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CdxjLine {
    /// The url key.
    pub urlkey: String,
    /// The 14-digit timestamp.
    pub timestamp: String,
    /// The `url` field (empty when the line has none).
    pub url: String,
    /// The `filename` field.
    pub filename: String,
    /// The `offset` field.
    pub offset: u64,
    /// The `length` field.
    pub length: Option<u64>,
    /// The JSON block, all fields.
    pub json: serde_json::Map<String, serde_json::Value>,
}

impl CdxjLine {
    /// Parses `urlkey timestamp {json}`; `None` when it is not that, or
    /// the JSON lacks `filename` or `offset`. Values may be strings or
    /// numbers (pywb writes strings).
    pub fn parse(line: &[u8]) -> Option<CdxjLine> {
        let line = std::str::from_utf8(line).ok()?.trim_end();
        let (urlkey, rest) = line.split_once(' ')?;
        let (timestamp, json) = rest.split_once(' ')?;
        let json: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json).ok()?;
        let text = |k: &str| value_text(json.get(k)?);
        Some(CdxjLine {
            urlkey: urlkey.to_string(),
            timestamp: timestamp.to_string(),
            url: text("url").unwrap_or_default(),
            filename: text("filename")?,
            offset: text("offset")?.trim().parse().ok()?,
            length: text("length").and_then(|l| l.trim().parse().ok()),
            json,
        })
    }

    /// A field of the JSON block as text: a string as it is, a number as
    /// written; `None` when absent or of another kind.
    pub fn text(&self, name: &str) -> Option<String> {
        value_text(self.json.get(name)?)
    }
}

fn value_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The decompressed bytes of every member in turn, as one stream.
struct Members<R> {
    decoder: Decoder<R>,
    name: String,
    ended: bool,
}

impl<R: Read> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let fail = |e: warchest::Error, name: &str| {
            let e = io::Error::from(e);
            io::Error::new(e.kind(), format!("{name}: {e}"))
        };
        while !self.ended && !buf.is_empty() {
            let got = self.decoder.fill_buf().map_err(|e| fail(e, &self.name))?;
            if !got.is_empty() {
                let n = got.len().min(buf.len());
                buf[..n].copy_from_slice(&got[..n]);
                self.decoder.consume(n);
                return Ok(n);
            }
            if !self
                .decoder
                .next_member()
                .map_err(|e| fail(e, &self.name))?
            {
                self.ended = true;
            }
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(parts: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(p).unwrap();
            out.extend(e.finish().unwrap());
        }
        out
    }

    fn text(bytes: Vec<u8>) -> io::Result<String> {
        let mut s = String::new();
        open(io::Cursor::new(bytes), "i.cdx.gz")?.read_to_string(&mut s)?;
        Ok(s)
    }

    #[test]
    fn plain_and_gzip_members_read_alike() {
        let lines = "a 1 {}\nb 2 {}\nc 3 {}\n";
        assert_eq!(text(lines.as_bytes().to_vec()).unwrap(), lines);
        let members = gz(&[b"a 1 {}\n", b"", b"b 2 {}\nc 3", b" {}\n"]);
        assert_eq!(text(members).unwrap(), lines);
        // Shorter than a magic number, and empty.
        assert_eq!(text(b"x\n".to_vec()).unwrap(), "x\n");
        assert_eq!(text(Vec::new()).unwrap(), "");
    }

    #[test]
    fn lines_are_counted_bounded_and_an_error_names_its_line() {
        let mut long = vec![b'x'; MAX_LINE as usize + 3];
        long.extend_from_slice(b"\nb\n");
        let mut r = io::Cursor::new(long);
        let (mut line, mut number) = (Vec::new(), 0);
        assert!(next_line(&mut r, &mut line, &mut number).unwrap());
        assert_eq!((line.len() as u64, number), (MAX_LINE, 1));
        assert!(next_line(&mut r, &mut line, &mut number).unwrap());
        assert_eq!((line.as_slice(), number), (&b"xxx\n"[..], 2));
        assert!(next_line(&mut r, &mut line, &mut number).unwrap());
        assert_eq!(line, b"b\n");
        assert!(!next_line(&mut r, &mut line, &mut number).unwrap());
        assert_eq!(number, 3);
        let cut = gz(&[b"a 1 {}\n", b"b 2 {}\n"]);
        let mut r = open(io::Cursor::new(cut[..cut.len() - 5].to_vec()), "i.gz").unwrap();
        let mut number = 0;
        let e = loop {
            match next_line(&mut r, &mut line, &mut number) {
                Ok(true) => {}
                Ok(false) => panic!("a cut index read to its end"),
                Err(e) => break e,
            }
        };
        // The cut is in the second member's trailer: its line is handed out,
        // and the error comes with the read of the line after it.
        assert!(e.to_string().starts_with("line 3: i.gz: "), "{e}");
    }

    #[test]
    fn cdxj_lines_parse_with_string_or_number_values() {
        let l = CdxjLine::parse(
            b"com,example)/ 20140126200624 {\"url\": \"http://example.com/\", \"filename\": \"a.warc.gz\", \"offset\": \" 12 \", \"length\": 34}\n",
        )
        .unwrap();
        assert_eq!(
            (l.urlkey.as_str(), l.timestamp.as_str(), l.url.as_str()),
            ("com,example)/", "20140126200624", "http://example.com/")
        );
        assert_eq!(
            (l.filename.as_str(), l.offset, l.length),
            ("a.warc.gz", 12, Some(34))
        );
        // Not CDXJ, or without what locates a record.
        assert!(CdxjLine::parse(b"com,example)/ 2014 not json").is_none());
        assert!(CdxjLine::parse(b"k 2014 {\"url\": \"u\", \"offset\": 1}").is_none());
        assert!(CdxjLine::parse(b"k 2014 {\"url\": \"u\", \"filename\": \"f\"}").is_none());
        // A line without `url` still locates its record (fetch reads it).
        let l = CdxjLine::parse(b"k 2014 {\"filename\": \"f\", \"offset\": 3, \"status\": 200, \"mime\": \"text/html\", \"x\": [1]}").unwrap();
        assert_eq!((l.url.as_str(), l.offset), ("", 3));
        // Fields as text, numbers as written.
        assert_eq!(l.text("status").as_deref(), Some("200"));
        assert_eq!(l.text("mime").as_deref(), Some("text/html"));
        assert_eq!(l.text("x"), None);
        assert_eq!(l.text("none"), None);
    }

    #[test]
    fn a_corrupt_or_cut_member_is_an_error_naming_the_file() {
        let mut bad = gz(&[b"a 1 {}\n", b"b 2 {}\n"]);
        let cut = bad[..bad.len() - 5].to_vec();
        let n = bad.len();
        bad[n - 12] ^= 0xff;
        for b in [bad, cut] {
            let e = text(b).unwrap_err();
            assert!(e.to_string().contains("i.cdx.gz"), "{e}");
        }
    }
}
