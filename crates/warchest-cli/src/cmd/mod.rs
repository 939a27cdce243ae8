//! One module per command.

pub mod annotate;
pub mod check;
pub mod dedupe;
pub mod extract;
pub mod ls;
pub mod output;
pub mod pack;
pub mod resolve;
pub mod segment;
