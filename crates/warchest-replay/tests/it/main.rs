//! The integration tests of `warchest-replay`, one binary (docs/testing.md).

#[path = "../../../warchest/tests/it/common.rs"]
mod common;
mod replay;
/// The HTTP server with ranges of warchest-remote's tests (as the CLI's
/// tests share it).
#[cfg(feature = "remote")]
#[path = "../../../warchest-remote/tests/it/servers.rs"]
mod servers;
