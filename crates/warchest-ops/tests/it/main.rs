//! The integration tests of `warchest-ops`, one binary (docs/testing.md).

#[path = "../../../warchest/tests/it/common.rs"]
mod common;
mod convert;
mod copy;
mod crash;
mod damage;
mod hostile;
mod recover;
mod writing;

/// The fixture at `rel` (ARC or Web InfoMall) converted to a WARC of one
/// zstd frame per record.
pub fn zstd_warc_of(rel: &str) -> Vec<u8> {
    let mut r = warchest::archive::Reader::open(common::fixture(rel)).expect("open fixture");
    let opts = warchest::write::WriterOptions {
        compression: warchest::write::Compression::Zstd {
            level: 3,
            dictionary: None,
        },
        ..Default::default()
    };
    let mut w = warchest::write::Writer::new(Vec::new(), opts).expect("writer");
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let mut report = warchest_ops::convert::Report::default();
    warchest_ops::convert::to_warc(&mut r, name, &mut w, &Default::default(), &mut report)
        .expect("convert");
    w.finish().expect("finish")
}
