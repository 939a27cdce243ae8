//! warchest-derive: what is derived from web archives for text corpora and
//! search: the text of each page (charset decoding, HTML to text with a
//! main-content mode, language identification), and Common Crawl's WAT and
//! WET files.
//!
//! ```
//! use warchest_derive::text::extract;
//!
//! let page = b"<html><head><title>Hello</title></head>\
//!     <body><nav><a href=/>Home</a></nav><p>Bonjour &amp; bienvenue \xe0 tous, \
//!     ceci est une page web en fran\xe7ais.</p></body></html>";
//! let doc = extract(page, Some("text/html; charset=iso-8859-1"));
//! assert_eq!(doc.title.as_deref(), Some("Hello"));
//! assert_eq!(doc.text, "Hello\nHome\nBonjour & bienvenue à tous, ceci est une page web en français.");
//! assert_eq!(doc.main_text, "Bonjour & bienvenue à tous, ceci est une page web en français.");
//! assert_eq!(doc.charset, "windows-1252");
//! assert_eq!(doc.language[0].code, "fra");
//! ```
//!
//! Charset, HTML-to-text and language are separate steps ([`charset`],
//! [`html2text`] over the [`html`] tokenizer, [`lang`]), each with its own
//! tests, composed by [`text`]. docs/derive.md describes the layouts and
//! where they differ from Common Crawl's and Resiliparse's.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod charset;
pub mod derive;
pub mod html;
pub mod html2text;
pub mod json;
pub mod lang;
pub mod links;
pub mod source;
pub mod table;
pub mod text;
pub mod wat;
pub mod wet;
