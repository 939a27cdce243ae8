//! How commands report: options shared by all, warnings, outcome to exit code.

use std::io;
use std::process::ExitCode;
use std::sync::Mutex;

use warchest::Warning;
use warchest::recoveries::{PayloadFallbackAt, Recoveries, Recovery};
use warchest_index::UnparsedHead;

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

    /// Prints warnings of `file` when asked to (`-w`); without `-w` they
    /// are counted, and [`recovery_summary`] prints one line per file at
    /// the end of the command.
    pub fn warnings(&self, file: &str, warnings: &[Warning]) {
        tally(file, warnings);
        if self.show_warnings {
            for w in warnings {
                eprintln!("warchest: {file}: warning: {w}");
            }
        }
    }
}

impl Global {
    /// [`Global::warnings`] for a tally already made (a library call that
    /// counts its reader's recoveries as it goes, in bounded memory): all
    /// of them counted for the summary line, the ones it kept listed with
    /// `-w`, and how many more it did not keep.
    pub fn recoveries(&self, file: &str, r: &Recoveries) {
        if r.is_empty() {
            return;
        }
        {
            let mut t = RECOVERIES.lock().unwrap_or_else(|e| e.into_inner());
            // None of them kept (the tally keeps 0): only counted.
            t.get_or_insert_with(|| Recoveries::keeping(0))
                .append(r.clone().in_file(file));
        }
        if self.show_warnings {
            for (_, w) in r.kept() {
                eprintln!("warchest: {file}: warning: {w}");
            }
            let more = r.total() - r.kept().len() as u64;
            if more > 0 {
                eprintln!("warchest: {file}: {more} more recoveries, not listed");
            }
        }
    }
}

/// A chunked read's warnings go where every read's go.
impl warchest::chunks::Report for Global {
    fn warnings(&self, file: &str, warnings: &[Warning]) {
        Global::warnings(self, file, warnings);
    }
}

/// Counts recoveries of `file` for the summary line without printing
/// them: for commands that list them in their own way (`recover`'s
/// damaged ranges, `validate`'s findings).
pub fn tally_only(file: &str, warnings: &[Warning]) {
    tally(file, warnings);
}

/// Recoveries counted per file (none kept: `-w` prints them as met).
static RECOVERIES: Mutex<Option<Recoveries>> = Mutex::new(None);

fn tally(file: &str, warnings: &[Warning]) {
    if warnings.is_empty() {
        return;
    }
    let mut t = RECOVERIES.lock().unwrap_or_else(|e| e.into_inner());
    t.get_or_insert_with(|| Recoveries::keeping(0))
        .add_all(file, warnings);
}

/// One line per file: "FILE: 3 recoveries, the first at offset N; -w lists
/// them".
fn summary_lines() -> Vec<String> {
    let t = RECOVERIES.lock().unwrap_or_else(|e| e.into_inner());
    let files = t.as_ref().map_or(&[][..], |t| t.by_file());
    files
        .iter()
        .map(|f| {
            let (n, at) = (f.count, f.first_offset);
            let (what, them) = if n == 1 {
                ("recovery", "it")
            } else {
                ("recoveries", "them")
            };
            format!(
                "warchest: {}: {n} {what}, the first at offset {at}; -w lists {them}",
                f.file
            )
        })
        .collect()
}

/// The payloads a command used otherwise than decoded as their HTTP head
/// says (`warchest::http::PayloadFallback`: bytes as stored, a body cut
/// short, what decoded before an error; `derive` and `search` take their
/// text from them): with `-w` each one kept, and unless `-q` one line of
/// counts per kind.
pub fn payload_fallbacks(g: &Global, tally: &Recoveries<PayloadFallbackAt>) {
    tell(
        g,
        tally,
        |file, e| {
            for f in e.fallbacks.iter() {
                eprintln!(
                    "warchest: {file}: warning: offset {}: {}: payload {}",
                    e.offset,
                    f.name(),
                    f.describe()
                );
            }
        },
        "payloads not decoded as their HTTP head says",
        tally.summary(),
    );
}

/// The records `index` indexed without status and MIME because their HTTP
/// head did not parse ([`UnparsedHead`]): with `-w` each one kept, and
/// unless `-q` one line with the count and the first offset (the file
/// named when there is one).
pub fn unparsed_heads(g: &Global, tally: &Recoveries<UnparsedHead>) {
    unparsed_heads_as(g, tally, "indexed without status and MIME");
}

/// [`unparsed_heads`] for a command that says otherwise what became of the
/// records (`consequence`: "the filter's HTTP tests saw none").
pub fn unparsed_heads_as(g: &Global, tally: &Recoveries<UnparsedHead>, consequence: &str) {
    let line = UnparsedHead::summary_as(tally, consequence).map(|l| match tally.by_file() {
        [f] => format!("{}: {l}", f.file),
        _ => l,
    });
    tell(
        g,
        tally,
        |file, u| {
            eprintln!(
                "warchest: {file}: warning: offset {}: http-head-unparsed: HTTP head did not \
                 parse; {consequence}",
                u.offset
            );
        },
        "records whose HTTP head did not parse",
        line,
    );
}

/// Tells a tally: with `-w` each one kept (`list`) and how many more were
/// not kept (`more`, what they are), and unless `-q` its summary `line`.
fn tell<T: Recovery>(
    g: &Global,
    tally: &Recoveries<T>,
    list: impl Fn(&str, &T),
    more: &str,
    line: Option<String>,
) {
    if g.show_warnings {
        for (file, e) in tally.kept() {
            list(file, e);
        }
        let not_kept = tally.total() - tally.kept().len() as u64;
        if not_kept > 0 {
            eprintln!("warchest: {not_kept} more {more}, not listed");
        }
    }
    let Some(line) = line.filter(|_| !g.quiet) else {
        return;
    };
    let them = if tally.total() == 1 { "it" } else { "them" };
    eprintln!(
        "warchest: {line}{}",
        if g.show_warnings {
            String::new()
        } else {
            format!("; -w lists {them}")
        }
    );
}

/// Prints the recoveries of every file read, one line per file, unless
/// they were listed (`-w`) or `-q` was given.
pub fn recovery_summary(g: &Global) {
    if g.show_warnings || g.quiet {
        return;
    }
    for l in summary_lines() {
        eprintln!("{l}");
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

/// The first failure to write standard output through `println!` that is
/// not a closed pipe: the run fails with it (`exit`).
static STDOUT_FAILURE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Keeps `e`, met writing standard output, unless it is a closed pipe.
pub fn note_stdout_error(e: io::Error) {
    if e.kind() != io::ErrorKind::BrokenPipe {
        STDOUT_FAILURE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| e.to_string());
    }
}

/// Writes `v` to `out` as one line of JSON (a command's `--json` stream,
/// written from a callback that cannot return an error); a failure is
/// kept as `println!`'s are, and fails the run at its end.
pub fn json_line(out: &mut impl io::Write, v: &impl serde::Serialize) {
    let line = serde_json::to_writer(&mut *out, v)
        .map_err(io::Error::from)
        .and_then(|()| writeln!(out));
    if let Err(e) = line {
        note_stdout_error(e);
    }
}

/// The process exit code for an outcome. A run whose standard output
/// could not be written (other than to a closed pipe) fails, whatever it
/// did: what it printed is lost.
pub fn exit(o: Result<Outcome, anyhow::Error>) -> ExitCode {
    let lost = STDOUT_FAILURE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(e) = lost {
        if let Err(err) = &o
            && !is_broken_pipe(err.as_ref())
        {
            eprintln!("warchest: {err}");
        }
        eprintln!("warchest: stdout: {e}");
        return ExitCode::from(2);
    }
    match o {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Problem) => ExitCode::from(1),
        Ok(Outcome::Failed) => ExitCode::from(2),
        Err(e) => {
            if is_broken_pipe(e.as_ref()) {
                return ExitCode::SUCCESS;
            }
            // The chain on one line, each cause once (an I/O error's
            // message is part of the error that wraps it).
            let mut msg = e.to_string();
            for cause in e.chain().skip(1) {
                let m = cause.to_string();
                if !msg.contains(&m) {
                    msg.push_str(": ");
                    msg.push_str(&m);
                }
            }
            eprintln!("warchest: {msg}");
            ExitCode::from(2)
        }
    }
}
