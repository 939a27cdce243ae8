//! warchest-crawl's integration tests (one binary): crawls of a web
//! served on loopback by the tests themselves.

mod crawl;
mod render;
mod resume;
mod testweb;
mod web;
