//! One module per command.

pub mod annotate;
pub mod capture;
pub mod check;
pub mod concat;
pub mod convert;
pub mod copy;
pub mod crawl;
pub mod dedupe;
pub mod extract;
pub mod fetch;
pub mod filter;
pub mod index;
pub mod ls;
pub mod output;
pub mod pack;
pub mod recompress;
pub mod recover;
pub mod resolve;
pub mod segment;
pub mod serve;
pub mod split;
pub mod stats;
pub mod validate;
pub mod wacz;
