//! What a crawl writes besides its WARC files, each appended as the crawl
//! goes and flushed line by line (a `kill -9` leaves whole lines):
//!
//! - `logs/crawl.log`: one line per finished URI, in Heritrix's format;
//! - `logs/scope.log`: every URI the scope rejected, with the rule;
//! - `pages/pages.jsonl`: the pages (seeds and link targets, HTML; in a
//!   browser crawl a page URL of another type too), in Browsertrix's
//!   format;
//! - `indexes/index.cdxj`: the CDXJ index of each WARC file once it is
//!   closed (`indexes/indexed.txt` lists the files indexed).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// An appending line writer shared by the workers.
pub struct LineLog {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
}

impl LineLog {
    /// Opens `path` for appending (creating it and its directory). A torn
    /// last line (no newline: a run killed while writing it) is cut off,
    /// so the next line does not run into it; the URI it was about was in
    /// flight and is logged again when fetched again.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(path: &Path) -> std::io::Result<LineLog> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        cut_torn_line(path)?;
        let f = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(LineLog {
            path: path.to_path_buf(),
            out: Mutex::new(BufWriter::new(f)),
        })
    }

    /// Whether the file is empty (a new log).
    pub fn is_empty(&self) -> bool {
        std::fs::metadata(&self.path)
            .map(|m| m.len() == 0)
            .unwrap_or(true)
            && self
                .out
                .lock()
                .map(|o| o.buffer().is_empty())
                .unwrap_or(true)
    }

    /// Appends one line (a newline is added) and flushes it.
    ///
    /// # Errors
    /// The write failed.
    pub fn line(&self, text: &str) -> std::io::Result<()> {
        let mut o = self
            .out
            .lock()
            .map_err(|_| std::io::Error::other("a worker panicked"))?;
        o.write_all(text.as_bytes())?;
        o.write_all(b"\n")?;
        o.flush()
    }

    /// Appends what `lines` reads (whole lines, each ended by a newline)
    /// and flushes it: a closed WARC file's CDXJ rows, copied from where
    /// they were kept without holding them all in memory.
    ///
    /// # Errors
    /// Reading or writing failed.
    pub fn copy_lines(&self, lines: &mut dyn std::io::Read) -> std::io::Result<()> {
        let mut o = self
            .out
            .lock()
            .map_err(|_| std::io::Error::other("a worker panicked"))?;
        std::io::copy(lines, &mut *o)?;
        o.flush()
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Truncates `path` after its last newline when it does not end in one.
pub(crate) fn cut_torn_line(path: &Path) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let len = f.metadata()?.len();
    // Back from the end in blocks until a newline (or the start).
    let mut end = len;
    let mut buf = vec![0u8; 64 << 10];
    while end > 0 {
        let n = (buf.len() as u64).min(end) as usize;
        f.seek(SeekFrom::Start(end - n as u64))?;
        f.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            end = end - n as u64 + i as u64 + 1;
            break;
        }
        end -= n as u64;
    }
    if end < len {
        f.set_len(end)?;
    }
    Ok(())
}

/// One line of Heritrix's crawl.log.
#[derive(Debug, Clone, Default)]
pub struct LogLine<'a> {
    /// HTTP status or a negative Heritrix code.
    pub status: i32,
    /// Body bytes without headers; `None` for `-`.
    pub size: Option<u64>,
    /// The URI.
    pub uri: &'a str,
    /// Hop path (`-` when empty).
    pub hops: &'a str,
    /// Referrer.
    pub via: Option<&'a str>,
    /// Content-Type as sent.
    pub mime: Option<&'a str>,
    /// Worker number.
    pub thread: usize,
    /// When the fetch began and how long it took.
    pub fetch: Option<(OffsetDateTime, u64)>,
    /// `sha1:BASE32` of the payload.
    pub digest: Option<&'a str>,
    /// The seed (source tag).
    pub seed: Option<&'a str>,
    /// Annotations (`duplicate:digest`, `lenTrunc`, `3t`...).
    pub annotations: Vec<String>,
    /// Extra JSON (`contentSize`, `warcFilename`, `warcFileOffset`).
    pub extra: Option<serde_json::Value>,
}

/// Heritrix's MIME column: Content-Type cut at the first space, `;` or
/// `,`, `no-type` when absent.
pub fn mime_column(ct: Option<&str>) -> String {
    let m = ct.map_or("", warchest::http::media_type_token);
    if m.is_empty() {
        "no-type".into()
    } else {
        m.to_ascii_lowercase()
    }
}

fn log_time(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

fn compact_time(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

impl LogLine<'_> {
    /// The line, logged now.
    pub fn format(&self, now: OffsetDateTime) -> String {
        let dash = |s: Option<&str>| s.filter(|s| !s.is_empty()).unwrap_or("-").to_string();
        let size = self
            .size
            .map(|s| s.to_string())
            .unwrap_or_else(|| "-".into());
        let fetch = self
            .fetch
            .map(|(t, ms)| format!("{}+{ms}", compact_time(t)))
            .unwrap_or_else(|| "-".into());
        let ann = if self.annotations.is_empty() {
            "-".to_string()
        } else {
            self.annotations.join(",")
        };
        let mut line = format!(
            "{} {:>5} {:>10} {} {} {} {} #{:03} {} {} {} {}",
            log_time(now),
            self.status,
            size,
            self.uri,
            dash(Some(self.hops)),
            dash(self.via),
            mime_column(self.mime),
            self.thread,
            fetch,
            dash(self.digest),
            dash(self.seed),
            ann,
        );
        if let Some(x) = &self.extra {
            line.push(' ');
            line.push_str(&x.to_string());
        }
        line
    }
}

/// An ISO-8601 time with milliseconds, as pages.jsonl's `ts`.
pub fn iso_time(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let t = t
        .replace_nanosecond(t.millisecond() as u32 * 1_000_000)
        .unwrap_or(t);
    t.format(&Rfc3339).unwrap_or_default()
}

/// The header line of pages.jsonl.
pub const PAGES_HEADER: &str =
    r#"{"format":"json-pages-1.0","id":"pages","title":"All Pages","hasText":"false"}"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_cut_when_a_log_opens() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("l.log");
        std::fs::write(&p, "one\ntwo\nthr").unwrap();
        let l = LineLog::open(&p).unwrap();
        l.line("four").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one\ntwo\nfour\n");
        // A file of one torn line is emptied; whole lines are kept.
        std::fs::write(&p, "torn").unwrap();
        drop(LineLog::open(&p).unwrap());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "");
        std::fs::write(&p, "a\n").unwrap();
        drop(LineLog::open(&p).unwrap());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a\n");
    }

    #[test]
    fn crawl_log_line_has_heritrix_columns() {
        let t = time::macros::datetime!(2026-03-14 09:26:53.512 UTC);
        let l = LogLine {
            status: 200,
            size: Some(48213),
            uri: "https://example.org/img/banner.png",
            hops: "LLE",
            via: Some("https://example.org/news/"),
            mime: Some("image/png; q=1"),
            thread: 7,
            fetch: Some((time::macros::datetime!(2026-03-14 09:26:53.104 UTC), 402)),
            digest: Some("sha1:Q2F4Z6TPLN3S7BWXK5MROHDY4EJVCUGA"),
            seed: Some("https://example.org/"),
            annotations: vec!["duplicate:digest".into()],
            extra: None,
        };
        assert_eq!(
            l.format(t),
            "2026-03-14T09:26:53.512Z   200      48213 https://example.org/img/banner.png LLE https://example.org/news/ image/png #007 20260314092653104+402 sha1:Q2F4Z6TPLN3S7BWXK5MROHDY4EJVCUGA https://example.org/ duplicate:digest"
        );
        let r = LogLine {
            status: -9998,
            uri: "https://example.org/private/q4.pdf",
            hops: "LLL",
            via: Some("https://example.org/reports/"),
            thread: 12,
            ..LogLine::default()
        };
        assert_eq!(
            r.format(t),
            "2026-03-14T09:26:53.512Z -9998          - https://example.org/private/q4.pdf LLL https://example.org/reports/ no-type #012 - - - -"
        );
        assert_eq!(mime_column(Some("Text/HTML;charset=utf-8")), "text/html");
    }
}
