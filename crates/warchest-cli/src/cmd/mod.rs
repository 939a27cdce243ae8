//! One module per command.

pub mod check;
pub mod extract;
pub mod index;
pub mod ls;
