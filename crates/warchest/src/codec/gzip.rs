//! Placeholder for gzip members (being written).
/// A parsed gzip member header.
#[derive(Debug, Clone)]
pub struct GzipHeader {
    /// Header length in bytes.
    pub len: usize,
}
/// Parses a gzip header.
pub fn parse_gzip_header(_b: &[u8]) -> Result<Option<GzipHeader>, String> {
    Ok(None)
}
