//! Revisit records (WARC 1.1 section 6.7): writing both profiles, and
//! resolving a revisit to the record that holds its payload.
//!
//! Identical-payload-digest (6.7.2): the payload was seen before; the
//! revisit keeps the HTTP head of the response, not its body, carries the
//! original's WARC-Payload-Digest and names the original by WARC-Refers-To,
//! WARC-Refers-To-Target-URI and WARC-Refers-To-Date. Server-not-modified
//! (6.7.3): the server said the content had not changed (a 304); the block
//! is the response as received.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::reassemble::open_at;
use warchest::Limits;
use warchest::codec::Decoder;
use warchest::digest::{Digest, Hasher};
use warchest::error::{Error, ErrorKind, Result, Warning};
use warchest::http::{self, payload_reader, read_head};
use warchest::warc::{self, RecordType, TruncatedReason, Version, WarcHeader, field, profile};
use warchest::write::NewRecord;

/// A revisit profile (WARC-Profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RevisitProfile {
    /// `.../revisit/identical-payload-digest` (section 6.7.2).
    IdenticalPayloadDigest,
    /// `.../revisit/server-not-modified` (section 6.7.3).
    ServerNotModified,
}

impl RevisitProfile {
    /// The profile URI for records of `version`: the 1.1 URIs for 1.1 and
    /// later, the 1.0 ones before.
    pub fn uri(self, version: Version) -> &'static str {
        let v11 = version >= Version::V1_1;
        match (self, v11) {
            (RevisitProfile::IdenticalPayloadDigest, true) => profile::IDENTICAL_PAYLOAD_DIGEST_1_1,
            (RevisitProfile::IdenticalPayloadDigest, false) => {
                profile::IDENTICAL_PAYLOAD_DIGEST_1_0
            }
            (RevisitProfile::ServerNotModified, true) => profile::SERVER_NOT_MODIFIED_1_1,
            (RevisitProfile::ServerNotModified, false) => profile::SERVER_NOT_MODIFIED_1_0,
        }
    }

    /// The profile a WARC-Profile value names, in any version's spelling
    /// (1.1, 1.0, the 0.17/0.18 drafts, and the annex example's form
    /// without `revisit/`).
    pub fn from_uri(uri: &str) -> Option<RevisitProfile> {
        let u = uri.trim();
        let u = u
            .strip_prefix('<')
            .and_then(|x| x.strip_suffix('>'))
            .unwrap_or(u)
            .trim_end_matches('/');
        if !u.starts_with("http://netpreserve.org/warc/")
            && !u.starts_with("https://netpreserve.org/warc/")
        {
            return None;
        }
        if u.ends_with("/identical-payload-digest") {
            Some(RevisitProfile::IdenticalPayloadDigest)
        } else if u.ends_with("/server-not-modified") {
            Some(RevisitProfile::ServerNotModified)
        } else {
            None
        }
    }
}

/// What a revisit says about the record it refers to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Original {
    /// Its WARC-Record-ID (`<urn:uuid:...>`).
    pub record_id: String,
    /// Its WARC-Target-URI.
    pub target_uri: String,
    /// Its WARC-Date as written.
    pub date: String,
    /// Its WARC-Payload-Digest as written.
    pub payload_digest: String,
}

impl Original {
    /// The original as described by its own header; `None` when the header
    /// lacks a record id.
    pub fn from_header(h: &WarcHeader) -> Option<Original> {
        Some(Original {
            record_id: h.record_id()?.trim().to_string(),
            target_uri: h.target_uri().map(|s| s.into_owned()).unwrap_or_default(),
            date: h
                .get(field::DATE)
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            payload_digest: h
                .payload_digest()
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
        })
    }
}

fn set_refers_to(rec: &mut NewRecord, original: &Original) -> Result<()> {
    // Known from a CDX(J) index, an original has no record id: the URI and
    // date name it (WARC 1.1 6.7.2), as Heritrix's CDX dedupe writes.
    if !original.record_id.is_empty() {
        rec.set(field::REFERS_TO, &original.record_id)?;
    }
    if !original.target_uri.is_empty() {
        rec.set(field::REFERS_TO_TARGET_URI, &original.target_uri)?;
    }
    if !original.date.is_empty() {
        rec.set(field::REFERS_TO_DATE, &original.date)?;
    }
    Ok(())
}

/// A new identical-payload-digest revisit of `target_uri` (section 6.7.2):
/// WARC-Profile, WARC-Refers-To, -Target-URI, -Date and the original's
/// WARC-Payload-Digest are set. Write it with the HTTP head of the response
/// as its block (`Content-Type: application/http; msgtype=response`, set
/// here), or with an empty block.
///
/// The head alone is a block "truncated to avoid storing the duplicate
/// content", so WARC-Truncated is `length` as 6.7.2 asks; call
/// [`NewRecord::remove`] on it for an empty block.
///
/// # Errors
/// A value with a line break.
pub fn identical_payload_digest(
    target_uri: &str,
    original: &Original,
    version: Version,
) -> Result<NewRecord> {
    let mut rec = NewRecord::with_version(RecordType::Revisit, version);
    rec.set(field::TARGET_URI, target_uri)?;
    rec.set(
        field::PROFILE,
        RevisitProfile::IdenticalPayloadDigest.uri(version),
    )?;
    set_refers_to(&mut rec, original)?;
    rec.set(field::PAYLOAD_DIGEST, &original.payload_digest)?;
    rec.set(field::CONTENT_TYPE, "application/http; msgtype=response")?;
    rec.truncated(&TruncatedReason::Length);
    Ok(rec)
}

/// A new server-not-modified revisit of `target_uri` (section 6.7.3), its
/// block the response as received (a 304's head). The original, when
/// known, is named by WARC-Refers-To and friends, as 6.7.3 recommends.
///
/// # Errors
/// A value with a line break.
pub fn server_not_modified(
    target_uri: &str,
    original: Option<&Original>,
    version: Version,
) -> Result<NewRecord> {
    let mut rec = NewRecord::with_version(RecordType::Revisit, version);
    rec.set(field::TARGET_URI, target_uri)?;
    rec.set(
        field::PROFILE,
        RevisitProfile::ServerNotModified.uri(version),
    )?;
    if let Some(o) = original {
        set_refers_to(&mut rec, o)?;
    }
    rec.set(field::CONTENT_TYPE, "application/http; msgtype=response")?;
    Ok(rec)
}

/// Turns the header of a duplicate response into the header of its
/// identical-payload-digest revisit: the type, profile and WARC-Refers-To
/// fields change; the record id, date, target URI, IP address,
/// WARC-Concurrent-To and WARC-Warcinfo-ID stay, so the records that name
/// it (its request, its metadata) still do. The length and block digest
/// are left to the writer (the block becomes the HTTP head).
///
/// # Errors
/// A value with a line break in `original`.
pub fn from_duplicate(duplicate: &WarcHeader, original: &Original) -> Result<NewRecord> {
    let version = duplicate.version();
    let mut rec = NewRecord::from_header(duplicate.clone());
    rec.set(field::TYPE, RecordType::Revisit.as_str())?;
    rec.remove(field::CONTENT_LENGTH)
        .remove(field::BLOCK_DIGEST)
        .remove(field::SEGMENT_NUMBER)
        .remove(field::IDENTIFIED_PAYLOAD_TYPE);
    rec.set(
        field::PROFILE,
        RevisitProfile::IdenticalPayloadDigest.uri(version),
    )?;
    set_refers_to(&mut rec, original)?;
    if !original.payload_digest.is_empty() {
        rec.set(field::PAYLOAD_DIGEST, &original.payload_digest)?;
    }
    rec.truncated(&TruncatedReason::Length);
    Ok(rec)
}

/// Where an original record is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Location {
    /// The file.
    pub file: PathBuf,
    /// The record's offset as stored.
    pub offset: u64,
}

/// Finds the original of a revisit, by WARC-Refers-To, by target URI and
/// date, or by payload digest, among the records it has been given.
///
/// [`Resolver::scan`] indexes files in memory (the response and resource
/// records of the files given); [`Resolver::add`] takes records known
/// otherwise (a [`crate::dedupe::DigestIndex`]).
#[derive(Debug, Default)]
pub struct Resolver {
    by_id: HashMap<String, Location>,
    by_uri_date: HashMap<(String, String), String>,
    by_digest: HashMap<String, String>,
}

impl Resolver {
    /// An empty resolver.
    pub fn new() -> Self {
        Resolver::default()
    }

    /// Indexes the response and resource records of `files`.
    ///
    /// # Errors
    /// A file cannot be read.
    pub fn scan<P: AsRef<Path>>(files: &[P]) -> Result<Resolver> {
        Resolver::scan_with(files, &mut |_, _| {})
    }

    /// [`Resolver::scan`], handing the lenient reader's recoveries in each
    /// file to `on_warnings` (the file, its warnings) as they are made.
    ///
    /// # Errors
    /// As [`Resolver::scan`].
    pub fn scan_with<P: AsRef<Path>>(
        files: &[P],
        on_warnings: &mut dyn FnMut(&Path, &[Warning]),
    ) -> Result<Resolver> {
        let mut r = Resolver::new();
        for f in files {
            r.add_file_with(f.as_ref(), on_warnings)?;
        }
        Ok(r)
    }

    /// Indexes the response and resource records of one more file.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn add_file(&mut self, path: &Path) -> Result<()> {
        self.add_file_with(path, &mut |_, _| {})
    }

    /// [`Resolver::add_file`], handing the lenient reader's recoveries to
    /// `on_warnings` (the file, its warnings) as they are made, those met
    /// before an error too.
    ///
    /// # Errors
    /// As [`Resolver::add_file`].
    pub fn add_file_with(
        &mut self,
        path: &Path,
        on_warnings: &mut dyn FnMut(&Path, &[Warning]),
    ) -> Result<()> {
        let mut r = warc::Reader::open(path)?;
        let read = self.add_records(path, &mut r, on_warnings);
        let w = r.take_warnings();
        if !w.is_empty() {
            on_warnings(path, &w);
        }
        read
    }

    fn add_records(
        &mut self,
        path: &Path,
        r: &mut warc::Reader<Decoder<File>>,
        on_warnings: &mut dyn FnMut(&Path, &[Warning]),
    ) -> Result<()> {
        loop {
            // Taken as the reading goes: a damaged file's warnings are not
            // all held at once.
            let w = r.take_warnings();
            if !w.is_empty() {
                on_warnings(path, &w);
            }
            let Some(rec) = r.next_record()? else {
                break;
            };
            let h = rec.header();
            if !matches!(h.record_type(), RecordType::Response | RecordType::Resource)
                || h.segment_number().is_some()
            {
                continue;
            }
            if let Some(o) = Original::from_header(h) {
                let loc = Location {
                    file: path.to_path_buf(),
                    offset: rec.location().offset,
                };
                self.add(&o, loc);
            }
        }
        Ok(())
    }

    /// Records where `original` is.
    pub fn add(&mut self, original: &Original, loc: Location) {
        let id = original.record_id.clone();
        if !original.target_uri.is_empty() && !original.date.is_empty() {
            self.by_uri_date
                .entry((original.target_uri.clone(), original.date.clone()))
                .or_insert_with(|| id.clone());
        }
        if let Ok(d) = Digest::parse(&original.payload_digest) {
            self.by_digest
                .entry(d.lookup_key())
                .or_insert_with(|| id.clone());
        }
        self.by_id.entry(id).or_insert(loc);
    }

    /// Where the original of `revisit` is: by WARC-Refers-To, else by
    /// WARC-Refers-To-Target-URI and -Date, else (identical-payload-digest
    /// only) by its payload digest.
    pub fn locate(&self, revisit: &WarcHeader) -> Option<&Location> {
        if let Some(id) = revisit.refers_to()
            && let Some(l) = self.by_id.get(id.trim())
        {
            return Some(l);
        }
        if let (Some(u), Some(d)) = (
            revisit.refers_to_target_uri(),
            revisit.get(field::REFERS_TO_DATE),
        ) && let Some(id) = self
            .by_uri_date
            .get(&(u.into_owned(), d.trim().to_string()))
        {
            return self.by_id.get(id);
        }
        let identical = revisit.profile().and_then(|p| RevisitProfile::from_uri(&p))
            == Some(RevisitProfile::IdenticalPayloadDigest);
        if identical
            && let Some(Ok(d)) = revisit.parsed_payload_digest()
            && let Some(id) = self.by_digest.get(&d.lookup_key())
        {
            return self.by_id.get(id);
        }
        None
    }

    /// The payload of `revisit`'s original, streamed: for HTTP records the
    /// body with its transfer coding removed (and, with `decode`, its
    /// content coding), otherwise the block. When the revisit carries a
    /// payload digest, reading checks it: a mismatch is an `InvalidData`
    /// error at the end.
    ///
    /// # Errors
    /// The original is not found, cannot be read, or is not a record with
    /// a payload.
    pub fn open_payload(&self, revisit: &WarcHeader, decode: bool) -> Result<ResolvedPayload> {
        let loc = self.locate(revisit).ok_or_else(|| {
            Error::new(ErrorKind::Usage(format!(
                "the original of revisit {} was not found in the files given",
                revisit.record_id().unwrap_or_default()
            )))
        })?;
        payload_at(loc, revisit, decode)
    }
}

/// The payload of the original at `loc` of `revisit` (see
/// [`Resolver::open_payload`]), for originals located otherwise (a
/// [`crate::dedupe::DigestIndex`]).
///
/// # Errors
/// No record at `loc`, or it cannot be read.
pub fn payload_at(loc: &Location, revisit: &WarcHeader, decode: bool) -> Result<ResolvedPayload> {
    let expect = match revisit.parsed_payload_digest() {
        Some(Ok(d)) if d.algorithm().is_some() => Some(d),
        _ => None,
    };
    ResolvedPayload::open(loc, expect, decode)
}

/// The payload of an original record, read in place and checked against
/// the revisit's payload digest.
pub struct ResolvedPayload {
    reader: Box<warc::Reader<Decoder<File>>>,
    head: Option<http::HttpHead>,
    expect: Option<Digest>,
    decode: bool,
    header: WarcHeader,
    location: Location,
}

impl ResolvedPayload {
    fn open(loc: &Location, expect: Option<Digest>, decode: bool) -> Result<ResolvedPayload> {
        let mut reader = Box::new(open_at(&loc.file, loc.offset)?);
        let header = match reader.next_record()? {
            Some(rec) if rec.location().offset == loc.offset => rec.header().clone(),
            _ => {
                return Err(Error::new(ErrorKind::Usage(format!(
                    "no record at offset {}",
                    loc.offset
                )))
                .in_file(&loc.file));
            }
        };
        let mut head = None;
        if header.is_http()
            && let Some(mut block) = reader.current_block()
        {
            head = read_head(&mut block, &Limits::default())?;
        }
        Ok(ResolvedPayload {
            reader,
            head,
            expect,
            decode,
            header,
            location: loc.clone(),
        })
    }

    /// The original's header.
    pub fn header(&self) -> &WarcHeader {
        &self.header
    }

    /// Where the original is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The original's HTTP head, for an HTTP record.
    pub fn http_head(&self) -> Option<&http::HttpHead> {
        self.head.as_ref()
    }

    /// Writes the payload to `out` and returns how many bytes were written.
    ///
    /// Without decoding the payload streams straight to `out` and the
    /// digest is checked at the end; with decoding it is spooled (memory,
    /// then a temporary file), checked, then decoded to `out`, so nothing
    /// is written when the digest is wrong.
    ///
    /// # Errors
    /// Reading failed, a content coding cannot be decoded, or the payload
    /// digest is not the revisit's (`InvalidData`).
    pub fn copy_to(mut self, out: &mut dyn io::Write) -> Result<u64> {
        let mut hasher = self
            .expect
            .as_ref()
            .and_then(|d| d.algorithm())
            .map(Hasher::new);
        let decode = self.decode
            && self
                .head
                .as_ref()
                .is_some_and(|h| !h.content_encoding().is_empty());
        let mut spool = tempfile::SpooledTempFile::new(8 << 20);
        let mut written = 0u64;
        {
            let Some(block) = self.reader.current_block() else {
                return Ok(0);
            };
            let mut raw: Box<dyn Read + '_> = match &self.head {
                Some(h) => payload_reader(block, h, false).map_err(|e| {
                    Error::new(ErrorKind::Syntax(e.to_string())).in_file(&self.location.file)
                })?,
                None => Box::new(block),
            };
            let mut piece = vec![0u8; 64 << 10];
            loop {
                let n = match raw.read(&mut piece) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e.into()),
                };
                if let Some(h) = &mut hasher {
                    h.update(&piece[..n]);
                }
                if decode {
                    io::Write::write_all(&mut spool, &piece[..n])?;
                } else {
                    out.write_all(&piece[..n])?;
                    written += n as u64;
                }
            }
        }
        if let (Some(d), Some(h)) = (&self.expect, hasher)
            && !d.matches(h.finalize().as_bytes())
        {
            return Err(Error::new(ErrorKind::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "offset {}: the payload digest of the original is not the revisit's {}",
                    self.location.offset,
                    d.as_str()
                ),
            )))
            .in_file(&self.location.file));
        }
        if decode && let Some(h) = &self.head {
            io::Seek::seek(&mut spool, io::SeekFrom::Start(0))?;
            let mut dec = http::decode_content(io::BufReader::new(spool), &h.content_encoding())
                .map_err(|e| Error::new(ErrorKind::Syntax(e.to_string())))?;
            written = io::copy(&mut dec, out)?;
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warchest::fields::Fields;
    use warchest::write::{Body, Writer, WriterOptions};

    fn original() -> Original {
        Original {
            record_id: "<urn:uuid:92283950-ef2f-4d72-b224-f54c6ec90bb0>".into(),
            target_uri: "http://www.archive.org/images/logoc.jpg".into(),
            date: "2006-09-19T17:20:24Z".into(),
            payload_digest: "sha1:CCHXETFVJD2MUZY6ND6SS7ZENMWF7KQ2".into(),
        }
    }

    #[test]
    fn profile_uris_by_version() {
        use RevisitProfile::*;
        assert_eq!(
            IdenticalPayloadDigest.uri(Version::V1_1),
            "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
        );
        assert_eq!(
            ServerNotModified.uri(Version::V1_0),
            "http://netpreserve.org/warc/1.0/revisit/server-not-modified"
        );
        for (uri, want) in [
            (
                "http://netpreserve.org/warc/0.18/revisit/identical-payload-digest",
                Some(IdenticalPayloadDigest),
            ),
            // Annex C.6 writes the 1.0 profile without `revisit/`.
            (
                "http://netpreserve.org/warc/1.0/server-not-modified",
                Some(ServerNotModified),
            ),
            (
                "<http://netpreserve.org/warc/1.1/revisit/server-not-modified>",
                Some(ServerNotModified),
            ),
            ("http://example.com/identical-payload-digest", None),
            ("http://netpreserve.org/warc/1.1/revisit/diff", None),
        ] {
            assert_eq!(RevisitProfile::from_uri(uri), want, "{uri}");
        }
    }

    #[test]
    fn annex_c6_server_not_modified_written_and_read() {
        // The block of ISO 28500 Annex C.6, written as a 1.0 record.
        let block = b"HTTP/1.x 304 Not Modified\r\nDate: Tue, 06 Mar 2007 00:43:35 GMT\r\n\
Server: Apache/2.0.54 (Ubuntu) PHP/5.0.5-2ubuntu1.4\r\nConnection: Keep-Alive\r\n\
Keep-Alive: timeout=15, max=100\r\nEtag: \"3e45-67e-2ed02ec0\"\r\n\r\n";
        let o = original();
        let mut rec = server_not_modified(
            "http://www.archive.org/images/logoc.jpg",
            Some(&o),
            Version::V1_0,
        )
        .unwrap();
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out, WriterOptions::default()).unwrap();
        w.write(&mut rec, Body::Bytes(block)).unwrap();
        w.finish().unwrap();
        let mut r = warchest::archive::Reader::new(&out[..]).unwrap();
        let mut rec = r.next_record().unwrap().unwrap();
        let h = rec.header().clone();
        assert_eq!(h.version(), Version::V1_0);
        assert_eq!(h.record_type(), RecordType::Revisit);
        assert_eq!(
            h.profile().unwrap(),
            "http://netpreserve.org/warc/1.0/revisit/server-not-modified"
        );
        assert_eq!(h.refers_to().unwrap(), o.record_id);
        assert_eq!(h.refers_to_target_uri().unwrap(), o.target_uri);
        assert!(h.payload_digest().is_none());
        let c = warchest::check::check_record(&mut rec, &Limits::default()).unwrap();
        assert_eq!(c.block, warchest::check::DigestStatus::Valid);
    }

    #[test]
    fn identical_payload_digest_fields() {
        let o = original();
        let rec = identical_payload_digest(&o.target_uri, &o, Version::V1_1).unwrap();
        let h = rec.header();
        assert_eq!(
            h.profile().unwrap(),
            RevisitProfile::IdenticalPayloadDigest.uri(Version::V1_1)
        );
        assert_eq!(h.payload_digest().unwrap(), o.payload_digest);
        assert_eq!(h.refers_to_date().unwrap().unwrap().year, 2006);
        assert_eq!(h.truncated(), Some(TruncatedReason::Length));
        assert_eq!(h.payload_kind(), warchest::warc::PayloadKind::None);
    }

    #[test]
    fn duplicate_keeps_its_identity() {
        let mut f = Fields::with_start_line(b"WARC/1.0");
        for (n, v) in [
            ("WARC-Type", "response"),
            ("WARC-Record-ID", "<urn:uuid:dup>"),
            ("WARC-Date", "2007-03-06T00:43:35Z"),
            ("WARC-Target-URI", "http://www.archive.org/images/logoc.jpg"),
            ("WARC-Concurrent-To", "<urn:uuid:req>"),
            ("WARC-Block-Digest", "sha1:AAAA"),
            ("Content-Length", "1902"),
        ] {
            f.append(n, v).unwrap();
        }
        let dup = WarcHeader::from_fields(Version::V1_0, f);
        let rec = from_duplicate(&dup, &original()).unwrap();
        let h = rec.header();
        assert_eq!(h.record_type(), RecordType::Revisit);
        assert_eq!(h.record_id().unwrap(), "<urn:uuid:dup>");
        assert_eq!(h.concurrent_to().next().unwrap(), "<urn:uuid:req>");
        assert!(h.block_digest().is_none() && h.content_length().is_none());
        assert_eq!(
            h.profile().unwrap(),
            "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"
        );
    }

    #[test]
    fn resolver_finds_by_id_uri_date_and_digest() {
        let o = original();
        let loc = Location {
            file: "x.warc".into(),
            offset: 7,
        };
        let mut r = Resolver::new();
        r.add(&o, loc.clone());
        let by_id = identical_payload_digest("http://other/", &o, Version::V1_1)
            .unwrap()
            .into_header();
        assert_eq!(r.locate(&by_id), Some(&loc));
        // Without WARC-Refers-To: by target URI and date.
        let mut h = by_id.clone();
        h.fields_mut().remove(field::REFERS_TO);
        assert_eq!(r.locate(&h), Some(&loc));
        // Without either: by payload digest (identical-payload-digest only).
        h.fields_mut().remove(field::REFERS_TO_DATE);
        assert_eq!(r.locate(&h), Some(&loc));
        let mut snm = server_not_modified("http://other/", None, Version::V1_1)
            .unwrap()
            .into_header();
        snm.fields_mut()
            .set(field::PAYLOAD_DIGEST, &o.payload_digest)
            .unwrap();
        assert_eq!(r.locate(&snm), None);
    }
}
