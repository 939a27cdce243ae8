//! The `warchest` command (being written).
fn main() {}
