//! `warchest segment` and `warchest reassemble`: records split across files
//! of a size limit, and put back together (WARC 1.1 section 7).

use std::path::PathBuf;

use anyhow::{Context, Result};
use warchest::warc::{self, RecordType, field};
use warchest::write::{Body, NewRecord, Oversize, RotatingWriter};
use warchest_ops::reassemble::Segments;

use super::write_flags::{OutFile, OutputArgs, prefix_from};
use crate::report::{Global, Outcome};

/// Copy a WARC file into files of at most --max-size bytes (each opening
/// with a warcinfo record), segmenting every record too large for one file
/// into a first segment and `continuation` records, each in its own file
/// (WARC 1.1 section 7). Records that fit are copied untouched.
///
/// Example: `warchest segment big.warc.gz -o parts/ --max-size 100MB`
#[derive(clap::Args, Debug)]
pub struct SegmentArgs {
    /// The WARC file.
    input: String,
    /// Output directory.
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    out: OutputArgs,
}

pub fn run_segment(g: &Global, args: SegmentArgs) -> Result<Outcome> {
    crate::input::refuse_wacz("segment", std::slice::from_ref(&args.input))?;
    crate::input::require_records(&args.input)?;
    // The error names the file (once).
    let version = crate::input::version_of(&args.input)?;
    let mut opts = args.out.rotating(
        &prefix_from(&args.input),
        "segmented copy: records larger than a file split into continuation records",
        version,
    )?;
    opts.oversize = Oversize::Segment;
    let mut w = RotatingWriter::new(&args.output, opts)?;
    let mut r = warc::Reader::open_with(&args.input, g.reader_options(&args.input))?;
    let mut segmented = 0u64;
    loop {
        // Recoveries reported as the reading goes (listed with -w, summed
        // up at the end otherwise).
        g.warnings(&args.input, &r.take_warnings());
        let Some(mut rec) = r.next_record()? else {
            break;
        };
        let h = rec.header().clone();
        let at = rec.location().offset;
        let placed = w
            .write_raw(&h, &mut rec.block())
            .with_context(|| format!("{}: record at offset {at}", args.input))?;
        if placed.len() > 1 {
            segmented += 1;
        }
    }
    g.warnings(&args.input, &r.take_warnings());
    for f in w.finish()? {
        println!("{}", f.display());
    }
    eprintln!("warchest: {segmented} records segmented");
    Ok(Outcome::Ok)
}

/// Put segmented records back together: every record of the inputs is
/// copied to OUT in order, each first segment replaced by its logical
/// record (its blocks appended in segment-number order, Content-Length the
/// total length) and its continuation records left out. The payload digest
/// of each reassembled record is verified; exits 1 if one does not match
/// or a series is incomplete (its segments are then copied as they are).
///
/// Example: `warchest reassemble parts/*.warc.gz -o whole.warc.gz`
#[derive(clap::Args, Debug)]
pub struct ReassembleArgs {
    /// The WARC files holding the segments (any order).
    #[arg(required = true)]
    inputs: Vec<String>,
    /// The output file (compressed as its name says: .gz, .zst, or none).
    #[arg(short, long)]
    output: PathBuf,
}

pub fn run_reassemble(g: &Global, args: ReassembleArgs) -> Result<Outcome> {
    crate::input::refuse_wacz("reassemble", &args.inputs)?;
    crate::input::require_records_all(&args.inputs)?;
    let segments = Segments::scan(&args.inputs)?;
    let mut out = OutFile::create(&args.output)?;
    let w = &mut out.writer;
    let mut outcome = Outcome::Ok;
    let mut reassembled = 0u64;
    for input in &args.inputs {
        let mut r = warc::Reader::open_with(input, g.reader_options(input))?;
        loop {
            g.warnings(input, &r.take_warnings());
            let Some(mut rec) = r.next_record()? else {
                break;
            };
            let h = rec.header().clone();
            let id = h
                .record_id()
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            let is_cont = h.record_type() == RecordType::Continuation;
            let series_id = if is_cont {
                h.segment_origin_id().map(|s| s.trim().to_string())
            } else if h.segment_number().is_some() {
                Some(id.clone())
            } else {
                None
            };
            let at = rec.location().offset;
            let Some(series_id) = series_id else {
                w.write_raw(&h, &mut rec.block())
                    .with_context(|| format!("{input}: record at offset {at}"))?;
                continue;
            };
            let whole = segments
                .get(&series_id)
                .is_some_and(|s| s.complete().is_ok());
            if !whole {
                if !is_cont {
                    let why = segments
                        .get(&series_id)
                        .map(|s| s.complete().err().unwrap_or_default())
                        .unwrap_or_default();
                    eprintln!("warchest: {input}: {why}: segments copied as they are");
                    outcome = Outcome::Problem;
                }
                w.write_raw(&h, &mut rec.block())?;
                continue;
            }
            if is_cont {
                continue;
            }
            // Pass one: the digests of the whole, the payload's verified.
            let mut logical = segments.open(&series_id)?;
            let check = match logical.copy_to(&mut std::io::sink()) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("warchest: {input}: {id}: {e}");
                    outcome = Outcome::Problem;
                    continue;
                }
            };
            let mut header = logical.header().clone();
            if let Some(d) = logical.block_digest() {
                let _ = header.fields_mut().set(field::BLOCK_DIGEST, d.to_string());
            }
            let len = header.content_length().unwrap_or(0);
            let _ = check;
            // Pass two: the block streamed into the output.
            let mut again = segments.open(&series_id)?;
            let mut nr = NewRecord::from_header(header);
            w.write(
                &mut nr,
                Body::Stream {
                    reader: &mut again,
                    len: Some(len),
                },
            )?;
            reassembled += 1;
        }
        g.warnings(input, &r.take_warnings());
    }
    out.finish()?;
    eprintln!("warchest: {reassembled} records reassembled");
    Ok(outcome)
}
