//! An in-memory [`Source`] for unit tests of the framing readers: members
//! of given bytes, handed out in chunks of a chosen size to exercise every
//! buffer boundary.

use crate::codec::{Codec, Source};
use crate::error::{Result, Warning};

/// Members as (codec, stored offset, stored end, decompressed bytes).
pub(crate) struct MemSource {
    members: Vec<(Codec, u64, u64, Vec<u8>)>,
    i: usize,
    pos: usize,
    chunk: usize,
}

impl MemSource {
    /// One plain member.
    pub(crate) fn plain(data: &[u8], chunk: usize) -> Self {
        MemSource {
            members: vec![(Codec::None, 0, data.len() as u64, data.to_vec())],
            i: 0,
            pos: 0,
            chunk: chunk.max(1),
        }
    }

    /// gzip members, stored as if each compressed to a tenth of its size
    /// (at least 20 bytes).
    pub(crate) fn members(parts: &[&[u8]], chunk: usize) -> Self {
        let mut off = 0;
        let members = parts
            .iter()
            .map(|p| {
                let len = (p.len() as u64 / 10).max(20);
                let m = (Codec::Gzip, off, off + len, p.to_vec());
                off += len;
                m
            })
            .collect();
        MemSource {
            members,
            i: 0,
            pos: 0,
            chunk: chunk.max(1),
        }
    }

    /// The (stored offset, stored end) of each member.
    pub(crate) fn extents(&self) -> Vec<(u64, u64)> {
        self.members.iter().map(|m| (m.1, m.2)).collect()
    }
}

impl Source for MemSource {
    fn fill_buf(&mut self) -> Result<&[u8]> {
        let Some(m) = self.members.get(self.i) else {
            return Ok(&[]);
        };
        let end = (self.pos + self.chunk).min(m.3.len());
        Ok(&m.3[self.pos..end])
    }
    fn consume(&mut self, n: usize) {
        self.pos += n;
    }
    fn next_member(&mut self) -> Result<bool> {
        if self.i < self.members.len() {
            self.i += 1;
            self.pos = 0;
        }
        Ok(self.i < self.members.len())
    }
    fn member_offset(&self) -> u64 {
        self.members
            .get(self.i)
            .map_or(self.members.last().map_or(0, |m| m.2), |m| m.1)
    }
    fn codec(&self) -> Codec {
        self.members.get(self.i).map_or(Codec::None, |m| m.0)
    }
    fn member_pos(&self) -> u64 {
        self.pos as u64
    }
    fn member_end(&self) -> Option<u64> {
        let m = self.members.get(self.i)?;
        (self.pos == m.3.len()).then_some(m.2)
    }
    fn drain_warnings(&mut self, _out: &mut Vec<Warning>) {}
}

/// Reads `data` as `format` (in chunks of 5 bytes) with `leniency` to the
/// end or the first error: that error, and the warnings' kinds either way.
/// The leniency tests of the three readers share it.
pub(crate) fn read_with(
    data: &[u8],
    format: crate::archive::Format,
    leniency: crate::Leniency,
) -> (Option<crate::Error>, Vec<crate::WarningKind>) {
    let opts = crate::warc::ReaderOptions::with_leniency(leniency);
    let mut r = crate::archive::Reader::from_source_as(MemSource::plain(data, 5), opts, format);
    let mut err = None;
    loop {
        match r.next_record() {
            Ok(Some(mut rec)) => {
                if let Err(e) = rec.read_block().and_then(|_| rec.finish()) {
                    err = Some(e);
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    let kinds = r.take_warnings().into_iter().map(|w| w.kind).collect();
    (err, kinds)
}
