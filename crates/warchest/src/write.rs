//! Placeholder: write is being written.
