//! Any bytes through the lenient and strict readers, every record checked:
//! no panic, no hang, bounded memory.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::archive::Reader;
use warchest::check::check_record;
use warchest::warc::ReaderOptions;

fuzz_target!(|data: &[u8]| {
    for opts in [ReaderOptions::lenient(), ReaderOptions::strict()] {
        let Ok(mut r) = Reader::with_options(data, opts) else {
            continue;
        };
        while let Ok(Some(mut rec)) = r.next_record() {
            let _ = check_record(&mut rec, &Default::default());
            let _ = rec.finish();
        }
        let _ = r.take_warnings();
    }
});
