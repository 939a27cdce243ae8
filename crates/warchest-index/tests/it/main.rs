//! The integration tests of `warchest-index`, one binary (docs/testing.md).

#[path = "../../../warchest/tests/it/common.rs"]
mod common;
#[cfg(feature = "parquet")]
mod scan_chunks;
#[cfg(feature = "parquet")]
mod scan_notes;
#[cfg(feature = "parquet")]
mod split;
mod surt_differential;
