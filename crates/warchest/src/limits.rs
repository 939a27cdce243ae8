/// Bounds on what a reader will buffer, so that no input can make it
/// allocate without limit. Every limit is checked where the bytes arrive and
/// breaking one is an [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge) error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest WARC (or ARC, InfoMall) header block, in bytes. Default 1 MiB.
    pub max_header_block: usize,
    /// Largest HTTP header block inside a record, in bytes. Default 1 MiB.
    pub max_http_head: usize,
    /// Largest number of fields in one header block. Default 10,000.
    pub max_fields: usize,
    /// How far the lenient reader searches for the next record after damage
    /// before giving up on the rest of the member, in bytes. Default unlimited
    /// (`u64::MAX`): scanning is streamed and needs no memory.
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
