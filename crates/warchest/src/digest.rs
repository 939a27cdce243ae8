//! Placeholder: digest is being written.
