//! The integration tests of `warchest-capture`, one binary
//! (docs/testing.md).

mod proxy;
mod robots;
mod run;
