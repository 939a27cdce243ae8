//! Placeholder: WARC framing is being written.
