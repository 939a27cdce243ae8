//! Indexes of web archives: CDXJ, CDX and JSON lines as pywb and
//! cdxj-indexer write them, and Parquet with Common Crawl's cc-index columns.
//!
//! [`Indexer`] turns the records of an [`archive::Reader`](warchest::archive::Reader) (any format:
//! the entry is built from the record's WARC view) into [`Entry`]s;
//! [`IndexOutput`] writes them in a [`Format`], sorted when asked (Parquet
//! always is), with bounded memory ([`sort::ExternalSorter`]).
//!
//! ```
//! use warchest::archive::Reader;
//! use warchest_index::{Format, IndexOptions, IndexOutput, Indexer};
//! let data = b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Date: 2024-01-02T03:04:05Z\r\n\
//! WARC-Target-URI: http://www.Example.com/a/\r\nContent-Type: text/plain\r\n\
//! Content-Length: 2\r\n\r\nhi\r\n\r\n";
//! let mut reader = Reader::new(&data[..])?;
//! let mut out = IndexOutput::new(Vec::new(), &Format::Cdxj, false)?;
//! Indexer::new("a.warc", IndexOptions::default()).index(&mut reader, |e| out.push(&e))?;
//! let text = String::from_utf8(out.finish()?).unwrap();
//! assert!(text.starts_with("com,example)/a 20240102030405 {\"url\": \"http://www.Example.com/a/\""));
//! # Ok::<(), warchest::Error>(())
//! ```
//!
//! Nothing is left out silently: a record whose HTTP head does not parse
//! is indexed as cdxj-indexer indexes it (without status and MIME), and
//! [`Indexer::index_noted`] counts it ([`UnparsedHead`]).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "parquet")]
pub mod table;

#[cfg(feature = "parquet")]
mod parquet;
mod post;
pub mod reader;
pub mod region;
pub mod select;
pub mod sort;
pub mod surt;
mod writer;

use std::borrow::Cow;
use std::io::{BufRead, Read};

#[cfg(feature = "parquet")]
pub use parquet::{ParquetOptions, parquet_schema};
pub use writer::{
    CdxField, Encoder, FieldValue, Format, IndexOutput, LegendError, entry_field_names,
    entry_fields, push_u64, py_json_str,
};

use warchest::Limits;
use warchest::archive::{FormatRecord, Reader, Record};
use warchest::codec::Source;
use warchest::digest::{Algorithm, Encoding, Hasher};
use warchest::error::{Error, Result};
use warchest::fields::Field;
use warchest::http::{HeadFinder, HttpHead, PayloadDigester};
use warchest::recoveries::Recoveries;
use warchest::warc::{RecordType, WarcDate, WarcHeader, field};

/// Largest request body read to build the POST query; longer bodies are
/// cut (the query is at most 4096 characters anyway).
pub const MAX_POST_BODY: usize = 1 << 20;

/// What an [`Indexer`] indexes.
#[derive(Debug, Clone)]
pub struct IndexOptions {
    /// Index every record. By default: response, revisit, resource and
    /// metadata records, but not resource or metadata records whose
    /// Content-Type is `application/warc-fields`, nor the metadata record
    /// an ARC file's `filedesc://` version block is read as (cdxj-indexer's
    /// default).
    pub all: bool,
    /// Append `__wb_method=post&...` to the url key of POST and PUT
    /// requests and their responses (cdxj-indexer `-p`, pywb). Default on.
    pub post_append: bool,
    /// Bounds on buffered HTTP heads.
    pub limits: Limits,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            all: false,
            post_append: true,
            limits: Limits::default(),
        }
    }
}

/// One index line's facts about a record. Text values are as cdxj-indexer
/// writes them (strings, `None` when it leaves the field out).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// SURT url key (`__wb_method=...` appended for POST/PUT); the URL itself
    /// when it has no SURT form; `-` without a URL.
    pub urlkey: String,
    /// WARC-Date as 14 digits, `-` when missing or invalid.
    pub timestamp: String,
    /// WARC-Date in milliseconds since 1970 (Parquet `fetch_time`).
    pub fetch_millis: Option<i64>,
    /// WARC-Target-URI (brackets removed, spaces as `%20`).
    pub url: Option<String>,
    /// Media type as written: HTTP Content-Type for responses and requests,
    /// `warc/revisit` for revisits, the record Content-Type otherwise.
    pub mime: Option<String>,
    /// HTTP status code as written, responses and revisits.
    pub status: Option<String>,
    /// WARC-Payload-Digest without a `sha1:` label, or computed (SHA-1,
    /// base32) when missing.
    pub digest: Option<String>,
    /// Stored length of the record (`None` when it shares its gzip member).
    pub length: Option<u64>,
    /// Stored offset of the record.
    pub offset: u64,
    /// File name.
    pub filename: String,
    /// POST/PUT responses: the request's method.
    pub method: Option<String>,
    /// POST/PUT responses: the query made of the request body
    /// (`Some(None)` is cdxj-indexer's `null`).
    pub request_body: Option<Option<String>>,
    /// WARC-Type as written.
    pub record_type: Option<String>,
    /// WARC-Identified-Payload-Type.
    pub mime_detected: Option<String>,
    /// `charset` parameter of the HTTP Content-Type.
    pub charset: Option<String>,
    /// HTTP Location header of a redirect (3xx).
    pub redirect: Option<String>,
    /// WARC-Truncated.
    pub truncated: Option<String>,
    /// WARC-IP-Address.
    pub ip: Option<String>,
    /// WARC-Record-ID.
    pub record_id: Option<String>,
}

/// An indexed record whose HTTP head did not parse (the tally lives in
/// the format crate, beside the reader's, so that every command that
/// reads heads counts them alike).
pub use warchest::recoveries::UnparsedHead;

/// The first of `warnings` saying its file is not compressed record at a
/// time (whole-file gzip, several records in a member): an index of such a
/// file would point every record at its member's offset with no length,
/// so no index of it may be written (`warchest index` refuses it).
pub fn not_addressable(warnings: &[warchest::Warning]) -> Option<&warchest::Warning> {
    warnings
        .iter()
        .find(|w| w.kind == warchest::WarningKind::NotRecordAtATime)
}

/// A compressed file whose records do not each start their own member
/// (whole-file gzip, several records in a member), refused as a whole: a
/// CDX offset points at a member, so such records cannot be addressed.
/// Its message says why and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAddressable {
    /// The file's name, as the user gave it.
    pub name: String,
    /// Where the reader found it (the warning's offset).
    pub offset: u64,
    /// The reader's warning.
    pub why: String,
    /// Entries of it already written where they cannot be taken back (a
    /// lone file's, on standard output), which the message tells to discard.
    pub written: u64,
}

impl NotAddressable {
    /// The refusal of the file `name`, given the warning [`not_addressable`]
    /// found; no entry of it written yet.
    pub fn new(name: &str, w: &warchest::Warning) -> Self {
        NotAddressable {
            name: name.to_string(),
            offset: w.offset,
            why: w.message.clone(),
            written: 0,
        }
    }
}

impl std::fmt::Display for NotAddressable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let NotAddressable {
            name,
            offset,
            why,
            written,
        } = self;
        write!(
            f,
            "{name}: not compressed record at a time (offset {offset}: {why}): an index of it \
             would not address its records, so "
        )?;
        if *written == 0 {
            f.write_str("none is written")?;
        } else {
            write!(
                f,
                "the {written} entries of it written to standard output before this was found \
                 are to be discarded"
            )?;
        }
        write!(
            f,
            "; `warchest recompress {name} -o NEW.warc.gz` writes one gzip member per record"
        )
    }
}

impl std::error::Error for NotAddressable {}

/// What pairing a request with its response needs (cdxj-indexer pairs a
/// record with the one before it).
#[derive(Debug, Clone)]
struct Pairing {
    record_type: RecordType,
    uri: Option<String>,
    record_id: Option<String>,
    concurrent_to: Option<String>,
    /// Requests with an HTTP head: the method as written.
    method: Option<String>,
    /// POST/PUT requests: the body query (`None` for cdxj-indexer's null).
    query: Option<Option<String>>,
}

#[derive(Debug)]
struct Pending {
    entry: Entry,
    include: bool,
    pairing: Pairing,
    /// Its HTTP head did not parse (see [`UnparsedHead`]).
    unparsed: bool,
}

/// What indexing one file carries from a record to the next
/// ([`Indexer::step`]): the record held back to be paired with the next
/// one, as cdxj-indexer pairs a POST request with its response, and, for
/// [`Indexer::continues`], its first record's pairing facts and whether
/// that record was paired with the second.
#[derive(Debug, Default)]
pub struct Carry {
    held: Option<Pending>,
    first: Option<Pairing>,
    first_paired: bool,
    records: u64,
    scratch: Scratch,
}

impl Carry {
    /// Takes `next`'s state over, as [`Indexer::continues`] allows, once
    /// the record `self` held was flushed ([`Indexer::flush`]).
    pub fn append(&mut self, next: Carry) {
        debug_assert!(self.held.is_none(), "the held record was not flushed");
        self.records += next.records;
        self.held = next.held;
    }
}

/// Builds index entries from the records of one file.
#[derive(Debug, Clone)]
pub struct Indexer {
    filename: String,
    opts: IndexOptions,
}

impl Indexer {
    /// An indexer naming `filename` in its entries.
    pub fn new(filename: impl Into<String>, opts: IndexOptions) -> Self {
        Indexer {
            filename: filename.into(),
            opts,
        }
    }

    /// Indexes every record of `reader`, calling `emit` with each entry in
    /// file order.
    ///
    /// # Errors
    /// Reading failed (the entries before the failure have been emitted), or
    /// `emit` failed.
    pub fn index<S: Source>(
        &self,
        reader: &mut Reader<S>,
        emit: impl FnMut(Entry) -> Result<()>,
    ) -> Result<()> {
        self.index_inner(reader, emit, None, None).map(|_| ())
    }

    /// [`Indexer::index`], handing the reader's warnings to `warned`
    /// after each record (and at the end, or before an error is
    /// returned): a long scan's recoveries are taken as it goes, not held
    /// by the reader to the end.
    ///
    /// # Errors
    /// As [`Indexer::index`].
    pub fn index_noting<S: Source>(
        &self,
        reader: &mut Reader<S>,
        emit: impl FnMut(Entry) -> Result<()>,
        mut warned: impl FnMut(Vec<warchest::Warning>),
    ) -> Result<()> {
        self.index_inner(reader, emit, Some(&mut warned), None)
            .map(|_| ())
    }

    /// [`Indexer::index_noting`], also counting in `unparsed`, under this
    /// indexer's file name, each indexed record whose HTTP head did not
    /// parse ([`UnparsedHead`]): its entry lacks status and MIME, and the
    /// caller tells so. Counted as each record is read, those before an
    /// error too. Returns the number of records read (indexed or not), so
    /// that a caller can tell an input with no record from one whose
    /// records all were left out.
    ///
    /// # Errors
    /// As [`Indexer::index`].
    pub fn index_noted<S: Source>(
        &self,
        reader: &mut Reader<S>,
        emit: impl FnMut(Entry) -> Result<()>,
        mut warned: impl FnMut(Vec<warchest::Warning>),
        unparsed: &mut Recoveries<UnparsedHead>,
    ) -> Result<u64> {
        self.index_inner(reader, emit, Some(&mut warned), Some(unparsed))
    }

    /// [`Indexer::index_noted`] for an index that must address every
    /// record (a CDX file, a WACZ's): stops at the first warning that the
    /// input `name` is not compressed record at a time and gives it as
    /// [`NotAddressable`] (`Ok(Err(..))`), a record or two in, where a
    /// whole-file gzip was read to its end before it was refused. The
    /// entries emitted before are the caller's to discard.
    ///
    /// # Errors
    /// As [`Indexer::index`] (a refusal found first is given instead).
    pub fn index_addressable<S: Source>(
        &self,
        reader: &mut Reader<S>,
        name: &str,
        mut emit: impl FnMut(Entry) -> Result<()>,
        mut warned: impl FnMut(Vec<warchest::Warning>),
        unparsed: &mut Recoveries<UnparsedHead>,
    ) -> Result<std::result::Result<u64, NotAddressable>> {
        let refused = std::cell::RefCell::new(None);
        let r = self.index_noted(
            reader,
            |e| {
                if refused.borrow().is_some() {
                    // Only ends the read: the refusal is given below.
                    return Err(Error::new(warchest::ErrorKind::Usage(
                        "not record at a time".into(),
                    )));
                }
                emit(e)
            },
            |ws| {
                let mut r = refused.borrow_mut();
                if r.is_none() {
                    *r = not_addressable(&ws).map(|w| NotAddressable::new(name, w));
                }
                drop(r);
                warned(ws)
            },
            unparsed,
        );
        match refused.into_inner() {
            Some(refusal) => Ok(Err(refusal)),
            None => r.map(Ok),
        }
    }

    fn index_inner<S: Source>(
        &self,
        reader: &mut Reader<S>,
        mut emit: impl FnMut(Entry) -> Result<()>,
        mut warned: Option<&mut dyn FnMut(Vec<warchest::Warning>)>,
        mut unparsed: Option<&mut Recoveries<UnparsedHead>>,
    ) -> Result<u64> {
        let mut take = |reader: &mut Reader<S>| {
            if let Some(w) = warned.as_mut() {
                let ws = reader.take_warnings();
                if !ws.is_empty() {
                    w(ws);
                }
            }
        };
        let mut carry = Carry::default();
        let mut records = 0u64;
        loop {
            take(reader);
            let stepped = match reader.next_record() {
                Ok(Some(rec)) => {
                    records += 1;
                    self.step(rec, &mut carry, unparsed.as_deref_mut(), &mut emit)
                }
                Ok(None) => break,
                Err(e) => Err(e),
            };
            if let Err(e) = stepped {
                // The entries read before the failure are given.
                take(reader);
                self.flush(&mut carry, &mut emit)?;
                return Err(e);
            }
        }
        take(reader);
        self.flush(&mut carry, &mut emit)?;
        Ok(records)
    }

    /// Indexes one record of a file read in order, `carry` holding what the
    /// records before it left: emits the entries that are complete (the
    /// record before, when it was held back and does not pair with this
    /// one; both, when they pair) and holds this one back, to be paired
    /// with the next (cdxj-indexer pairs a POST request with its response).
    /// [`Indexer::flush`] emits what is held at the end. Counts the record
    /// in `unparsed` when its HTTP head did not parse. Returns how the
    /// record ended (its stored length).
    ///
    /// Records read from a place inside a file (a chunk read on its own
    /// thread) start from an empty `carry`; [`Indexer::continues`] tells
    /// whether their entries are those of a read from the start.
    ///
    /// # Errors
    /// The record cannot be read (nothing is emitted then, and what was
    /// held stays held), or `emit` failed.
    pub fn step<S: Source>(
        &self,
        rec: Record<'_, S>,
        carry: &mut Carry,
        unparsed: Option<&mut Recoveries<UnparsedHead>>,
        mut emit: impl FnMut(Entry) -> Result<()>,
    ) -> Result<warchest::warc::RecordEnd> {
        let (cur, end) = self.record(rec, &mut carry.scratch)?;
        if cur.include
            && cur.unparsed
            && let Some(u) = unparsed
        {
            u.add(
                &self.filename,
                UnparsedHead {
                    offset: cur.entry.offset,
                },
            );
        }
        carry.records += 1;
        if carry.records == 1 {
            carry.first = Some(cur.pairing.clone());
        }
        match carry.held.take() {
            Some(p) if paired(&p.pairing, &cur.pairing) => {
                // The record held is the first when this is the second.
                carry.first_paired |= carry.records == 2;
                let (mut a, mut b) = (p, cur);
                self.join(&mut a, &mut b);
                emit_if(a, &mut emit)?;
                emit_if(b, &mut emit)?;
            }
            Some(p) => {
                emit_if(p, &mut emit)?;
                carry.held = Some(cur);
            }
            None => carry.held = Some(cur),
        }
        Ok(end)
    }

    /// Whether `next`, the carry of records indexed from an empty carry
    /// at the place where the records of `total` end (a chunk of the file
    /// read on its own thread), gave the entries that indexing on from
    /// `total` gives, once `total`'s held record is flushed. Yes when
    /// nothing is held, or the record held does not pair with `next`'s
    /// first (it is emitted as it is, and the next is held as from an
    /// empty carry); also when they pair to no effect on the entries (not
    /// a POST or PUT, or no key appended) and `next` did not pair its
    /// first record with its second (which a read on from `total` would
    /// not have done, the first being taken).
    pub fn continues(&self, total: &Carry, next: &Carry) -> bool {
        match (&total.held, &next.first) {
            (Some(h), Some(f)) if paired(&h.pairing, f) => {
                !next.first_paired && self.joined_key(&h.pairing, f).is_none()
            }
            _ => true,
        }
    }

    /// Emits the record `carry` holds back, if any (at the end of the
    /// input, before an error is given, or before the entries of records
    /// that [`Indexer::continues`] says follow on).
    ///
    /// # Errors
    /// `emit` failed.
    pub fn flush(
        &self,
        carry: &mut Carry,
        mut emit: impl FnMut(Entry) -> Result<()>,
    ) -> Result<()> {
        match carry.held.take() {
            Some(p) => emit_if(p, &mut emit),
            None => Ok(()),
        }
    }

    /// Indexes the records of `reader` into a vector.
    ///
    /// # Errors
    /// As [`Indexer::index`].
    pub fn entries<S: Source>(&self, reader: &mut Reader<S>) -> Result<Vec<Entry>> {
        let mut v = Vec::new();
        self.index(reader, |e| {
            v.push(e);
            Ok(())
        })?;
        Ok(v)
    }

    fn include(&self, h: &WarcHeader, facts: &HeaderFacts<'_>, arc_filedesc: bool) -> bool {
        if self.opts.all {
            return true;
        }
        // The ARC file's version block is no capture: pywb and
        // cdxj-indexer do not index it.
        if arc_filedesc {
            return false;
        }
        match h.record_type() {
            RecordType::Response | RecordType::Revisit => true,
            RecordType::Resource | RecordType::Metadata => {
                let ct = facts.get(HeaderFacts::CONTENT_TYPE).map(|f| f.value());
                let media = ct.as_deref().and_then(warchest::http::media_type);
                media.as_deref() != Some("application/warc-fields")
            }
            _ => false,
        }
    }

    fn record<S: Source>(
        &self,
        mut rec: Record<'_, S>,
        scratch: &mut Scratch,
    ) -> Result<(Pending, warchest::warc::RecordEnd)> {
        let loc = rec.location();
        let arc_filedesc = matches!(
            rec.as_format(),
            FormatRecord::Arc(r) if r.arc_header().is_some_and(warchest::arc::ArcHeader::is_filedesc)
        );
        // What reading the block needs to know, and the header's text the
        // entry keeps, taken in one pass over the header (a second search
        // of its fields cost about 2,000 instructions a record).
        let (include, typ, parse_http, computes_digest, wants_body, hv) = {
            let h = rec.header();
            let facts = HeaderFacts::of(h);
            let include = self.include(h, &facts, arc_filedesc);
            let typ = h.record_type();
            let digest_missing = facts
                .get(HeaderFacts::PAYLOAD_DIGEST)
                .is_none_or(|f| f.value_str().trim().is_empty());
            let computes_digest = include
                && digest_missing
                && !matches!(typ, RecordType::Warcinfo | RecordType::Revisit);
            let url = facts
                .get(HeaderFacts::TARGET_URI)
                .map(|f| target_uri_text(&f.value()).into_owned());
            // `warchest::archive::may_have_http_head`'s rule, over the
            // fields this pass found (an empty block is told by reading).
            let parse_http = matches!(
                typ,
                RecordType::Response | RecordType::Request | RecordType::Revisit
            ) && (facts.is_http()
                || url.as_deref().is_some_and(warchest::archive::is_http_uri));
            let wants_body = self.opts.post_append && typ == RecordType::Request;
            let hv = HeaderValues::of(&facts, url, include, typ, computes_digest);
            (include, typ, parse_http, computes_digest, wants_body, hv)
        };

        let facts = read_block(
            &mut rec.block(),
            ReadWhat {
                parse_http,
                digest: computes_digest,
                wants_body,
                // A request that is not indexed matters only as the
                // POST/PUT request a response is paired with.
                only_post: !include && typ == RecordType::Request,
            },
            &self.opts.limits,
            scratch,
        )
        .map_err(Error::from)?;
        let head = facts.head.as_ref();
        let method = match (&facts.method, head) {
            (Some(m), _) => Some(m.clone()),
            (None, Some(hd)) if hd.is_request() => {
                Some(String::from_utf8_lossy(first_token(hd.start_line())).into_owned())
            }
            _ => None,
        };
        let query = match (&method, &facts.body, head) {
            (Some(m), Some(body), Some(hd)) if m == "POST" || m == "PUT" => {
                let ct = hd
                    .content_type()
                    .map(|c| String::from_utf8_lossy(&c).into_owned())
                    .unwrap_or_default();
                // cdxj-indexer gives up (null) on a Content-Length python
                // cannot read as a number.
                let bad_length = hd
                    .header("content-length")
                    .is_some_and(|v| String::from_utf8_lossy(&v).trim().parse::<i64>().is_err());
                Some(if bad_length {
                    None
                } else {
                    post::body_query(&ct, body)
                })
            }
            (Some(m), _, _) if m.eq_ignore_ascii_case("POST") || m.eq_ignore_ascii_case("PUT") => {
                Some(Some(String::new()))
            }
            _ => None,
        };

        let url = hv.url;
        let pairing = Pairing {
            record_type: typ,
            uri: url.clone(),
            record_id: hv.record_id,
            concurrent_to: hv.concurrent_to,
            method,
            query,
        };
        if !include {
            // Never emitted: only its pairing is used.
            let end = rec.finish()?;
            let p = Pending {
                entry: Entry::default(),
                include,
                pairing,
                unparsed: false,
            };
            return Ok((p, end));
        }

        let date = hv.date;
        let timestamp = date.as_ref().map_or_else(|| "-".to_string(), timestamp14);
        let fetch_millis = date
            .as_ref()
            .and_then(WarcDate::to_datetime)
            .map(|dt| (dt.unix_timestamp_nanos() / 1_000_000) as i64);
        let mime = match typ {
            RecordType::Revisit => Some("warc/revisit".to_string()),
            RecordType::Response | RecordType::Request => head
                .and_then(|hd| hd.content_type())
                .map(|ct| cdx_mime(&String::from_utf8_lossy(&ct))),
            _ => hv.mime,
        };
        let status = match typ {
            RecordType::Response | RecordType::Revisit => head.and_then(status_token),
            _ => None,
        };
        let digest = if computes_digest {
            facts.digest
        } else {
            hv.digest
        };
        let redirect = head
            .filter(|hd| hd.status().is_some_and(|s| (300..400).contains(&s)))
            .and_then(|hd| hd.header("location"))
            .map(|v| String::from_utf8_lossy(&v).into_owned());
        let urlkey = surt::url_key(url.as_deref().unwrap_or(""));
        let entry = Entry {
            urlkey,
            timestamp,
            fetch_millis,
            url,
            mime,
            status,
            digest,
            length: None,
            offset: loc.offset,
            filename: self.filename.clone(),
            method: None,
            request_body: None,
            record_type: hv.record_type,
            mime_detected: hv.mime_detected,
            charset: head.and_then(HttpHead::charset),
            redirect,
            truncated: hv.truncated,
            ip: hv.ip,
            record_id: pairing.record_id.clone(),
        };
        let end = rec.finish()?;
        let p = Pending {
            entry: Entry {
                length: end.stored_len,
                ..entry
            },
            include,
            pairing,
            unparsed: facts.unparsed,
        };
        Ok((p, end))
    }

    /// cdxj-indexer's `join_req_resp`: a POST/PUT request gives its
    /// response, and itself, the `__wb_method` key.
    fn join(&self, a: &mut Pending, b: &mut Pending) {
        let Some((upper, query, key)) = self.joined_key(&a.pairing, &b.pairing) else {
            return;
        };
        let (req, resp) = if a.pairing.record_type == RecordType::Request {
            (a, b)
        } else {
            (b, a)
        };
        resp.entry.method = Some(upper);
        resp.entry.request_body = Some(query);
        resp.entry.urlkey = key.clone();
        req.entry.urlkey = key;
    }

    /// What pairing `a` and `b` (a request and its response, in either
    /// order) gives their entries: the method in capitals, the body's
    /// query and the key; `None` when it changes nothing (POST append
    /// off, not a POST or PUT, no URI).
    fn joined_key(&self, a: &Pairing, b: &Pairing) -> Option<(String, Option<String>, String)> {
        if !self.opts.post_append {
            return None;
        }
        let req = if a.record_type == RecordType::Request {
            a
        } else {
            b
        };
        let method = req.method.as_deref()?;
        let upper = method.to_ascii_uppercase();
        if upper != "POST" && upper != "PUT" {
            return None;
        }
        let url = req.uri.as_deref()?;
        let query = req.query.clone().unwrap_or(Some(String::new()));
        let mut key = url.to_string();
        key.push(if url.contains('?') { '&' } else { '?' });
        key.push_str("__wb_method=");
        key.push_str(method);
        if let Some(q) = query.as_deref().filter(|q| !q.is_empty()) {
            key.push('&');
            key.push_str(q);
        }
        Some((upper, query, surt::url_key(&key)))
    }
}

fn emit_if(p: Pending, emit: &mut impl FnMut(Entry) -> Result<()>) -> Result<()> {
    if p.include { emit(p.entry) } else { Ok(()) }
}

/// cdxj-indexer's `concur_req_resp`: same target URI, the second record
/// concurrent to the first, one request and one response.
fn paired(a: &Pairing, b: &Pairing) -> bool {
    a.uri == b.uri
        && b.concurrent_to == a.record_id
        && matches!(
            (a.record_type, b.record_type),
            (RecordType::Response, RecordType::Request)
                | (RecordType::Request, RecordType::Response)
        )
}

/// WARC-Target-URI as indexers show it: `<...>` removed, spaces as `%20`,
/// non-UTF-8 bytes read as ISO-8859-1 (as warcio reads header lines).
/// Borrowed when nothing changes, as for most URIs.
fn target_uri_text(raw: &[u8]) -> Cow<'_, str> {
    let text = match std::str::from_utf8(raw) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(raw.iter().map(|&b| char::from(b)).collect()),
    };
    let trimmed = |t: &str| -> (usize, usize) {
        let inner = t.trim();
        let start = t.len() - t.trim_start().len();
        let (start, len) = match inner.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
            Some(s) => (start + 1, s.len()),
            None => (start, inner.len()),
        };
        (start, start + len)
    };
    let (a, b) = trimmed(&text);
    let has_space = text[a..b].contains(' ');
    match text {
        Cow::Borrowed(t) if !has_space => Cow::Borrowed(&t[a..b]),
        t => Cow::Owned(t[a..b].replace(' ', "%20")),
    }
}

/// The WARC header's text a record's entry and pairing keep, taken while
/// the header is looked at before the block is read. The entry's values are
/// only taken for a record that is indexed.
#[derive(Default)]
struct HeaderValues {
    url: Option<String>,
    record_id: Option<String>,
    concurrent_to: Option<String>,
    date: Option<WarcDate>,
    /// The record's own media type (used for types other than response,
    /// request and revisit).
    mime: Option<String>,
    /// WARC-Payload-Digest without its label (when none is computed).
    digest: Option<String>,
    record_type: Option<String>,
    mime_detected: Option<String>,
    truncated: Option<String>,
    ip: Option<String>,
}

impl HeaderValues {
    fn of(
        hf: &HeaderFacts<'_>,
        url: Option<String>,
        include: bool,
        typ: RecordType,
        computes_digest: bool,
    ) -> Self {
        let text = |i: usize| hf.get(i).map(|f| f.value_str().into_owned());
        let mut v = HeaderValues {
            url,
            record_id: text(HeaderFacts::RECORD_ID),
            concurrent_to: text(HeaderFacts::CONCURRENT_TO),
            ..HeaderValues::default()
        };
        if !include {
            return v;
        }
        v.date = hf
            .get(HeaderFacts::DATE)
            .and_then(|f| WarcDate::parse(&f.value_str()).ok());
        if !matches!(
            typ,
            RecordType::Revisit | RecordType::Response | RecordType::Request
        ) {
            v.mime = hf
                .get(HeaderFacts::CONTENT_TYPE)
                .map(|f| cdx_mime(&f.value_str()));
        }
        if !computes_digest {
            v.digest = hf
                .get(HeaderFacts::PAYLOAD_DIGEST)
                .map(|f| strip_sha1(f.value_str().trim()).to_string());
        }
        v.record_type = text(HeaderFacts::TYPE);
        v.mime_detected = text(HeaderFacts::IDENTIFIED_PAYLOAD_TYPE);
        v.truncated = text(HeaderFacts::TRUNCATED);
        v.ip = text(HeaderFacts::IP_ADDRESS);
        v
    }
}

/// The WARC header fields an entry is made of, found in one pass over the
/// header: the first field of each name, as [`Fields::get`] finds it.
///
/// [`Fields::get`]: warchest::fields::Fields::get
struct HeaderFacts<'h> {
    slots: [Option<Field<'h>>; HeaderFacts::NAMES.len()],
}

impl<'h> HeaderFacts<'h> {
    const NAMES: [&'static str; 10] = [
        field::TARGET_URI,
        field::PAYLOAD_DIGEST,
        field::DATE,
        field::CONTENT_TYPE,
        field::TYPE,
        field::IDENTIFIED_PAYLOAD_TYPE,
        field::TRUNCATED,
        field::IP_ADDRESS,
        field::RECORD_ID,
        field::CONCURRENT_TO,
    ];
    const TARGET_URI: usize = 0;
    const PAYLOAD_DIGEST: usize = 1;
    const DATE: usize = 2;
    const CONTENT_TYPE: usize = 3;
    const TYPE: usize = 4;
    const IDENTIFIED_PAYLOAD_TYPE: usize = 5;
    const TRUNCATED: usize = 6;
    const IP_ADDRESS: usize = 7;
    const RECORD_ID: usize = 8;
    const CONCURRENT_TO: usize = 9;

    fn of(h: &'h WarcHeader) -> Self {
        HeaderFacts {
            slots: h.fields().get_many(Self::NAMES),
        }
    }

    fn get(&self, i: usize) -> Option<Field<'h>> {
        self.slots[i]
    }

    /// [`WarcHeader::is_http`] over the field found.
    fn is_http(&self) -> bool {
        self.get(Self::CONTENT_TYPE).is_some_and(|f| {
            let v = f.value_str();
            // Bytes, not a str slice: byte 16 may fall inside a character.
            v.trim_start()
                .as_bytes()
                .get(..16)
                .is_some_and(|p| p.eq_ignore_ascii_case(b"application/http"))
        })
    }
}

/// 14 digits, as [`WarcDate::timestamp14`] writes them, without `format!`.
fn timestamp14(d: &WarcDate) -> String {
    let mut s = String::with_capacity(14);
    let mut put = |v: u32, width: u32| {
        for i in (0..width).rev() {
            s.push(char::from(b'0' + ((v / 10u32.pow(i)) % 10) as u8));
        }
    };
    put(u32::from(d.year), 4);
    for v in [d.month, d.day, d.hour, d.minute, d.second] {
        put(u32::from(v), 2);
    }
    s
}

/// The media type as cdxj-indexer keeps it: up to the first `;` or white
/// space, case kept.
fn cdx_mime(ct: &str) -> String {
    let ct = ct.trim_start();
    let end = ct
        .find(|c: char| c == ';' || c.is_whitespace())
        .unwrap_or(ct.len());
    ct[..end].to_string()
}

fn strip_sha1(d: &str) -> &str {
    match (d.get(..5), d.get(5..)) {
        (Some(label), Some(rest)) if label.eq_ignore_ascii_case("sha1:") => rest,
        _ => d,
    }
}

fn first_token(line: &[u8]) -> &[u8] {
    let line = line.trim_ascii();
    let end = memchr::memchr(b' ', line).unwrap_or(line.len());
    &line[..end]
}

/// The status code token of a status line as warcio reads it: the first
/// word after the protocol.
fn status_token(head: &HttpHead) -> Option<String> {
    let line = head.start_line().trim_ascii();
    let rest = match memchr::memchr(b' ', line) {
        Some(i) => line[i + 1..].trim_ascii(),
        None => b"",
    };
    let end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// What reading a block found.
struct BlockFacts {
    head: Option<HttpHead>,
    /// The method of a request whose head was not parsed, because its
    /// first bytes show it is no POST or PUT (only set then).
    method: Option<String>,
    /// Computed payload digest (SHA-1, base32).
    digest: Option<String>,
    /// Request body, transfer and content codings removed, cut to the
    /// request's Content-Length (8192 bytes without one, as cdxj-indexer)
    /// and to [`MAX_POST_BODY`].
    body: Option<Vec<u8>>,
    /// An HTTP head was looked for in a block that is not empty, and did
    /// not parse.
    unparsed: bool,
}

/// What to read of a block.
#[derive(Debug, Clone, Copy)]
struct ReadWhat {
    /// Parse the HTTP head.
    parse_http: bool,
    /// Compute the payload digest.
    digest: bool,
    /// Keep the body of a POST or PUT request.
    wants_body: bool,
    /// Only a POST or PUT request's head and body matter (a request that is
    /// not indexed): any other is left unparsed.
    only_post: bool,
}

/// Buffers reused from record to record.
#[derive(Debug, Default)]
struct Scratch {
    /// An HTTP head that did not come in one piece from the block.
    head: Vec<u8>,
}

/// True when a request line starting `data` (after the blank lines and
/// white space the head parser and [`first_token`] skip) may be a POST or
/// PUT; `None` when `data` is too short to tell.
fn may_be_post(data: &[u8]) -> Option<bool> {
    let start = data.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = &data[start..];
    let starts = |word: &[u8]| {
        let n = word.len().min(rest.len());
        rest[..n].eq_ignore_ascii_case(&word[..n])
    };
    match (starts(b"POST"), starts(b"PUT")) {
        (false, false) => Some(false),
        // Too few bytes to rule either out.
        _ if rest.len() < 4 => None,
        _ => Some(true),
    }
}

fn read_block<B: BufRead>(
    block: &mut B,
    what: ReadWhat,
    limits: &Limits,
    scratch: &mut Scratch,
) -> std::io::Result<BlockFacts> {
    let mut head = None;
    // Head bytes gathered in `scratch.head` (when the head came in
    // pieces); the payload starts at `body_start` there.
    let mut gathered = false;
    let mut body_start = 0;
    // Whether the block has a byte (an empty one has no head to parse).
    let mut has_bytes = false;
    if what.parse_http
        && what.only_post
        && let Some(false) = may_be_post(block.fill_buf()?)
    {
        return Ok(BlockFacts {
            head: None,
            method: Some(String::new()),
            digest: None,
            body: None,
            unparsed: false,
        });
    }
    if what.parse_http {
        // Most heads are whole in the first piece the block hands out:
        // parse them there, copying nothing.
        let data = block.fill_buf()?;
        has_bytes = !data.is_empty();
        let first = &data[..data.len().min(limits.max_http_head.saturating_add(4))];
        // One search for the end, the head parsed where it lies.
        if let Some((parsed, e)) = HttpHead::parse_found(first, limits) {
            if let Ok(h) = parsed {
                head = Some(h);
                block.consume(e);
            }
        } else {
            let mut finder = HeadFinder::new();
            let buf = &mut scratch.head;
            buf.clear();
            gathered = true;
            let mut end = None;
            let mut eof = false;
            loop {
                let data = block.fill_buf()?;
                if data.is_empty() {
                    eof = true;
                    break;
                }
                let room = limits
                    .max_http_head
                    .saturating_add(4)
                    .saturating_sub(buf.len());
                if room == 0 {
                    break;
                }
                let take = data.len().min(room);
                buf.extend_from_slice(&data[..take]);
                block.consume(take);
                if let Some(e) = finder.find(buf) {
                    end = Some(e);
                    break;
                }
            }
            match end {
                Some(e) => {
                    if let Ok(Some((h, _))) = HttpHead::parse_with_limits(&buf[..e], limits) {
                        head = Some(h);
                        body_start = e;
                    }
                }
                None if eof => {
                    if let Ok(h) = HttpHead::parse_unterminated(buf, limits) {
                        head = Some(h);
                        body_start = buf.len();
                    }
                }
                None => {}
            }
        }
    }
    let unparsed = what.parse_http && has_bytes && head.is_none();
    let is_post = what.wants_body
        && head.as_ref().is_some_and(|h| {
            h.method()
                .is_some_and(|m| m.eq_ignore_ascii_case(b"POST") || m.eq_ignore_ascii_case(b"PUT"))
        });
    if !what.digest && !is_post {
        return Ok(BlockFacts {
            head,
            method: None,
            digest: None,
            body: None,
            unparsed,
        });
    }
    let mut raw_body: Vec<u8> = Vec::new();
    let keep = |bytes: &[u8], raw_body: &mut Vec<u8>| {
        if is_post {
            let room = (MAX_POST_BODY * 2).saturating_sub(raw_body.len());
            raw_body.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    };
    enum Dig {
        Payload(Box<PayloadDigester>),
        Block(Box<Hasher>),
        Off,
    }
    let mut dig = match (&head, what.digest) {
        (_, false) => Dig::Off,
        (Some(h), true) => Dig::Payload(Box::new(PayloadDigester::for_head(Algorithm::Sha1, h))),
        (None, true) => Dig::Block(Box::new(Hasher::new(Algorithm::Sha1))),
    };
    let feed = |bytes: &[u8], dig: &mut Dig| match dig {
        Dig::Payload(d) => d.update(bytes),
        Dig::Block(h) => h.update(bytes),
        Dig::Off => {}
    };
    // What was gathered past the head; without a head, all of it is the
    // payload (the whole block is).
    if gathered {
        let buf = &scratch.head;
        let tail = if head.is_some() {
            &buf[body_start..]
        } else {
            &buf[..]
        };
        feed(tail, &mut dig);
        keep(tail, &mut raw_body);
    }
    loop {
        let data = block.fill_buf()?;
        if data.is_empty() {
            break;
        }
        let n = data.len();
        feed(data, &mut dig);
        keep(data, &mut raw_body);
        block.consume(n);
        if matches!(dig, Dig::Off) && raw_body.len() >= MAX_POST_BODY * 2 {
            break;
        }
    }
    let digest = match dig {
        Dig::Payload(d) => Some(Encoding::Base32.encode(d.finish().payload.as_bytes())),
        Dig::Block(h) => Some(Encoding::Base32.encode(h.finalize().as_bytes())),
        Dig::Off => None,
    };
    let body = match (&head, is_post) {
        (Some(h), true) => Some(decode_request_body(h, &raw_body)),
        _ => None,
    };
    Ok(BlockFacts {
        head,
        method: None,
        digest,
        body,
        unparsed,
    })
}

/// The request body as cdxj-indexer reads it for the POST query: chunked
/// transfer coding and content coding removed, then cut to Content-Length
/// (8192 bytes without one).
fn decode_request_body(h: &HttpHead, raw: &[u8]) -> Vec<u8> {
    let want = match h.header("content-length") {
        None => 8192,
        Some(v) => {
            let v = String::from_utf8_lossy(&v);
            match v.trim().parse::<i64>() {
                Ok(n) => usize::try_from(n.max(0)).unwrap_or(usize::MAX),
                Err(_) => 0,
            }
        }
    }
    .min(MAX_POST_BODY);
    let dechunked: Box<dyn Read + '_> = if h.is_chunked() {
        Box::new(warchest::http::ChunkedReader::lenient(raw))
    } else {
        Box::new(raw)
    };
    let codings = h.content_encoding();
    let mut reader: Box<dyn Read + '_> = match warchest::http::decode_content(dechunked, &codings) {
        Ok(r) => r,
        Err(_) => Box::new(raw),
    };
    let mut out = Vec::new();
    let mut limited = (&mut reader).take(want as u64);
    if limited.read_to_end(&mut out).is_err() {
        // A body that does not decode is used as stored.
        out = raw[..raw.len().min(want)].to_vec();
    }
    out
}

#[cfg(test)]
mod tests;
