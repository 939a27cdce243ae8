//! Writing Web InfoMall records.

use std::io::{self, Read, Seek, SeekFrom, Write};

use super::{Header, property};
use crate::error::{Error, ErrorKind, Result};

/// The properties of a record to write (`unzip-length` and `length` are
/// computed). Values are bytes as they will be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Properties {
    /// `version` (normally `1.0`).
    pub version: Vec<u8>,
    /// `url`.
    pub url: Vec<u8>,
    /// `origin`, the URL before a redirect.
    pub origin: Option<Vec<u8>>,
    /// The name of the capture-time property: `date`, or `time` for the
    /// form used before 2004.
    pub date_name: String,
    /// The capture time as written (RFC 1123, see
    /// [`format_date`](super::format_date)).
    pub date: Vec<u8>,
    /// `ip`: an address, a host name or `unknown`.
    pub ip: Option<Vec<u8>>,
    /// Other properties (lower-case names), written after `ip`.
    pub extra: Vec<(String, Vec<u8>)>,
}

impl Properties {
    /// Version 1.0 properties with `url` and `date`.
    pub fn new(url: impl Into<Vec<u8>>, date: impl Into<Vec<u8>>) -> Self {
        Properties {
            version: b"1.0".to_vec(),
            url: url.into(),
            origin: None,
            date_name: property::DATE.to_string(),
            date: date.into(),
            ip: None,
            extra: Vec::new(),
        }
    }

    /// The properties of a record as read (those the writer computes left
    /// out).
    pub fn from_header(h: &Header) -> Self {
        let mut p = Properties::new(
            h.url().map(|v| v.into_owned()).unwrap_or_default(),
            h.date_value().map(|v| v.into_owned()).unwrap_or_default(),
        );
        if h.get(property::DATE).is_none() && h.get(property::TIME).is_some() {
            p.date_name = property::TIME.to_string();
        }
        if let Some(v) = h.version() {
            p.version = v.into_owned();
        }
        p.origin = h.origin().map(|v| v.into_owned());
        p.ip = h.ip().map(|v| v.into_owned());
        for f in h.unknown() {
            p.extra
                .push((f.name_str().to_ascii_lowercase(), f.value().into_owned()));
        }
        p
    }

    /// Sets a property by name: the known ones go to their places, others
    /// are added (replacing one of the same name).
    pub fn set(&mut self, name: &str, value: &[u8]) {
        let v = value.to_vec();
        match name.to_ascii_lowercase().as_str() {
            property::VERSION => self.version = v,
            property::URL => self.url = v,
            property::ORIGIN => self.origin = Some(v),
            property::DATE => {
                self.date_name = property::DATE.into();
                self.date = v;
            }
            property::TIME => {
                self.date_name = property::TIME.into();
                self.date = v;
            }
            property::IP => self.ip = Some(v),
            // Computed by the writer.
            property::UNZIP_LENGTH | property::LENGTH => {}
            other => {
                if let Some(e) = self.extra.iter_mut().find(|(n, _)| n == other) {
                    e.1 = v;
                } else {
                    self.extra.push((other.to_string(), v));
                }
            }
        }
    }

    fn lines(&self) -> Result<Vec<(&str, &[u8])>> {
        let mut v: Vec<(&str, &[u8])> = vec![
            (property::VERSION, &self.version),
            (property::URL, &self.url),
        ];
        if let Some(o) = &self.origin {
            v.push((property::ORIGIN, o));
        }
        v.push((&self.date_name, &self.date));
        if let Some(ip) = &self.ip {
            v.push((property::IP, ip));
        }
        for (n, val) in &self.extra {
            v.push((n, val));
        }
        for (n, val) in &v {
            let bad_name = n.is_empty()
                || !n
                    .bytes()
                    .all(|b| b != b':' && crate::fields::is_token_char(b));
            if bad_name || val.contains(&b'\n') || val.contains(&b'\r') {
                return Err(Error::new(ErrorKind::Field {
                    name: n.to_string(),
                    message: "not a valid Web InfoMall property (name a token without ':', value on one line)".into(),
                }));
            }
        }
        Ok(v)
    }
}

/// Counts what passes through.
struct Counting<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// Writes Web InfoMall records: `version`, `url`, `origin`, `date`,
/// `ip`, other properties, `unzip-length`, `length`, each `name: value`
/// and LF; a blank line; the content (zlib-compressed when asked); a blank
/// line. The content is spooled (memory, then a temporary file past 8 MiB)
/// because `length` precedes it.
pub struct Writer<W: Write> {
    out: W,
    written: u64,
    spool_threshold: usize,
}

impl<W: Write> Writer<W> {
    /// A writer to `out`.
    pub fn new(out: W) -> Self {
        Writer {
            out,
            written: 0,
            spool_threshold: 8 << 20,
        }
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.written
    }

    /// Writes one record whose content is what `content` gives; compressed
    /// with zlib (and `unzip-length` written) when `compress`. Returns the
    /// record's offset.
    ///
    /// # Errors
    /// A property that cannot be written, I/O errors.
    pub fn write(
        &mut self,
        props: &Properties,
        content: &mut dyn Read,
        compress: bool,
    ) -> Result<u64> {
        let lines = props.lines()?;
        let mut spool = tempfile::SpooledTempFile::new(self.spool_threshold);
        let mut src = Counting {
            inner: content,
            count: 0,
        };
        if compress {
            let mut enc =
                flate2::write::ZlibEncoder::new(&mut spool, flate2::Compression::default());
            io::copy(&mut src, &mut enc)?;
            enc.finish()?;
        } else {
            io::copy(&mut src, &mut spool)?;
        }
        let stored = spool.seek(SeekFrom::End(0))?;
        spool.seek(SeekFrom::Start(0))?;
        let mut head = Vec::with_capacity(256);
        for (n, v) in lines {
            head.extend_from_slice(n.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(v);
            head.push(b'\n');
        }
        if compress {
            head.extend_from_slice(
                format!("{}: {}\n", property::UNZIP_LENGTH, src.count).as_bytes(),
            );
        }
        head.extend_from_slice(format!("{}: {stored}\n\n", property::LENGTH).as_bytes());
        let offset = self.written;
        self.out.write_all(&head)?;
        let copied = io::copy(&mut spool, &mut self.out)?;
        self.out.write_all(b"\n")?;
        self.written += head.len() as u64 + copied + 1;
        Ok(offset)
    }

    /// Flushes the output (every record written so far is then in it).
    ///
    /// # Errors
    /// Flushing failed.
    pub fn flush(&mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }

    /// Flushes and returns the output.
    ///
    /// # Errors
    /// Flushing failed.
    pub fn finish(mut self) -> Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infomall::Reader;

    #[test]
    fn written_records_read_back() {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        let mut p = Properties::new("http://a/", "Tue, 28 Feb 2006 05:42:09 GMT");
        p.origin = Some(b"http://o/".to_vec());
        p.ip = Some(b"host.example".to_vec());
        p.set("x-note", b"kept");
        w.write(&p, &mut &b"HTTP/1.0 200 OK\r\n\r\nbody"[..], true)
            .unwrap();
        w.write(&p, &mut &b"plain"[..], false).unwrap();
        w.finish().unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("version: 1.0\nurl: http://a/\norigin: http://o/\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nip: host.example\nx-note: kept\nunzip-length: 23\nlength: "), "{text}");
        let mut r = Reader::new(&out[..]);
        let mut rec = r.next_record().unwrap().unwrap();
        assert_eq!(Properties::from_header(rec.infomall_header()), p);
        assert_eq!(rec.read_block().unwrap(), b"HTTP/1.0 200 OK\r\n\r\nbody");
        rec.finish().unwrap();
        let mut rec = r.next_record().unwrap().unwrap();
        assert!(!rec.is_compressed());
        assert_eq!(rec.read_block().unwrap(), b"plain");
        rec.finish().unwrap();
        assert!(r.next_record().unwrap().is_none());
        assert!(r.take_warnings().is_empty());
    }

    #[test]
    fn bad_properties_are_refused() {
        let mut w = Writer::new(Vec::new());
        let p = Properties::new("http://a/\nlength: 3", "x");
        assert!(w.write(&p, &mut &b""[..], false).is_err());
        let mut p = Properties::new("http://a/", "x");
        p.extra.push(("a:b".into(), b"v".to_vec()));
        assert!(w.write(&p, &mut &b""[..], false).is_err());
    }
}
