//! `dedupe-index` given earlier crawls' CDXJ indexes: each capture's
//! payload digest, URI and date go into the crawl's own digest database, so
//! a payload seen in an earlier crawl is written as an
//! identical-payload-digest revisit naming it (WARC-Refers-To-Target-URI
//! and -Date; a CDXJ line holds no record id, so there is no
//! WARC-Refers-To, as with Heritrix's CDX-based dedupe).
//!
//! Read as a stream, a batch committed every 10,000 entries: memory does
//! not grow with the index. A line that is not CDXJ, or not a capture to
//! dedupe against (not a 2xx response, a revisit, no digest), is counted,
//! not an error; the counts are reported.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use warchest::digest::Digest;
use warchest_ops::dedupe::{DigestIndex, IndexEntry};
use warchest_ops::revisit::{Location, Original};

/// What loading CDXJ files gave.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Loaded {
    /// Captures whose digest went into the database (first one of each
    /// digest; a digest already there keeps its original).
    pub added: u64,
    /// Lines that are captures to dedupe against.
    pub captures: u64,
    /// Lines skipped: not 2xx, revisits, no digest.
    pub skipped: u64,
    /// Lines that are not CDXJ (or bear a digest that does not parse).
    pub malformed: u64,
}

/// Whether `path` names CDXJ (a `.cdxj` file, or a directory of them)
/// rather than a `warchest dedupe` database.
pub fn is_cdxj(path: &Path) -> bool {
    path.is_dir() || path.extension().is_some_and(|x| x == "cdxj")
}

/// The `.cdxj` files of `path` (itself, or a directory's, sorted).
///
/// # Errors
/// The directory cannot be read.
pub fn cdxj_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cdxj"))
        .collect();
    v.sort();
    Ok(v)
}

/// Adds the captures of the CDXJ files at `path` to `index`.
///
/// # Errors
/// A file cannot be read (named), or the database failed.
pub fn load(index: &DigestIndex, path: &Path) -> Result<Loaded, warchest::Error> {
    let mut n = Loaded::default();
    let files = cdxj_files(path).map_err(|e| warchest::Error::from(e).in_file(path))?;
    if files.is_empty() {
        return Err(warchest::Error::from(std::io::Error::other(
            "dedupe-index: no .cdxj file in this directory",
        ))
        .in_file(path));
    }
    for f in files {
        let at = |e: std::io::Error| warchest::Error::from(e).in_file(&f);
        let r = std::io::BufReader::new(std::fs::File::open(&f).map_err(at)?);
        let mut batch = index.batch()?;
        let mut pending = 0;
        for line in r.split(b'\n') {
            let line = line.map_err(at)?;
            match entry(&String::from_utf8_lossy(&line)) {
                Line::Capture(d, e) => {
                    n.captures += 1;
                    if batch.insert_if_absent(&d, &e)? {
                        n.added += 1;
                    }
                    pending += 1;
                    if pending == 10_000 {
                        batch.commit()?;
                        batch = index.batch()?;
                        pending = 0;
                    }
                }
                Line::Skip => n.skipped += 1,
                Line::Malformed => n.malformed += 1,
                Line::Blank => {}
            }
        }
        batch.commit()?;
    }
    Ok(n)
}

enum Line {
    Capture(Digest, IndexEntry),
    Skip,
    Malformed,
    Blank,
}

/// One CDXJ line: `SURT TIMESTAMP {json}` (pywb's, warchest's and
/// cdxj-indexer's form).
fn entry(line: &str) -> Line {
    let line = line.trim_end_matches('\r');
    if line.trim().is_empty() || line.starts_with('!') {
        return Line::Blank;
    }
    let mut parts = line.splitn(3, ' ');
    let (Some(_surt), Some(ts), Some(json)) = (parts.next(), parts.next(), parts.next()) else {
        return Line::Malformed;
    };
    let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(json) else {
        return Line::Malformed;
    };
    let s = |k: &str| m.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let (Some(url), Some(date)) = (s("url"), warc_date(ts)) else {
        return Line::Malformed;
    };
    let status = s("status")
        .or_else(|| {
            m.get("status")
                .and_then(|v| v.as_u64())
                .map(|n| n.to_string())
        })
        .unwrap_or_default();
    if !status.starts_with('2') || s("mime").as_deref() == Some("warc/revisit") {
        return Line::Skip;
    }
    let Some(digest) = s("digest") else {
        return Line::Skip;
    };
    // pywb writes the SHA-1 in base32 without its label.
    let Ok(d) = Digest::parse_indexed(&digest) else {
        return Line::Malformed;
    };
    let payload_digest = d.as_str().to_owned();
    if d.algorithm().is_none() {
        return Line::Malformed;
    }
    let offset = s("offset").and_then(|o| o.parse().ok()).unwrap_or(0);
    Line::Capture(
        d,
        IndexEntry {
            original: Original {
                record_id: String::new(),
                target_uri: url,
                date,
                payload_digest,
            },
            location: Location {
                file: PathBuf::from(s("filename").unwrap_or_default()),
                offset,
            },
        },
    )
}

/// A 14-digit CDX timestamp (or a longer one) as a WARC-Date, to the
/// second.
fn warc_date(ts: &str) -> Option<String> {
    warchest::warc::WarcDate::from_timestamp14(ts.get(..14)?).map(|d| d.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdxj_lines_of_every_writer() {
        let pywb = r#"com,example)/ 20170306040348 {"url": "http://example.com/", "mime": "text/html", "status": "200", "digest": "G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK", "length": "1228", "offset": "784", "filename": "example.warc.gz"}"#;
        let Line::Capture(d, e) = entry(pywb) else {
            panic!("not read")
        };
        assert_eq!(d.as_str(), "sha1:G7HRM7BGOKSKMSXZAHMUQTTV53QOFSMK");
        assert_eq!(e.original.target_uri, "http://example.com/");
        assert_eq!(e.original.date, "2017-03-06T04:03:48Z");
        assert_eq!(e.original.payload_digest, d.as_str());
        assert_eq!(e.location.offset, 784);
        // cdxj-indexer keeps the label.
        let labelled = pywb.replace("\"G7HR", "\"sha1:G7HR");
        assert!(matches!(entry(&labelled), Line::Capture(..)));
        let revisit = pywb.replace("text/html", "warc/revisit");
        assert!(matches!(entry(&revisit), Line::Skip));
        let redirect = pywb.replace("\"200\"", "\"301\"");
        assert!(matches!(entry(&redirect), Line::Skip));
        assert!(matches!(entry("not cdxj"), Line::Malformed));
        assert!(matches!(
            entry(&pywb.replace("G7HRM7", "!!")),
            Line::Malformed
        ));
        assert!(matches!(entry(""), Line::Blank));
    }
}
