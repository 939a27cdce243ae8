//! The member decoder alone over any bytes: with tiny buffers, no panic,
//! no hang, bounded output; and, read strictly or with nothing to recover,
//! the same bytes, members and errors out whatever the buffer size (64
//! bytes or the default), and before an error one's bytes the start of
//! the other's. (A lenient read of a damaged member looks for the next
//! member from the damaged one's start only as far back as its bytes are
//! still buffered: there the buffer size may change what is found.)
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::codec::{Decoder, DecoderOptions, Source};

/// The most output read of one input: a bomb is cut here.
const MAX_OUT: usize = 8 << 20;

/// What `data` decodes to with `buffer_size` (default when `None`): the
/// bytes of each member in turn, whether it ended in an error, and how
/// many recoveries were made.
fn decode(data: &[u8], lenient: bool, buffer_size: Option<usize>) -> (Vec<Vec<u8>>, bool, usize) {
    let mut opts = DecoderOptions {
        lenient,
        ..DecoderOptions::default()
    };
    if let Some(n) = buffer_size {
        opts.buffer_size = n;
    }
    let mut d = Decoder::new(data, opts);
    let mut members = vec![Vec::new()];
    let mut total = 0usize;
    let failed = loop {
        match d.fill_buf() {
            Ok([]) => match d.next_member() {
                Ok(true) => members.push(Vec::new()),
                Ok(false) => break false,
                Err(_) => break true,
            },
            Ok(b) => {
                let n = b.len();
                total += n;
                if let Some(m) = members.last_mut() {
                    m.extend_from_slice(b);
                }
                d.consume(n);
            }
            Err(_) => break true,
        }
        if total > MAX_OUT {
            break false;
        }
    };
    let mut w = Vec::new();
    d.drain_warnings(&mut w);
    (members, failed, w.len())
}

fuzz_target!(|data: &[u8]| {
    for lenient in [true, false] {
        let (small, small_failed, small_warned) = decode(data, lenient, Some(64));
        let (large, large_failed, large_warned) = decode(data, lenient, None);
        let cut = |m: &Vec<Vec<u8>>| m.iter().map(Vec::len).sum::<usize>() > MAX_OUT;
        if cut(&small) || cut(&large) || (lenient && small_warned + large_warned > 0) {
            continue;
        }
        assert_eq!(
            small_failed, large_failed,
            "an error with one buffer size only"
        );
        if small_failed {
            // Before an error, what was handed out depends on how far the
            // buffer reached: one is the start of the other.
            let (a, b) = (small.concat(), large.concat());
            let n = a.len().min(b.len());
            assert_eq!(a[..n], b[..n], "other bytes before the error");
        } else {
            assert_eq!(small, large, "other bytes with another buffer size");
        }
    }
});
