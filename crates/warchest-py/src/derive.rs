//! `warchest.derive_text`: the text of every page of local archives as
//! Arrow record batches (warchest-derive's table: url, date, record id,
//! WARC file and offset, content type, language and score, title, text,
//! main-content text), derived on every core; `columns` projects the
//! table as `warchest derive text --columns` does (the same column list,
//! `warchest_derive::table::Columns`): only those are computed.

use std::collections::VecDeque;
use std::fs::File;
use std::path::PathBuf;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::prelude::*;
use rayon::prelude::*;
use warchest::archive::Reader;
use warchest::codec::Decoder;
use warchest_derive::source::{Purpose, read_batch_for};
use warchest_derive::table::{Columns, Row, schema_of, to_batch_of};

use crate::io::{Target, targets_from_py};
use crate::scan::{ScanStream, SharedNotes, external, lock};

/// The names of every column `derive_text` can give, in table order (the
/// list `warchest derive text --columns` takes).
#[pyfunction]
pub(crate) fn text_columns() -> Vec<&'static str> {
    warchest_derive::table::COLUMNS.to_vec()
}

/// The text rows of the archives at `paths` (local files; a WACZ as its
/// archive files, or the one `FILE.wacz#archive/NAME` names), as an object
/// with `__arrow_c_stream__`; `warchest.derive_text` wraps it in a
/// `pyarrow.RecordBatchReader`. `columns` names the columns to compute
/// and give, kept in the table's order (`None`: every column); an unknown
/// name is a `ValueError` listing the columns.
#[pyfunction]
#[pyo3(signature = (paths, columns = None))]
pub(crate) fn derive_text_stream(
    paths: &Bound<'_, PyAny>,
    columns: Option<Vec<String>>,
) -> PyResult<ScanStream> {
    let columns = match columns {
        None => Columns::ALL,
        Some(names) => {
            Columns::parse(&names.join(",")).map_err(pyo3::exceptions::PyValueError::new_err)?
        }
    };
    let mut files = VecDeque::new();
    for t in targets_from_py(paths)? {
        match t {
            Target::Url(u) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "{u}: derive_text reads local files (warchest derive text reads URLs)"
                )));
            }
            // A WACZ, as its archive files (or the one named
            // `FILE.wacz#archive/NAME`), as `warchest derive text` reads it.
            t if crate::wacz::is_wacz_target(&t) => {
                let archives = crate::wacz::archive_files_of(&t).map_err(crate::to_py)?;
                files.extend(archives.into_iter().map(TextInput::Archive));
            }
            Target::Path(p) => files.push_back(TextInput::Path(p)),
        }
    }
    let notes = SharedNotes::default();
    Ok(ScanStream::new(
        Box::new(TextBatches {
            files,
            current: None,
            columns,
            notes: notes.clone(),
            texts: Default::default(),
            seen: 0,
        }),
        notes,
    ))
}

/// What `derive_text` reads: a file, or an archive file of a WACZ.
enum TextInput {
    Path(PathBuf),
    Archive(crate::wacz::ArchiveFile),
}

/// A reader of a [`TextInput`].
enum TextReader {
    File(Reader<Decoder<File>>),
    Archive(Reader<crate::wacz::ArchiveSource>),
}

impl TextInput {
    /// Its reader and what rows and warnings name it (the path, or
    /// `FILE.wacz#archive/NAME`).
    fn open(self) -> warchest::Result<(TextReader, String)> {
        match self {
            TextInput::Path(p) => {
                let name = p.to_string_lossy().into_owned();
                Ok((TextReader::File(Reader::open(&p)?), name))
            }
            TextInput::Archive(f) => {
                let r = f.open(warchest::warc::ReaderOptions::default())?;
                Ok((TextReader::Archive(r), f.name))
            }
        }
    }
}

impl TextReader {
    fn read_batch(
        &mut self,
    ) -> (
        Vec<warchest_derive::source::SourceRecord>,
        Option<warchest::Error>,
    ) {
        match self {
            TextReader::File(r) => read_batch_for(r, Purpose::Text),
            TextReader::Archive(r) => read_batch_for(r, Purpose::Text),
        }
    }

    fn take_warnings(&mut self) -> Vec<warchest::Warning> {
        match self {
            TextReader::File(r) => r.take_warnings(),
            TextReader::Archive(r) => r.take_warnings(),
        }
    }
}

struct TextBatches {
    files: VecDeque<TextInput>,
    current: Option<(TextReader, String)>,
    columns: Columns,
    /// The readers' recoveries and the payloads not decoded as their head
    /// says, as `scan` notes them.
    notes: SharedNotes,
    /// The current file's texts cut at 8 MiB and with bytes replaced
    /// (told with its notes when it ends).
    texts: warchest_derive::derive::Summary,
    /// Records read of the current file.
    seen: u64,
}

impl TextBatches {
    fn next_batch(&mut self) -> Result<Option<RecordBatch>, ArrowError> {
        loop {
            let Some((reader, name)) = self.current.as_mut() else {
                let Some(input) = self.files.pop_front() else {
                    return Ok(None);
                };
                self.current = Some(input.open().map_err(external)?);
                self.seen = 0;
                continue;
            };
            let (records, err) = reader.read_batch();
            self.seen += records.len() as u64;
            let columns = self.columns;
            let noted: Vec<(Row, bool, bool)> = records
                .par_iter()
                .filter_map(|r| Row::of_columns_noted(r, name, columns))
                .collect();
            let texts = &mut self.texts;
            let rows: Vec<Row> = noted
                .into_iter()
                .map(|(row, cut, replaced)| {
                    texts.note_text(cut, replaced);
                    row
                })
                .collect();
            {
                let mut n = lock(&self.notes);
                for w in reader.take_warnings() {
                    n.current.recoveries.add(name, w);
                }
                for p in records.iter().filter_map(|r| r.payload_fallback()) {
                    n.current.payload_fallbacks.add(name, p);
                }
                if err.is_some() || records.is_empty() {
                    // The file ends here, by its end or by the error.
                    n.finish_part();
                    if let Some(t) = std::mem::take(&mut self.texts).texts_summary() {
                        n.tell(format!("{name}: {t}"));
                    }
                }
            }
            if records.is_empty() && err.is_none() {
                // A file in which no record is found is not read, as
                // `warchest derive text` and `scan` refuse it.
                if self.seen == 0 {
                    let e = warchest::Error::new(warchest::ErrorKind::Syntax(
                        warchest::archive::no_records_message(name),
                    ));
                    self.current = None;
                    return Err(external(e));
                }
                self.current = None;
                continue;
            }
            if let Some(e) = err {
                return Err(external(e));
            }
            if !rows.is_empty() {
                return to_batch_of(&rows, columns).map(Some);
            }
        }
    }
}

impl Iterator for TextBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}

impl RecordBatchReader for TextBatches {
    fn schema(&self) -> SchemaRef {
        schema_of(self.columns)
    }
}
