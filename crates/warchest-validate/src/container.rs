//! Container checks: gzip member headers, and the frame structure of
//! `.warc.zst` files, seen as the stored bytes stream past once.
//!
//! Damage, checksums and truncation are found by the decoder and arrive as
//! its warnings (mapped in `warc.rs`). What the decoder does not judge is
//! checked here: the gzip header fields RFC 1952 constrains (from
//! [`Decoder::gzip_header`]) and the `.warc.zst` conventions (dictionary
//! frame first, content size, checksum and dictionary id in every frame),
//! by [`ZstdWalker`], which follows the frames' headers and block sizes in
//! the bytes the decoder reads without decompressing anything.

use std::io::{self, Read};

use super::grammar;
use super::rules::{self, Rule};
use super::{At, Emit, Out};
use warchest::codec::zstd_frame::{self, DICT_FRAME_MAGIC, MAX_FRAME_HEADER};
use warchest::codec::{Decoder, GzipHeader};

/// Findings that repeat per member (every member of a file is usually
/// written alike): the first is reported with a count of the others.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    items: Vec<TallyItem>,
}

#[derive(Debug)]
struct TallyItem {
    rule: &'static Rule,
    offset: u64,
    message: String,
    unit: &'static str,
    count: u64,
}

impl Tally {
    pub(crate) fn add(
        &mut self,
        rule: &'static Rule,
        offset: u64,
        unit: &'static str,
        message: impl FnOnce() -> String,
    ) {
        match self.items.iter_mut().find(|i| i.rule.id == rule.id) {
            Some(i) => i.count += 1,
            None => self.items.push(TallyItem {
                rule,
                offset,
                message: message(),
                unit,
                count: 1,
            }),
        }
    }

    /// Checks the header of the gzip member at `offset`.
    pub(crate) fn gzip_header(&mut self, h: &GzipHeader, offset: u64) {
        const UNIT: &str = "gzip members";
        if !matches!(h.xfl, 0 | 2 | 4) {
            self.add(&rules::GZIP_HEADER_XFL, offset, UNIT, || {
                format!("the gzip member's XFL is {}, not 0, 2 or 4", h.xfl)
            });
        }
        if h.os > 13 && h.os != 255 {
            self.add(&rules::GZIP_HEADER_OS, offset, UNIT, || {
                format!(
                    "the gzip member's OS is {}, which RFC 1952 does not define",
                    h.os
                )
            });
        }
        if let Some(extra) = &h.extra
            && !extra_is_well_formed(extra)
        {
            self.add(&rules::GZIP_HEADER_EXTRA, offset, UNIT, || {
                format!(
                    "the gzip member's FEXTRA field ({} bytes) is not a sequence of subfields",
                    extra.len()
                )
            });
        }
        for (what, field, lf) in [("FNAME", &h.name, false), ("FCOMMENT", &h.comment, true)] {
            if let Some(v) = field
                && !grammar::is_latin1_text(v, lf)
            {
                self.add(&rules::GZIP_HEADER_LATIN1, offset, UNIT, || {
                    format!("the gzip member's {what} holds control characters")
                });
            }
        }
    }

    /// Reports what was tallied.
    pub(crate) fn emit(self, out: &mut dyn Emit) {
        for i in self.items {
            let msg = if i.count > 1 {
                format!(
                    "{} ({} {} like this; the first is at this offset)",
                    i.message, i.count, i.unit
                )
            } else {
                i.message
            };
            out.push(i.rule, &At::offset(i.offset), msg);
        }
    }
}

/// RFC 1952 section 2.3.1.1: subfields `SI1 SI2 LEN(2, little-endian)
/// data`, filling the field exactly.
fn extra_is_well_formed(extra: &[u8]) -> bool {
    let mut i = 0usize;
    while i < extra.len() {
        let Some(len) = extra.get(i + 2..i + 4) else {
            return false;
        };
        i += 4 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    i == extra.len()
}

/// The magic number of a zstd dictionary (RFC 8878 section 5).
const DICT_MAGIC: [u8; 4] = [0x37, 0xa4, 0x30, 0xec];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// At a frame boundary: collecting the magic number (and header).
    Frame,
    /// Collecting a zstd frame header.
    Header,
    /// Collecting the 8 bytes of a skippable frame's magic and size.
    Skippable,
    /// In a skippable frame's payload: `left` bytes; the dictionary's
    /// first bytes are collected when `dict`.
    SkipPayload { left: u64, dict: bool, at: u64 },
    /// Collecting a 3-byte block header.
    Block { checksum: bool },
    /// In a block: `left` bytes, then the next block or the checksum.
    BlockBody {
        left: u64,
        last: bool,
        checksum: bool,
    },
    /// In the 4-byte content checksum.
    Checksum { left: u8 },
    /// Not a zstd file, or its structure was lost (the decoder reports
    /// the damage).
    Off,
}

/// Follows the frames of a `.warc.zst` file in its stored bytes.
#[derive(Debug)]
pub(crate) struct ZstdWalker {
    st: St,
    /// Stored offset of the next byte fed.
    pos: u64,
    buf: [u8; MAX_FRAME_HEADER],
    n: usize,
    /// Offset of the frame being read.
    frame_at: u64,
    frames: u64,
    /// A dictionary frame was seen; its id when it is a raw dictionary.
    dictionary: Option<Option<u32>>,
    tally: Tally,
}

impl Default for ZstdWalker {
    fn default() -> Self {
        ZstdWalker {
            st: St::Frame,
            pos: 0,
            buf: [0; MAX_FRAME_HEADER],
            n: 0,
            frame_at: 0,
            frames: 0,
            dictionary: None,
            tally: Tally::default(),
        }
    }
}

const FRAMES: &str = "zstd frames";

impl ZstdWalker {
    /// Feeds the next stored bytes.
    pub(crate) fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() && self.st != St::Off {
            let used = self.step(data);
            self.pos += used as u64;
            data = &data[used..];
        }
    }

    /// Collects bytes into `buf` up to `want`; true when there.
    fn collect(&mut self, data: &[u8], want: usize, used: &mut usize) -> bool {
        let k = (want.saturating_sub(self.n)).min(data.len());
        self.buf[self.n..self.n + k].copy_from_slice(&data[..k]);
        self.n += k;
        *used = k;
        self.n >= want
    }

    /// Consumes some of `data`, returning how much.
    fn step(&mut self, data: &[u8]) -> usize {
        let mut used = 0;
        match self.st {
            St::Frame => {
                if self.n == 0 {
                    self.frame_at = self.pos;
                }
                if !self.collect(data, 4, &mut used) {
                    return used;
                }
                if self.buf[..4] == [0x28, 0xb5, 0x2f, 0xfd] {
                    self.st = St::Header;
                } else if zstd_frame::skippable_magic(&self.buf[..4]).is_some() {
                    self.st = St::Skippable;
                } else {
                    // Not a frame: a plain or gzip file, or damage.
                    self.st = St::Off;
                }
            }
            St::Header => {
                let want = (self.n + 1).min(MAX_FRAME_HEADER);
                if !self.collect(data, want, &mut used) {
                    return used;
                }
                match zstd_frame::frame_header(&self.buf[..self.n]) {
                    Ok(None) if self.n < MAX_FRAME_HEADER => {}
                    Ok(Some(h)) => {
                        self.frames += 1;
                        self.zstd_frame(&h);
                        self.n = 0;
                        self.st = St::Block {
                            checksum: h.checksum,
                        };
                    }
                    _ => self.st = St::Off,
                }
            }
            St::Skippable => {
                if !self.collect(data, 8, &mut used) {
                    return used;
                }
                let magic =
                    u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                let size = u32::from_le_bytes([self.buf[4], self.buf[5], self.buf[6], self.buf[7]]);
                self.frames += 1;
                let dict = magic == DICT_FRAME_MAGIC;
                let at = self.frame_at;
                if dict {
                    if self.frames > 1 || self.dictionary.is_some() {
                        self.tally
                            .add(&rules::ZSTD_DICTIONARY_POSITION, at, FRAMES, || {
                                "a dictionary frame that is not the first frame of the file".into()
                            });
                    }
                } else if self.frames == 1 {
                    self.tally.add(&rules::ZSTD_FILE_START, at, FRAMES, || {
                        format!("the file begins with the skippable frame {magic:#010x}, not a zstd frame or the dictionary frame")
                    });
                }
                self.n = 0;
                self.st = St::SkipPayload {
                    left: u64::from(size),
                    dict,
                    at,
                };
                if size == 0 {
                    self.end_skippable(dict, at);
                }
            }
            St::SkipPayload { left, dict, at } => {
                let k = usize::try_from(left).unwrap_or(usize::MAX).min(data.len());
                if dict && self.n < 8 {
                    let m = (8 - self.n).min(k);
                    self.buf[self.n..self.n + m].copy_from_slice(&data[..m]);
                    self.n += m;
                }
                used = k;
                let left = left - k as u64;
                self.st = St::SkipPayload { left, dict, at };
                if left == 0 {
                    self.end_skippable(dict, at);
                }
            }
            St::Block { checksum } => {
                if !self.collect(data, 3, &mut used) {
                    return used;
                }
                let b = u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], 0]);
                self.n = 0;
                let last = b & 1 == 1;
                let size = u64::from(b >> 3);
                let body = match (b >> 1) & 3 {
                    1 => 1,
                    3 => {
                        self.st = St::Off;
                        return used;
                    }
                    _ => size,
                };
                self.st = St::BlockBody {
                    left: body,
                    last,
                    checksum,
                };
                if body == 0 {
                    self.end_block(last, checksum);
                }
            }
            St::BlockBody {
                left,
                last,
                checksum,
            } => {
                let k = usize::try_from(left).unwrap_or(usize::MAX).min(data.len());
                used = k;
                let left = left - k as u64;
                self.st = St::BlockBody {
                    left,
                    last,
                    checksum,
                };
                if left == 0 {
                    self.end_block(last, checksum);
                }
            }
            St::Checksum { left } => {
                let k = usize::from(left).min(data.len());
                used = k;
                let left = left - k as u8;
                self.st = if left == 0 {
                    St::Frame
                } else {
                    St::Checksum { left }
                };
            }
            St::Off => used = data.len(),
        }
        used
    }

    fn end_block(&mut self, last: bool, checksum: bool) {
        self.st = match (last, checksum) {
            (false, _) => St::Block { checksum },
            (true, true) => St::Checksum { left: 4 },
            (true, false) => St::Frame,
        };
    }

    fn end_skippable(&mut self, dict: bool, at: u64) {
        if dict {
            let head = &self.buf[..self.n.min(8)];
            let id = if head.len() >= 8 && head[..4] == DICT_MAGIC {
                Some(Some(u32::from_le_bytes([
                    head[4], head[5], head[6], head[7],
                ])))
            } else if head.len() >= 4 && head[..4] == [0x28, 0xb5, 0x2f, 0xfd] {
                // A compressed dictionary: its id is inside.
                Some(None)
            } else {
                self.tally
                    .add(&rules::ZSTD_DICTIONARY_FORMAT, at, FRAMES, || {
                        "the dictionary frame holds neither a zstd dictionary nor a zstd frame"
                            .into()
                    });
                Some(None)
            };
            if self.dictionary.is_none() {
                self.dictionary = id;
            }
        }
        self.n = 0;
        self.st = St::Frame;
    }

    fn zstd_frame(&mut self, h: &zstd_frame::FrameHeader) {
        let at = self.frame_at;
        if !h.content_size {
            self.tally
                .add(&rules::ZSTD_FRAME_CONTENT_SIZE, at, FRAMES, || {
                    "the zstd frame has no Frame_Content_Size".into()
                });
        }
        if !h.checksum {
            self.tally.add(&rules::ZSTD_FRAME_CHECKSUM, at, FRAMES, || {
                "the zstd frame has no Content_Checksum".into()
            });
        }
        let id = h.dictionary_id.filter(|&d| d != 0);
        match (self.dictionary, id) {
            (Some(_), None) => self
                .tally
                .add(&rules::ZSTD_FRAME_DICTIONARY_ID, at, FRAMES, || {
                    "the file has a dictionary but the zstd frame names no Dictionary_ID".into()
                }),
            (Some(Some(want)), Some(got)) if want != got => self.tally.add(
                &rules::ZSTD_FRAME_DICTIONARY_ID,
                at,
                FRAMES,
                || {
                    format!(
                        "the zstd frame names dictionary {got} but the file's dictionary is {want}"
                    )
                },
            ),
            (None, Some(got)) => self.tally.add(
                &rules::ZSTD_FRAME_DICTIONARY_ID,
                at,
                FRAMES,
                || {
                    format!(
                        "the zstd frame names dictionary {got} but the file has no dictionary frame"
                    )
                },
            ),
            _ => {}
        }
    }
}

/// The stored input, watched by a [`ZstdWalker`] as the decoder reads it.
pub(crate) struct Observed<R> {
    inner: R,
    walker: ZstdWalker,
}

impl<R> Observed<R> {
    pub(crate) fn new(inner: R) -> Self {
        Observed {
            inner,
            walker: ZstdWalker::default(),
        }
    }
}

impl<R> Observed<R> {
    /// The input with no walker: for inputs that are not zstd, read
    /// partly elsewhere (by the threads of a parallel decoder).
    pub(crate) fn unwatched(inner: R) -> Self {
        let walker = ZstdWalker {
            st: St::Off,
            ..ZstdWalker::default()
        };
        Observed { inner, walker }
    }
}

/// Seeking loses the walker's place, so it stops watching.
impl<R: io::Seek> io::Seek for Observed<R> {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.walker.st = St::Off;
        self.inner.seek(pos)
    }
}

impl<R: Read> Read for Observed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.walker.st != St::Off {
            self.walker.feed(&buf[..n]);
        }
        Ok(n)
    }
}

/// Reports the container findings gathered over a file.
pub(crate) fn finish_file<R: Read>(src: &mut Decoder<Observed<R>>, out: &mut Out<'_>) {
    let tally = std::mem::take(&mut src.get_mut().walker.tally);
    tally.emit(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(bytes: &[u8], chunk: usize) -> Vec<&'static str> {
        let mut w = ZstdWalker::default();
        for c in bytes.chunks(chunk.max(1)) {
            w.feed(c);
        }
        w.tally.items.iter().map(|i| i.rule.id).collect()
    }

    fn dict_frame(payload: &[u8]) -> Vec<u8> {
        let mut f = 0x184D_2A5Du32.to_le_bytes().to_vec();
        f.extend((payload.len() as u32).to_le_bytes());
        f.extend(payload);
        f
    }

    #[test]
    fn well_formed_frames_pass_at_any_chunking() {
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.include_checksum(true).unwrap();
        let mut file = c.compress(b"WARC/1.1\r\n\r\n").unwrap();
        file.extend(c.compress(&b"x".repeat(300_000)).unwrap());
        for chunk in [1, 3, 7, 4096, 1 << 20] {
            assert_eq!(walk(&file, chunk), Vec::<&str>::new(), "chunk {chunk}");
        }
    }

    #[test]
    fn missing_checksum_and_size_are_tallied() {
        // The streaming encoder leaves the content size out.
        let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        e.include_checksum(false).unwrap();
        e.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut e, b"abc").unwrap();
        let one = e.finish().unwrap();
        let mut file = one.clone();
        file.extend(&one);
        let mut w = ZstdWalker::default();
        w.feed(&file);
        let ids: Vec<_> = w.tally.items.iter().map(|i| (i.rule.id, i.count)).collect();
        assert_eq!(
            ids,
            [("zstd.frame.content-size", 2), ("zstd.frame.checksum", 2)]
        );
    }

    #[test]
    fn dictionary_frame_rules() {
        let mut raw_dict = DICT_MAGIC.to_vec();
        raw_dict.extend(77u32.to_le_bytes());
        raw_dict.extend([0u8; 8]);
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        c.include_checksum(true).unwrap();
        let frame = c.compress(b"no dictionary id").unwrap();
        // Dictionary first, frame without an id: the frame breaks the rule.
        let mut file = dict_frame(&raw_dict);
        file.extend(&frame);
        assert_eq!(walk(&file, 5), ["zstd.frame.dictionary-id"]);
        // Dictionary after a frame; a second one; garbage dictionary.
        let mut file = frame.clone();
        file.extend(dict_frame(b"not a dictionary"));
        let ids = walk(&file, 64);
        assert!(ids.contains(&"zstd.dictionary.position"), "{ids:?}");
        assert!(ids.contains(&"zstd.dictionary.format"), "{ids:?}");
        // An extension frame first.
        let mut file = 0x184D_2A50u32.to_le_bytes().to_vec();
        file.extend(0u32.to_le_bytes());
        file.extend(&frame);
        assert_eq!(walk(&file, 2), ["zstd.file.start"]);
    }

    #[test]
    fn non_zstd_input_switches_off() {
        let mut w = ZstdWalker::default();
        w.feed(b"WARC/1.1\r\n");
        assert_eq!(w.st, St::Off);
        w.feed(&[0x28, 0xb5, 0x2f, 0xfd]);
        assert!(w.tally.items.is_empty());
    }

    #[test]
    fn extra_field_structure() {
        assert!(extra_is_well_formed(b""));
        assert!(extra_is_well_formed(b"sl\x02\x00ab"));
        assert!(extra_is_well_formed(b"sl\x00\x00ab\x01\x00c"));
        assert!(!extra_is_well_formed(b"sl\x05\x00ab"));
        assert!(!extra_is_well_formed(b"sl\x00"));
    }
}
