//! Placeholder: fields is being written.
