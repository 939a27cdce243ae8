//! The member decoder alone over any bytes, with tiny buffers.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::codec::{Decoder, DecoderOptions, Source};

fuzz_target!(|data: &[u8]| {
    for lenient in [true, false] {
        let opts = DecoderOptions {
            lenient,
            buffer_size: 64,
            ..DecoderOptions::default()
        };
        let mut d = Decoder::new(data, opts);
        let mut total = 0u64;
        loop {
            match d.fill_buf() {
                Ok([]) => match d.next_member() {
                    Ok(true) => continue,
                    _ => break,
                },
                Ok(b) => {
                    let n = b.len();
                    total += n as u64;
                    d.consume(n);
                }
                Err(_) => break,
            }
            // Bounded output per input: a bomb is cut here.
            if total > 64 << 20 {
                break;
            }
        }
        let mut w = Vec::new();
        d.drain_warnings(&mut w);
    }
});
