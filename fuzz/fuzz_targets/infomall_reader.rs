//! Any bytes read as Web InfoMall (no sniffing), lenient and strict; every
//! block inflated: `length` and `unzip-length` must not be trusted.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::archive::{Format, Reader};
use warchest::codec::Decoder;
use warchest::warc::ReaderOptions;

fuzz_target!(|data: &[u8]| {
    for opts in [ReaderOptions::lenient(), ReaderOptions::strict()] {
        let src = Decoder::new(data, opts.decoder.clone());
        let mut r = Reader::from_source_as(src, opts, Format::InfoMall);
        while let Ok(Some(mut rec)) = r.next_record() {
            let _ = rec.header().target_uri();
            let _ = rec.read_block();
        }
        let _ = r.take_warnings();
    }
});
