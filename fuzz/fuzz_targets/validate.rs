//! The validator over any bytes, then its cross-record checks.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest_validate::{Options, Validator};

fuzz_target!(|data: &[u8]| {
    for forbid_extensions in [false, true] {
        let mut v = Validator::new(Options {
            forbid_extensions,
            ..Options::default()
        });
        let mut n = 0u64;
        let _ = v.validate_reader("fuzz.warc", data, &mut |_| n += 1);
        let _ = v.finish(&mut |_| n += 1);
    }
});
