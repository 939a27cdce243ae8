//! Integration tests of warchest-search: one binary, a module per area.

mod index;
