//! Field blocks, lenient and strict, then edits that must keep them
//! parseable: a field set reads back with its value, and removed again
//! leaves the block's bytes as they were (order, case, repeats and raw
//! bytes kept), but for the line end given to a last field that had none.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::fields::{Fields, decode_encoded_words};

fuzz_target!(|data: &[u8]| {
    let mut issues = Vec::new();
    let _ = Fields::parse(data.to_vec(), 0, true, 1000, &mut issues);
    if let Ok(mut f) = Fields::parse(data.to_vec(), 0, false, 1000, &mut issues) {
        for field in f.iter() {
            let _ = field.value_decoded();
        }
        let before = f.as_bytes().to_vec();
        let fields = f.len();
        // Where the field lines end, and whether their last line has its
        // line end (an edit gives a last field one).
        let end = f.start_line().len() + f.field_bytes().len();
        let ended = f.field_bytes().is_empty() || f.field_bytes().ends_with(b"\n");
        if !f.contains("X-Fuzz") && f.len() < 1000 {
            f.set("X-Fuzz", "value").unwrap();
            assert_eq!(f.len(), fields + 1);
            assert_eq!(f.value("x-fuzz").as_deref(), Some("value"));
            // The edited bytes parse to the same fields and the new one.
            let mut again = Vec::new();
            let g = Fields::parse(f.as_bytes().to_vec(), 0, false, 1000, &mut again).unwrap();
            assert_eq!(g.len(), fields + 1);
            assert_eq!(g.value("X-FUZZ").as_deref(), Some("value"));
            assert_eq!(f.remove("x-fuzz"), 1);
            // As it was, or (a last field that had no line end) with one.
            if ended || f.as_bytes() == &before[..] {
                assert_eq!(f.as_bytes(), &before[..]);
            } else {
                let now = f.as_bytes();
                assert!(now.len() > before.len() && now.len() <= before.len() + 2);
                let lead = now.len() - before.len();
                assert_eq!(&now[..end], &before[..end]);
                assert!(now[end..end + lead].ends_with(b"\n"));
                assert_eq!(&now[end + lead..], &before[end..]);
            }
        } else {
            let _ = f.set("X-Fuzz", "value");
            let _ = f.remove("x-fuzz");
        }
    }
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = decode_encoded_words(s);
    }
});
