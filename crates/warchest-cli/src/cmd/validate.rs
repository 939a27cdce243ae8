//! `warchest validate`: conformance findings for each file, and a summary.

use std::io::{self, Write};

use anyhow::Result;
use serde::Serialize;
use warchest_validate::{
    self as validate, Finding, Options, Severity, SpecVersion, Validator, rules,
};

use crate::input;
use crate::report::{Global, Outcome, file_error, is_broken_pipe};

/// Check files against ISO 28500 (WARC 1.0 and 1.1, as each record's
/// version line says), the gzip and zstd containers, ARC and Web InfoMall;
/// print every finding and a summary.
///
/// Each finding names its rule, its severity (error: a "shall" is broken;
/// warning: a "should" is not followed; info) and the clause it comes from.
/// Files given together are checked together: duplicate record ids and
/// references between records (WARC-Concurrent-To, WARC-Refers-To,
/// WARC-Warcinfo-ID, continuation segments) are resolved across them.
///
/// Exit status: 0 when no file has an error (with --strict: no warning
/// either), 1 otherwise, 2 when a file could not be read.
///
/// Example: `warchest validate crawl.warc.gz` or
/// `warchest validate --json --spec 1.1 *.warc.gz`
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(required_unless_present = "list_rules", help = inputs_help!("Files to validate"))]
    files: Vec<String>,
    /// One JSON object per line: each finding, each file's summary, the total.
    #[arg(long)]
    json: bool,
    /// Judge every WARC record by this version's rules and report records
    /// that declare another version.
    #[arg(long, value_name = "VERSION", value_parser = ["1.0", "1.1"])]
    spec: Option<String>,
    /// Report fields, record types, truncation reasons and revisit profiles
    /// the specification does not define.
    #[arg(long)]
    forbid_extensions: bool,
    /// Validate each file on N threads (default: one per core); the
    /// findings are the same whatever N is.
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    jobs: Option<usize>,
    /// Print the rule table (Markdown, or JSON lines with --json) and exit.
    #[arg(long)]
    list_rules: bool,
}

#[derive(Serialize)]
struct FindingLine<'a> {
    kind: &'static str,
    #[serde(flatten)]
    finding: &'a Finding,
}

#[derive(Serialize)]
struct FileLine<'a> {
    kind: &'static str,
    #[serde(flatten)]
    summary: &'a validate::FileSummary,
    valid: bool,
}

#[derive(Serialize)]
struct TotalLine<'a> {
    kind: &'static str,
    files: usize,
    unreadable: usize,
    records: u64,
    errors: u64,
    warnings: u64,
    infos: u64,
    valid: bool,
    by_rule: &'a std::collections::BTreeMap<&'static str, u64>,
}

/// The rules the lenient reader's recoveries are reported under: counted
/// for the one-line summary every reading command ends with (the findings
/// list them).
const RECOVERY_RULES: &[&str] = &[
    "warc.header.line-end",
    "warc.header.syntax",
    "warc.record.trailer",
    "warc.record.truncated",
    "warc.content-length.mismatch",
    "file.garbage",
    "file.trailing-garbage",
    "container.member.damaged",
    "container.member.checksum",
    "container.member.truncated",
    "arc.record.trailer",
    "arc.record.truncated",
];

pub fn run(g: &Global, mut args: Args) -> Result<Outcome> {
    args.files = crate::input::expand(&args.files);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if args.list_rules {
        if args.json {
            for r in rules::ALL {
                serde_json::to_writer(&mut out, r)?;
                out.write_all(b"\n")?;
            }
        } else {
            out.write_all(rules::markdown_table().as_bytes())?;
        }
        return Ok(Outcome::Ok);
    }
    let opts = Options {
        spec: args.spec.as_deref().and_then(SpecVersion::parse),
        forbid_extensions: args.forbid_extensions,
        threads: crate::tools::file_threads(args.jobs),
        ..Options::default()
    };
    let mut v = Validator::new(opts);
    // The first write error (a closed pipe) stops the output, not the run.
    let mut write_err: Option<io::Error> = None;
    let json = args.json;
    let mut emit = |f: Finding| {
        if RECOVERY_RULES.contains(&f.rule) {
            crate::report::tally_only(
                &f.file,
                &[warchest::Warning::new(
                    warchest::WarningKind::Other,
                    f.offset.unwrap_or(0),
                    f.message.clone(),
                )],
            );
        }
        if write_err.is_some() {
            return;
        }
        let r = if json {
            serde_json::to_writer(
                &mut out,
                &FindingLine {
                    kind: "finding",
                    finding: &f,
                },
            )
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
        } else {
            writeln!(out, "{f}")
        };
        if let Err(e) = r {
            write_err = Some(e);
        }
    };
    let mut outcome = Outcome::Ok;
    for name in &args.files {
        // Read by the validator's own paths, not `input::open`: a WACZ
        // with no archive file is told here.
        if let Some(e) = input::unlisted_wacz(name) {
            outcome = outcome.and(file_error(name, &e));
            continue;
        }
        if let Err(e) = input::require_records(name) {
            outcome = outcome.and(file_error(name, &e));
            continue;
        }
        let positioned = if crate::tools::file_threads(args.jobs) > 1 {
            // As a local file: decoded ahead by threads reading the object
            // (in blocks) or the WACZ member (a range of the ZIP) at
            // offsets; a server with no byte ranges is streamed instead.
            input::positioned(name)
        } else {
            Ok(None)
        };
        let positioned = match positioned {
            Ok(p) => p,
            Err(e) => {
                outcome = outcome.and(file_error(name, &e));
                continue;
            }
        };
        let r = if let Some(src) = positioned {
            v.validate_read_at(name, src, &mut emit)
        } else if name == "-"
            || crate::remote::is_remote(name)
            || warchest_wacz::split_member_name(name).is_some()
        {
            match input::open_stream(name) {
                Ok(inp) => v.validate_reader(name, inp, &mut emit),
                Err(e) => Err(e.into()),
            }
        } else {
            v.validate_path(name, &mut emit)
        };
        if let Err(e) = r {
            outcome = outcome.and(file_error(name, &e));
        }
    }
    let summary = v.finish(&mut emit);
    if let Some(e) = write_err {
        if is_broken_pipe(&e) {
            return Ok(outcome);
        }
        return Err(e.into());
    }
    let failed = |errors: u64, warnings: u64| errors > 0 || (g.strict && warnings > 0);
    for f in &summary.files {
        let bad = failed(f.errors, f.warnings) || f.unreadable;
        if json {
            serde_json::to_writer(
                &mut out,
                &FileLine {
                    kind: "file",
                    summary: f,
                    valid: !bad,
                },
            )?;
            out.write_all(b"\n")?;
        } else {
            let verdict = if f.unreadable {
                "UNREADABLE"
            } else if bad {
                "INVALID"
            } else {
                "VALID"
            };
            writeln!(
                out,
                "{}: {verdict}: {} records{}; {} errors, {} warnings, {} infos",
                f.file,
                f.records,
                f.format
                    .map(|x| format!(" ({})", x.name()))
                    .unwrap_or_default(),
                f.errors,
                f.warnings,
                f.infos
            )?;
        }
    }
    let bad = failed(summary.errors(), summary.warnings());
    if json {
        serde_json::to_writer(
            &mut out,
            &TotalLine {
                kind: "total",
                files: summary.files.len(),
                unreadable: summary.unreadable(),
                records: summary.records(),
                errors: summary.errors(),
                warnings: summary.warnings(),
                infos: summary.infos(),
                valid: !bad && summary.unreadable() == 0,
                by_rule: &summary.by_rule,
            },
        )?;
        out.write_all(b"\n")?;
    } else if summary.files.len() > 1 || !summary.by_rule.is_empty() {
        writeln!(
            out,
            "total: {} files, {} records; {} errors, {} warnings, {} infos{}",
            summary.files.len(),
            summary.records(),
            summary.errors(),
            summary.warnings(),
            summary.infos(),
            if summary.unreadable() > 0 {
                format!("; {} files could not be read", summary.unreadable())
            } else {
                String::new()
            }
        )?;
        for (rule, n) in &summary.by_rule {
            let sev = rules::by_id(rule).map_or(Severity::Info, |r| r.severity);
            writeln!(out, "  {n:>8}  {sev:<7}  {rule}")?;
        }
    }
    if bad {
        outcome = outcome.and(Outcome::Problem);
    }
    Ok(outcome)
}
