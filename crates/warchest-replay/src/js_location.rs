//! `location` in archived scripts: rewritten to `__warchest_location`, an
//! object the client script (`serve/client.js`) defines on the window and
//! the document, whose reads give the archived URL (not the replay
//! server's) and whose assignments navigate inside the archive. A browser
//! lets no script replace `window.location` itself, so, as pywb does, the
//! scripts are changed instead (docs/serve.md, "Client side").
//!
//! Rewritten: `window.location`, `document.location`, `self.location`,
//! `globalThis.location`, and a bare `location` followed by `.NAME` or
//! assigned (`location = ...`). Left alone: other objects' `location`
//! properties, declarations (`var location`), comparisons, object keys.

/// Where the client script keeps the archived page's location.
const PROXY: &[u8] = b"__warchest_location";

/// Objects whose `location` is the page's.
const GLOBALS: [&[u8]; 4] = [b"window", b"document", b"self", b"globalThis"];

/// What a script reads or calls on `location`.
const MEMBERS: [&[u8]; 13] = [
    b"href",
    b"host",
    b"hostname",
    b"port",
    b"pathname",
    b"search",
    b"hash",
    b"origin",
    b"protocol",
    b"assign",
    b"replace",
    b"reload",
    b"toString",
];

fn ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// `text` (JavaScript) with the page's `location` read through the client
/// script's object.
pub(crate) fn rewrite_location(text: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let finder = memchr::memmem::Finder::new(b"location");
    if finder.find(text).is_none() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len() + 64);
    let mut last = 0;
    for i in finder.find_iter(text) {
        let j = i + b"location".len();
        if (i > 0 && ident(text[i - 1])) || text.get(j).is_some_and(|&b| ident(b)) {
            continue;
        }
        if proxied(text, i, j) {
            out.extend_from_slice(&text[last..i]);
            out.extend_from_slice(PROXY);
            last = j;
        }
    }
    out.extend_from_slice(&text[last..]);
    std::borrow::Cow::Owned(out)
}

/// Whether the `location` at `i..j` is the page's.
fn proxied(text: &[u8], i: usize, j: usize) -> bool {
    if i > 0 && text[i - 1] == b'.' {
        // `OBJ.location`: OBJ one of the globals, not itself a property.
        let end = i - 1;
        let mut start = end;
        while start > 0 && ident(text[start - 1]) {
            start -= 1;
        }
        let obj = &text[start..end];
        return GLOBALS.contains(&obj) && (start == 0 || !matches!(text[start - 1], b'.'));
    }
    // A bare `location`: not part of a path or a string's word
    // (`/js/location.js`), not a declaration, then one of Location's
    // members or `=`.
    if i > 0 && b"/\\-'\"`@#%~".contains(&text[i - 1]) {
        return false;
    }
    let before = text[..i].trim_ascii_end();
    for kw in [&b"var"[..], b"let", b"const", b"function", b"class"] {
        if before.ends_with(kw)
            && (before.len() == kw.len() || !ident(before[before.len() - kw.len() - 1]))
        {
            return false;
        }
    }
    let after = text[j..].trim_ascii_start();
    match after {
        [b'.', rest @ ..] => {
            let end = rest.iter().position(|&b| !ident(b)).unwrap_or(rest.len());
            MEMBERS.contains(&&rest[..end])
        }
        [b'=', b'=' | b'>', ..] => false,
        [b'=', ..] => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(s: &str) -> String {
        String::from_utf8(rewrite_location(s.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn the_pages_location_only() {
        for (a, b) in [
            (
                "var u = location.href;",
                "var u = __warchest_location.href;",
            ),
            (
                "window.location.hostname",
                "window.__warchest_location.hostname",
            ),
            (
                "document.location = '/x'",
                "document.__warchest_location = '/x'",
            ),
            ("location = next;", "__warchest_location = next;"),
            (
                "if(x)location.replace(u)",
                "if(x)__warchest_location.replace(u)",
            ),
            ("self.location.search", "self.__warchest_location.search"),
            ("a.location.href", "a.location.href"),
            ("a.window.location", "a.window.location"),
            ("var location = 1;", "var location = 1;"),
            ("let location=1", "let location=1"),
            ("location == x", "location == x"),
            ("location => 1", "location => 1"),
            ("{location: 1}", "{location: 1}"),
            ("geolocation.get()", "geolocation.get()"),
            ("locations.x", "locations.x"),
            ("x.getlocation", "x.getlocation"),
            ("typeof location", "typeof location"),
            ("no such word", "no such word"),
            ("'/m/location.html'", "'/m/location.html'"),
            ("x = location.js", "x = location.js"),
            ("u = '/js/location.href'", "u = '/js/location.href'"),
            ("location.hash='#a'", "__warchest_location.hash='#a'"),
            ("f({u:location.href})", "f({u:__warchest_location.href})"),
        ] {
            assert_eq!(rw(a), b, "{a}");
        }
    }
}
