//! Without the `parallel` feature there is no parallel engine: this
//! stand-in has no values, so the [`super::Decoder`] never serves a member
//! from one and [`super::DecoderOptions::threads`] changes nothing (every
//! member is decoded on the caller's thread, with the same bytes, offsets
//! and warnings).

use super::map::FileMap;
use super::{Codec, DecoderOptions, GzipHeader, GzipTrailer};
use crate::io::ReadAt;
use std::sync::Arc;

/// The engine is not compiled in.
pub(crate) const ENABLED: bool = false;

/// The parallel engine, not compiled in: a type with no values.
#[derive(Debug)]
pub(crate) enum Engine {}

#[allow(clippy::unused_self)]
impl Engine {
    /// Always `None`.
    pub(crate) fn new(
        _file: Arc<dyn ReadAt>,
        _len: u64,
        _threads: usize,
        _opts: &DecoderOptions,
    ) -> Option<Self> {
        None
    }

    pub(crate) fn set_map(&mut self, _map: FileMap) -> bool {
        match *self {}
    }

    pub(crate) fn lend_output(&mut self, _out: &mut Vec<u8>) {
        match *self {}
    }

    pub(crate) fn take_output(&mut self, _out: &mut Vec<u8>) -> bool {
        match *self {}
    }

    pub(crate) fn new_dictionary(&mut self, _dict: Vec<u8>) {
        match *self {}
    }

    pub(crate) fn at_boundary(&mut self, _p: u64) -> bool {
        match *self {}
    }

    pub(crate) fn advance(&mut self) -> Result<(), u64> {
        match *self {}
    }

    pub(crate) fn map_check(&self) -> std::io::Result<()> {
        match *self {}
    }

    pub(crate) fn fill(&self) -> &[u8] {
        match *self {}
    }

    pub(crate) fn consume(&mut self, _n: usize) -> usize {
        match *self {}
    }

    pub(crate) fn skip(&mut self, _n: u64) -> u64 {
        match *self {}
    }

    pub(crate) fn member_offset(&self) -> u64 {
        match *self {}
    }

    pub(crate) fn codec(&self) -> Codec {
        match *self {}
    }

    pub(crate) fn member_pos(&self) -> u64 {
        match *self {}
    }

    pub(crate) fn member_end(&self) -> Option<u64> {
        match *self {}
    }

    pub(crate) fn member_digests(&self) -> Option<&crate::check::MemberDigests> {
        None
    }

    pub(crate) fn gzip_header(&self) -> Option<&GzipHeader> {
        match *self {}
    }

    pub(crate) fn gzip_trailer(&self) -> Option<&GzipTrailer> {
        match *self {}
    }
}
