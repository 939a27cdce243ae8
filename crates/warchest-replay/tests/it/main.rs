//! The integration tests of `warchest-replay`, one binary (docs/testing.md).

#[path = "../../../warchest/tests/it/common.rs"]
mod common;
mod replay;
