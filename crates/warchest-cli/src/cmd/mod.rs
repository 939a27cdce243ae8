//! One module per command.

pub mod check;
pub mod convert;
pub mod extract;
pub mod ls;
pub mod recover;
