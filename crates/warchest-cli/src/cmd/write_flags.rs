//! Flags shared by the commands that write WARC files: names, size,
//! compression and warcinfo fields, turned into `RotatingOptions`.

use anyhow::{Result, bail};
use warchest::warc::Version;
use warchest::write::{Compression, RotatingOptions, WriterOptions};

/// Output flags.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// File name prefix (Annex B `Prefix`); default from the first input.
    #[arg(long)]
    pub prefix: Option<String>,
    /// Start a new file before one would pass this size (bytes, or with a
    /// unit: 500MB, 10MiB, 1GB). Default 1GB, the spec's recommendation.
    #[arg(long, value_parser = nonzero_size, default_value = "1GB")]
    pub max_size: u64,
    /// Compression of each record: gzip, zstd, lz4 or none.
    #[arg(long, default_value = "gzip")]
    pub compress: String,
    /// Host name in file names and warcinfo (default this machine's).
    #[arg(long)]
    pub crawlhost: Option<String>,
    /// Warcinfo `operator` field.
    #[arg(long)]
    pub operator: Option<String>,
    /// Warcinfo `isPartOf` field.
    #[arg(long)]
    pub is_part_of: Option<String>,
    /// Warcinfo `description` field.
    #[arg(long)]
    pub description: Option<String>,
}

/// A size as [`tools::parse_size`](crate::tools::parse_size) takes it
/// (`10MiB`, `1.5GB`, `4096`), and not zero: an output file or a record
/// limit of no bytes cannot be.
pub fn nonzero_size(s: &str) -> Result<u64, String> {
    match crate::tools::parse_size(s)? {
        0 => Err(format!("size out of range: {s:?}")),
        v => Ok(v),
    }
}

/// The compression named `name`.
pub fn compression(name: &str) -> Result<Compression> {
    Ok(match name {
        "gzip" | "gz" => Compression::Gzip(6),
        "zstd" | "zst" => Compression::Zstd {
            level: 3,
            dictionary: None,
        },
        "lz4" => Compression::Lz4,
        "none" | "plain" => Compression::None,
        other => bail!("unknown compression {other:?} (gzip, zstd, lz4, none)"),
    })
}

/// A prefix from an input file name: its name without the archive's
/// suffixes (`.warc`, `.arc`, their compressions, `.open`, `.bad`, in any
/// order: `x.arc.gz` is `x`), the rest of the name kept (`www.a.test.gz` is
/// `www.a.test`), or, with none of them, without its last extension
/// (`page.dat` is `page`); `stdin` for standard input (`-`). The one rule of every
/// command that names its output files after an input (`split`,
/// `segment`, `pack`, `dedupe`).
pub fn prefix_from(input: &str) -> String {
    if input == "-" {
        return "stdin".into();
    }
    let name = std::path::Path::new(input)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("warchest");
    let archive = [".open", ".bad", ".gz", ".zst", ".lz4", ".warc", ".arc"];
    let mut stem = match crate::tools::strip_suffixes(name, &archive) {
        "" => name,
        s => s,
    };
    // A name with none of them (a Web InfoMall `page.dat`) loses its last
    // extension, as a name with them loses those.
    if stem == name
        && let Some((s, _)) = stem.rsplit_once('.').filter(|(s, _)| !s.is_empty())
    {
        stem = s;
    }
    stem.into()
}

impl OutputArgs {
    /// Rotating-writer options: `default_prefix` unless `--prefix`, warcinfo
    /// with `description` unless `--description`.
    pub fn rotating(
        &self,
        default_prefix: &str,
        description: &str,
        version: Version,
    ) -> Result<RotatingOptions> {
        let mut o = RotatingOptions {
            prefix: self
                .prefix
                .clone()
                .unwrap_or_else(|| default_prefix.to_string()),
            max_size: self.max_size,
            writer: WriterOptions {
                compression: compression(&self.compress)?,
                ..WriterOptions::default()
            },
            version,
            ..RotatingOptions::default()
        };
        if let Some(h) = &self.crawlhost {
            o.crawlhost = h.clone();
        }
        let mut info = Vec::new();
        if let Some(v) = &self.operator {
            info.push(("operator".to_string(), v.clone()));
        }
        if let Some(v) = &self.is_part_of {
            info.push(("isPartOf".to_string(), v.clone()));
        }
        info.push((
            "description".to_string(),
            self.description
                .clone()
                .unwrap_or_else(|| description.to_string()),
        ));
        o.warcinfo = info;
        Ok(o)
    }
}

/// A single output WARC file written as `NAME.open` and renamed to `NAME`
/// when complete, compressed as its name says (`.gz`, `.zst`, else none).
pub struct OutFile {
    path: std::path::PathBuf,
    open_path: std::path::PathBuf,
    /// The writer.
    pub writer: warchest::write::Writer<std::io::BufWriter<std::fs::File>>,
}

impl OutFile {
    /// Creates `path.open`; refuses to replace an existing `path`.
    pub fn create(path: &std::path::Path) -> Result<OutFile> {
        use anyhow::Context;
        let name = path.to_string_lossy().to_string();
        let comp = if name.ends_with(".gz") {
            Compression::Gzip(6)
        } else if name.ends_with(".zst") {
            compression("zstd")?
        } else {
            Compression::None
        };
        if path.exists() {
            bail!("{}: exists, not replaced", path.display());
        }
        let open_path = std::path::PathBuf::from(format!("{name}.open"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&open_path)
            .with_context(|| open_path.display().to_string())?;
        let writer = warchest::write::Writer::new(
            std::io::BufWriter::new(file),
            WriterOptions {
                compression: comp,
                ..WriterOptions::default()
            },
        )?;
        Ok(OutFile {
            path: path.to_path_buf(),
            open_path,
            writer,
        })
    }

    /// Where it is written until it is whole (`NAME.open`).
    pub fn open_path(&self) -> &std::path::Path {
        &self.open_path
    }

    /// Writes a warcinfo record describing the file.
    pub fn warcinfo(&mut self, version: Version, description: &str) -> Result<String> {
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let fields = vec![
            ("hostname".to_string(), warchest::write::rotate::hostname()),
            ("description".to_string(), description.to_string()),
        ];
        let (mut rec, block) = warchest::write::records::warcinfo(version, Some(&name), &fields)?;
        self.writer
            .write(&mut rec, warchest::write::Body::Bytes(&block))?;
        Ok(rec.record_id())
    }

    /// Flushes, syncs and renames the file to its name, and syncs the
    /// directory ([`warchest::write::atomic::commit`]).
    pub fn finish(self) -> Result<std::path::PathBuf> {
        use anyhow::Context;
        use std::io::Write;
        let mut out = self.writer.finish()?;
        out.flush()?;
        warchest::write::atomic::commit(out.get_ref(), &self.open_path, &self.path)
            .with_context(|| format!("rename {}", self.open_path.display()))?;
        drop(out);
        Ok(self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(nonzero_size("10MiB"), Ok(10 << 20));
        assert_eq!(nonzero_size("1GB"), Ok(1_000_000_000));
        assert_eq!(nonzero_size("4096"), Ok(4096));
        assert_eq!(nonzero_size("1.5GB"), Ok(1_500_000_000));
        assert!(nonzero_size("0").is_err());
        assert!(nonzero_size("12XB").is_err());
        assert!(nonzero_size("99999999999TB").is_err());
    }

    #[test]
    fn prefixes() {
        assert_eq!(prefix_from("/a/iana.warc.gz"), "iana");
        assert_eq!(prefix_from("x.arc"), "x");
        assert_eq!(prefix_from(".hidden"), ".hidden");
        // What `split` named `x.arc` before it took this rule.
        assert_eq!(prefix_from("d/x.arc.gz"), "x");
        assert_eq!(prefix_from("x.warc.open"), "x");
        assert_eq!(prefix_from("-"), "stdin");
        // Only the archive's suffixes go: the rest of a name is kept.
        assert_eq!(prefix_from("www.a.test.gz"), "www.a.test");
        assert_eq!(prefix_from("crawl.001.warc.gz"), "crawl.001");
        assert_eq!(prefix_from("x.gz.bad"), "x");
        assert_eq!(prefix_from(".warc"), ".warc");
        assert_eq!(prefix_from("t/page.dat"), "page");
    }
}
