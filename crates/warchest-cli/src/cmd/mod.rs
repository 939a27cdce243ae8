//! One module per command.

pub mod check;
pub mod concat;
pub mod convert;
pub mod copy;
pub mod extract;
pub mod filter;
pub mod index;
pub mod ls;
pub mod recompress;
pub mod recover;
pub mod split;
pub mod stats;
