//! warchest-crawl's integration tests (one binary): crawls of a web
//! served on loopback by the tests themselves.

mod crawl;
mod dedupe;
mod infomall;
mod recrawl;
mod render;
mod resume;
mod testweb;
mod web;
