//! The integration tests of warchest-derive, one module per area
//! (docs/testing.md: one test binary per crate).

mod text;
