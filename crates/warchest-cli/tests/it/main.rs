//! The integration tests of the `warchest` command, one binary (docs/testing.md).

mod arc_infomall;
mod browser;
mod browser_crawl;
mod capture;
mod cli;
mod common;
mod crawl;
mod derive;
mod fidelity;
mod index;
mod inputs;
mod parquet_engines;
mod plain_http;
mod plain_jobs;
mod proxy_limits;
mod remote;
mod remote_jobs;
mod safety;
mod search;
mod serve;
mod serve_limits;
mod serve_paths;
mod tools;
mod validate;
mod writing;
