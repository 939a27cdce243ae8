//! Opening inputs: files by path, `-` for standard input.

use std::fs::File;
use std::io::{self, Read};

/// An input stream, named for messages.
pub struct Input {
    /// The bytes.
    pub reader: Box<dyn Read + Send>,
}

/// Opens `name` (`-` is standard input).
pub fn open(name: &str) -> io::Result<Input> {
    let reader: Box<dyn Read + Send> = if name == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(name).map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?)
    };
    Ok(Input { reader })
}
