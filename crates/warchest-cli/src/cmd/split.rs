//! `warchest split`: archives into files of at most a given size.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use warchest_ops::copy::{
    Copier, CopyOptions, CopyReport, DirTarget, SplitFile, SplitNaming, SplitSink, SplitTarget,
};

use crate::cmd::copy::{Plan, copy_inputs};
use crate::report::{Global, Outcome};
use crate::tools::{CompressionArgs, Jobs, parse_size, progress, sniff_to};

/// Split archives into files of at most --max-size bytes each, named
/// PREFIX-TIMESTAMP-SERIAL-HOST.warc.gz as the WARC specification's annex
/// on file naming recommends. The inputs are taken as one sequence of
/// records, in order. Records are never cut: a record larger than the limit
/// goes alone into a file of its own, the only file that can exceed it.
/// TIMESTAMP is the WARC-Date of each file's own first record (14 digits,
/// UTC); SERIAL counts from 00000. Every file opens with a warcinfo
/// record: a file whose first record is not one gets a new one (its
/// WARC-Filename, the software, the inputs). Files are written as
/// NAME.open and renamed when complete; their names, sizes and record
/// counts are printed. An existing file of the same name is an error
/// unless --force. OUT may be a bucket prefix (s3://BUCKET/PREFIX/): each
/// file is then an object that appears only when complete (a multipart
/// upload completed last).
///
/// Example:
///   warchest split big.warc.gz --max-size 1GB -o parts/ --prefix CRAWL1
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[arg(required = true, value_name = "IN", help = inputs_help!("Files to read"))]
    files: Vec<String>,
    /// Largest output file: 1GB, 500MB, 1GiB, or bytes.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_size: u64,
    /// The output directory (created if missing), or a prefix in a bucket
    /// (s3://BUCKET/PREFIX/).
    #[arg(short, long, value_name = "DIR")]
    output: String,
    /// File name prefix (default: the first input's name without its
    /// archive suffixes, `.warc`, `.arc`, `.gz`, `.zst`, `.lz4`: `x.arc.gz`
    /// gives `x`; `stdin` for standard input).
    #[arg(long)]
    prefix: Option<String>,
    /// Crawl host in the file names (default: this machine's host name).
    #[arg(long)]
    host: Option<String>,
    /// Replace existing output files of the same names.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    compression: CompressionArgs,
    #[command(flatten)]
    jobs: Jobs,
}

pub fn run(g: &Global, mut args: Args) -> Result<Outcome> {
    // A WACZ is read as its archive files, as `ls` reads it.
    args.files = crate::input::expand(&args.files);
    crate::input::require_records_all(&args.files)?;
    let comp = args.compression.resolve(sniff_to(&args.files[0]))?;
    // The first input opened before the directory is made: a name mistyped
    // leaves no empty directory behind.
    let version = if args.files[0] == "-" {
        warchest::warc::Version::V1_1
    } else {
        crate::input::version_of(&args.files[0])?
    };
    let target: Box<dyn SplitTarget> = if crate::remote::is_remote(&args.output) {
        Box::new(BucketTarget::new(&args.output))
    } else {
        let dir = Path::new(&args.output);
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        Box::new(DirTarget(dir.to_path_buf()))
    };
    let prefix = args
        .prefix
        .clone()
        .unwrap_or_else(|| super::write_flags::prefix_from(&args.files[0]));
    let naming = SplitNaming {
        prefix,
        crawl_host: args
            .host
            .clone()
            .unwrap_or_else(warchest::write::rotate::hostname),
        extension: comp.extension().to_string(),
    };
    let fields = vec![
        ("hostname".to_string(), naming.crawl_host.clone()),
        (
            "description".to_string(),
            format!("part of a split of {}", args.files.join(" ")),
        ),
    ];
    let opts = CopyOptions::new(comp.clone());
    let preamble = Copier::new(opts.clone())?.preamble().to_vec();
    let mut sink = SplitSink::to_target(target, naming, args.max_size, &preamble, 0)
        .with_warcinfo(comp, version, fields)
        .force(args.force);
    let bar = progress(g, &args.files, 1);
    let mut report = CopyReport::default();
    let plan = Plan {
        opts: &opts,
        filter: None,
        jobs: args.jobs,
        bar: &bar,
    };
    let o = copy_inputs(g, &args.files, &plan, &mut sink, &mut report)?;
    let files = sink.finish()?;
    bar.finish_and_clear();
    for (p, size, records) in files {
        println!("{}\t{size}\t{records}", p.display());
    }
    Ok(o)
}

/// A prefix in a bucket (or any place named by URL): each file an object
/// written by multipart upload, which appears only when completed.
struct BucketTarget {
    /// The URL the names are appended to (ending in `/`).
    prefix: String,
}

impl BucketTarget {
    fn new(url: &str) -> BucketTarget {
        let mut prefix = url.to_string();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        BucketTarget { prefix }
    }

    fn url(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }
}

fn remote_error(url: &str, e: std::io::Error) -> warchest::Error {
    warchest::Error::from(e).in_file(Path::new(url))
}

impl SplitTarget for BucketTarget {
    fn path(&self, name: &str) -> PathBuf {
        PathBuf::from(self.url(name))
    }

    fn exists(&self, name: &str) -> warchest::Result<bool> {
        let url = self.url(name);
        match crate::remote::size(&url) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(remote_error(&url, e)),
        }
    }

    fn create(&mut self, name: &str) -> warchest::Result<Box<dyn SplitFile>> {
        let url = self.url(name);
        let w = crate::remote::Writer::create(&url).map_err(|e| remote_error(&url, e))?;
        Ok(Box::new(RemotePart {
            path: PathBuf::from(&url),
            out: BufWriter::with_capacity(1 << 20, w),
        }))
    }
}

/// One object of a split being uploaded; dropped unfinished (an error),
/// its upload is aborted and nothing appears.
struct RemotePart {
    path: PathBuf,
    out: BufWriter<crate::remote::Writer>,
}

impl Write for RemotePart {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl SplitFile for RemotePart {
    fn open_path(&self) -> &Path {
        &self.path
    }

    fn finish(self: Box<Self>) -> warchest::Result<PathBuf> {
        let url = self.path.display().to_string();
        let w = self
            .out
            .into_inner()
            .map_err(|e| remote_error(&url, e.into_error()))?;
        w.finish().map_err(|e| remote_error(&url, e))?;
        Ok(self.path)
    }
}
