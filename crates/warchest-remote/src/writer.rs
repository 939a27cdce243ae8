//! Writing an object so that it appears only when complete.

use std::io::{self, Write};

use object_store::{ObjectStoreExt, PutPayload, WriteMultipart};

use crate::{Location, Options, runtime};

/// A new object being written: the remote form of writing `NAME.open` and
/// renaming it at the end.
///
/// The first [`Options::part_size`] bytes are held in memory; an object
/// that stays smaller is stored with one PUT by [`RemoteWriter::finish`].
/// A larger one becomes a multipart upload whose parts are sent as they
/// fill (at most [`Options::upload_concurrency`] in flight, so memory stays
/// bounded) and which is completed only by `finish`: until then no object
/// exists under the name. Dropped without `finish` (an error, an
/// interrupted command), the upload is aborted and nothing appears.
pub struct RemoteWriter {
    loc: Location,
    opts: Options,
    head: Vec<u8>,
    upload: Option<WriteMultipart>,
    written: u64,
}

fn err(loc: &Location, at: u64, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{}: writing at byte {at}: {e}", loc.url()))
}

impl RemoteWriter {
    /// A writer for `loc`; nothing is sent yet.
    pub fn new(loc: Location, opts: Options) -> io::Result<RemoteWriter> {
        if loc.key().as_ref().is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: no object name to write to", loc.url()),
            ));
        }
        // Its client made now, so that a store that cannot be made fails
        // the command before anything is written.
        loc.write_store()?;
        Ok(RemoteWriter {
            loc,
            opts,
            head: Vec::new(),
            upload: None,
            written: 0,
        })
    }

    /// The URL written to.
    pub fn url(&self) -> &str {
        self.loc.url()
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Completes the object: after this returns `Ok`, it exists whole.
    pub fn finish(mut self) -> io::Result<()> {
        let at = self.written;
        let loc = self.loc.clone();
        match self.upload.take() {
            Some(up) => runtime()
                .block_on(up.finish())
                .map(|_| ())
                .map_err(|e| err(&loc, at, e)),
            None => {
                let payload = PutPayload::from(std::mem::take(&mut self.head));
                let store = loc.write_store()?;
                runtime()
                    .block_on(store.put(loc.key(), payload))
                    .map(|_| ())
                    .map_err(|e| err(&loc, at, e))
            }
        }
    }
}

impl Write for RemoteWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.upload.is_none() {
            if self.head.len() + buf.len() <= self.opts.part_size {
                self.head.extend_from_slice(buf);
                self.written += buf.len() as u64;
                return Ok(buf.len());
            }
            let store = self.loc.write_store()?;
            let key = self.loc.key().clone();
            let up = runtime()
                .block_on(async move { store.put_multipart(&key).await })
                .map_err(|e| err(&self.loc, self.written, e))?;
            let mut w = WriteMultipart::new_with_chunk_size(up, self.opts.part_size);
            let head = std::mem::take(&mut self.head);
            // Parts are uploaded by tasks that WriteMultipart spawns.
            let _rt = runtime().enter();
            w.write(&head);
            self.upload = Some(w);
        }
        let w = self.upload.as_mut().expect("started above");
        {
            let _rt = runtime().enter();
            w.write(buf);
        }
        let at = self.written;
        let limit = self.opts.upload_concurrency.max(1);
        runtime()
            .block_on(w.wait_for_capacity(limit))
            .map_err(|e| err(&self.loc, at, e))?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // Parts go out as they fill; the object exists only after finish.
        Ok(())
    }
}

impl Drop for RemoteWriter {
    fn drop(&mut self) {
        if let Some(up) = self.upload.take()
            && let Err(e) = runtime().block_on(up.abort())
        {
            tracing::warn!("{}: aborting the unfinished upload: {e}", self.loc.url());
        }
    }
}
