/// Bounds on what a reader will buffer, so that no input can make it
/// allocate without limit. Every limit is checked where the bytes arrive and
/// breaking one is an [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge) error
/// (too many fields: a syntax error naming the limit).
///
/// What hostile input meets elsewhere (docs/reliability.md lists it all,
/// with the tests that prove it):
///
/// - declared lengths are never allocated: a Content-Length, ARC length,
///   Web InfoMall `length` or `unzip-length` or chunk size of 2^63 only
///   counts down as bytes arrive, and the input's end makes the record
///   truncated;
/// - decompression streams in fixed buffers
///   ([`DecoderOptions`](crate::codec::DecoderOptions)): a zstd frame may
///   declare a window of at most `max_zstd_window_log` (default 2^27), a
///   dictionary at most `max_zstd_dictionary_size` (32 MiB); a gzip member
///   inflating 1000:1 costs time linear in its output and no memory; runs
///   of empty members cost time linear in the input;
/// - an HTTP head longer than `max_http_head` is no head (the block is
///   taken as it is); a chunk-size line longer than 64 bytes is not chunked
///   data (passed through as stored);
/// - filter expressions (`warchest_ops::filter`): at most `MAX_EXPR_LEN`
///   bytes, `MAX_DEPTH` levels of `!` and parentheses, `MAX_COMPARISONS`
///   comparisons, `MAX_REGEXES` regexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest WARC (or ARC, InfoMall) header block, in bytes. Default 1 MiB.
    pub max_header_block: usize,
    /// Largest HTTP header block inside a record, in bytes. Default 1 MiB.
    pub max_http_head: usize,
    /// Largest number of fields in one header block. Default 10,000.
    pub max_fields: usize,
    /// How far the lenient reader searches for the next record after damage,
    /// in bytes. Default unlimited (`u64::MAX`): scanning is streamed and
    /// needs no memory. Passing it with input left is an
    /// [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge) error at the
    /// offset where the damage began: the rest of the input, from there, is
    /// not read (it is never reported as trailing garbage). Damage that runs
    /// to the end of the input is trailing garbage whatever its length.
    pub max_resync_scan: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_header_block: 1 << 20,
            max_http_head: 1 << 20,
            max_fields: 10_000,
            max_resync_scan: u64::MAX,
        }
    }
}

/// The error for a resync scan that passed [`Limits::max_resync_scan`] with
/// input left: the reader stops there, the rest of the input unread.
pub(crate) fn scan_limit(limit: u64) -> crate::ErrorKind {
    crate::ErrorKind::TooLarge {
        what: "scan for the next record after damage (the rest of the input from here was not read)",
        limit,
    }
}
