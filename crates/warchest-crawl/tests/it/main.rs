//! warchest-crawl's integration tests: one binary, a module per area.

mod testweb;
