//! How commands report: options shared by all, warnings, outcome to exit code.

use std::io;
use std::process::ExitCode;

use warchest::Warning;

/// Options every command gets.
#[derive(Debug, Clone, Copy)]
pub struct Global {
    /// Strict reading.
    pub strict: bool,
    /// Print warnings.
    pub show_warnings: bool,
    /// Only errors on stderr (no progress bars).
    pub quiet: bool,
}

impl Global {
    /// Reader options for `file`.
    pub fn reader_options(&self, file: &str) -> warchest::warc::ReaderOptions {
        let o = if self.strict {
            warchest::warc::ReaderOptions::strict()
        } else {
            warchest::warc::ReaderOptions::lenient()
        };
        o.file(file)
    }

    /// Prints warnings of `file` when asked to.
    pub fn warnings(&self, file: &str, warnings: &[Warning]) {
        if self.show_warnings {
            for w in warnings {
                eprintln!("warchest: {file}: warning: {w}");
            }
        }
    }
}

/// What a command found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// All well.
    Ok,
    /// The command found a problem in the input (exit 1).
    Problem,
    /// The command could not do its work (exit 2).
    Failed,
}

impl Outcome {
    /// The worse of two outcomes.
    pub fn and(self, other: Outcome) -> Outcome {
        self.max(other)
    }
}

/// Reports an error of a file and returns the outcome for it. A broken pipe
/// (the reader of our output went away) is not an error.
pub fn file_error(file: &str, e: &(dyn std::error::Error + 'static)) -> Outcome {
    if is_broken_pipe(e) {
        return Outcome::Ok;
    }
    let msg = e.to_string();
    // "no ... record found in FILE" names the file already.
    if msg.starts_with(file) || e.downcast_ref::<crate::input::NoRecords>().is_some() {
        eprintln!("warchest: {msg}");
    } else {
        eprintln!("warchest: {file}: {msg}");
    }
    Outcome::Failed
}

/// True when `e` is, or wraps, a broken pipe.
pub fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<io::Error>()
            && io.kind() == io::ErrorKind::BrokenPipe
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// The process exit code for an outcome.
pub fn exit(o: Result<Outcome, anyhow::Error>) -> ExitCode {
    match o {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Problem) => ExitCode::from(1),
        Ok(Outcome::Failed) => ExitCode::from(2),
        Err(e) => {
            if is_broken_pipe(e.as_ref()) {
                return ExitCode::SUCCESS;
            }
            eprintln!("warchest: {e:#}");
            ExitCode::from(2)
        }
    }
}
