//! Opening inputs: files by path (seekable, so skipped payloads are sought
//! past), `-` for standard input.

use std::fs::File;
use std::io::Stdin;

use warchest::archive::Reader;
use warchest::codec::Decoder;
use warchest::warc::ReaderOptions;

/// A reader over a file or standard input.
pub enum Opened {
    /// A file.
    File(Reader<Decoder<File>>),
    /// Standard input.
    Stdin(Reader<Decoder<Stdin>>),
}

/// Opens `name` (`-` is standard input) for reading with `opts`.
pub fn open(name: &str, opts: ReaderOptions) -> warchest::Result<Opened> {
    Ok(if name == "-" {
        Opened::Stdin(Reader::with_options(std::io::stdin(), opts)?)
    } else {
        Opened::File(Reader::open_with(name, opts)?)
    })
}

/// Opens `name` (`-` is standard input) as a plain byte stream, for
/// commands that read every byte anyway.
pub fn open_stream(name: &str) -> std::io::Result<Box<dyn std::io::Read + Send>> {
    Ok(if name == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            File::open(name).map_err(|e| std::io::Error::new(e.kind(), format!("{name}: {e}")))?,
        )
    })
}

/// Runs `$body` with `$r` bound to the reader, whichever kind it is.
macro_rules! with_reader {
    ($opened:expr, $r:ident => $body:expr) => {
        match $opened {
            $crate::input::Opened::File($r) => $body,
            $crate::input::Opened::Stdin($r) => $body,
        }
    };
}
pub(crate) use with_reader;
