//! `warchest annotate` and `warchest migrate`: a program run on each
//! payload, its output stored as a metadata record (ISO 28500 Annex D use
//! case four) or as a conversion record (use case five).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use warchest::archive;
use warchest::http;
use warchest::warc::{RecordType, Version, WarcHeader};
use warchest::write::{Body, identify, records};

use super::write_flags::OutFile;
use crate::report::{Global, Outcome};

/// Run a program on the payload of each response, resource and conversion
/// record and store its output in OUT as a `metadata` record referring to
/// the record (WARC-Refers-To), as a format validator's report is kept
/// (ISO 28500 Annex D, use case four). IN is not changed.
///
/// The program runs without a shell. --exec takes the program and its
/// arguments as separate words, and every word after it (so give it last):
/// `--exec python3 -c 'import sys; print(len(sys.stdin.read()))'` keeps
/// the quoted argument whole. It gets the payload (HTTP bodies de-chunked and decoded) on standard input,
/// or, where an argument is `{}`, as a file of that name. Its standard
/// output becomes the record's block. A non-zero exit status is reported;
/// the output is kept all the same.
///
/// Example: `warchest annotate crawl.warc.gz -o reports.warc.gz --exec file -b -`
#[derive(clap::Args, Debug)]
pub struct AnnotateArgs {
    /// The WARC file.
    input: String,
    /// The output WARC file (holds the new records only).
    #[arg(short, long)]
    output: PathBuf,
    /// The program and its arguments, as separate words (no shell, no
    /// splitting): every word after --exec belongs to the program.
    #[arg(long, required = true, num_args = 1.., allow_hyphen_values = true, value_name = "PROGRAM [ARG]...")]
    exec: Vec<String>,
    /// Content-Type of the program's output.
    #[arg(long, default_value = "text/plain")]
    content_type: String,
}

/// Migrate payloads of one media type with a program: its output is
/// stored as a `conversion` record referring to the original
/// (WARC-Refers-To), followed by a `metadata` record describing the
/// migration (tool, source and target types), as ISO 28500 Annex D use
/// case five describes. IN is not changed; a program that fails (non-zero
/// exit) leaves no conversion and makes the exit status 1.
///
/// The program runs without a shell as for `annotate`: --exec takes the
/// program and its arguments as separate words, every word after it (so
/// give it last); the payload on standard input or as the file `{}`, the
/// converted content on standard output.
///
/// Example: `warchest migrate crawl.warc.gz -o png.warc.gz --from image/gif --to image/png --exec convert gif:- png:-`
#[derive(clap::Args, Debug)]
pub struct MigrateArgs {
    /// The WARC file.
    input: String,
    /// The output WARC file (holds the new records only).
    #[arg(short, long)]
    output: PathBuf,
    /// Media type of the payloads to migrate (`image/gif`).
    #[arg(long)]
    from: String,
    /// Media type of the converted content (default: found from its bytes).
    #[arg(long)]
    to: Option<String>,
    /// The program and its arguments, as separate words (no shell, no
    /// splitting): every word after --exec belongs to the program.
    #[arg(long, required = true, num_args = 1.., allow_hyphen_values = true, value_name = "PROGRAM [ARG]...")]
    exec: Vec<String>,
}

/// A payload spooled to a temporary file, and its media type.
struct Payload {
    file: tempfile::NamedTempFile,
    media_type: Option<String>,
}

/// The payload of a record with one, spooled; `None` for other records.
/// Read through the one reading API (`Record::http`, `Record::payload`).
fn payload_of(
    rec: &mut archive::Record<'_, impl warchest::codec::Source>,
) -> Result<Option<Payload>> {
    let h = rec.header().clone();
    if !matches!(
        h.record_type(),
        RecordType::Response | RecordType::Resource | RecordType::Conversion
    ) || h.segment_number().is_some()
    {
        return Ok(None);
    }
    let mut file = tempfile::NamedTempFile::new()?;
    let (media_type, decode) = match rec.http()? {
        Some(head) => (
            head.media_type(),
            // A content coding warchest cannot undo: the payload as stored.
            head.content_encoding().iter().all(|c| c.is_supported()),
        ),
        // An HTTP response whose head cannot be read has no payload to
        // give. (Other records' blocks are their payload.)
        None if h.is_http() && archive::may_have_http_head(&h) => return Ok(None),
        None => (
            h.content_type()
                .and_then(|c| http::media_type(c.as_bytes())),
            false,
        ),
    };
    io::copy(&mut rec.payload(decode)?, file.as_file_mut())?;
    file.as_file_mut().flush()?;
    Ok(Some(Payload { file, media_type }))
}

/// The program and its arguments, `{}` replaced by `path`.
fn command(exec: &[String], path: &std::path::Path) -> Result<(Command, bool)> {
    let mut parts = exec.iter();
    let Some(prog) = parts.next() else {
        bail!("--exec is empty");
    };
    let mut cmd = Command::new(prog);
    let mut uses_file = false;
    for a in parts {
        if a == "{}" {
            cmd.arg(path);
            uses_file = true;
        } else {
            cmd.arg(a);
        }
    }
    Ok((cmd, uses_file))
}

/// The program and its arguments as one line, for messages and records:
/// words with white space or quotes in single quotes, as a shell reads them.
fn exec_line(exec: &[String]) -> String {
    exec.iter()
        .map(|w| {
            if !w.is_empty()
                && !w
                    .chars()
                    .any(|c| c.is_whitespace() || matches!(c, '\'' | '"' | '\\' | '$' | ';'))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs the program on the payload; returns its output (spooled) and
/// whether it exited with success.
fn run_on(exec: &[String], p: &Payload) -> Result<(tempfile::SpooledTempFile, u64, bool)> {
    let (mut cmd, uses_file) = command(exec, p.file.path())?;
    let stdin = if uses_file {
        Stdio::null()
    } else {
        let mut f = File::open(p.file.path())?;
        f.seek(SeekFrom::Start(0))?;
        Stdio::from(f)
    };
    let mut child = cmd
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| {
            format!(
                "cannot run {exec:?} (--exec takes the program and its arguments as separate words)"
            )
        })?;
    let mut out = tempfile::SpooledTempFile::new(8 << 20);
    let n = match child.stdout.take() {
        Some(mut s) => io::copy(&mut s, &mut out)?,
        None => 0,
    };
    let status = child.wait()?;
    out.seek(SeekFrom::Start(0))?;
    Ok((out, n, status.success()))
}

fn version_for(h: &WarcHeader) -> Version {
    if h.version() < Version::V1_1 {
        Version::V1_0
    } else {
        Version::V1_1
    }
}

/// What annotate and migrate share: every record of `input` with a
/// payload, in order, given to `each` with the output; the output opens
/// with a warcinfo record saying `description` (WARC version as the
/// input's) and is finished at the end.
fn each_payload(
    g: &Global,
    command: &str,
    input: &str,
    output: &std::path::Path,
    description: &str,
    each: impl FnMut(&mut OutFile, &WarcHeader, Payload) -> Result<()>,
) -> Result<()> {
    crate::input::refuse_wacz(command, &[input.to_string()])?;
    crate::input::require_records(input)?;
    // The input opened first: one that cannot be leaves no `OUT.open`
    // (which the next run, creating it anew, would be refused by).
    let mut r = archive::Reader::open_with(input, g.reader_options(input))?;
    let out = OutFile::create(output)?;
    let open = out.open_path().to_path_buf();
    let written = copy_payloads(g, input, &mut r, out, description, each);
    if written.is_err() && open.exists() {
        eprintln!(
            "warchest: {}: left incomplete as {}",
            output.display(),
            open.display()
        );
    }
    written
}

/// The loop of [`each_payload`] over the reader `r` of `input`, into `out`,
/// finished at the end.
fn copy_payloads<S: warchest::codec::Source>(
    g: &Global,
    input: &str,
    r: &mut archive::Reader<S>,
    mut out: OutFile,
    description: &str,
    mut each: impl FnMut(&mut OutFile, &WarcHeader, Payload) -> Result<()>,
) -> Result<()> {
    let mut started = false;
    loop {
        // Recoveries reported as the reading goes (listed with -w, summed
        // up at the end otherwise).
        g.warnings(input, &r.take_warnings());
        let Some(mut rec) = r.next_record()? else {
            break;
        };
        let h = rec.header().clone();
        if !started {
            out.warcinfo(version_for(&h), description)?;
            started = true;
        }
        let Some(p) = payload_of(&mut rec)? else {
            continue;
        };
        each(&mut out, &h, p)?;
    }
    g.warnings(input, &r.take_warnings());
    if !started {
        out.warcinfo(Version::V1_1, "no records")?;
    }
    out.finish()?;
    Ok(())
}

pub fn run_annotate(g: &Global, args: AnnotateArgs) -> Result<Outcome> {
    let exec_line = exec_line(&args.exec);
    let (mut done, mut failed) = (0u64, 0u64);
    let description = format!(
        "metadata records from {:?} run on {}",
        exec_line, args.input
    );
    each_payload(
        g,
        "annotate",
        &args.input,
        &args.output,
        &description,
        |out, h, p| {
            let (mut output, n, ok) = run_on(&args.exec, &p)?;
            if !ok {
                failed += 1;
                eprintln!(
                    "warchest: {}: {}: {:?} exited with failure",
                    args.input,
                    h.record_id().unwrap_or_default(),
                    exec_line
                );
            }
            let mut m = records::metadata_about(h, &args.content_type)?;
            out.writer.write(
                &mut m,
                Body::Stream {
                    reader: &mut output,
                    len: Some(n),
                },
            )?;
            done += 1;
            Ok(())
        },
    )?;
    eprintln!("warchest: {done} metadata records written ({failed} runs failed)");
    Ok(Outcome::Ok)
}

pub fn run_migrate(g: &Global, args: MigrateArgs) -> Result<Outcome> {
    let exec_line = exec_line(&args.exec);
    let from = args.from.trim().to_ascii_lowercase();
    let (mut done, mut failed) = (0u64, 0u64);
    let description = format!(
        "{} payloads of {} migrated by {:?}",
        from, args.input, exec_line
    );
    each_payload(
        g,
        "migrate",
        &args.input,
        &args.output,
        &description,
        |out, h, p| {
            if p.media_type.as_deref() != Some(from.as_str()) {
                return Ok(());
            }
            let (mut output, n, ok) = run_on(&args.exec, &p)?;
            if !ok {
                failed += 1;
                eprintln!(
                    "warchest: {}: {}: {:?} failed: no conversion written",
                    args.input,
                    h.record_id().unwrap_or_default(),
                    exec_line
                );
                return Ok(());
            }
            let to = match &args.to {
                Some(t) => t.clone(),
                None => {
                    let mut start = vec![0u8; identify::SNIFF_LEN];
                    let k = output.read(&mut start)?;
                    output.seek(SeekFrom::Start(0))?;
                    identify::identify(&start[..k])
                        .unwrap_or("application/octet-stream")
                        .to_string()
                }
            };
            let mut conv = records::conversion_of(h, &to)?;
            out.writer.write(
                &mut conv,
                Body::Stream {
                    reader: &mut output,
                    len: Some(n),
                },
            )?;
            let source_id = h.record_id().unwrap_or_default().trim().to_string();
            let block = records::warc_fields([
                ("migration-tool", exec_line.as_str()),
                ("source-type", from.as_str()),
                ("target-type", to.as_str()),
                ("source-record", source_id.as_str()),
                (
                    "description",
                    "format migration of the record named by WARC-Refers-To",
                ),
            ])?;
            let mut m = records::metadata_about(conv.header(), records::WARC_FIELDS)?;
            out.writer.write(&mut m, Body::Bytes(&block))?;
            done += 1;
            Ok(())
        },
    )?;
    eprintln!("warchest: {done} payloads migrated ({failed} failed)");
    Ok(if failed > 0 {
        Outcome::Problem
    } else {
        Outcome::Ok
    })
}
