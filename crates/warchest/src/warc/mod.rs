//! WARC record framing: the version line, the header block of named fields,
//! the Content-Length-framed block and the CRLF CRLF trailer (ISO 28500
//! section 4), read from any [`Source`](crate::codec::Source).
//!
//! [`Reader`] reads records one at a time as borrowed [`Record`]s whose block
//! is streamed, never loaded whole; [`WarcHeader`] gives typed access to every
//! named field of WARC 1.1 section 5 and keeps the raw bytes.

pub(crate) mod date;
mod header;
mod reader;

pub use crate::leniency::Leniency;
pub use date::{DatePrecision, WarcDate};
pub use header::{FieldsMut, PayloadKind, RecordType, TruncatedReason, Version, WarcHeader};
pub use reader::open_file;
pub use reader::{
    BlockReader, OwnedRecord, Reader, ReaderOptions, Record, RecordEnd, RecordLocation, Records,
};

/// The named fields of WARC 1.1 section 5 (and 1.0), in the spec's order.
pub mod field {
    /// WARC-Record-ID (mandatory).
    pub const RECORD_ID: &str = "WARC-Record-ID";
    /// Content-Length (mandatory).
    pub const CONTENT_LENGTH: &str = "Content-Length";
    /// WARC-Date (mandatory).
    pub const DATE: &str = "WARC-Date";
    /// WARC-Type (mandatory).
    pub const TYPE: &str = "WARC-Type";
    /// Content-Type.
    pub const CONTENT_TYPE: &str = "Content-Type";
    /// WARC-Concurrent-To (may repeat).
    pub const CONCURRENT_TO: &str = "WARC-Concurrent-To";
    /// WARC-Block-Digest.
    pub const BLOCK_DIGEST: &str = "WARC-Block-Digest";
    /// WARC-Payload-Digest.
    pub const PAYLOAD_DIGEST: &str = "WARC-Payload-Digest";
    /// WARC-IP-Address.
    pub const IP_ADDRESS: &str = "WARC-IP-Address";
    /// WARC-Refers-To.
    pub const REFERS_TO: &str = "WARC-Refers-To";
    /// WARC-Refers-To-Target-URI (1.1).
    pub const REFERS_TO_TARGET_URI: &str = "WARC-Refers-To-Target-URI";
    /// WARC-Refers-To-Date (1.1).
    pub const REFERS_TO_DATE: &str = "WARC-Refers-To-Date";
    /// WARC-Target-URI.
    pub const TARGET_URI: &str = "WARC-Target-URI";
    /// WARC-Truncated.
    pub const TRUNCATED: &str = "WARC-Truncated";
    /// WARC-Warcinfo-ID.
    pub const WARCINFO_ID: &str = "WARC-Warcinfo-ID";
    /// WARC-Filename (warcinfo only).
    pub const FILENAME: &str = "WARC-Filename";
    /// WARC-Profile (revisit).
    pub const PROFILE: &str = "WARC-Profile";
    /// WARC-Identified-Payload-Type.
    pub const IDENTIFIED_PAYLOAD_TYPE: &str = "WARC-Identified-Payload-Type";
    /// WARC-Segment-Number.
    pub const SEGMENT_NUMBER: &str = "WARC-Segment-Number";
    /// WARC-Segment-Origin-ID (continuation).
    pub const SEGMENT_ORIGIN_ID: &str = "WARC-Segment-Origin-ID";
    /// WARC-Segment-Total-Length (last continuation).
    pub const SEGMENT_TOTAL_LENGTH: &str = "WARC-Segment-Total-Length";
    /// WARC-Protocol (IIPC extension adopted by 1.1 writers).
    pub const PROTOCOL: &str = "WARC-Protocol";
    /// WARC-Cipher-Suite (IIPC extension).
    pub const CIPHER_SUITE: &str = "WARC-Cipher-Suite";

    /// Every named field of WARC 1.1 section 5, for validators and
    /// `--forbid-extensions`.
    pub const ALL: &[&str] = &[
        RECORD_ID,
        CONTENT_LENGTH,
        DATE,
        TYPE,
        CONTENT_TYPE,
        CONCURRENT_TO,
        BLOCK_DIGEST,
        PAYLOAD_DIGEST,
        IP_ADDRESS,
        REFERS_TO,
        REFERS_TO_TARGET_URI,
        REFERS_TO_DATE,
        TARGET_URI,
        TRUNCATED,
        WARCINFO_ID,
        FILENAME,
        PROFILE,
        IDENTIFIED_PAYLOAD_TYPE,
        SEGMENT_NUMBER,
        SEGMENT_ORIGIN_ID,
        SEGMENT_TOTAL_LENGTH,
    ];
}

/// Revisit profile URIs (WARC 1.1 section 6.7, and the 1.0 ones).
pub mod profile {
    /// 1.1 identical-payload-digest.
    pub const IDENTICAL_PAYLOAD_DIGEST_1_1: &str =
        "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
    /// 1.1 server-not-modified.
    pub const SERVER_NOT_MODIFIED_1_1: &str =
        "http://netpreserve.org/warc/1.1/revisit/server-not-modified";
    /// 1.0 identical-payload-digest.
    pub const IDENTICAL_PAYLOAD_DIGEST_1_0: &str =
        "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest";
    /// 1.0 server-not-modified.
    pub const SERVER_NOT_MODIFIED_1_0: &str =
        "http://netpreserve.org/warc/1.0/revisit/server-not-modified";
}
