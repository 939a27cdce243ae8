//! LZ4 frames (the LZ4 frame format, magic `04 22 4D 18`): the frame
//! descriptor and the xxHash32 its checksums use. Blocks are decoded by the
//! decoder with `lz4_flex`'s block API (the `lz4` feature: without it an
//! LZ4 frame is an error that says so).

/// The frame magic number, as stored.
pub(crate) const MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

/// How much earlier output a linked block may refer to.
pub(crate) const HISTORY: usize = 64 * 1024;

/// Largest block size a frame can declare (BD = 7).
pub(crate) const MAX_BLOCK: usize = 4 * 1024 * 1024;

/// Blocks can be decoded (the `lz4` feature is on).
pub(crate) const SUPPORTED: bool = cfg!(feature = "lz4");

/// What reading an LZ4 frame without the `lz4` feature fails with.
pub(crate) const NOT_COMPILED_IN: &str = "LZ4 support not compiled in (feature lz4)";

/// Decompresses one block into `dst`, with the output before it as `dict`
/// for linked blocks; the number of bytes made.
pub(crate) fn decompress_block(
    block: &[u8],
    dst: &mut [u8],
    dict: Option<&[u8]>,
) -> Result<usize, String> {
    #[cfg(feature = "lz4")]
    {
        match dict {
            None => lz4_flex::block::decompress_into(block, dst),
            Some(d) => lz4_flex::block::decompress_into_with_dict(block, dst, d),
        }
        .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "lz4"))]
    {
        let _ = (block, dst, dict);
        Err(NOT_COMPILED_IN.to_owned())
    }
}

/// The frame descriptor: what the frame header declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameDescriptor {
    /// Blocks are independent (B.Indep); otherwise each may refer to the
    /// 64 KiB of output before it.
    pub independent: bool,
    /// Each block is followed by the xxHash32 of its stored bytes.
    pub block_checksum: bool,
    /// The end mark is followed by the xxHash32 of the whole content.
    pub content_checksum: bool,
    /// The declared content size.
    pub content_size: Option<u64>,
    /// The declared dictionary id.
    pub dict_id: Option<u32>,
    /// The largest block, decompressed.
    pub block_max: usize,
    /// Header length from the magic number through the header checksum.
    pub header_len: usize,
}

/// What parsing a frame header found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Header {
    /// A valid header.
    Ok(FrameDescriptor),
    /// `bytes` ends before the header does; it is this long in all (when
    /// known, else at least this long).
    Short(usize),
}

/// Parses the frame header at the start of `bytes` (magic included) and
/// checks its checksum byte.
pub(crate) fn parse_header(bytes: &[u8]) -> Result<Header, &'static str> {
    let Some(magic) = bytes.get(..4) else {
        return Ok(Header::Short(7));
    };
    if magic != MAGIC {
        return Err("not an LZ4 frame");
    }
    let Some(&flg) = bytes.get(4) else {
        return Ok(Header::Short(7));
    };
    if flg >> 6 != 1 {
        return Err("LZ4 frame version is not 01");
    }
    if flg & 0x02 != 0 {
        return Err("reserved bit of the LZ4 frame flags is set");
    }
    let has_size = flg & 0x08 != 0;
    let has_dict = flg & 0x01 != 0;
    let len = 7 + if has_size { 8 } else { 0 } + if has_dict { 4 } else { 0 };
    let Some(h) = bytes.get(..len) else {
        return Ok(Header::Short(len));
    };
    let bd = h.get(5).copied().unwrap_or(0);
    if bd & 0x8f != 0 {
        return Err("reserved bits of the LZ4 block descriptor are set");
    }
    let block_max = match (bd >> 4) & 7 {
        4 => 64 * 1024,
        5 => 256 * 1024,
        6 => 1024 * 1024,
        7 => MAX_BLOCK,
        _ => return Err("LZ4 block maximum size is not one of 4..7"),
    };
    // The checksum byte covers the descriptor (FLG to the last field).
    let desc = h.get(4..len - 1).unwrap_or_default();
    let hc = h.get(len - 1).copied().unwrap_or(0);
    if (xxh32(desc, 0) >> 8) as u8 != hc {
        return Err("LZ4 frame header checksum does not match");
    }
    let mut at = 6;
    let mut field = |n: usize| {
        let mut v = [0u8; 8];
        if let Some(src) = h.get(at..at + n) {
            v[..n].copy_from_slice(src);
        }
        at += n;
        u64::from_le_bytes(v)
    };
    let content_size = has_size.then(|| field(8));
    let dict_id = has_dict.then(|| field(4) as u32);
    Ok(Header::Ok(FrameDescriptor {
        independent: flg & 0x20 != 0,
        block_checksum: flg & 0x10 != 0,
        content_checksum: flg & 0x04 != 0,
        content_size,
        dict_id,
        block_max,
        header_len: len,
    }))
}

const P1: u32 = 0x9E37_79B1;
const P2: u32 = 0x85EB_CA77;
const P3: u32 = 0xC2B2_AE3D;
const P4: u32 = 0x27D4_EB2F;
const P5: u32 = 0x1656_67B1;

/// Streaming xxHash32 (the checksum of the LZ4 frame format), written from
/// its specification.
#[derive(Debug, Clone)]
pub(crate) struct Xxh32 {
    seed: u32,
    v: [u32; 4],
    /// Bytes not yet making a whole 16-byte stripe.
    tail: [u8; 16],
    tail_len: usize,
    total: u64,
}

fn round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(P2))
        .rotate_left(13)
        .wrapping_mul(P1)
}

fn lane(b: &[u8]) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(b.get(..4).unwrap_or(&[0; 4]));
    u32::from_le_bytes(v)
}

impl Xxh32 {
    pub(crate) fn new(seed: u32) -> Self {
        Xxh32 {
            seed,
            v: [
                seed.wrapping_add(P1).wrapping_add(P2),
                seed.wrapping_add(P2),
                seed,
                seed.wrapping_sub(P1),
            ],
            tail: [0; 16],
            tail_len: 0,
            total: 0,
        }
    }

    fn stripe(v: &mut [u32; 4], s: &[u8]) {
        for (k, acc) in v.iter_mut().enumerate() {
            *acc = round(*acc, lane(s.get(k * 4..).unwrap_or_default()));
        }
    }

    pub(crate) fn update(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.tail_len > 0 {
            let k = (16 - self.tail_len).min(data.len());
            self.tail[self.tail_len..self.tail_len + k].copy_from_slice(&data[..k]);
            self.tail_len += k;
            data = &data[k..];
            if self.tail_len < 16 {
                return;
            }
            let t = self.tail;
            Self::stripe(&mut self.v, &t);
            self.tail_len = 0;
        }
        let mut chunks = data.chunks_exact(16);
        for c in &mut chunks {
            Self::stripe(&mut self.v, c);
        }
        let rest = chunks.remainder();
        self.tail[..rest.len()].copy_from_slice(rest);
        self.tail_len = rest.len();
    }

    pub(crate) fn finish(&self) -> u32 {
        let [v1, v2, v3, v4] = self.v;
        let mut h = if self.total >= 16 {
            v1.rotate_left(1)
                .wrapping_add(v2.rotate_left(7))
                .wrapping_add(v3.rotate_left(12))
                .wrapping_add(v4.rotate_left(18))
        } else {
            self.seed.wrapping_add(P5)
        };
        h = h.wrapping_add(self.total as u32);
        let rest = &self.tail[..self.tail_len];
        let mut words = rest.chunks_exact(4);
        for w in &mut words {
            h = h
                .wrapping_add(lane(w).wrapping_mul(P3))
                .rotate_left(17)
                .wrapping_mul(P4);
        }
        for &b in words.remainder() {
            h = h
                .wrapping_add(u32::from(b).wrapping_mul(P5))
                .rotate_left(11)
                .wrapping_mul(P1);
        }
        h ^= h >> 15;
        h = h.wrapping_mul(P2);
        h ^= h >> 13;
        h = h.wrapping_mul(P3);
        h ^= h >> 16;
        h
    }
}

/// xxHash32 of `data` in one go.
pub(crate) fn xxh32(data: &[u8], seed: u32) -> u32 {
    let mut h = Xxh32::new(seed);
    h.update(data);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh32_known_values() {
        assert_eq!(xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(xxh32(b"a", 0), 0x550D_7456);
        assert_eq!(xxh32(b"abc", 0), 0x32D1_53FF);
        assert_eq!(
            xxh32(b"Nobody inspects the spammish repetition", 0),
            0xE229_3B2F
        );
    }

    #[test]
    fn xxh32_streaming_matches_one_shot() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let whole = xxh32(&data, 7);
        for split in [0, 1, 3, 15, 16, 17, 31, 500, 999, 1000] {
            let mut h = Xxh32::new(7);
            h.update(&data[..split]);
            for c in data[split..].chunks(5) {
                h.update(c);
            }
            assert_eq!(h.finish(), whole, "split {split}");
        }
    }

    #[test]
    fn header_rejects_bad_checksum_and_reserved_bits() {
        // FLG 0x60 (version 01, independent), BD 0x40 (64 KiB).
        let mut h = vec![0x04, 0x22, 0x4d, 0x18, 0x60, 0x40];
        let hc = (xxh32(&h[4..], 0) >> 8) as u8;
        h.push(hc);
        let Ok(Header::Ok(d)) = parse_header(&h) else {
            panic!("valid header rejected")
        };
        assert!(d.independent && !d.block_checksum && d.block_max == 65536);
        assert_eq!(d.header_len, 7);
        assert_eq!(parse_header(&h[..5]), Ok(Header::Short(7)));
        let mut bad = h.clone();
        bad[6] ^= 1;
        assert!(parse_header(&bad).is_err());
        let mut reserved = h.clone();
        reserved[5] |= 0x01;
        assert!(parse_header(&reserved).is_err());
    }
}
