//! zstd frames: one reused zstd context whose window is limited, the
//! dictionary of a dictionary frame (or of the options) loaded into it, and
//! skippable frames skipped.

use super::CodecError;
use super::member::{Cx, MemberDecoder, Step};
use super::zstd_frame::{self, Dctx};
use crate::WarningKind;
use std::io::Read;

/// Output buffer of a step (as gzip's).
const OUT_SIZE: usize = super::gzip_member::OUT_SIZE;

/// The decoder of zstd frames.
pub(super) struct ZstdMember {
    /// Made on first use.
    dctx: Option<Dctx>,
    /// The context is inside a frame it did not finish.
    dirty: bool,
    /// The caller's dictionary, until the context is made.
    options_dict: Option<Vec<u8>>,
    max_window_log: u32,
    max_dict: usize,
}

impl std::fmt::Debug for ZstdMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZstdMember")
            .field("dirty", &self.dirty)
            .finish_non_exhaustive()
    }
}

impl ZstdMember {
    /// See [`super::DecoderOptions`]: the window limit (already clamped),
    /// the dictionary size limit, the caller's dictionary.
    pub(super) fn new(max_window_log: u32, max_dict: usize, dict: Option<Vec<u8>>) -> Self {
        ZstdMember {
            dctx: None,
            dirty: false,
            options_dict: dict,
            max_window_log,
            max_dict,
        }
    }

    /// The options this decoder was made with, for another decoder (the
    /// parallel engine's workers): window limit, dictionary size limit and
    /// the caller's dictionary when not loaded yet.
    pub(super) fn options(&self) -> (u32, usize, Option<&Vec<u8>>) {
        (
            self.max_window_log,
            self.max_dict,
            self.options_dict.as_ref(),
        )
    }

    /// Replaces the dictionary (a worker of the parallel engine is given the
    /// one the reading thread loaded).
    #[cfg(feature = "parallel")]
    pub(super) fn set_dictionary(&mut self, dict: Option<&[u8]>) {
        self.dctx = None;
        self.options_dict = dict.map(<[u8]>::to_vec);
    }

    /// The frame in progress is abandoned (the decoder moved elsewhere).
    pub(super) fn abandon(&mut self) {
        self.dirty = true;
    }

    /// Makes the context ready for a new frame (or dictionary) when the last
    /// frame was left unfinished.
    fn reset_if_dirty<R>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<()> {
        let dirty = self.dirty;
        let offset = cx.member_offset;
        let d = self.dctx(cx)?;
        if dirty {
            d.reset().map_err(|name| CodecError {
                codec: "zstd",
                offset,
                message: format!("cannot reset the zstd context: {name}"),
            })?;
        }
        self.dirty = false;
        Ok(())
    }

    /// The context, made on first use with the window limit and the
    /// caller's dictionary. A failure to make it (or to load the caller's
    /// dictionary) stops the decoder, lenient or not: no zstd frame could be
    /// decoded. Without the `zstd` feature it always fails, so a zstd frame
    /// (or dictionary frame) is an error that says so.
    fn dctx<R>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<&mut Dctx> {
        if self.dctx.is_none() {
            let made = Dctx::new(self.max_window_log).and_then(|mut d| {
                if let Some(dict) = &self.options_dict {
                    d.load_dictionary(dict).map_err(|name| {
                        format!("cannot load the zstd dictionary of the options: {name}")
                    })?;
                }
                Ok(d)
            });
            match made {
                Ok(d) => {
                    self.options_dict = None;
                    self.dctx = Some(d);
                }
                Err(message) => {
                    let e = CodecError {
                        codec: "zstd",
                        offset: cx.member_offset,
                        message,
                    };
                    cx.report.failed = Some(e.clone());
                    return Err(e.into());
                }
            }
        }
        self.dctx.as_mut().ok_or_else(|| {
            CodecError {
                codec: "zstd",
                offset: cx.member_offset,
                message: "no zstd context".to_owned(),
            }
            .into()
        })
    }

    /// Reads the skippable frame with `magic` at the input's position: loads
    /// a dictionary frame, skips any other. Returns the dictionary loaded.
    pub(super) fn skippable_frame<R: Read>(
        &mut self,
        cx: &mut Cx<'_, R>,
        magic: u32,
    ) -> crate::Result<Option<Vec<u8>>> {
        let start = cx.input.pos();
        let truncated = |cx: &mut Cx<'_, R>| {
            cx.input.drop_buffered();
            let msg = format!("the input ends inside the skippable frame at stored offset {start}");
            cx.report
                .problem(cx.codec, WarningKind::TruncatedMember, start, msg)
                .map(|()| None)
        };
        if !cx.ensure(8)? {
            return truncated(cx);
        }
        let size_bytes = cx.input.bytes().get(4..8).unwrap_or_default();
        let size = u32::from_le_bytes(size_bytes.try_into().unwrap_or_default());
        cx.input.advance(8);
        let mut left = u64::from(size);
        let keep = magic == zstd_frame::DICT_FRAME_MAGIC;
        if keep && left > self.max_dict as u64 {
            let msg = format!(
                "the zstd dictionary frame at stored offset {start} holds {size} bytes, more \
                 than the limit of {}; it is ignored",
                self.max_dict
            );
            cx.report
                .problem(cx.codec, WarningKind::DamagedMember, start, msg)?;
        }
        let keep = keep && left <= self.max_dict as u64;
        let mut payload = Vec::new();
        while left > 0 {
            if cx.input.avail() == 0 && !cx.ensure(1)? {
                return truncated(cx);
            }
            let k = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(cx.input.avail());
            if keep {
                payload.extend_from_slice(cx.input.bytes().get(..k).unwrap_or_default());
            }
            cx.input.advance(k);
            left -= k as u64;
        }
        if !keep {
            return Ok(None);
        }
        self.reset_if_dirty(cx)?;
        let loaded =
            zstd_frame::dictionary_from_payload(payload, self.max_dict, self.max_window_log)
                .and_then(|dict| {
                    let d = self.dctx(cx).map_err(|e| e.to_string())?;
                    d.load_dictionary(&dict)
                        .map_err(|name| format!("zstd rejects it: {name}"))?;
                    Ok(dict)
                });
        match loaded {
            Ok(dict) => Ok(Some(dict)),
            Err(e) => {
                let msg =
                    format!("cannot use the zstd dictionary frame at stored offset {start}: {e}");
                cx.report
                    .problem(cx.codec, WarningKind::DamagedMember, start, msg)?;
                Ok(None)
            }
        }
    }
}

impl MemberDecoder for ZstdMember {
    fn begin<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<()> {
        self.reset_if_dirty(cx)?;
        self.dirty = true;
        Ok(())
    }

    fn step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step> {
        if !cx.step_start(OUT_SIZE)? {
            self.dirty = true;
            return Ok(Step::Truncated("inside the frame"));
        }
        let d = self.dctx(cx)?;
        let zstd_frame::Step { used, made, result } =
            d.decompress(cx.input.bytes(), &mut cx.out.buf[..]);
        cx.input.advance(used);
        cx.out.end = made;
        Ok(match result {
            Ok(true) => {
                self.dirty = false;
                cx.finish();
                Step::Going
            }
            Ok(false) if used == 0 && made == 0 => {
                self.dirty = true;
                Step::Damaged("zstd makes no progress".into())
            }
            Ok(false) => Step::Going,
            Err(name) => {
                self.dirty = true;
                let mut what = format!("corrupt zstd frame ({name})");
                if what.contains("memory") || what.contains("indow") {
                    what.push_str(&format!(
                        "; the window limit is 2^{} bytes (max_zstd_window_log)",
                        self.max_window_log
                    ));
                }
                Step::Damaged(what)
            }
        })
    }
}
