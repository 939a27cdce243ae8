//! Verifying a record's WARC-Block-Digest and WARC-Payload-Digest while its
//! block streams past once.

use std::io::BufRead;

use crate::archive;
use crate::codec::Source;
use crate::digest::{Algorithm, Digest, Hasher, Output, Sha1Stream};
use crate::error::{Error, Result};
use crate::http::{BlockDigester, HeadFinder, HttpHead, PayloadMatch};
use crate::limits::Limits;
use crate::warc::{PayloadKind, RecordType, WarcHeader};

/// How a recorded digest compares with the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case", tag = "status"))]
#[non_exhaustive]
pub enum DigestStatus {
    /// No such field.
    Absent,
    /// It matches.
    Valid,
    /// The payload digest matches the raw, still chunked bytes after the
    /// HTTP head instead of the de-chunked payload: a common writer
    /// convention, not counted as a failure.
    ValidRawChunked,
    /// It does not match.
    Invalid {
        /// The value as recorded.
        recorded: String,
        /// What the bytes give, in the recorded encoding's canonical form.
        computed: String,
    },
    /// Its algorithm is unknown, so it cannot be checked.
    UnknownAlgorithm {
        /// The value as recorded.
        recorded: String,
    },
    /// The value is not `algorithm:digest` with a valid encoding.
    Malformed {
        /// The value as recorded.
        recorded: String,
        /// Why.
        error: String,
    },
    /// Present but not verifiable from this record alone (revisit: the
    /// original's payload; segments: the reassembled record's payload).
    NotApplicable,
}

impl DigestStatus {
    /// True unless the digest is known to be wrong or unreadable.
    pub fn is_ok(&self) -> bool {
        !matches!(
            self,
            DigestStatus::Invalid { .. } | DigestStatus::Malformed { .. }
        )
    }
}

/// The result of checking one record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecordCheck {
    /// WARC-Block-Digest.
    pub block: DigestStatus,
    /// WARC-Payload-Digest.
    pub payload: DigestStatus,
    /// Block bytes read.
    pub block_len: u64,
}

impl RecordCheck {
    /// True when no digest is wrong.
    pub fn is_ok(&self) -> bool {
        self.block.is_ok() && self.payload.is_ok()
    }
}

enum Recorded {
    Check(Digest),
    Status(DigestStatus),
}

fn recorded(value: Option<std::borrow::Cow<'_, str>>) -> Recorded {
    let Some(v) = value else {
        return Recorded::Status(DigestStatus::Absent);
    };
    let v = v.trim();
    match Digest::parse(v) {
        Ok(d) if d.algorithm().is_some() => Recorded::Check(d),
        Ok(_) => Recorded::Status(DigestStatus::UnknownAlgorithm {
            recorded: v.to_string(),
        }),
        Err(e) => Recorded::Status(DigestStatus::Malformed {
            recorded: v.to_string(),
            error: e.to_string(),
        }),
    }
}

fn compare(d: &Digest, computed: &[u8]) -> DigestStatus {
    if d.matches(computed) {
        DigestStatus::Valid
    } else {
        let alg = d.algorithm().unwrap_or(Algorithm::Sha1);
        let computed = match d.encoding() {
            Some(enc) => format!("{}:{}", d.label(), enc.encode(computed)),
            None => Digest::new(alg, computed).to_string(),
        };
        DigestStatus::Invalid {
            recorded: d.as_str().to_string(),
            computed,
        }
    }
}

enum PayloadCheck {
    None,
    Block(Digest, Box<Hasher>),
    /// Over the whole block with the block digest's algorithm: the block
    /// hash gives it.
    SameAsBlock(Digest),
    Http(Digest, Box<BlockDigester>),
}

/// The block digest's hash: SHA-1 (nearly always) on a [`Sha1Stream`], so
/// that it can run beside the payload's.
enum BlockHash {
    Sha1(Sha1Stream),
    Other(Box<Hasher>),
}

impl BlockHash {
    fn new(alg: Algorithm) -> BlockHash {
        match alg {
            Algorithm::Sha1 => BlockHash::Sha1(Sha1Stream::new()),
            _ => BlockHash::Other(Box::new(Hasher::new(alg))),
        }
    }

    fn update(&mut self, buf: &[u8]) {
        match self {
            BlockHash::Sha1(s) => s.update(buf),
            BlockHash::Other(h) => h.update(buf),
        }
    }

    fn finalize(self) -> Output {
        match self {
            BlockHash::Sha1(s) => s.finalize(),
            BlockHash::Other(h) => h.finalize(),
        }
    }
}

/// Checks a record's digests from its block bytes, fed in pieces.
pub struct Checker {
    block_rec: Recorded,
    block: Option<BlockHash>,
    payload_status: Option<DigestStatus>,
    payload: PayloadCheck,
    len: u64,
    /// The spare head, when the digester did not take it.
    spare: Option<HttpHead>,
    /// SHA-1s a decoding job computed over this block ([`MemberDigests`]),
    /// used when the whole block comes in the first piece.
    pre: Option<MemberDigests>,
    /// `pre` stands for the block however many pieces it comes in
    /// ([`Checker::use_file_digests`]).
    spans: bool,
    /// Which streams `pre` completed at the first piece, so that the
    /// pieces after it are not hashed into them; and the block length
    /// they cover.
    ahead: Ahead,
}

/// The streams a block's SHA-1s computed ahead completed
/// ([`Checker::use_file_digests`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ahead {
    /// None: every piece is hashed here.
    None,
    /// The block's (of this many bytes).
    Block(u64),
    /// The block's and the HTTP body's.
    BlockAndBody(u64),
}

impl Checker {
    /// A checker for the record with header `h`.
    pub fn new(h: &WarcHeader, limits: &Limits) -> Checker {
        Checker::with_spare_head(h, limits, None)
    }

    /// [`Checker::new`], with a head from an earlier record to parse this
    /// block's HTTP head into (its buffers reused; see
    /// [`Checker::finish_with_spare`]): a caller that keeps each record's
    /// head beyond the record allocates none in the steady state.
    pub fn with_spare_head(
        h: &WarcHeader,
        limits: &Limits,
        mut spare: Option<HttpHead>,
    ) -> Checker {
        let block_rec = recorded(h.block_digest());
        let block_alg = match &block_rec {
            Recorded::Check(d) => d.algorithm(),
            Recorded::Status(_) => None,
        };
        let block = block_alg.map(BlockHash::new);
        let segmented = h.segment_number().is_some() || h.record_type() == RecordType::Continuation;
        let mut payload_status = None;
        let mut payload = PayloadCheck::None;
        match recorded(h.payload_digest()) {
            Recorded::Status(s) => payload_status = Some(s),
            Recorded::Check(_) if h.record_type() == RecordType::Revisit || segmented => {
                payload_status = Some(DigestStatus::NotApplicable)
            }
            Recorded::Check(d) => {
                let alg = d.algorithm().unwrap_or(Algorithm::Sha1);
                payload = match h.payload_kind() {
                    PayloadKind::HttpBody => {
                        let mut http = Box::new(BlockDigester::paired(alg, *limits));
                        if let Some(spare) = spare.take() {
                            http.set_spare_head(spare);
                        }
                        PayloadCheck::Http(d, http)
                    }
                    // A payload digest on a record without a payload of its
                    // own (metadata, warcinfo) can only mean the whole block.
                    PayloadKind::Block | PayloadKind::None if block_alg == Some(alg) => {
                        PayloadCheck::SameAsBlock(d)
                    }
                    PayloadKind::Block | PayloadKind::None => {
                        PayloadCheck::Block(d, Box::new(Hasher::new(alg)))
                    }
                };
            }
        }
        Checker {
            block_rec,
            block,
            payload_status,
            payload,
            len: 0,
            spare,
            pre: None,
            spans: false,
            ahead: Ahead::None,
        }
    }

    /// Takes the SHA-1s a decoding job computed over the member the
    /// record starts (see [`MemberDigests`]), when they are of this block:
    /// it starts `block_start` bytes into that member (the header's length
    /// for a record at the member's start) and its Content-Length is the
    /// bytes they cover. They are used only if the whole block then comes
    /// in the first piece fed, as the parallel decoder serves a member;
    /// otherwise every byte is hashed here as usual. The statuses are the
    /// same either way.
    pub fn use_member_digests(
        &mut self,
        h: &WarcHeader,
        block_start: u64,
        pre: Option<&MemberDigests>,
    ) {
        self.pre = pre
            .filter(|p| p.block_start == block_start && h.content_length() == Some(p.block_len))
            .cloned();
    }

    /// [`Checker::use_member_digests`] for SHA-1s computed ahead over a
    /// record of an uncompressed file ([`MemberDigests::of`] over the
    /// record's stored bytes, read at its offset by another thread): they
    /// stand for the block whatever pieces it is then fed in, since they
    /// are of the same bytes of the same file. Should fewer bytes be fed
    /// than they cover (the file cut short while it was read), the
    /// digests they stood for are reported invalid, not computed.
    pub fn use_file_digests(
        &mut self,
        h: &WarcHeader,
        block_start: u64,
        pre: Option<&MemberDigests>,
    ) {
        self.use_member_digests(h, block_start, pre);
        self.spans = self.pre.is_some();
    }

    /// [`Checker::use_member_digests`] with what `rec`'s source holds
    /// ([`Source::member_digests`]), when `rec` starts the member it is
    /// in; `h` is `rec`'s header (or a copy of it).
    pub fn use_job_digests<S: Source>(&mut self, h: &WarcHeader, rec: &archive::Record<'_, S>) {
        let loc = rec.location();
        let src = rec.source();
        if loc.offset_in_member == 0 && src.member_offset() == loc.offset {
            self.use_member_digests(h, loc.header_len, src.member_digests());
        }
    }

    /// Feeds the next block bytes.
    pub fn update(&mut self, buf: &[u8]) {
        // A job's SHA-1s stand for hashing `buf` when it is the whole block
        // (or, computed ahead over a file's bytes, for all its pieces).
        let len = buf.len() as u64;
        let first = self.len == 0;
        let pre = self
            .pre
            .take()
            .filter(|p| first && (p.block_len == len || self.spans));
        let covers = pre.as_ref().map_or(0, |p| p.block_len);
        self.len += len;
        // A later piece of a block whose SHA-1s came ahead: only what they
        // did not complete is hashed.
        let done = self.ahead;
        // The usual HTTP record: block and payload SHA-1 side by side, from
        // the piece in which the head ends (often the whole block) on.
        if let (Some(BlockHash::Sha1(a)), PayloadCheck::Http(_, http)) =
            (&mut self.block, &mut self.payload)
        {
            let body_at = http.feed(buf);
            if done != Ahead::None {
                if let (Some(k), Some(b), Ahead::Block(_)) = (body_at, http.sha1_body(), done) {
                    b.update(&buf[k..]);
                }
                return;
            }
            match (body_at, pre) {
                (Some(k), pre) => match (http.sha1_body(), pre) {
                    (Some(b), Some(p)) => {
                        *a = p.block;
                        // The job's body starts where the head parsed
                        // here ends, or else the body is hashed here.
                        match p.body {
                            Some((at, s)) if at == k => {
                                *b = s;
                                self.ahead = Ahead::BlockAndBody(covers);
                            }
                            _ => {
                                b.update(&buf[k..]);
                                self.ahead = Ahead::Block(covers);
                            }
                        }
                    }
                    (Some(b), None) => Sha1Stream::update_two(a, buf, b, &buf[k..]),
                    (None, Some(p)) => {
                        *a = p.block;
                        self.ahead = Ahead::Block(covers);
                    }
                    (None, None) => a.update(buf),
                },
                (None, Some(p)) => {
                    *a = p.block;
                    self.ahead = Ahead::Block(covers);
                }
                (None, None) => a.update(buf),
            }
            return;
        }
        match (&mut self.block, pre) {
            (Some(BlockHash::Sha1(a)), Some(p)) => {
                *a = p.block;
                self.ahead = Ahead::Block(covers);
            }
            (Some(_), _) if done != Ahead::None => {}
            (Some(h), _) => h.update(buf),
            (None, _) => {}
        }
        match &mut self.payload {
            PayloadCheck::None | PayloadCheck::SameAsBlock(_) => {}
            PayloadCheck::Block(_, h) => h.update(buf),
            PayloadCheck::Http(_, d) => d.update(buf),
        }
    }

    /// The result.
    pub fn finish(self) -> RecordCheck {
        self.finish_with_head().0
    }

    /// The result, and the block's HTTP head when the payload digest was
    /// checked over an HTTP message: a caller that also looks at the head
    /// need not parse it again.
    pub fn finish_with_head(self) -> (RecordCheck, Option<HttpHead>) {
        let (check, head, _) = self.finish_with_spare();
        (check, head)
    }

    /// [`Checker::finish_with_head`], and, for the caller to reuse, the
    /// head given to [`Checker::with_spare_head`] when it does not come
    /// back as the parsed head: untouched when the payload digest was not
    /// checked over an HTTP message, emptied (no start line, no fields, no
    /// notes; its buffers' capacity kept) when a head was parsed into it
    /// and did not parse.
    pub fn finish_with_spare(self) -> (RecordCheck, Option<HttpHead>, Option<HttpHead>) {
        let mut head = None;
        let mut spare = self.spare;
        // SHA-1s computed ahead over more bytes than came (the file cut
        // short while it was read): what they stood for is not known.
        let short = |d: &Digest| DigestStatus::Invalid {
            recorded: d.as_str().to_string(),
            computed: "not computed: the block ended before the bytes hashed ahead".to_string(),
        };
        let (block_short, body_short) = match self.ahead {
            Ahead::Block(n) => (n != self.len, false),
            Ahead::BlockAndBody(n) => (n != self.len, n != self.len),
            Ahead::None => (false, false),
        };
        let block_out = self.block.map(BlockHash::finalize);
        let block = match (self.block_rec, &block_out) {
            (Recorded::Check(d), Some(_)) if block_short => short(&d),
            (Recorded::Check(d), Some(out)) => compare(&d, out),
            (Recorded::Status(s), _) => s,
            (Recorded::Check(_), None) => DigestStatus::Absent,
        };
        let payload = match self.payload_status {
            Some(s) => s,
            None => match self.payload {
                PayloadCheck::None => DigestStatus::Absent,
                PayloadCheck::Block(d, h) => compare(&d, &h.finalize()),
                // Only made when the block is hashed with this algorithm.
                PayloadCheck::SameAsBlock(d) => match &block_out {
                    Some(_) if block_short => short(&d),
                    Some(out) => compare(&d, out),
                    None => DigestStatus::Absent,
                },
                PayloadCheck::Http(d, http) => {
                    let (h, digests, left) = http.finish_with_spare();
                    head = h;
                    spare = left;
                    match digests.check(&d) {
                        _ if body_short => short(&d),
                        PayloadMatch::Payload => DigestStatus::Valid,
                        PayloadMatch::RawChunked => DigestStatus::ValidRawChunked,
                        _ => compare(&d, &digests.payload),
                    }
                }
            },
        };
        let check = RecordCheck {
            block,
            payload,
            block_len: self.len,
        };
        (check, head, spare)
    }

    /// Feeds all of `block` and gives the result.
    ///
    /// # Errors
    /// Reading the block failed.
    pub fn run(mut self, block: &mut impl BufRead) -> Result<RecordCheck> {
        loop {
            let buf = block.fill_buf().map_err(Error::from)?;
            if buf.is_empty() {
                break;
            }
            let n = buf.len();
            self.update(buf);
            block.consume(n);
        }
        Ok(self.finish())
    }
}

/// SHA-1s of the block of the one WARC record a decompressed member holds,
/// computed where the member was inflated (a job of the parallel decoder,
/// with [`DecoderOptions::member_digests`](crate::codec::DecoderOptions::member_digests)
/// set), so that the thread reading the records need not hash its bytes
/// again: the block digest's stream and, when the block starts with an
/// HTTP status line, the stream of what follows its head (an unchunked
/// SHA-1 payload digest). [`Checker::use_member_digests`] takes them only
/// for a block at the place and of the length they cover, and only when
/// it is fed that whole block at once: the bytes are then the ones the job
/// hashed.
#[derive(Clone)]
pub struct MemberDigests {
    /// Where the block starts in the member (the header's length).
    block_start: u64,
    /// The block's length: the member less header and the record's
    /// trailer.
    block_len: u64,
    block: Sha1Stream,
    /// Where the HTTP head ends in the block, and the stream of the bytes
    /// after it.
    body: Option<(usize, Sha1Stream)>,
}

impl std::fmt::Debug for MemberDigests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberDigests")
            .field("block_start", &self.block_start)
            .field("block_len", &self.block_len)
            .field("body_at", &self.body.as_ref().map(|b| b.0))
            .finish()
    }
}

/// Longest WARC header a job looks through for its end.
// Only the parallel engine's jobs hash members (the unit tests too).
#[cfg_attr(not(feature = "parallel"), allow(dead_code))]
const MEMBER_HEADER_MAX: usize = 64 * 1024;

impl MemberDigests {
    /// The SHA-1s of `member`'s block, when `member` is one WARC record
    /// (version line, header, block, `\r\n\r\n`) whose header names a
    /// SHA-1 digest; `None` for anything else (the reading thread then
    /// hashes as usual). Also the stored bytes of one record of an
    /// uncompressed file, hashed ahead of the thread reading it
    /// ([`Checker::use_file_digests`]).
    pub fn of(member: &[u8]) -> Option<MemberDigests> {
        if !member.starts_with(b"WARC/") || !member.ends_with(b"\r\n\r\n") {
            return None;
        }
        let look = &member[..member.len().min(MEMBER_HEADER_MAX)];
        let end = memchr::memmem::find(look, b"\r\n\r\n")? + 4;
        // Only worth it for SHA-1 digests (nearly all); the reader's
        // Checker decides what is checked either way.
        let header = &member[..end];
        let sha1_at = |c: usize| c >= 4 && header[c - 4..c].eq_ignore_ascii_case(b"sha1");
        if !memchr::memchr_iter(b':', header).any(sha1_at) {
            return None;
        }
        let block = member.get(end..member.len() - 4)?;
        let mut a = Sha1Stream::new();
        let body = if block.starts_with(b"HTTP/") {
            let window = &block[..block.len().min(Limits::default().max_http_head + 4)];
            HeadFinder::new().find(window).map(|k| {
                let mut b = Sha1Stream::new();
                Sha1Stream::update_two(&mut a, block, &mut b, &block[k..]);
                (k, b)
            })
        } else {
            None
        };
        if body.is_none() {
            a.update(block);
        }
        Some(MemberDigests {
            block_start: end as u64,
            block_len: block.len() as u64,
            block: a,
            body,
        })
    }
}

/// Reads the rest of `rec`'s block and checks its digests. Call it before
/// reading any of the block.
///
/// # Errors
/// Reading the block failed (I/O, or corrupt compression in strict mode).
pub fn check_record<S: Source>(
    rec: &mut archive::Record<'_, S>,
    limits: &Limits,
) -> Result<RecordCheck> {
    let mut c = Checker::new(rec.header(), limits);
    c.use_job_digests(rec.header(), rec);
    c.run(&mut rec.block())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::BlockDigester;
    use crate::write::{Body, NewRecord, Writer, WriterOptions};

    fn written(fields: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = Writer::new(
            &mut out,
            WriterOptions {
                compression: crate::write::Compression::None,
                ..WriterOptions::default()
            },
        )
        .unwrap();
        let mut rec = NewRecord::new(RecordType::Response);
        for (n, v) in fields {
            rec.set(n, v).unwrap();
        }
        w.write(&mut rec, Body::Bytes(body)).unwrap();
        w.finish().unwrap();
        out
    }

    fn check_first(data: &[u8]) -> RecordCheck {
        let mut r = crate::archive::Reader::new(data).unwrap();
        let mut rec = r.next_record().unwrap().unwrap();
        check_record(&mut rec, &Limits::default()).unwrap()
    }

    #[test]
    fn written_digests_verify() {
        let body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        let data = written(
            &[("Content-Type", "application/http; msgtype=response")],
            body,
        );
        let c = check_first(&data);
        assert_eq!(c.block, DigestStatus::Valid);
        assert_eq!(c.payload, DigestStatus::Valid);
        assert_eq!(c.block_len, body.len() as u64);
        // The payload digest is of "hello", de-chunked.
        let text = String::from_utf8_lossy(&data);
        let want = Digest::new(
            crate::digest::Algorithm::Sha1,
            &Hasher::digest(crate::digest::Algorithm::Sha1, b"hello"),
        );
        assert!(
            text.contains(&format!("WARC-Payload-Digest: {want}")),
            "{text}"
        );
    }

    #[test]
    fn wrong_and_odd_digests() {
        let data = written(
            &[
                ("Content-Type", "text/plain"),
                ("WARC-Block-Digest", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
                ("WARC-Payload-Digest", "whirlpool:abc"),
            ],
            b"x",
        );
        let c = check_first(&data);
        assert!(matches!(c.block, DigestStatus::Invalid { .. }), "{c:?}");
        assert!(
            matches!(c.payload, DigestStatus::UnknownAlgorithm { .. }),
            "{c:?}"
        );
        assert!(!c.is_ok());
        let data = written(&[("WARC-Block-Digest", "sha1")], b"x");
        assert!(matches!(
            check_first(&data).block,
            DigestStatus::Malformed { .. }
        ));
    }

    /// The block of `data`'s first record fed to a [`Checker`] in pieces
    /// of `piece` bytes, with `spare` to parse the head into: the result,
    /// the head and the spare when it was not used.
    fn check_in_pieces(
        data: &[u8],
        body: &[u8],
        piece: usize,
        spare: Option<HttpHead>,
    ) -> (RecordCheck, Option<HttpHead>, Option<HttpHead>) {
        let mut r = crate::archive::Reader::new(data).unwrap();
        let rec = r.next_record().unwrap().unwrap();
        let mut c = Checker::with_spare_head(rec.header(), &Limits::default(), spare);
        for p in body.chunks(piece) {
            c.update(p);
        }
        c.finish_with_spare()
    }

    /// A head with notes and more fields than the tests' heads, to parse
    /// into: nothing of it may show in what is parsed into it.
    fn old_head() -> HttpHead {
        let (h, _) = HttpHead::parse(b"http/1.0 404\nA: 1\nB: 2\nC: 3\nBad Name: 4\n\n")
            .unwrap()
            .unwrap();
        assert!(!h.notes().is_empty());
        h
    }

    /// The accessors of an emptied head work and give nothing.
    fn assert_emptied(h: &HttpHead) {
        assert_eq!(*h, HttpHead::empty());
        assert!(h.start_line().is_empty() && h.raw().is_empty() && h.notes().is_empty());
        assert_eq!(h.headers().count(), 0);
        assert!(h.header("A").is_none() && h.status().is_none() && h.method().is_none());
        assert!(!h.is_chunked() && h.content_length().is_none());
    }

    #[test]
    fn a_spare_head_a_failed_parse_went_into_is_given_back_emptied() {
        let limits = Limits {
            max_fields: 3,
            ..Limits::default()
        };
        let good = b"HTTP/1.1 200 OK\r\nA: 1\r\nTransfer-Encoding: chunked\r\n\r\n";
        let (fresh, _) = HttpHead::parse(good).unwrap().unwrap();
        let blocks: [&[u8]; 3] = [
            // More fields than the limit (TooManyFields), terminated or not.
            b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\nbody",
            b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n",
            // Not HTTP.
            b"hello world\r\n\r\nbody",
        ];
        for block in blocks {
            let data = written(
                &[
                    ("Content-Type", "application/http; msgtype=response"),
                    (
                        "WARC-Payload-Digest",
                        "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                    ),
                ],
                block,
            );
            let mut r = crate::archive::Reader::new(&data[..]).unwrap();
            let rec = r.next_record().unwrap().unwrap();
            for piece in [1, 7, block.len()] {
                let mut c = Checker::with_spare_head(rec.header(), &limits, Some(old_head()));
                for p in block.chunks(piece) {
                    c.update(p);
                }
                let (_, head, left) = c.finish_with_spare();
                assert!(head.is_none(), "{block:?}");
                let left = left.expect("the head parsed into");
                assert_emptied(&left);
                // Parsed into again, it gives what a fresh parse gives.
                let mut spare = Some(left);
                let (again, _) = HttpHead::parse_reusing(good, &Limits::default(), &mut spare)
                    .unwrap()
                    .unwrap();
                assert!(spare.is_none());
                assert_eq!(again, fresh);
                assert_eq!(again.notes(), fresh.notes());
                assert!(again.is_chunked() && again.header("a").is_some());
            }
        }
    }

    #[test]
    fn a_spare_head_not_parsed_into_is_given_back() {
        let data = written(
            &[("Content-Type", "text/plain")],
            b"HTTP/1.1 200 OK\r\n\r\n",
        );
        let (c, head, left) =
            check_in_pieces(&data, b"HTTP/1.1 200 OK\r\n\r\n", 5, Some(old_head()));
        assert_eq!(c, check_first(&data));
        assert!(head.is_none());
        assert_eq!(left, Some(old_head()));
    }

    #[test]
    fn digests_hold_however_the_block_is_cut() {
        let alg = crate::digest::Algorithm::Sha1;
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n";
        let long: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut plain = head.as_bytes().to_vec();
        plain.extend_from_slice(&long);
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
                .to_vec();
        // (block, payload): unchunked (the paired SHA-1s), chunked, a head
        // that never ends (empty payload).
        let cases: [(&[u8], &[u8]); 3] = [
            (&plain, &long),
            (&chunked, b"hello"),
            (b"HTTP/1.1 200 OK\r\nServer: x\r\n", b""),
        ];
        for (body, payload) in cases {
            let pd = Digest::new(alg, &Hasher::digest(alg, payload)).to_string();
            let bd = Digest::new(alg, &Hasher::digest(alg, body)).to_string();
            // SHA-256 payload digests take the general path.
            let s256 = crate::digest::Algorithm::Sha256;
            let pd256 = Digest::new(s256, &Hasher::digest(s256, payload)).to_string();
            let wrong = Digest::new(alg, &Hasher::digest(alg, b"other")).to_string();
            for (pd, bd) in [
                (pd.as_str(), bd.as_str()),
                (pd256.as_str(), bd.as_str()),
                (wrong.as_str(), bd.as_str()),
            ] {
                let data = written(
                    &[
                        ("Content-Type", "application/http; msgtype=response"),
                        ("WARC-Payload-Digest", pd),
                        ("WARC-Block-Digest", bd),
                    ],
                    body,
                );
                let whole = check_first(&data);
                assert_eq!(whole.block, DigestStatus::Valid);
                for piece in [1, 2, 17, 47, 64, 65, 1000, body.len().max(1)] {
                    // The head as BlockDigester, which this follows, finds it.
                    let mut reference = BlockDigester::new(alg, Limits::default());
                    reference.update(body);
                    let want = reference.finish().0;
                    assert!(want.is_some());
                    for spare in [None, Some(old_head())] {
                        let reused = spare.is_some();
                        let (c, h, left) = check_in_pieces(&data, body, piece, spare);
                        assert_eq!(c, whole, "{piece}-byte pieces of {:?}", &body[..20]);
                        assert_eq!(format!("{h:?}"), format!("{want:?}"), "{piece} {reused}");
                        // Parsed into, not handed back.
                        assert!(left.is_none());
                    }
                }
                if pd == wrong {
                    assert!(matches!(whole.payload, DigestStatus::Invalid { .. }));
                } else {
                    assert_eq!(whole.payload, DigestStatus::Valid, "{:?}", &body[..20]);
                }
            }
        }
    }

    #[test]
    fn payload_digest_of_a_whole_block_uses_the_block_hash() {
        let alg = crate::digest::Algorithm::Sha1;
        let body = b"key: value\r\n";
        let good = Digest::new(alg, &Hasher::digest(alg, body)).to_string();
        let data = written(
            &[
                ("Content-Type", "application/warc-fields"),
                ("WARC-Block-Digest", &good),
                ("WARC-Payload-Digest", &good),
            ],
            body,
        );
        let c = check_first(&data);
        assert_eq!(
            (&c.block, &c.payload),
            (&DigestStatus::Valid, &DigestStatus::Valid)
        );
        let bad = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let data = written(
            &[
                ("Content-Type", "application/warc-fields"),
                ("WARC-Block-Digest", &good),
                ("WARC-Payload-Digest", bad),
            ],
            body,
        );
        let c = check_first(&data);
        assert_eq!(c.block, DigestStatus::Valid);
        assert!(matches!(c.payload, DigestStatus::Invalid { .. }), "{c:?}");
    }

    #[test]
    fn raw_chunked_payload_digest_is_reported() {
        let body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        let raw = &body[body.len() - 15..];
        let alg = crate::digest::Algorithm::Sha1;
        let d = Digest::new(alg, &Hasher::digest(alg, raw)).to_string();
        let data = written(
            &[
                ("Content-Type", "application/http; msgtype=response"),
                ("WARC-Payload-Digest", &d),
            ],
            body,
        );
        assert_eq!(check_first(&data).payload, DigestStatus::ValidRawChunked);
    }

    /// The SHA-1s a decoding job computes over a member ([`MemberDigests`])
    /// give the statuses hashing here gives, are used (not recomputed) when
    /// the whole block is fed at once, and are left alone when it comes in
    /// pieces or they are of another place or length.
    #[test]
    fn member_digests_stand_for_hashing_the_whole_block() {
        let alg = crate::digest::Algorithm::Sha1;
        let sha1 = |b: &[u8]| Digest::new(alg, &Hasher::digest(alg, b)).to_string();
        let long: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut plain = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n".to_vec();
        plain.extend_from_slice(&long);
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
                .to_vec();
        let request = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec();
        let cases: [(&[u8], &[u8], &str); 4] = [
            (&plain, &long, "application/http; msgtype=response"),
            (&chunked, b"hello", "application/http; msgtype=response"),
            (&request, b"", "application/http; msgtype=request"),
            (b"key: value\r\n", b"key: value\r\n", "text/plain"),
        ];
        let mut used = 0;
        for (body, payload, ct) in cases {
            let wrong = sha1(b"other");
            for (pd, bd) in [
                (sha1(payload), sha1(body)),
                (wrong.clone(), sha1(body)),
                (sha1(payload), wrong.clone()),
            ] {
                let fields = [
                    ("Content-Type", ct),
                    ("WARC-Payload-Digest", pd.as_str()),
                    ("WARC-Block-Digest", bd.as_str()),
                ];
                let data = written(&fields, body);
                let whole = check_first(&data);
                let md = MemberDigests::of(&data).expect("one record, SHA-1 digests");
                let mut r = crate::archive::Reader::new(&data[..]).unwrap();
                let rec = r.next_record().unwrap().unwrap();
                let (h, at) = (rec.header().clone(), rec.location().header_len);
                assert_eq!((md.block_start, md.block_len), (at, body.len() as u64));
                let run = |md: &MemberDigests, start: u64, fed: &[u8], piece: usize| {
                    let mut c = Checker::new(&h, &Limits::default());
                    c.use_member_digests(&h, start, Some(md));
                    for p in fed.chunks(piece) {
                        c.update(p);
                    }
                    c.finish()
                };
                for piece in [1, 64, body.len()] {
                    assert_eq!(
                        run(&md, at, body, piece),
                        whole,
                        "{piece} of {ct} {pd} {bd}"
                    );
                }
                // Another block of the same length: its SHA-1s stand for
                // the bytes fed when the whole block comes at once...
                let mut other = data.clone();
                let flip = usize::try_from(at).unwrap() + body.len() / 2;
                other[flip] ^= 0x20;
                let md2 = MemberDigests::of(&other).unwrap();
                let c = run(&md2, at, body, body.len());
                if whole.block == DigestStatus::Valid {
                    assert!(matches!(c.block, DigestStatus::Invalid { .. }), "{c:?}");
                    used += 1;
                }
                // ...and not when it comes in pieces, or for another place.
                assert_eq!(run(&md2, at, body, 1), whole);
                assert_eq!(run(&md2, at + 1, body, body.len()), whole);
            }
        }
        assert_eq!(used, 8);
        // Two records in one member, or no SHA-1 digest: none, or not this
        // block's.
        let one = written(&[("WARC-Block-Digest", &sha1(b"x"))], b"x");
        let two = [one.clone(), one.clone()].concat();
        let md = MemberDigests::of(&two).unwrap();
        let mut r = crate::archive::Reader::new(&two[..]).unwrap();
        let rec = r.next_record().unwrap().unwrap();
        let mut c = Checker::new(rec.header(), &Limits::default());
        c.use_member_digests(rec.header(), rec.location().header_len, Some(&md));
        assert!(c.pre.is_none());
        let sha256 = b"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Block-Digest: sha256:AAAA\r\nContent-Length: 1\r\n\r\nx\r\n\r\n";
        assert!(MemberDigests::of(sha256).is_none());
        let sha1 = String::from_utf8_lossy(sha256).replace("sha256:AAAA", "SHA1:AAAA");
        assert!(MemberDigests::of(sha1.as_bytes()).is_some());
    }
}
