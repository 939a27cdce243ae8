//! Converting between formats: ARC and Web InfoMall to WARC, and any
//! readable archive's responses to Web InfoMall.
//!
//! The record-by-record mapping lives in the format modules (each ARC and
//! Web InfoMall record is read as the WARC header its conversion carries,
//! see [`warchest::archive::Record::header`]); this module adds what a whole
//! file needs: a `warcinfo` record describing the conversion, the
//! `metadata` records that keep what WARC has no field for, digests, and
//! the way back. docs/conversion.md has the table.
//!
//! ```
//! use warchest::archive::Reader;
//! use warchest_ops::convert::{to_warc, Report, WarcOptions};
//! use warchest::write::{Writer, WriterOptions};
//! let arc = b"filedesc://x.arc 0.0.0.0 20140216050221 text/plain 55\n1 0 Example\nURL IP-address Archive-date Content-type Archive-length\n\nhttp://example.com/ 93.184.216.119 20140216050221 text/html 19\nHTTP/1.0 200 OK\r\n\r\n\n";
//! let mut reader = Reader::new(&arc[..])?;
//! let mut out = Writer::new(Vec::new(), WriterOptions::default())?;
//! let mut report = Report::default();
//! to_warc(&mut reader, "x.arc", &mut out, &WarcOptions::default(), &mut report)?;
//! assert_eq!(report.records_read, 2);
//! // warcinfo, the filedesc as metadata, the response.
//! assert_eq!(report.records_written, 3);
//! # Ok::<(), warchest::Error>(())
//! ```

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, SeekFrom, Write};

use warchest::archive::{Format, Reader as AnyReader};
use warchest::codec::Source;
use warchest::error::{Error, ErrorKind, Result, Warning};
use warchest::fields::Fields;
use warchest::infomall::{self, Properties};
use warchest::recoveries::Recoveries;
use warchest::view::record_id;
use warchest::warc::{RecordType, Version, WarcDate, WarcHeader, field};
use warchest::write::{Body, NewRecord, Writer};

/// The extension field that marks the metadata records conversion writes,
/// naming the source format (`arc`, `infomall`), so that conversion back
/// knows their fields are the source's own.
pub const SOURCE_FORMAT: &str = "Source-Format";

/// How [`to_warc`] writes.
#[derive(Debug, Clone)]
pub struct WarcOptions {
    /// WARC version of the records (1.1 or 1.0).
    pub version: Version,
    /// The output file's name, for WARC-Filename of the warcinfo record.
    pub output_name: Option<String>,
    /// Bodies are spooled in memory up to this many bytes, then to a
    /// temporary file. Default 8 MiB.
    pub spool_threshold: usize,
}

impl Default for WarcOptions {
    fn default() -> Self {
        WarcOptions {
            version: Version::V1_1,
            output_name: None,
            spool_threshold: 8 << 20,
        }
    }
}

/// What a conversion did, added to as it goes (so that after an error it
/// says what was done before it).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Records read from the input.
    pub records_read: u64,
    /// Records written (warcinfo and metadata included).
    pub records_written: u64,
    /// Of those, metadata records keeping what WARC has no field for.
    pub metadata_written: u64,
    /// Records the input ended inside: written with what was there
    /// (`WARC-Truncated: unspecified` in WARC).
    pub truncated: u64,
    /// Records not converted, by WARC-Type.
    pub skipped: BTreeMap<String, u64>,
    /// The reader's recoveries, under the name the input was given: each
    /// counted, the first [`DEFAULT_KEPT`](warchest::recoveries::DEFAULT_KEPT)
    /// kept whole (a file of millions of bare LFs costs counts, not
    /// memory); serialized as their number.
    #[serde(serialize_with = "count")]
    pub recoveries: Recoveries<Warning>,
}

impl Report {
    /// Adds what `other` did to this report: one report for several
    /// inputs converted into one output (Python's `convert` of a WACZ,
    /// its archive files one after the other).
    pub fn append(&mut self, other: Report) {
        self.records_read += other.records_read;
        self.records_written += other.records_written;
        self.metadata_written += other.metadata_written;
        self.truncated += other.truncated;
        for (kind, n) in other.skipped {
            *self.skipped.entry(kind).or_default() += n;
        }
        self.recoveries.append(other.recoveries);
    }
}

fn count<S: serde::Serializer>(
    r: &Recoveries<Warning>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u64(r.total())
}

/// Takes the recoveries `reader` has met into `report`, under `source`.
fn take_recoveries<S: Source>(reader: &mut AnyReader<S>, source: &str, report: &mut Report) {
    let ws = reader.take_warnings();
    if !ws.is_empty() {
        report.recoveries.add_all(source, &ws);
    }
}

fn spool(threshold: usize, r: &mut dyn Read) -> Result<tempfile::SpooledTempFile> {
    let mut s = tempfile::SpooledTempFile::new(threshold);
    io::copy(r, &mut s)?;
    s.seek(SeekFrom::Start(0))?;
    Ok(s)
}

fn base_name(name: &str) -> String {
    std::path::Path::new(name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.to_string())
}

/// The warcinfo record opening the conversion of `source`.
fn warcinfo<W: Write>(
    out: &mut Writer<W>,
    source: &str,
    format: Format,
    date: WarcDate,
    opts: &WarcOptions,
) -> Result<String> {
    let id = record_id(&base_name(source), 0, 0, "warcinfo");
    let mut rec = NewRecord::with_version(RecordType::Warcinfo, opts.version);
    rec.set(field::RECORD_ID, &id)?;
    rec.date(date);
    if let Some(name) = &opts.output_name {
        rec.set(field::FILENAME, base_name(name))?;
    }
    rec.set(field::CONTENT_TYPE, "application/warc-fields")?;
    let (format_name, conforms) = if opts.version >= Version::V1_1 {
        (
            "WARC File Format 1.1",
            "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        )
    } else {
        (
            "WARC File Format 1.0",
            "http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf",
        )
    };
    let source_format = match format {
        Format::Arc => "ARC",
        Format::InfoMall => "Web InfoMall",
        _ => "WARC",
    };
    let mut body = Fields::new();
    let _ = body.append(
        "software",
        format!("warchest/{}", env!("CARGO_PKG_VERSION")),
    );
    let _ = body.append("format", format_name);
    let _ = body.append("conformsTo", conforms);
    let _ = body.append(
        "description",
        format!(
            "{source_format} file {} converted to WARC; what WARC has no field for is in metadata records marked {SOURCE_FORMAT}",
            base_name(source)
        ),
    );
    let _ = body.append("source", base_name(source));
    let _ = body.append("source-format", format.name());
    out.write(&mut rec, Body::Bytes(body.as_bytes()))?;
    Ok(id)
}

/// Converts every record of `reader` (ARC or Web InfoMall; a WARC input is
/// copied record by record, unchanged) to WARC records written to `out`:
/// a warcinfo record first (dated like the first record, so a conversion
/// is reproducible), then each record with the header its reading gives,
/// WARC-Warcinfo-ID, both digests, and, when the source record holds what
/// WARC has no field for, a metadata record concurrent to it.
///
/// `source` names the input (its base name goes into record ids and the
/// warcinfo record; its recoveries are counted under it).
///
/// What was done is added to `report`; the reader's recoveries are taken
/// into it record by record, so that the reader holds none of them for
/// long, and at the end, after an error too.
///
/// # Errors
/// Reading errors (strict reading, I/O), writing errors; `report` then
/// says what was done, and recovered from, before.
pub fn to_warc<S: Source, W: Write>(
    reader: &mut AnyReader<S>,
    source: &str,
    out: &mut Writer<W>,
    opts: &WarcOptions,
    report: &mut Report,
) -> Result<()> {
    let converted = warc_records(reader, source, out, opts, report);
    take_recoveries(reader, source, report);
    converted
}

fn warc_records<S: Source, W: Write>(
    reader: &mut AnyReader<S>,
    source: &str,
    out: &mut Writer<W>,
    opts: &WarcOptions,
    report: &mut Report,
) -> Result<()> {
    let format = reader.format();
    let label = base_name(source);
    let mut info_id: Option<String> = None;
    loop {
        take_recoveries(reader, source, report);
        let Some(mut rec) = reader.next_record()? else {
            break;
        };
        report.records_read += 1;
        if format == Format::Warc {
            let header = rec.header().clone();
            let mut block = spool(opts.spool_threshold, &mut rec.block())?;
            rec.finish()?;
            out.write_raw(&header, &mut block)?;
            report.records_written += 1;
            continue;
        }
        let view = rec.header().clone();
        let info = match &info_id {
            Some(id) => id.clone(),
            None => {
                let date = view.date().and_then(|d| d.ok()).unwrap_or(WarcDate::EPOCH);
                let id = warcinfo(out, source, format, date, opts)?;
                report.records_written += 1;
                info_id = Some(id.clone());
                id
            }
        };
        let left = rec.leftovers();
        let loc = rec.location();
        let mut block = spool(opts.spool_threshold, &mut rec.block())?;
        let end = rec.finish()?;
        let main_id = view.record_id().map(|s| s.into_owned()).unwrap_or_default();
        let mut nr = new_like(&view, opts.version)?;
        nr.set(field::WARCINFO_ID, &info)?;
        if view.record_type() == RecordType::Metadata {
            // The ARC filedesc record describes the file, as warcinfo does.
            nr.append(field::CONCURRENT_TO, &info)?;
        }
        if end.truncated {
            nr.set(field::TRUNCATED, "unspecified")?;
            report.truncated += 1;
        }
        out.write(
            &mut nr,
            Body::Seekable {
                reader: &mut block,
                len: None,
            },
        )?;
        report.records_written += 1;
        if !left.is_empty() {
            let mut m = NewRecord::with_version(RecordType::Metadata, opts.version);
            m.set(
                field::RECORD_ID,
                record_id(&label, loc.offset, loc.offset_in_member, "metadata"),
            )?;
            if let Some(d) = view.get(field::DATE) {
                m.set(field::DATE, d.as_bytes())?;
            }
            if let Some(u) = view.get(field::TARGET_URI) {
                m.set(field::TARGET_URI, u.as_bytes())?;
            }
            m.set(field::CONCURRENT_TO, &main_id)?;
            m.set(field::WARCINFO_ID, &info)?;
            m.set(field::CONTENT_TYPE, "application/warc-fields")?;
            m.set(SOURCE_FORMAT, format.name())?;
            out.write(&mut m, Body::Bytes(left.as_bytes()))?;
            report.records_written += 1;
            report.metadata_written += 1;
        }
    }
    Ok(())
}

/// A new record with the fields of `view` (Content-Length and digests left
/// for the writer).
fn new_like(view: &WarcHeader, version: Version) -> Result<NewRecord> {
    let mut nr = match view.record_type_str() {
        Some(t) => NewRecord::with_type_name(&t, version)?,
        None => NewRecord::with_version(RecordType::Resource, version),
    };
    for f in view.fields().iter() {
        let name = f.name_str();
        if f.is(field::CONTENT_LENGTH) || f.is(field::TYPE) {
            continue;
        }
        nr.set(&name, f.value())?;
    }
    Ok(nr)
}

/// How [`to_infomall`] writes.
#[derive(Debug, Clone)]
pub struct InfoMallOptions {
    /// Compress the content with zlib (and write `unzip-length`), as the
    /// Web InfoMall crawlers did. Default true.
    pub compress: bool,
    /// Bodies are spooled in memory up to this many bytes, then to a
    /// temporary file. Default 8 MiB.
    pub spool_threshold: usize,
    /// Largest metadata block read for properties (default 1 MiB; larger
    /// ones are left alone).
    pub max_metadata: u64,
}

impl Default for InfoMallOptions {
    fn default() -> Self {
        InfoMallOptions {
            compress: true,
            spool_threshold: 8 << 20,
            max_metadata: 1 << 20,
        }
    }
}

/// A response read and not yet written: a metadata record for it may
/// follow.
struct Pending {
    id: String,
    props: Properties,
    content: tempfile::SpooledTempFile,
}

/// The properties a response's WARC header gives.
fn props_from_view(h: &WarcHeader) -> Properties {
    let url = h.target_uri().map(|u| u.into_owned()).unwrap_or_default();
    let date = match h.date() {
        Some(Ok(d)) => infomall::format_date(&d),
        _ => h
            .get(field::DATE)
            .map(|d| d.into_owned())
            .unwrap_or_default(),
    };
    let mut p = Properties::new(url, date);
    p.ip = h
        .get(field::IP_ADDRESS)
        .map(|v| v.trim().as_bytes().to_vec());
    p
}

/// Writes the Web InfoMall records of `reader`'s responses to `out`: url
/// from WARC-Target-URI, date from WARC-Date (RFC 1123), ip from
/// WARC-IP-Address, then the properties kept by conversion to WARC (a
/// concurrent metadata record marked [`SOURCE_FORMAT`] `infomall`, or the
/// source record's own leftovers when reading ARC or Web InfoMall); the
/// content is the response block. Resource records go back too when their
/// warcinfo record says the WARC was converted from Web InfoMall (they were
/// its non-HTTP records). Other records are skipped and counted.
///
/// What was done is added to `report`, and the reader's recoveries, under
/// `source`, as [`to_warc`] adds them.
///
/// # Errors
/// Reading errors (strict reading, I/O), writing errors; `report` then
/// says what was done, and recovered from, before.
pub fn to_infomall<S: Source, W: Write>(
    reader: &mut AnyReader<S>,
    source: &str,
    out: &mut infomall::Writer<W>,
    opts: &InfoMallOptions,
    report: &mut Report,
) -> Result<()> {
    let converted = infomall_records(reader, source, out, opts, report);
    take_recoveries(reader, source, report);
    converted
}

fn infomall_records<S: Source, W: Write>(
    reader: &mut AnyReader<S>,
    source: &str,
    out: &mut infomall::Writer<W>,
    opts: &InfoMallOptions,
    report: &mut Report,
) -> Result<()> {
    let mut pending: Option<Pending> = None;
    // Properties of a metadata record met before its response.
    let mut early: Option<(String, Fields)> = None;
    let flush =
        |p: Option<Pending>, out: &mut infomall::Writer<W>, report: &mut Report| -> Result<()> {
            if let Some(mut p) = p {
                out.write(&p.props, &mut p.content, opts.compress)?;
                report.records_written += 1;
            }
            Ok(())
        };
    // Warcinfo records of WARCs converted from Web InfoMall: their resource
    // records were Web InfoMall records too, and go back.
    let mut from_infomall: Vec<String> = Vec::new();
    loop {
        take_recoveries(reader, source, report);
        let Some(mut rec) = reader.next_record()? else {
            break;
        };
        report.records_read += 1;
        let h = rec.header().clone();
        let back = h.record_type() == RecordType::Resource
            && h.warcinfo_id()
                .is_some_and(|id| from_infomall.iter().any(|x| *x == id.trim()));
        match h.record_type() {
            RecordType::Warcinfo => {
                let fields = read_fields(&mut rec.block(), opts.max_metadata)?;
                rec.finish()?;
                let infomall = fields.is_some_and(|f| {
                    f.value("source-format")
                        .is_some_and(|v| v.trim() == Format::InfoMall.name())
                });
                if infomall && from_infomall.len() < 10_000 {
                    from_infomall.push(
                        h.record_id()
                            .map(|s| s.trim().to_string())
                            .unwrap_or_default(),
                    );
                }
                *report.skipped.entry("warcinfo".into()).or_default() += 1;
            }
            _ if back || h.record_type() == RecordType::Response => {
                flush(pending.take(), out, report)?;
                let id = h.record_id().map(|s| s.into_owned()).unwrap_or_default();
                let mut props = props_from_view(&h);
                for f in rec.leftovers().iter() {
                    props.set(&f.name_str(), &f.value());
                }
                if let Some((target, fields)) = early.take() {
                    if target == id {
                        apply(&mut props, &fields);
                    } else {
                        early = Some((target, fields));
                    }
                }
                let content = spool(opts.spool_threshold, &mut rec.block())?;
                let end = rec.finish()?;
                if end.truncated {
                    report.truncated += 1;
                }
                pending = Some(Pending { id, props, content });
            }
            RecordType::Metadata if is_infomall_metadata(&h) => {
                let fields = read_fields(&mut rec.block(), opts.max_metadata)?;
                rec.finish()?;
                let targets: Vec<String> =
                    h.concurrent_to().map(|s| s.trim().to_string()).collect();
                match (&mut pending, fields) {
                    (Some(p), Some(f)) if targets.contains(&p.id) => apply(&mut p.props, &f),
                    (_, Some(f)) => {
                        if let Some(t) = targets.into_iter().next() {
                            early = Some((t, f));
                        }
                    }
                    (_, None) => {}
                }
            }
            _ => {
                let t = h
                    .record_type_str()
                    .map(|s| s.into_owned())
                    .unwrap_or_else(|| "(none)".into());
                *report.skipped.entry(t).or_default() += 1;
            }
        }
    }
    flush(pending.take(), out, report)?;
    Ok(())
}

fn is_infomall_metadata(h: &WarcHeader) -> bool {
    h.get(SOURCE_FORMAT)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(Format::InfoMall.name()))
}

fn apply(props: &mut Properties, fields: &Fields) {
    for f in fields.iter() {
        props.set(&f.name_str(), &f.value());
    }
}

/// Reads an `application/warc-fields` block of at most `max` bytes.
fn read_fields(block: &mut dyn Read, max: u64) -> Result<Option<Fields>> {
    let mut buf = Vec::new();
    block.take(max.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Ok(None);
    }
    Fields::parse_warc_fields(&buf)
        .map(|(f, _)| Some(f))
        .map_err(|e| Error::new(ErrorKind::Syntax(e.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use warchest::write::{Compression, WriterOptions};

    fn plain_writer() -> Writer<Vec<u8>> {
        Writer::new(
            Vec::new(),
            WriterOptions {
                compression: Compression::None,
                ..WriterOptions::default()
            },
        )
        .unwrap()
    }

    const TSE: &[u8] = b"version: 1.0\nurl: http://a/b\norigin: http://a/\ndate: Tue, 28 Feb 2006 05:42:09 GMT\nip: host.example\nx-crawler: tse\nlength: 25\n\nHTTP/1.0 200 OK\r\n\nhello!\n\n";

    #[test]
    fn infomall_to_warc_and_back() {
        let mut r = AnyReader::new(TSE).unwrap();
        let mut w = plain_writer();
        let mut rep = Report::default();
        to_warc(&mut r, "t.dat", &mut w, &WarcOptions::default(), &mut rep).unwrap();
        assert_eq!(
            (rep.records_read, rep.records_written, rep.metadata_written),
            (1, 3, 1)
        );
        let warc = w.finish().unwrap();
        let text = String::from_utf8_lossy(&warc);
        assert!(text.contains("WARC-Type: metadata"), "{text}");
        assert!(
            text.contains("origin: http://a/\r\nip: host.example\r\nx-crawler: tse\r\n"),
            "{text}"
        );
        assert!(text.contains("WARC-Payload-Digest: sha1:"), "{text}");
        // Twice the same bytes.
        let mut r = AnyReader::new(TSE).unwrap();
        let mut w2 = plain_writer();
        to_warc(
            &mut r,
            "t.dat",
            &mut w2,
            &WarcOptions::default(),
            &mut Report::default(),
        )
        .unwrap();
        assert_eq!(w2.finish().unwrap(), warc);
        // And back.
        let mut r = AnyReader::new(&warc[..]).unwrap();
        let mut out = infomall::Writer::new(Vec::new());
        let mut rep = Report::default();
        to_infomall(
            &mut r,
            "t.warc",
            &mut out,
            &InfoMallOptions {
                compress: false,
                ..Default::default()
            },
            &mut rep,
        )
        .unwrap();
        assert_eq!(rep.records_written, 1);
        assert_eq!(rep.skipped.get("warcinfo"), Some(&1));
        let back = out.finish().unwrap();
        assert_eq!(back, TSE);
    }

    #[test]
    fn arc_to_warc_keeps_v2_fields() {
        let arc = b"filedesc://x.arc 0.0.0.0 20140216050221 text/plain 200 - - 0 x.arc 76\n2 0 Test\nURL IP-address Archive-date Content-type Result-code Checksum Location Offset Filename Archive-length\n\nhttp://a/ 1.2.3.4 20140216050221 text/html 200 ABC - 120 x.arc 19\nHTTP/1.0 200 OK\r\n\r\n\n";
        let mut r = AnyReader::new(&arc[..]).unwrap();
        let mut w = plain_writer();
        let mut rep = Report::default();
        to_warc(
            &mut r,
            "x.arc",
            &mut w,
            &WarcOptions {
                version: Version::V1_0,
                ..Default::default()
            },
            &mut rep,
        )
        .unwrap();
        assert_eq!(rep.records_written, 4);
        let warc = w.finish().unwrap();
        let text = String::from_utf8_lossy(&warc);
        assert!(text.starts_with("WARC/1.0\r\n"), "{text}");
        assert!(text.contains("arc-result-code: 200\r\narc-checksum: ABC\r\narc-offset: 120\r\narc-filename: x.arc\r\n"), "{text}");
        assert!(text.contains("Content-Type: application/arc"), "{text}");
        assert!(!text.contains("WARC/1.1"));
        let mut r = warchest::warc::Reader::new(&warc[..]);
        let mut n = 0;
        while let Some(rec) = r.next_record().unwrap() {
            n += 1;
            assert!(rec.header().block_digest().is_some());
        }
        assert_eq!(n, 4);
        assert!(r.take_warnings().is_empty());
    }

    /// `n` WARC records whose header lines end in bare LFs.
    fn bare_lf_warc(n: usize) -> Vec<u8> {
        let mut data = Vec::new();
        for i in 0..n {
            data.extend_from_slice(
                format!(
                    "WARC/1.1\nWARC-Type: resource\nWARC-Record-ID: <urn:uuid:{i}>\n\
                     WARC-Date: 2024-01-02T03:04:05Z\nWARC-Target-URI: http://a/{i}\n\
                     Content-Type: text/plain\nContent-Length: 1\n\nx\r\n\r\n"
                )
                .as_bytes(),
            );
        }
        data
    }

    /// A writer that fails once `room` bytes are written.
    struct Full {
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if b.len() > self.room {
                return Err(io::Error::other("disk full"));
            }
            self.room -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Every recovery is counted and only the first DEFAULT_KEPT kept
    /// (the report of a file of many bare LFs does not grow with them),
    /// the reader left holding none; after an error the report still
    /// says those met before it, and how many records were read.
    #[test]
    fn recoveries_are_counted_in_bounded_memory_and_kept_after_an_error() {
        use warchest::recoveries::DEFAULT_KEPT;
        let data = bare_lf_warc(1500);
        let mut once = AnyReader::new(&data[..]).unwrap();
        while once.next_record().unwrap().is_some() {}
        let all = once.take_warnings().len() as u64;
        assert!(all > DEFAULT_KEPT as u64, "{all}");

        let mut r = AnyReader::new(&data[..]).unwrap();
        let mut w = plain_writer();
        let mut rep = Report::default();
        to_warc(&mut r, "t.warc", &mut w, &WarcOptions::default(), &mut rep).unwrap();
        assert_eq!(rep.records_read, 1500);
        assert_eq!(rep.recoveries.total(), all);
        assert_eq!(rep.recoveries.kept().len(), DEFAULT_KEPT);
        assert_eq!(rep.recoveries.by_file().len(), 1);
        assert_eq!(rep.recoveries.by_file()[0].file, "t.warc");
        assert!(r.take_warnings().is_empty());
        let json = serde_json::to_value(&rep).unwrap();
        assert_eq!(json["recoveries"], all);

        let mut r = AnyReader::new(&data[..]).unwrap();
        let mut out = infomall::Writer::new(Vec::new());
        let mut rep = Report::default();
        to_infomall(
            &mut r,
            "t.warc",
            &mut out,
            &InfoMallOptions::default(),
            &mut rep,
        )
        .unwrap();
        assert_eq!(rep.recoveries.total(), all);
        assert_eq!(rep.recoveries.kept().len(), DEFAULT_KEPT);

        // The output fills after a few records.
        let mut r = AnyReader::new(&data[..]).unwrap();
        let opts = WriterOptions {
            compression: Compression::None,
            ..WriterOptions::default()
        };
        let mut w = Writer::new(Full { room: 2000 }, opts).unwrap();
        let mut rep = Report::default();
        let failed = to_warc(&mut r, "t.warc", &mut w, &WarcOptions::default(), &mut rep);
        assert!(failed.is_err());
        assert!(rep.records_read > 0 && rep.records_read < 1500, "{rep:?}");
        assert!(rep.recoveries.total() >= rep.records_read, "{rep:?}");
        assert!(r.take_warnings().is_empty());
    }
}
