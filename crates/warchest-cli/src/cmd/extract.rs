//! `warchest extract` (being written).
use crate::report::{Global, Outcome};
use anyhow::Result;
/// (being written)
#[derive(clap::Args, Debug)]
pub struct Args {}
pub fn run(_g: &Global, _a: Args) -> Result<Outcome> {
    Ok(Outcome::Failed)
}
