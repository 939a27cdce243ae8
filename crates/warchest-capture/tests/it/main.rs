//! The integration tests of `warchest-capture`, one binary
//! (docs/testing.md).

mod robots;
mod run;
