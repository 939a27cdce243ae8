//! Extracts the text of HTML files named one per line in a list file, on
//! one thread, and prints documents per second: a quick check of the
//! extractor's speed apart from archive reading (bench/ measures the
//! command). `cargo run --release -p warchest-derive --example text_files LIST`
use std::time::Instant;

fn main() {
    let list = std::env::args().nth(1).expect("usage: text_files LIST");
    let files: Vec<Vec<u8>> = std::fs::read_to_string(list)
        .expect("read the list")
        .lines()
        .filter_map(|f| std::fs::read(f).ok())
        .collect();
    let bytes: usize = files.iter().map(Vec::len).sum();
    let start = Instant::now();
    let mut chars = 0;
    for body in &files {
        let doc = warchest_derive::text::extract(body, Some("text/html"));
        chars += doc.text.len() + doc.main_text.len();
    }
    let secs = start.elapsed().as_secs_f64();
    let t = Instant::now();
    for body in &files {
        let page = String::from_utf8_lossy(body);
        chars += warchest_derive::html2text::html_to_text(&page).text.len();
    }
    eprintln!(
        "html_to_text alone: {:.0} docs/s",
        files.len() as f64 / t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    for body in &files {
        let page = String::from_utf8_lossy(body);
        chars += warchest_derive::html::Tokenizer::new(&page).count();
    }
    eprintln!(
        "tokenizer alone: {:.0} docs/s",
        files.len() as f64 / t.elapsed().as_secs_f64()
    );
    println!(
        "warchest-derive: {:.0} docs/s, {:.1} MB/s ({chars} bytes of text)",
        files.len() as f64 / secs,
        bytes as f64 / secs / 1e6
    );
}
