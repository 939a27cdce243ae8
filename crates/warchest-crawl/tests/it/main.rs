//! warchest-crawl's integration tests (one binary): crawls of a web
//! served on loopback by the tests themselves, and the agreement of the
//! crawler's links with replay's rewriting.

mod crawl;
mod dedupe;
mod infomall;
mod links_stopped;
mod recrawl;
mod render;
mod replay_agreement;
mod resume;
mod testweb;
mod web;
