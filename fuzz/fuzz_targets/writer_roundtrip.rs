//! Whatever body and fields are written read back the same.
#![no_main]
use libfuzzer_sys::fuzz_target;
use warchest::archive::Reader;
use warchest::warc::RecordType;
use warchest::write::{Body, Compression, NewRecord, Writer, WriterOptions};

fuzz_target!(|input: (u8, Vec<u8>, Vec<u8>)| {
    let (mode, value, body) = input;
    let compression = match mode % 3 {
        0 => Compression::None,
        1 => Compression::Gzip(1),
        _ => Compression::Zstd {
            level: 1,
            dictionary: None,
        },
    };
    let mut w = Writer::new(
        Vec::new(),
        WriterOptions {
            compression,
            ..Default::default()
        },
    )
    .unwrap();
    let mut rec = NewRecord::new(RecordType::Resource);
    let value_ok = rec.set("X-Value", &value).is_ok();
    w.write(&mut rec, Body::Bytes(&body)).unwrap();
    let data = w.finish().unwrap();
    let mut r = Reader::new(&data[..]).unwrap();
    let mut got = r.next_record().unwrap().unwrap();
    assert_eq!(got.header().as_bytes(), rec.header().as_bytes());
    if value_ok {
        assert!(got.header().fields().contains("X-Value"));
    }
    assert_eq!(got.read_block().unwrap(), body);
});
