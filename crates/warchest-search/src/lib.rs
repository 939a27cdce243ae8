//! Full-text search over web archives, on [tantivy].
//!
//! [`SearchIndex`] is an index in a directory: one document per capture
//! with a payload (response and resource records), holding its text,
//! title, URL, host, SURT, date, media type, HTTP status, language, and
//! the WARC file and offset of its record (so a hit is one seek away from
//! replay). It is built on every core ([`Writer`], [`add_archives`]) with
//! a bounded memory budget, and extended with new archives: the files in
//! it are listed in the index's own commit ([`IndexedFile`]), so a file
//! given again is not added twice.
//!
//! [`SearchIndex::search`] takes a [`SearchRequest`] and gives
//! [`SearchResults`]: hits with a highlighted snippet, facets by host,
//! year, media type and language, a histogram by month, paging; the
//! command line, the JSON API and the server's pages all show that struct.
//!
//! ```
//! use warchest::archive::Reader;
//! use warchest_search::{AddStats, IndexedFile, SearchIndex, SearchRequest, WriterOptions};
//! let page = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<title>Hi</title><p>Hello archive</p>";
//! let data = format!("WARC/1.0\r\nWARC-Type: response\r\nWARC-Date: 2024-01-02T03:04:05Z\r\n\
//! WARC-Target-URI: http://example.com/\r\nContent-Type: application/http; msgtype=response\r\n\
//! Content-Length: {}\r\n\r\n{page}\r\n\r\n", page.len());
//! let dir = tempfile::tempdir()?;
//! let index = SearchIndex::create_or_open(dir.path())?;
//! let writer = index.writer(&WriterOptions::default())?;
//! let file = IndexedFile::identify("a.warc", data.len() as u64, data.as_bytes())?;
//! let mut reader = Reader::new(data.as_bytes())?;
//! writer.add_archive(&mut reader, file, &mut AddStats::default())?;
//! writer.commit()?;
//! let index = SearchIndex::open(dir.path())?;
//! let found = index.search(&SearchRequest::new("archive"))?;
//! assert_eq!(found.total, 1);
//! assert_eq!(found.hits[0].snippet.html, "Hello <b>archive</b>");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod doc;
mod fulltext;
mod search;
pub mod web;

use std::path::{Path, PathBuf};

pub use doc::Document;
pub use fulltext::{
    AddStats, Added, ArchiveOutcome, HEAD_BYTES, IndexedFile, Known, SearchIndex, Writer,
    WriterOptions, add_archives,
};
pub use search::{
    Bucket, DEFAULT_PER_PAGE, FacetValue, Facets, Hit, MAX_DEPTH, MAX_NESTING, MAX_PER_PAGE,
    MAX_QUERY, SearchRequest, SearchResults, Snippet, escape_html,
};

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the index's directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The index failed.
    #[error("search index {}: {source}", path.display())]
    Index {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: tantivy::TantivyError,
    },
    /// The directory holds something else than a warchest search index.
    #[error("{}: not a warchest search index (made by `warchest search-index`)", .0.display())]
    NotAnIndex(PathBuf),
    /// Another file of the same name is already in the index.
    #[error(
        "another file named {} ({} bytes) is already in the index: its documents would have the same file name",
        .0.name, .0.size
    )]
    Conflict(Box<IndexedFile>),
    /// Reading an archive failed (the error names file, offset, record).
    #[error(transparent)]
    Archive(#[from] warchest::Error),
    /// The request cannot be answered.
    #[error("bad search request: {0}")]
    Query(String),
}

impl Error {
    fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
    fn index(path: &Path, source: tantivy::TantivyError) -> Error {
        Error::Index {
            path: path.to_path_buf(),
            source,
        }
    }
}
