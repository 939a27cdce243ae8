//! `warchest wacz`: make and check WACZ files.

use std::path::PathBuf;

use anyhow::{Result, bail};
use warchest_wacz::{CreateOptions, CreateReport, create_with, validate};

use crate::report::{Global, Outcome};

/// Make or check WACZ files (Web Archive Collection Zipped, 1.1.1).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Package archive files as a WACZ: archive/ (stored), indexes/index.cdxj,
    /// pages/pages.jsonl, datapackage.json with SHA-256 hashes and
    /// datapackage-digest.json.
    ///
    /// Example: `warchest wacz create crawl.warc.gz -o crawl.wacz`
    Create {
        /// Archive files (WARC, ARC, Web InfoMall; any compression).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The WACZ to write: written as OUTPUT.open and renamed once
        /// whole (an existing OUTPUT is replaced only then; a failed run
        /// removes the .open file). An output that is also an input is
        /// refused, and so is an input not compressed record at a time
        /// (whole-file gzip: its index could not address its records).
        #[arg(short, long)]
        output: PathBuf,
        /// Title of the collection.
        #[arg(long)]
        title: Option<String>,
        /// Description of the collection.
        #[arg(long)]
        description: Option<String>,
        /// The pages to list: a json-pages-1.0 file (a crawl's
        /// pages/pages.jsonl), its rows copied. Default: found in each
        /// crawl's inputs on their own (the files with one warcinfo block
        /// naming an isPartOf; a file with none is a crawl of its own), its browser
        /// screenshots' pages (urn:view: records) if they have any, else
        /// their HTML responses with status 200. Rows whose URL has no capture in the inputs are left out.
        #[arg(long, value_name = "FILE")]
        pages: Option<PathBuf>,
    },
    /// Check a WACZ: data package, hashes, digest, index and pages. Exits 1
    /// when a problem is found.
    Validate {
        /// The WACZ files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

pub fn run(g: &Global, args: Args) -> Result<Outcome> {
    match args.command {
        Sub::Create {
            inputs,
            output,
            title,
            description,
            pages,
        } => {
            if inputs.iter().any(|p| warchest_wacz::is_wacz(p)) {
                bail!("a WACZ cannot go inside a WACZ; give its archive files");
            }
            for p in &inputs {
                crate::input::require_records(&p.to_string_lossy())?;
            }
            // The inputs are read twice (indexed, then copied): an output
            // that is one of them would be emptied between the two.
            let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
            crate::input::refuse_overwriting(&output.display().to_string(), &names)?;
            let o = CreateOptions {
                title,
                description,
                pages,
                strict: g.strict,
            };
            let r = create_with(&inputs, &output, &o, &mut |f, w| {
                g.warnings(&f.to_string_lossy(), w)
            })?;
            if !g.quiet {
                eprintln!(
                    "warchest: {}: {} archive files, {} index entries, {} pages",
                    output.display(),
                    r.archives,
                    r.index_entries,
                    r.pages
                );
            }
            if !g.quiet && o.pages.is_none() {
                found(&output.to_string_lossy(), &r);
            }
            left_out(g, &output.to_string_lossy(), &r);
            crate::report::unparsed_heads(g, &r.unparsed_heads);
            Ok(Outcome::Ok)
        }
        Sub::Validate { files } => {
            let mut outcome = Outcome::Ok;
            for f in files {
                match validate(&f) {
                    Ok(rep) => {
                        for p in &rep.problems {
                            println!("{}: {p}", f.display());
                        }
                        for n in &rep.notes {
                            println!("{}: note: {n}", f.display());
                        }
                        if rep.is_valid() {
                            println!(
                                "{}: valid ({} resources, {} index entries checked)",
                                f.display(),
                                rep.resources,
                                rep.index_entries_checked
                            );
                        } else {
                            println!("{}: invalid", f.display());
                            outcome = outcome.and(Outcome::Problem);
                        }
                    }
                    Err(e) => {
                        eprintln!("warchest: {}: {e}", f.display());
                        outcome = outcome.and(Outcome::Failed);
                    }
                }
            }
            Ok(outcome)
        }
    }
}

/// Says on stderr which rule found how many pages, in how many files.
fn found(wacz: &str, r: &CreateReport) {
    let (s, h) = (r.found_by_screenshots, r.found_by_html);
    let files = |n: usize| if n == 1 { "file" } else { "files" };
    eprintln!(
        "warchest: {wacz}: pages found: {} by browser screenshots (urn:view: records) in {} {}, {} by HTML responses in {} {} (--pages FILE to give them)",
        s.pages,
        s.files,
        files(s.files),
        h.pages,
        h.files,
        files(h.files)
    );
}

/// Says on stderr how many page rows `wacz` left out for want of a
/// capture (each named under `-w`), or that the pages went unchecked.
pub fn left_out(g: &Global, wacz: &str, r: &CreateReport) {
    if r.pages_repeated > 0 {
        eprintln!(
            "warchest: {wacz}: {} page rows left out: a URL listed again (its first row kept)",
            r.pages_repeated
        );
    }
    if r.pages_without_capture > 0 {
        eprintln!(
            "warchest: {wacz}: {} pages left out: no capture of their URL in the archive files{}",
            r.pages_without_capture,
            if g.show_warnings {
                ":"
            } else {
                " (-w names them)"
            }
        );
        if g.show_warnings {
            for u in &r.pages_without_capture_named {
                eprintln!("warchest: {wacz}: no capture of page {u}");
            }
            let more = r.pages_without_capture - r.pages_without_capture_named.len() as u64;
            if more > 0 {
                eprintln!("warchest: {wacz}: and {more} more");
            }
        }
    }
    if r.pages_unchecked {
        eprintln!(
            "warchest: {wacz}: more than {} URLs captured: the pages were listed without checking their captures",
            warchest_wacz::MAX_CAPTURED
        );
    }
}
