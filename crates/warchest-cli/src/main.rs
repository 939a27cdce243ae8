//! The `warchest` command: a thin layer over the library. Flags are parsed
//! here and turned into library calls; each failed file is reported and the
//! run goes on. Exit codes: 0 all well, 1 the command found a problem (a
//! digest mismatch, an invalid file), 2 it could not do its work.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

// std's print macros panic when the stream is a closed pipe (`warchest ls
// a b 2>&1 | head` exited 101 on the summary written after `head` left).
// Within this crate they are these. Standard output: a closed pipe is
// dropped (the reader went away, as `report::is_broken_pipe` takes it),
// any other failure (a full disk) is kept and fails the run
// (`report::stdout_failure`). Standard error: what cannot be written
// there is lost either way.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            $crate::report::note_stdout_error(e);
        }
    }};
}
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// The `--help` of a command's inputs: `$what`, then what an input may be
/// (one text for every command that reads archives), then `$after`.
macro_rules! inputs_help {
    ($what:literal) => {
        inputs_help!($what, "")
    };
    ($what:literal, $after:literal) => {
        concat!(
            $what,
            " (`-` for standard input; a URL (`http(s)://`, `s3://`, `gs://`, `az://`) is read \
             by range requests; a `.wacz` is read as its archive files, each named \
             `FILE.wacz#archive/NAME`)",
            $after
        )
    };
}

mod cmd;
mod input;
mod remote;
mod report;
mod tools;

/// Read, check and convert web archives (WARC, ARC, Web InfoMall).
#[derive(Parser, Debug)]
#[command(name = "warchest", version, about, long_about = None)]
struct Cli {
    /// Read strictly: the first deviation from the grammar is an error
    /// (default: lenient, every recovery reported as a warning).
    #[arg(long, global = true)]
    strict: bool,
    /// Print lenient-reading warnings on stderr, each with its offset
    /// (without it, one summary line per file says how many).
    #[arg(short = 'w', long, global = true)]
    warnings: bool,
    /// Only errors on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Ls(cmd::ls::Args),
    Extract(cmd::extract::Args),
    Fetch(cmd::fetch::Args),
    Check(cmd::check::Args),
    Filter(cmd::filter::Args),
    Stats(cmd::stats::Args),
    Recompress(cmd::recompress::Args),
    Split(cmd::split::Args),
    Concat(cmd::concat::Args),
    Index(cmd::index::Args),
    Convert(cmd::convert::Args),
    Recover(cmd::recover::Args),
    Dedupe(cmd::dedupe::Args),
    Pack(cmd::pack::PackArgs),
    Unpack(cmd::pack::UnpackArgs),
    Segment(cmd::segment::SegmentArgs),
    Reassemble(cmd::segment::ReassembleArgs),
    Annotate(cmd::annotate::AnnotateArgs),
    Migrate(cmd::annotate::MigrateArgs),
    Validate(cmd::validate::Args),
    Capture(cmd::capture::CaptureArgs),
    Crawl(cmd::crawl::Args),
    Proxy(cmd::capture::ProxyArgs),
    Serve(cmd::serve::Args),
    Acl(cmd::acl::Args),
    Wacz(cmd::wacz::Args),
    Derive(cmd::derive::Args),
    SearchIndex(cmd::search::IndexArgs),
    Search(cmd::search::SearchArgs),
    Qa(cmd::browser::QaArgs),
}

/// The command line with one line a command in the list, as git, cargo
/// and ripgrep show theirs: [`SUMMARIES`] where the first phrase of the
/// command's doc is long, else that phrase. `warchest CMD --help` keeps the
/// paragraph.
fn command() -> clap::Command {
    Cli::command().mut_subcommands(|sc| {
        let about = sc.get_about().map(ToString::to_string).unwrap_or_default();
        let long = sc
            .get_long_about()
            .map(ToString::to_string)
            .unwrap_or_else(|| about.clone());
        let line = SUMMARIES
            .iter()
            .find(|(name, _)| *name == sc.get_name())
            .map_or_else(|| first_phrase(&about), |(_, l)| (*l).to_string());
        sc.about(line).long_about(long)
    })
}

/// The list's line of the commands whose doc opens with a long phrase.
const SUMMARIES: &[(&str, &str)] = &[
    (
        "qa",
        "Replay captured pages in Chromium and report what is missing",
    ),
    (
        "stats",
        "Count records and bytes by type, media type, status and host",
    ),
    (
        "recompress",
        "Rewrite archives with one gzip member or zstd frame a record",
    ),
    (
        "split",
        "Split archives into files of at most --max-size bytes",
    ),
    (
        "concat",
        "Join archives into one file, records copied unchanged",
    ),
    ("recover", "Salvage the intact records of a damaged archive"),
    (
        "dedupe",
        "Rewrite responses whose payload was seen before as revisits",
    ),
    (
        "unpack",
        "Write the resource records of WARC files back as files",
    ),
    (
        "segment",
        "Copy a WARC file into segments of at most --max-size bytes",
    ),
    (
        "annotate",
        "Keep a program's report on each payload as a metadata record",
    ),
    (
        "validate",
        "Check files against ISO 28500, the containers, ARC and Web InfoMall",
    ),
    (
        "serve",
        "Serve archive files to a web browser: replay, CDX API, Memento",
    ),
    (
        "acl",
        "Write, check and try the access control files of serve --acl",
    ),
];

/// The first phrase of `about` on one line: up to the first `.`, `:` or
/// `;` outside parentheses that ends a phrase (followed by a space or the
/// end).
fn first_phrase(about: &str) -> String {
    let flat = about.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut depth = 0usize;
    let end = flat.char_indices().find(|&(i, c)| {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        depth == 0
            && matches!(c, '.' | ':' | ';')
            && matches!(flat[i + 1..].chars().next(), None | Some(' '))
    });
    flat[..end.map_or(flat.len(), |(i, _)| i)].to_string()
}

fn main() -> ExitCode {
    let cli = Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit());
    let filter = if cli.quiet { "error" } else { "warn" };
    // serve logs each request (its access log) and what it indexes.
    let filter = match cli.command {
        Command::Serve(_) if !cli.quiet => "warn,warchest_serve=info",
        _ => filter,
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WARCHEST_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter)),
        )
        .with_writer(std::io::stderr)
        // Colour only on a terminal: log lines redirected to a file stay plain.
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .with_target(false)
        .init();
    let global = report::Global {
        strict: cli.strict,
        show_warnings: cli.warnings && !cli.quiet,
        quiet: cli.quiet,
    };
    let outcome = match cli.command {
        Command::Ls(a) => cmd::ls::run(&global, a),
        Command::Extract(a) => cmd::extract::run(&global, a),
        Command::Fetch(a) => cmd::fetch::run(&global, a),
        Command::Check(a) => cmd::check::run(&global, a),
        Command::Filter(a) => cmd::filter::run(&global, a),
        Command::Stats(a) => cmd::stats::run(&global, a),
        Command::Recompress(a) => cmd::recompress::run(&global, a),
        Command::Split(a) => cmd::split::run(&global, a),
        Command::Concat(a) => cmd::concat::run(&global, a),
        Command::Index(a) => cmd::index::run(&global, a),
        Command::Convert(a) => cmd::convert::run(&global, a),
        Command::Recover(a) => cmd::recover::run(&global, a),
        Command::Dedupe(a) => cmd::dedupe::run(&global, a),
        Command::Pack(a) => cmd::pack::run_pack(&global, a),
        Command::Unpack(a) => cmd::pack::run_unpack(&global, a),
        Command::Segment(a) => cmd::segment::run_segment(&global, a),
        Command::Reassemble(a) => cmd::segment::run_reassemble(&global, a),
        Command::Annotate(a) => cmd::annotate::run_annotate(&global, a),
        Command::Migrate(a) => cmd::annotate::run_migrate(&global, a),
        Command::Validate(a) => cmd::validate::run(&global, a),
        Command::Capture(a) => cmd::capture::run_capture(&global, a),
        Command::Crawl(a) => cmd::crawl::run(&global, a),
        Command::Proxy(a) => cmd::capture::run_proxy(&global, a),
        Command::Serve(a) => cmd::serve::run(&global, a),
        Command::Acl(a) => cmd::acl::run(&global, a),
        Command::Wacz(a) => cmd::wacz::run(&global, a),
        Command::Derive(a) => cmd::derive::run(&global, a),
        Command::SearchIndex(a) => cmd::search::run_index(&global, a),
        Command::Search(a) => cmd::search::run_search(&global, a),
        Command::Qa(a) => cmd::browser::run_qa(&global, a),
    };
    remote::print_stats();
    report::recovery_summary(&global);
    report::exit(outcome)
}
