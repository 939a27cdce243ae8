//! Placeholder: http is being written.
