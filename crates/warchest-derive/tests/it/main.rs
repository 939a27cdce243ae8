//! The integration tests of warchest-derive, one module per area
//! (docs/testing.md: one test binary per crate).

#[path = "../../../warchest/tests/it/common.rs"]
mod common;
mod resiliparse;
mod text;
mod wat;
