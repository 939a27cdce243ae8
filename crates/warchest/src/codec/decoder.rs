//! Placeholder for the streaming decoder (being written).
use super::{Codec, Source};
use std::io::Read;

/// Options of a [`Decoder`].
#[derive(Debug, Clone)]
pub struct DecoderOptions {
    /// Recover from damaged members with warnings instead of failing.
    pub lenient: bool,
}
impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions { lenient: true }
    }
}

/// Streaming decoder over any reader.
pub struct Decoder<R> {
    inner: R,
}
impl<R: Read> Decoder<R> {
    /// A decoder over `inner`.
    pub fn new(inner: R, _opts: DecoderOptions) -> Self {
        Decoder { inner }
    }
    /// The reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }
}
impl<R: Read> Source for Decoder<R> {
    fn fill_buf(&mut self) -> crate::Result<&[u8]> {
        unimplemented!()
    }
    fn consume(&mut self, _n: usize) {}
    fn next_member(&mut self) -> crate::Result<bool> {
        unimplemented!()
    }
    fn member_offset(&self) -> u64 {
        0
    }
    fn codec(&self) -> Codec {
        Codec::None
    }
    fn member_pos(&self) -> u64 {
        0
    }
    fn member_end(&self) -> Option<u64> {
        None
    }
    fn drain_warnings(&mut self, _out: &mut Vec<crate::Warning>) {}
}
