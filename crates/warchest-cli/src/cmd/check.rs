//! `warchest check` (being written).
use anyhow::Result;
use crate::report::{Global, Outcome};
/// (being written)
#[derive(clap::Args, Debug)]
pub struct Args {}
pub fn run(_g: &Global, _a: Args) -> Result<Outcome> { Ok(Outcome::Failed) }
