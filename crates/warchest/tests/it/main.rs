//! The integration tests of `warchest`, one binary (docs/testing.md).

mod allocations;
mod arc_infomall;
mod architecture;
mod big_record;
mod common;
mod deps;
mod differential;
mod disk_full;
mod fixtures;
#[cfg(target_os = "linux")]
mod plain_map;
mod roundtrip;
