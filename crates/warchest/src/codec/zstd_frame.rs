//! zstd frames (RFC 8878): recognising frame headers and skippable frames,
//! and the dictionary frame of the `.warc.zst` convention. The frames
//! themselves are decoded by the zstd library through its streaming API
//! (the `zstd` feature; without it, making a context fails with an error that
//! says so, and the header parsing here still works).

#[cfg(feature = "zstd")]
use zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer};

/// A zstd frame's magic number, as stored.
pub const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The skippable frame that holds the dictionary of a `.warc.zst` file.
pub const DICT_FRAME_MAGIC: u32 = 0x184D_2A5D;

/// The window log zstd itself accepts at most and at least, to which
/// [`super::DecoderOptions::max_zstd_window_log`] is clamped.
pub const WINDOW_LOG_RANGE: (u32, u32) = (10, 31);

/// The magic number of a skippable frame at the start of `bytes`, if any.
pub fn skippable_magic(bytes: &[u8]) -> Option<u32> {
    let m = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    (m & 0xFFFF_FFF0 == 0x184D_2A50).then_some(m)
}

/// What the start of a zstd frame looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameStart {
    /// A plausible frame: valid header and a valid first block header.
    Ok,
    /// `bytes` ends too early to tell; this many are needed.
    Short(usize),
}

/// Checks the frame header at the start of `bytes` (magic included) and the
/// header of its first block, as far as that can be done without decoding:
/// enough to tell a real frame from a magic number occurring by chance in
/// garbage.
pub fn check_frame_start(bytes: &[u8]) -> Result<FrameStart, &'static str> {
    let Some(layout) = Layout::of(bytes)? else {
        return Ok(FrameStart::Short(5));
    };
    let header_len = layout.len();
    // The first block header follows (3 bytes, little-endian; type 3 is
    // reserved).
    let need = header_len + 3;
    let Some(block) = bytes.get(header_len..need) else {
        return Ok(FrameStart::Short(need));
    };
    if (block[0] >> 1) & 3 == 3 {
        return Err("first block of the zstd frame has the reserved type");
    }
    Ok(FrameStart::Ok)
}

/// Where the fields of a frame header are, from its descriptor.
struct Layout {
    /// Frame_Header_Descriptor.
    fhd: u8,
    /// Offset of Dictionary_ID (after the Window_Descriptor, if any).
    dict_at: usize,
    dict_len: usize,
    /// Length of Frame_Content_Size.
    fcs_len: usize,
}

impl Layout {
    /// The layout of the frame header at the start of `bytes` (magic
    /// included); `Ok(None)` when the 5 bytes up to the descriptor are not
    /// all there.
    fn of(bytes: &[u8]) -> Result<Option<Layout>, &'static str> {
        match bytes.get(..4) {
            None => return Ok(None),
            Some(m) if m != MAGIC => return Err("not a zstd frame"),
            Some(_) => {}
        }
        let Some(&fhd) = bytes.get(4) else {
            return Ok(None);
        };
        if fhd & 0x08 != 0 {
            return Err("reserved bit of the zstd frame header is set");
        }
        let single_segment = fhd & 0x20 != 0;
        let fcs_len = match fhd >> 6 {
            0 if single_segment => 1,
            0 => 0,
            1 => 2,
            2 => 4,
            _ => 8,
        };
        Ok(Some(Layout {
            fhd,
            dict_at: 5 + usize::from(!single_segment),
            dict_len: [0, 1, 2, 4][usize::from(fhd & 3)],
            fcs_len,
        }))
    }

    /// The header's length, magic included.
    fn len(&self) -> usize {
        self.dict_at + self.dict_len + self.fcs_len
    }
}

/// The fields of a zstd frame header (RFC 8878 section 3.1.1.1) a
/// validator looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Header length, magic number included.
    pub len: usize,
    /// Frame_Content_Size is present.
    pub content_size: bool,
    /// Content_Checksum follows the last block.
    pub checksum: bool,
    /// The Dictionary_ID field, when present.
    pub dictionary_id: Option<u32>,
}

/// The longest frame header: magic, descriptor, window, dictionary id (4)
/// and content size (8).
pub const MAX_FRAME_HEADER: usize = 18;

/// Parses the frame header at the start of `bytes` (magic included).
/// `Ok(None)` when more bytes are needed.
pub fn frame_header(bytes: &[u8]) -> Result<Option<FrameHeader>, &'static str> {
    let Some(layout) = Layout::of(bytes)? else {
        return Ok(None);
    };
    let len = layout.len();
    let Layout {
        fhd,
        dict_at,
        dict_len,
        fcs_len,
    } = layout;
    let Some(id) = bytes.get(dict_at..dict_at + dict_len) else {
        return Ok(None);
    };
    if bytes.len() < len {
        return Ok(None);
    }
    let dictionary_id = (dict_len > 0).then(|| {
        id.iter()
            .rev()
            .fold(0u32, |acc, &b| (acc << 8) | u32::from(b))
    });
    Ok(Some(FrameHeader {
        len,
        content_size: fcs_len > 0,
        checksum: fhd & 0x04 != 0,
        dictionary_id,
    }))
}

/// What a missing `zstd` feature makes every zstd operation fail with.
#[cfg(not(feature = "zstd"))]
const NOT_COMPILED_IN: &str = "zstd support not compiled in (feature zstd)";

/// A decompression context with the window limit set.
///
/// # Errors
/// The context cannot be made, or the limit set.
#[cfg(feature = "zstd")]
pub fn new_dctx(max_window_log: u32) -> Result<DCtx<'static>, String> {
    let mut d = DCtx::try_create().ok_or("cannot create a zstd decompression context")?;
    d.set_parameter(DParameter::WindowLogMax(max_window_log))
        .map_err(|c| {
            format!(
                "cannot set the zstd window limit: {}",
                zstd::zstd_safe::get_error_name(c)
            )
        })?;
    Ok(d)
}

/// The decoder's zstd context: the zstd library's, or, without the `zstd`
/// feature, a type with no values ([`Dctx::new`] always fails).
pub(crate) struct Dctx {
    #[cfg(feature = "zstd")]
    d: DCtx<'static>,
    #[cfg(not(feature = "zstd"))]
    never: std::convert::Infallible,
}

/// What one [`Dctx::decompress`] call did.
pub(crate) struct Step {
    /// Input bytes used.
    pub used: usize,
    /// Output bytes made.
    pub made: usize,
    /// `Ok(true)` when the frame ended; the library's error name else.
    pub result: Result<bool, &'static str>,
}

impl Dctx {
    /// A context whose window is limited to `2^max_window_log` bytes.
    pub(crate) fn new(max_window_log: u32) -> Result<Dctx, String> {
        #[cfg(feature = "zstd")]
        {
            new_dctx(max_window_log).map(|d| Dctx { d })
        }
        #[cfg(not(feature = "zstd"))]
        {
            let _ = max_window_log;
            Err(NOT_COMPILED_IN.to_owned())
        }
    }

    /// Forgets the frame in progress (the dictionary stays).
    pub(crate) fn reset(&mut self) -> Result<(), &'static str> {
        #[cfg(feature = "zstd")]
        {
            self.d
                .reset(zstd::zstd_safe::ResetDirective::SessionOnly)
                .map(|_| ())
                .map_err(zstd::zstd_safe::get_error_name)
        }
        #[cfg(not(feature = "zstd"))]
        match self.never {}
    }

    /// Uses `dict` for the frames from now on.
    pub(crate) fn load_dictionary(&mut self, dict: &[u8]) -> Result<(), &'static str> {
        #[cfg(feature = "zstd")]
        {
            self.d
                .load_dictionary(dict)
                .map(|_| ())
                .map_err(zstd::zstd_safe::get_error_name)
        }
        #[cfg(not(feature = "zstd"))]
        {
            let _ = dict;
            match self.never {}
        }
    }

    /// Decompresses from `input` into `out`, as far as either goes.
    pub(crate) fn decompress(&mut self, input: &[u8], out: &mut [u8]) -> Step {
        #[cfg(feature = "zstd")]
        {
            let mut inb = InBuffer::around(input);
            let mut outb = OutBuffer::around(out);
            let r = self.d.decompress_stream(&mut outb, &mut inb);
            Step {
                used: inb.pos(),
                made: outb.pos(),
                result: r
                    .map(|left| left == 0)
                    .map_err(zstd::zstd_safe::get_error_name),
            }
        }
        #[cfg(not(feature = "zstd"))]
        {
            let _ = (input, out);
            match self.never {}
        }
    }
}

/// The dictionary held by a dictionary frame's payload: the payload itself,
/// or, when it is a zstd frame, its decompressed content (at most `max`
/// bytes).
///
/// # Errors
/// A compressed dictionary that does not decompress, is larger than `max`,
/// or (without the `zstd` feature) any compressed dictionary.
pub fn dictionary_from_payload(
    payload: Vec<u8>,
    max: usize,
    max_window_log: u32,
) -> Result<Vec<u8>, String> {
    if !payload.starts_with(&MAGIC) {
        return Ok(payload);
    }
    let mut d = Dctx::new(max_window_log)?;
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut at = 0;
    loop {
        let step = d.decompress(payload.get(at..).unwrap_or_default(), &mut chunk);
        at += step.used;
        let done = step
            .result
            .map_err(|name| format!("the compressed dictionary does not decompress: {name}"))?;
        let n = step.made;
        if out.len() + n > max {
            return Err(format!(
                "the dictionary is larger than the limit of {max} bytes"
            ));
        }
        out.extend_from_slice(chunk.get(..n).unwrap_or_default());
        if done {
            return Ok(out);
        }
        if n == 0 && step.used == 0 {
            return Err("the compressed dictionary is truncated".to_owned());
        }
    }
}

/// The dictionary of the file `r` reads, when its first frame (at position
/// `origin` of `r`) is the `.warc.zst` dictionary frame: what a reader that
/// starts inside the file (`extract --offset`, replay) must load first, as a
/// reader from the start does. `r` is left where it was.
///
/// `None` when the file does not start with a dictionary frame, or the
/// frame is unusable (truncated, larger than `max` stored or decompressed,
/// not decompressing): the reader then goes on without it, as it would have
/// after reporting the frame when reading from the start.
///
/// # Errors
/// Reading or seeking `r` fails.
pub fn file_dictionary<R: std::io::Read + std::io::Seek>(
    r: &mut R,
    origin: u64,
    max: usize,
    max_window_log: u32,
) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::{Read, SeekFrom};
    let here = r.stream_position()?;
    r.seek(SeekFrom::Start(origin))?;
    let found = (|| -> std::io::Result<Option<Vec<u8>>> {
        let mut head = [0u8; 8];
        if r.read_exact(&mut head).is_err() {
            return Ok(None);
        }
        if skippable_magic(&head) != Some(DICT_FRAME_MAGIC) {
            return Ok(None);
        }
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len > max {
            return Ok(None);
        }
        let mut payload = Vec::with_capacity(len);
        r.by_ref().take(len as u64).read_to_end(&mut payload)?;
        if payload.len() < len {
            return Ok(None);
        }
        Ok(dictionary_from_payload(payload, max, max_window_log).ok())
    })();
    r.seek(SeekFrom::Start(here))?;
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_start_checks() {
        let f = zstd::stream::encode_all(&b"hello hello hello"[..], 3).unwrap();
        assert_eq!(check_frame_start(&f), Ok(FrameStart::Ok));
        assert!(matches!(
            check_frame_start(&f[..4]),
            Ok(FrameStart::Short(5))
        ));
        let mut bad = f.clone();
        bad[4] |= 0x08;
        assert!(check_frame_start(&bad).is_err());
        assert_eq!(
            skippable_magic(&[0x5d, 0x2a, 0x4d, 0x18]),
            Some(DICT_FRAME_MAGIC)
        );
        assert_eq!(skippable_magic(&[0x5d, 0x2a, 0x4d, 0x19]), None);
    }

    #[test]
    fn frame_headers() {
        let f = zstd::bulk::compress(b"hello hello hello", 3).unwrap();
        let h = frame_header(&f).unwrap().unwrap();
        assert!(h.content_size);
        assert_eq!(h.dictionary_id, None);
        assert!(frame_header(&f[..4]).unwrap().is_none());
        assert!(frame_header(b"nope").is_err());
        // A header with a 4-byte dictionary id 0x01020304 and a checksum.
        let raw = [0x28, 0xb5, 0x2f, 0xfd, 0x07, 0x00, 4, 3, 2, 1];
        let h = frame_header(&raw).unwrap().unwrap();
        assert_eq!(h.dictionary_id, Some(0x0102_0304));
        assert!(h.checksum);
        assert!(!h.content_size);
        assert_eq!(h.len, 10);
    }

    #[cfg(not(feature = "zstd"))]
    #[test]
    fn compressed_dictionary_needs_the_feature() {
        let packed = zstd::stream::encode_all(&[7u8; 100][..], 3).unwrap();
        let e = dictionary_from_payload(packed, 10_000, 27).unwrap_err();
        assert_eq!(e, NOT_COMPILED_IN);
        assert!(Dctx::new(27).is_err());
        assert_eq!(
            dictionary_from_payload(b"raw".to_vec(), 0, 27).unwrap(),
            b"raw"
        );
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn compressed_dictionary_is_bounded() {
        let dict = vec![7u8; 10_000];
        let packed = zstd::stream::encode_all(&dict[..], 3).unwrap();
        assert_eq!(
            dictionary_from_payload(packed.clone(), 10_000, 27).unwrap(),
            dict
        );
        assert!(dictionary_from_payload(packed, 9_999, 27).is_err());
        assert_eq!(
            dictionary_from_payload(b"raw".to_vec(), 0, 27).unwrap(),
            b"raw"
        );
    }
}
