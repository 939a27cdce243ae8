//! Language identification: up to three languages of a text, with the
//! share of the text each covers, as Common Crawl reports them (CLD2's
//! `text-covered`, ISO 639-3 codes in `WARC-Identified-Content-Language`).
//!
//! The model is whatlang's (docs/derive.md says why: a trigram model of 70
//! languages built into the crate, ISO 639-3 codes, pure Rust, kept up).
//! whatlang names one language per text, so the text is sampled: up to
//! [`SAMPLES`] segments of whole lines (about [`SEGMENT`] bytes each),
//! spread evenly over it; each segment gets a language and a confidence,
//! and a language's score is the share of the sampled letters it was found
//! in, weighted by confidence. A page in two languages thus gets both, as
//! CLD2 gives them. Sampling bounds the time per page: whatlang reads a
//! few MB/s, slower than the rest of text extraction together.

/// A language found in a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Language {
    /// The ISO 639-3 code (`eng`, `fra`, `cmn`...).
    pub code: &'static str,
    /// The share of the text in this language, weighted by the model's
    /// confidence: 0..=1.
    pub score: f32,
}

/// The length of a segment, in bytes: long enough for trigram statistics.
pub const SEGMENT: usize = 512;

/// At most this many segments are analysed.
pub const SAMPLES: usize = 6;

/// When this many segments, the first, the last and the middle one, name
/// one language, the others are not analysed. Three, not two: text found
/// only in the middle of a page (an article between an English menu and
/// footer) is still sampled, and a text of three segments or more costs
/// three calls of the model, not six.
pub const AGREE: usize = 3;

/// Languages below this share are not reported (noise from names, code,
/// short captions).
const MIN_SHARE: f32 = 0.1;

/// Up to three languages of `text`, best first. Empty when the text has no
/// letters the model knows.
///
/// The segments are analysed spread out first (the first, the last, then
/// the middle one); when those [`AGREE`] name one language, the text is
/// taken to be in it and the rest are not analysed. whatlang's cost is
/// mostly per call (it compares every language profile of the script,
/// about 12,000 look-ups for Latin, whatever the segment's length), so
/// this bounds most pages to three calls; a page whose samples differ gets
/// all of them. A text of one or two segments gets one call each.
pub fn identify(text: &str) -> Vec<Language> {
    let segments = segments(text);
    let mut order: Vec<usize> = Vec::with_capacity(segments.len());
    if let Some(last) = segments.len().checked_sub(1) {
        for i in [0, last, last / 2].into_iter().chain(0..=last) {
            if !order.contains(&i) {
                order.push(i);
            }
        }
    }
    let mut scores: Vec<(whatlang::Lang, f64)> = Vec::new();
    let mut total = 0f64;
    // Languages of the segments analysed so far (None: no verdict).
    let mut found: Vec<Option<whatlang::Lang>> = Vec::new();
    for (n, &i) in order.iter().enumerate() {
        if n == AGREE
            && found.len() == AGREE
            && found[0].is_some()
            && found.iter().all(|l| *l == found[0])
        {
            break;
        }
        let segment = &text[segments[i].clone()];
        let weight = segment.chars().filter(|c| c.is_alphabetic()).count() as f64;
        if weight == 0.0 {
            found.push(None);
            continue;
        }
        total += weight;
        let info = whatlang::detect(segment);
        found.push(info.as_ref().map(|i| i.lang()));
        if let Some(info) = info {
            let w = weight * info.confidence();
            match scores.iter_mut().find(|(l, _)| *l == info.lang()) {
                Some((_, s)) => *s += w,
                None => scores.push((info.lang(), w)),
            }
        }
    }
    if total == 0.0 {
        return Vec::new();
    }
    scores.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.code().cmp(b.0.code())));
    scores
        .into_iter()
        .map(|(lang, s)| Language {
            code: lang.code(),
            score: (s / total) as f32,
        })
        .filter(|l| l.score >= MIN_SHARE)
        .take(3)
        .collect()
}

/// The byte ranges of the sampled segments, in text order: whole lines
/// where the text allows (a segment ends at the first line end after
/// [`SEGMENT`] bytes, or at twice that), spread [`SAMPLES`] at most over
/// the text.
fn segments(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::with_capacity(SAMPLES + 1);
    let stride = (text.len() / SAMPLES).max(SEGMENT);
    let mut at = 0;
    while at < text.len() {
        let mut end = floor_char(text, (at + 2 * SEGMENT).min(text.len()));
        let from = floor_char(text, (at + SEGMENT).min(end));
        if let Some(n) = text[from..end].find('\n') {
            end = from + n;
        }
        out.push(at..end);
        let next = floor_char(text, (at + stride).min(text.len()));
        // Start the next sample at a line start when one is near.
        at = match text[next..].find('\n') {
            Some(n) if n < SEGMENT => next + n + 1,
            _ => next,
        }
        .max(end);
    }
    out
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Codes joined as Common Crawl writes `WARC-Identified-Content-Language`:
/// `eng,fra`.
pub fn header_value(languages: &[Language]) -> String {
    languages
        .iter()
        .map(|l| l.code)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_language() {
        let l = identify(
            "The quick brown fox jumps over the lazy dog, and then it runs away into the forest.",
        );
        assert_eq!(l[0].code, "eng");
        assert!(l[0].score > 0.5);
    }

    #[test]
    fn two_languages_by_share() {
        let en = "This is a long paragraph written in English about the history of the city and its people. ".repeat(8);
        let de = "Dies ist ein langer Absatz auf Deutsch über die Geschichte der Stadt und ihrer Menschen. ".repeat(4);
        let l = identify(&format!("{en}\n{de}\n"));
        let codes: Vec<_> = l.iter().map(|l| l.code).collect();
        assert_eq!(codes, ["eng", "deu"]);
        assert!(l[0].score > l[1].score);
        assert_eq!(header_value(&l), "eng,deu");
    }

    #[test]
    fn spread_samples_first_and_the_rest_when_they_differ() {
        let en = "This is a long paragraph written in English about the history of the city and its people.\n";
        let de = "Dies ist ein langer Absatz auf Deutsch über die Geschichte der Stadt und ihrer Menschen.\n";
        // Six segments: the first, last and middle ones are read first.
        let text = en.repeat(60);
        let segs = segments(&text);
        assert_eq!(segs.len(), SAMPLES);
        assert!(segs.windows(2).all(|w| w[0].end <= w[1].start));
        assert_eq!(identify(&text)[0].code, "eng");
        // German only in the second segment: the first, last and middle
        // ones agree, so it is not read (the price of the early stop).
        let mut mixed = en.repeat(10);
        mixed.push_str(&de.repeat(10));
        mixed.push_str(&en.repeat(40));
        let codes: Vec<_> = identify(&mixed).iter().map(|l| l.code).collect();
        assert_eq!(codes, ["eng"]);
        // German only in the middle segment (an article between an
        // English menu and footer): read, so every segment is.
        let mut mixed = en.repeat(20);
        mixed.push_str(&de.repeat(10));
        mixed.push_str(&en.repeat(30));
        let segs = segments(&mixed);
        let middle = &mixed[segs[(segs.len() - 1) / 2].clone()];
        assert!(middle.starts_with("Dies") && !mixed[segs[1].clone()].contains("Dies"));
        let codes: Vec<_> = identify(&mixed).iter().map(|l| l.code).collect();
        assert_eq!(codes, ["eng", "deu"]);
        // German in the first segment: every segment is read.
        let mut mixed = de.repeat(10);
        mixed.push_str(&en.repeat(50));
        let codes: Vec<_> = identify(&mixed).iter().map(|l| l.code).collect();
        assert_eq!(codes, ["eng", "deu"]);
        // German in a segment read first: every segment is read.
        let mut mixed = en.repeat(50);
        mixed.push_str(&de.repeat(10));
        let codes: Vec<_> = identify(&mixed).iter().map(|l| l.code).collect();
        assert_eq!(codes, ["eng", "deu"]);
    }

    #[test]
    fn nothing_to_identify() {
        assert!(identify("").is_empty());
        assert!(identify("1234 5678 !!!").is_empty());
    }
}
