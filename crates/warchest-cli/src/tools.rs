//! Plumbing shared by the commands that read many files and write archives
//! (filter, stats, recompress, split, concat): sizes, compression flags,
//! parallelism across files, progress bars.

use std::io::{self, IsTerminal, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use warchest::archive::Reader;
use warchest::codec::{Codec, Decoder};
use warchest::write::Compression;

use crate::input;
use crate::report::Global;

/// Parses a size for a flag: [`warchest::size::parse_size`]'s units
/// (`KB`, `MB`, `GB`, `TB`, or `K`, `M`, `G`, `T`, are powers of 1000,
/// `KiB`, `MiB`, `GiB`, `TiB` powers of 1024; `B` is bytes; case is
/// ignored), and more than 0.
pub fn parse_size(s: &str) -> Result<u64, String> {
    match warchest::size::parse_size(s) {
        Ok(0) => Err(format!("{s:?}: the size must be more than 0")),
        Ok(v) => Ok(v),
        Err(e) => Err(e.to_string()),
    }
}

/// Threads one file is decoded on, for `-j N` (default: all cores).
pub fn file_threads(jobs: Option<usize>) -> usize {
    match jobs {
        Some(n) if n > 0 => n,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// `-j N`: how many files are worked on at once.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct Jobs {
    /// Work on N files at once (default: one per core). The output is the
    /// same whatever N is.
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
}

impl Jobs {
    /// The number of threads to use.
    pub fn threads(&self) -> usize {
        match self.jobs {
            Some(n) if n > 0 => n,
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// Applies `f` to every item, `threads()` at a time, results in the
    /// items' order.
    pub fn map<T: Sync, R: Send>(&self, items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
        use rayon::prelude::*;
        let n = self.threads().min(items.len().max(1));
        if n <= 1 {
            return items.iter().map(f).collect();
        }
        match rayon::ThreadPoolBuilder::new().num_threads(n).build() {
            Ok(pool) => pool.install(|| items.par_iter().map(&f).collect()),
            Err(_) => items.iter().map(f).collect(),
        }
    }
}

/// The codecs the writer can write.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    /// One gzip member per record (`.warc.gz`).
    Gzip,
    /// One zstd frame per record (`.warc.zst`).
    Zstd,
    /// One LZ4 frame per record (`.warc.lz4`).
    Lz4,
    /// Uncompressed (`.warc`).
    None,
}

/// Output compression flags.
#[derive(clap::Args, Debug, Clone)]
pub struct CompressionArgs {
    /// Compression of each output record.
    #[arg(long, value_enum, value_name = "CODEC")]
    pub to: Option<To>,
    /// Compression level: gzip 0-9 (default 6), zstd 1-22 (default 3).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub level: Option<i32>,
    /// A zstd dictionary file to compress with; it is stored at the start
    /// of the output in the `.warc.zst` dictionary frame (implies --to zstd).
    #[arg(long, value_name = "FILE")]
    pub dict: Option<PathBuf>,
}

/// Largest dictionary file accepted.
const MAX_DICT: u64 = 32 << 20;

impl CompressionArgs {
    /// The compression asked for; `default` when `--to` is not given (and
    /// no `--dict`).
    pub fn resolve(&self, default: To) -> Result<Compression> {
        let to = match (self.to, &self.dict) {
            (Some(t), _) => t,
            (None, Some(_)) => To::Zstd,
            (None, None) => default,
        };
        if self.dict.is_some() && to != To::Zstd {
            bail!("--dict is a zstd dictionary: it needs --to zstd");
        }
        Ok(match to {
            To::None => {
                if self.level.is_some() {
                    bail!("--level has no meaning with --to none");
                }
                Compression::None
            }
            To::Gzip => {
                let l = self.level.unwrap_or(6);
                if !(0..=9).contains(&l) {
                    bail!("--level {l}: gzip levels are 0 to 9");
                }
                Compression::Gzip(l as u32)
            }
            To::Zstd => {
                let l = self.level.unwrap_or(3);
                if !(1..=22).contains(&l) {
                    bail!("--level {l}: zstd levels are 1 to 22");
                }
                let dictionary = match &self.dict {
                    Some(p) => Some(read_dict(p)?),
                    None => None,
                };
                Compression::Zstd {
                    level: l,
                    dictionary,
                }
            }
            To::Lz4 => {
                if self.level.is_some() {
                    bail!("--level has no meaning with --to lz4 (one fast level)");
                }
                Compression::Lz4
            }
        })
    }
}

fn read_dict(p: &Path) -> Result<Vec<u8>> {
    let f = std::fs::File::open(p).with_context(|| format!("--dict {}", p.display()))?;
    let mut v = Vec::new();
    f.take(MAX_DICT + 1)
        .read_to_end(&mut v)
        .with_context(|| format!("--dict {}", p.display()))?;
    if v.len() as u64 > MAX_DICT {
        bail!("--dict {}: larger than {MAX_DICT} bytes", p.display());
    }
    if v.is_empty() {
        bail!("--dict {}: empty", p.display());
    }
    Ok(v)
}

/// What an input is compressed with, as `--to` would say it: the codec of
/// its first member (LZ4, which warchest does not write, becomes gzip).
/// Standard input is not looked at: gzip.
pub fn sniff_to(name: &str) -> To {
    if name == "-" {
        return To::Gzip;
    }
    let mut buf = [0u8; 4];
    let n = input::open_stream(name)
        .and_then(|mut f| {
            let mut n = 0;
            while n < buf.len() {
                match f.read(&mut buf[n..])? {
                    0 => break,
                    k => n += k,
                }
            }
            Ok(n)
        })
        .unwrap_or(0);
    match Codec::sniff(&buf[..n]) {
        Some(Codec::Zstd) => To::Zstd,
        Some(Codec::Lz4) => To::Lz4,
        Some(Codec::Gzip) => To::Gzip,
        _ if n == 0 => To::Gzip,
        _ => To::None,
    }
}

/// A progress bar on stderr over the bytes of `files`, drawn only when
/// stderr is a terminal and not `--quiet`.
pub fn progress(g: &Global, files: &[String], passes: u64) -> ProgressBar {
    if g.quiet || !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let known: Option<u64> = files
        .iter()
        .map(|f| {
            (f != "-")
                .then(|| std::fs::metadata(f).ok().map(|m| m.len()))
                .flatten()
        })
        .sum();
    match known {
        Some(total) => {
            let b =
                ProgressBar::with_draw_target(Some(total * passes), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b
        }
        None => {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b
        }
    }
}

/// Counts bytes read into the progress bar.
struct Counting<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

/// The boxed input every command reads.
pub type In = Box<dyn Read + Send>;

/// Opens `name` (`-`: standard input) for reading any archive, counting
/// what is read into `bar`.
pub fn open_archive(g: &Global, name: &str, bar: &ProgressBar) -> Result<Reader<Decoder<In>>> {
    let counted: In = Box::new(Counting {
        inner: input::open_stream(name)?,
        bar: bar.clone(),
    });
    Ok(Reader::with_options(counted, g.reader_options(name))?)
}

/// The output name for `input` in directory `dir`: the input's file name
/// without its compression (and `.open`, `.bad`) suffixes, ending in the
/// extension of `c`.
pub fn output_name_in(dir: &Path, input: &str, c: &Compression) -> PathBuf {
    let base = Path::new(input)
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|_| input != "-")
        .unwrap_or("stdin");
    let stem = strip_suffixes(base, &[".open", ".bad", ".gz", ".zst", ".lz4", ".warc"]);
    dir.join(format!("{stem}{}", c.extension()))
}

/// `name` without any of `suffixes` at its end, taken off in any order
/// and as often as they come (`x.warc.gz.open` is `x`): the one way
/// output names drop an input's suffixes.
pub fn strip_suffixes<'a>(name: &'a str, suffixes: &[&str]) -> &'a str {
    let mut stem = name;
    loop {
        let before = stem;
        for suffix in suffixes {
            if let Some(s) = stem.strip_suffix(suffix) {
                stem = s;
            }
        }
        if stem == before {
            return stem;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags' sizes are the format crate's (`warchest::size`, tested
    /// there), and more than zero.
    #[test]
    fn sizes() {
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        for zero in ["0", "0KB", "0.0001KB"] {
            let e = parse_size(zero).unwrap_err();
            assert!(e.contains("more than 0"), "{zero}: {e}");
        }
        assert!(parse_size("1XB").unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn output_names() {
        let d = Path::new("out");
        let gz = Compression::Gzip(6);
        assert_eq!(
            output_name_in(d, "a/b/x.warc.gz.bad", &gz),
            d.join("x.warc.gz")
        );
        assert_eq!(
            output_name_in(d, "x.warc", &Compression::None),
            d.join("x.warc")
        );
        assert_eq!(output_name_in(d, "x.warc.lz4", &gz), d.join("x.warc.gz"));
        assert_eq!(output_name_in(d, "-", &gz), d.join("stdin.warc.gz"));
        assert_eq!(
            output_name_in(d, "page.dat", &gz),
            d.join("page.dat.warc.gz")
        );
    }

    #[test]
    fn compression_flags() {
        let a = |to, level, dict: Option<&str>| CompressionArgs {
            to,
            level,
            dict: dict.map(PathBuf::from),
        };
        assert_eq!(
            a(None, None, None).resolve(To::None).unwrap(),
            Compression::None
        );
        assert_eq!(
            a(Some(To::Gzip), Some(9), None).resolve(To::None).unwrap(),
            Compression::Gzip(9)
        );
        assert!(a(Some(To::Gzip), Some(10), None).resolve(To::None).is_err());
        assert!(a(Some(To::None), Some(1), None).resolve(To::None).is_err());
        assert!(
            a(Some(To::Gzip), None, Some("d"))
                .resolve(To::None)
                .is_err()
        );
        assert_eq!(
            a(Some(To::Zstd), None, None).resolve(To::None).unwrap(),
            Compression::Zstd {
                level: 3,
                dictionary: None
            }
        );
    }
}
