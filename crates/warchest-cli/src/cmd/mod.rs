//! One module per command.

pub mod check;
pub mod extract;
pub mod ls;
pub mod validate;
