//! Copying the records of many inputs, in order, into one sink: what
//! filter, concat, recompress and split share. With several inputs and more
//! than one job, each input is copied into a temporary part on its own
//! thread and the parts are put into the sink in the inputs' order, so the
//! output does not depend on `-j`.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Result;
use indicatif::ProgressBar;
use warchest_ops::copy::{
    Copier, CopyOptions, CopyReport, OpenFile, PartSink, RecordSink, WriteSink,
};
use warchest_ops::filter::Filter;

use crate::report::{Global, Outcome, file_error};
use crate::tools::{Jobs, open_archive};

/// How to copy: options, filter, parallelism, progress.
pub struct Plan<'a> {
    /// Output compression and limits.
    pub opts: &'a CopyOptions,
    /// Keep only the records it selects.
    pub filter: Option<&'a Filter>,
    /// Files at once.
    pub jobs: Jobs,
    /// Where bytes read are counted.
    pub bar: &'a ProgressBar,
}

/// Copies every input into `sink`; reports each failed file and each
/// dropped record on stderr and returns the outcome.
pub fn copy_inputs(
    g: &Global,
    inputs: &[String],
    plan: &Plan<'_>,
    sink: &mut dyn RecordSink,
    report: &mut CopyReport,
) -> Result<Outcome> {
    let Plan {
        opts,
        filter,
        jobs,
        bar,
    } = *plan;
    crate::input::warn_repeated(g, inputs);
    let copier = || -> Result<Copier> {
        let c = Copier::new(opts.clone())?;
        Ok(match filter {
            Some(f) => c.with_filter(f.clone()),
            None => c,
        })
    };
    let mut outcome = Outcome::Ok;
    if inputs.len() <= 1 || jobs.threads() <= 1 {
        let mut c = copier()?;
        for name in inputs {
            let mut r = CopyReport::default();
            let res = open_archive(g, name, bar).and_then(|mut reader| {
                let res = c.copy_archive(&mut reader, sink, &mut r);
                g.warnings(name, &reader.take_warnings());
                Ok(res?)
            });
            outcome = outcome.and(finish_input(g, name, res, &r));
            report.merge(&r);
        }
        return Ok(outcome);
    }
    // One temporary part per input (in the system's temporary directory),
    // joined below in input order.
    let parts = jobs.map(inputs, |name| {
        let mut r = CopyReport::default();
        let mut part = match PartSink::new(None) {
            Ok(p) => p,
            Err(e) => return (None, r, Err(anyhow::Error::from(e)), Vec::new()),
        };
        let mut warnings = Vec::new();
        let res = copier().and_then(|mut c| {
            let mut reader = open_archive(g, name, bar)?;
            let res = c.copy_archive(&mut reader, &mut part, &mut r);
            warnings = reader.take_warnings();
            Ok(res?)
        });
        (Some(part), r, res, warnings)
    });
    for (name, (part, r, res, warnings)) in inputs.iter().zip(parts) {
        g.warnings(name, &warnings);
        // What was copied before a failure is kept, as without -j.
        if let Some(part) = part {
            part.replay(sink)?;
        }
        outcome = outcome.and(finish_input(g, name, res, &r));
        report.merge(&r);
    }
    Ok(outcome)
}

fn finish_input(g: &Global, name: &str, res: Result<()>, r: &CopyReport) -> Outcome {
    let mut o = Outcome::Ok;
    // The filter's HTTP tests saw no head in these.
    crate::report::unparsed_heads_as(
        g,
        &r.unparsed_heads.clone().in_file(name),
        "the filter's HTTP tests saw none",
    );
    for d in &r.dropped {
        let id = d
            .record_id
            .as_deref()
            .map(|i| format!(", {i}"))
            .unwrap_or_default();
        eprintln!(
            "warchest: {name}: offset {} (record {}{id}): {}",
            d.offset, d.index, d.reason
        );
    }
    if r.dropped_count > r.dropped.len() as u64 {
        eprintln!(
            "warchest: {name}: {} more records not copied",
            r.dropped_count - r.dropped.len() as u64
        );
    }
    if r.dropped_count > 0 {
        o = Outcome::Problem;
    }
    match res {
        Err(e) => o = o.and(file_error(name, e.as_ref())),
        Ok(()) if r.records_read == 0 => {
            o = o.and(file_error(name, &crate::input::NoRecords::new(name)))
        }
        Ok(()) => {}
    }
    o
}

/// Copies `inputs` into the single output `out` (`-`: standard output),
/// written as `OUT.open` and renamed when every input was read. When an
/// input could not be read the output keeps its `.open` name, since it
/// lacks records.
pub fn copy_to_one(
    g: &Global,
    inputs: &[String],
    out: &str,
    plan: &Plan<'_>,
) -> Result<(Outcome, CopyReport)> {
    let preamble = Copier::new(plan.opts.clone())?.preamble().to_vec();
    let mut report = CopyReport::default();
    if out == "-" {
        let stdout = io::stdout();
        let mut sink = WriteSink::new(BufWriter::with_capacity(1 << 16, stdout.lock()), &preamble)?;
        let o = copy_inputs(g, inputs, plan, &mut sink, &mut report)?;
        sink.finish()?;
        return Ok((o, report));
    }
    if crate::remote::is_remote(out) {
        // The remote form of `OUT.open` then rename: a multipart upload
        // completed only when every input was read.
        let w = crate::remote::Writer::create(out)?;
        let mut sink = WriteSink::new(BufWriter::with_capacity(1 << 20, w), &preamble)?;
        let o = copy_inputs(g, inputs, plan, &mut sink, &mut report)?;
        let w = sink.into_inner().into_inner().map_err(|e| e.into_error())?;
        if o == Outcome::Failed {
            drop(w);
            eprintln!(
                "warchest: {out}: not written (an input could not be read; the upload is aborted)"
            );
        } else {
            w.finish()?;
        }
        return Ok((o, report));
    }
    let file = OpenFile::create(Path::new(out))?;
    let mut sink = WriteSink::new(file, &preamble)?;
    let o = copy_inputs(g, inputs, plan, &mut sink, &mut report)?;
    // Nothing of any input copied (a missing input): no file is left.
    let copied_nothing = sink.len() == preamble.len() as u64;
    let mut file = sink.into_inner();
    if o == Outcome::Failed && copied_nothing {
        let open = file.open_path().to_path_buf();
        drop(file);
        let _ = std::fs::remove_file(&open);
        eprintln!("warchest: {out}: not written (no record of any input could be copied)");
    } else if o == Outcome::Failed {
        file.flush()?;
        eprintln!(
            "warchest: {}: left incomplete as {}",
            out,
            file.open_path().display()
        );
    } else {
        file.finish()?;
    }
    Ok((o, report))
}

/// Removes the output `open` (an `OUT.open` a failed run leaves) when
/// nothing was written to it, as when an input is missing: no file of
/// nothing is left beside the error. Whether it was removed.
pub fn remove_if_empty(open: &Path) -> bool {
    std::fs::metadata(open).is_ok_and(|m| m.len() == 0) && std::fs::remove_file(open).is_ok()
}
