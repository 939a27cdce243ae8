//! The plain member: a file that starts with no known magic number is
//! served as it is, straight from the input buffer, up to the end of the
//! input (or until the reader ends it where compressed members follow).

use super::input::Input;
use super::member::{Cx, MemberDecoder, Out, Step};
use std::io::Read;

/// The plain member's decoder: it holds nothing, the input buffer is the
/// output.
#[derive(Debug, Default)]
pub(super) struct Plain;

impl MemberDecoder for Plain {
    fn begin<R: Read>(&mut self, _cx: &mut Cx<'_, R>) -> crate::Result<()> {
        Ok(())
    }

    fn step<R: Read>(&mut self, cx: &mut Cx<'_, R>) -> crate::Result<Step> {
        if !cx.ensure(1)? {
            cx.finish();
        }
        Ok(Step::Going)
    }

    #[inline]
    fn data<'a, R>(&self, input: &'a Input<R>, _out: &'a Out) -> &'a [u8] {
        input.bytes()
    }

    #[inline]
    fn consume<R>(&mut self, input: &mut Input<R>, _out: &mut Out, n: usize) -> usize {
        let k = n.min(input.avail());
        input.start += k;
        k
    }

    /// Seeks past what is buffered on seekable inputs.
    fn skip<R: Read>(&mut self, input: &mut Input<R>, n: u64) -> crate::Result<Option<u64>> {
        input.seek_skip(n)
    }
}
