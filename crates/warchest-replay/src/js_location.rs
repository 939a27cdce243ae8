//! `location` and `top` in archived scripts: rewritten to
//! `__warchest_location` and `__warchest_top`, which the client script
//! (`client.js` of `warchest-serve`) defines on the window and the document. Reading
//! `__warchest_location` gives the archived URL (not the replay server's),
//! assigning it navigates inside the archive; `__warchest_top` is the
//! topmost replayed window, never the UI's page that frames replay. A
//! browser lets no script replace `window.location` or `window.top`
//! (both are unforgeable), so, as pywb does, the scripts are changed
//! instead (docs/serve.md, "Client side"). `parent` and `frames` need no
//! renaming: the client redefines `window.parent` (it is replaceable), and
//! only the `location` read through them is rewritten.
//!
//! Rewritten: the `location` of `window`, `document`, `self`,
//! `globalThis`, `top`, `parent`, `frames[...]` and chains of them
//! (`window.parent.location`, `top.frames[0].location`), and a bare
//! `location` followed by `.NAME` or assigned (`location = ...`); `top`
//! after `window.` (or `self.`, `parent.`...), and a bare `top` followed by
//! one of a window's members (`top.location`, `top.document`) or compared
//! (`top != self`, the frame-busting test). Left alone: other objects'
//! `location` and `top` (`el.style.top`, `rect.top`), declarations
//! (`var location`), object keys, other uses of a bare `top` (it is a
//! common variable name).

/// Where the client script keeps the archived page's location.
const PROXY: &[u8] = b"__warchest_location";
/// Where the client script keeps the topmost replayed window.
const TOP: &[u8] = b"__warchest_top";

/// Names whose `location` is a window's or the document's.
const WINDOWS: [&[u8]; 7] = [
    b"window",
    b"self",
    b"globalThis",
    b"top",
    b"parent",
    b"frames",
    b"document",
];

/// Names whose `top` is the page's.
const TOP_OWNERS: [&[u8]; 5] = [b"window", b"self", b"globalThis", b"parent", b"top"];

/// Members of a window that make a bare `top` the window's.
const TOP_MEMBERS: [&[u8]; 9] = [
    b"location",
    b"document",
    b"frames",
    b"postMessage",
    b"window",
    b"self",
    b"parent",
    b"top",
    b"history",
];

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

/// Most segments of a chain before `.location` looked at.
const MAX_CHAIN: usize = 8;
/// Most bytes of an index (`frames[...]`) looked at.
const MAX_INDEX: usize = 256;

fn ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// A segment of a member chain: a name, or an index (`[...]`).
#[derive(Debug, PartialEq)]
enum Seg<'a> {
    Name(&'a [u8]),
    Index,
}

/// The member chain ending just before the `.` at `dot`, leftmost first
/// (`window.parent` in `window.parent.location`); `None` when it holds
/// anything but names and indexes (a call, a string) or is longer than
/// [`MAX_CHAIN`].
fn chain_before(text: &[u8], dot: usize) -> Option<Vec<Seg<'_>>> {
    let mut segs = Vec::new();
    let mut pos = dot;
    while segs.len() < MAX_CHAIN {
        if pos > 0 && text[pos - 1] == b']' {
            // Back to the matching `[`, nested brackets counted.
            let mut depth = 0usize;
            let mut k = pos - 1;
            let stop = pos.saturating_sub(MAX_INDEX);
            loop {
                match text[k] {
                    b']' => depth += 1,
                    b'[' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b'\n' => return None,
                    _ => {}
                }
                if k == stop || k == 0 {
                    return None;
                }
                k -= 1;
            }
            segs.push(Seg::Index);
            pos = k;
            continue;
        }
        let mut start = pos;
        while start > 0 && ident(text[start - 1]) {
            start -= 1;
        }
        if start == pos {
            return None;
        }
        segs.push(Seg::Name(&text[start..pos]));
        if start > 0 && text[start - 1] == b'.' {
            pos = start - 1;
            continue;
        }
        segs.reverse();
        return Some(segs);
    }
    None
}

/// Whether a chain is made of windows (and ends at a window or the
/// document): `window`, `parent.frames[0]`, `window.top.document`.
fn window_chain(segs: &[Seg<'_>]) -> bool {
    let last = segs.len().saturating_sub(1);
    !segs.is_empty()
        && segs.iter().enumerate().all(|(k, s)| match s {
            Seg::Name(n) => WINDOWS.contains(n) && (*n != b"document" || k == last),
            // Only `frames[...]`.
            Seg::Index => k > 0 && segs[k - 1] == Seg::Name(b"frames"),
        })
}

/// Whether the text before `i` ends with a declaration keyword.
fn declared(text: &[u8], i: usize) -> bool {
    let before = text[..i].trim_ascii_end();
    [&b"var"[..], b"let", b"const", b"function", b"class"]
        .iter()
        .any(|kw| {
            before.ends_with(kw)
                && (before.len() == kw.len() || !ident(before[before.len() - kw.len() - 1]))
        })
}

/// The name after `.` at the start of `after` (trimmed), if any.
fn member(after: &[u8]) -> Option<&[u8]> {
    let rest = after.strip_prefix(b".")?.trim_ascii_start();
    let end = rest.iter().position(|&b| !ident(b)).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// `text` (JavaScript) with the page's `location` and `top` read through
/// the client script's objects.
pub(crate) fn rewrite_location(text: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let loc = memchr::memmem::Finder::new(b"location");
    let top = memchr::memmem::Finder::new(b"top");
    if loc.find(text).is_none() && top.find(text).is_none() {
        return std::borrow::Cow::Borrowed(text);
    }
    // (start, end, replacement), in order of start: the two words never
    // overlap.
    let mut edits: Vec<(usize, usize, &[u8])> = Vec::new();
    let word = |i: usize, j: usize| {
        let inside = i > 0 && ident(text[i - 1]) || text.get(j).is_some_and(|&b| ident(b));
        !inside
    };
    for i in loc.find_iter(text) {
        let j = i + b"location".len();
        if word(i, j) && proxied(text, i, j) {
            edits.push((i, j, PROXY));
        }
    }
    for i in top.find_iter(text) {
        let j = i + b"top".len();
        if word(i, j) && top_proxied(text, i, j) {
            edits.push((i, j, TOP));
        }
    }
    if edits.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    edits.sort_unstable_by_key(|e| e.0);
    let mut out = Vec::with_capacity(text.len() + 16 * edits.len());
    let mut last = 0;
    for (i, j, with) in edits {
        out.extend_from_slice(&text[last..i]);
        out.extend_from_slice(with);
        last = j;
    }
    out.extend_from_slice(&text[last..]);
    std::borrow::Cow::Owned(out)
}

/// Whether the `location` at `i..j` is a window's or the document's.
fn proxied(text: &[u8], i: usize, j: usize) -> bool {
    if i > 0 && text[i - 1] == b'.' {
        // `OBJ.location`: OBJ a chain of windows, not itself a property.
        return chain_before(text, i - 1).is_some_and(|c| window_chain(&c));
    }
    // A bare `location`: not part of a path or a string's word
    // (`/js/location.js`), not a declaration, then one of Location's
    // members or `=`.
    if i > 0 && b"/\\-'\"`@#%~".contains(&text[i - 1]) || declared(text, i) {
        return false;
    }
    let after = text[j..].trim_ascii_start();
    match after {
        [b'.', ..] => member(after).is_some_and(|m| MEMBERS.contains(&m)),
        [b'=', b'=' | b'>', ..] => false,
        [b'=', ..] => true,
        _ => false,
    }
}

/// Whether the `top` at `i..j` is the page's window's.
fn top_proxied(text: &[u8], i: usize, j: usize) -> bool {
    if i > 0 && text[i - 1] == b'.' {
        // `window.top`, `self.top`, `parent.top`: not `el.style.top`.
        return chain_before(text, i - 1).is_some_and(|c| {
            c.iter()
                .all(|s| matches!(s, Seg::Name(n) if TOP_OWNERS.contains(n)))
        });
    }
    if i > 0 && b"/\\-'\"`@#%~".contains(&text[i - 1]) || declared(text, i) {
        return false;
    }
    let after = text[j..].trim_ascii_start();
    member(after).is_some_and(|m| TOP_MEMBERS.contains(&m)) || compared_to_window(text, i, j)
}

/// Whether the word at `i..j` is compared (`==`, `!=`, `===`, `!==`) with
/// a window's name (`self`, `window`, `parent`, `this`): `top != self`,
/// not `top == 0` (a variable of that name).
fn compared_to_window(text: &[u8], i: usize, j: usize) -> bool {
    const OTHERS: [&[u8]; 5] = [b"self", b"window", b"parent", b"this", b"globalThis"];
    let after = text[j..].trim_ascii_start();
    if after.starts_with(b"==") || after.starts_with(b"!=") {
        let rest = after[2..].strip_prefix(b"=").unwrap_or(&after[2..]);
        let rest = rest.trim_ascii_start();
        let end = rest.iter().position(|&b| !ident(b)).unwrap_or(rest.len());
        if OTHERS.contains(&&rest[..end]) && !rest[end..].starts_with(b".") {
            return true;
        }
    }
    let before = text[..i].trim_ascii_end();
    let Some(op) = before
        .strip_suffix(b"==")
        .or_else(|| before.strip_suffix(b"!="))
    else {
        return false;
    };
    let op = op
        .strip_suffix(b"=")
        .or_else(|| op.strip_suffix(b"!"))
        .unwrap_or(op);
    let op = op.trim_ascii_end();
    let start = op.iter().rposition(|&b| !ident(b)).map_or(0, |p| p + 1);
    OTHERS.contains(&&op[start..])
        && (start == 0 || op[start - 1] != b'.' || op[..start].ends_with(b"window."))
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

    #[test]
    fn top_parent_and_frames() {
        for (a, b) in [
            (
                "top.location.href",
                "__warchest_top.__warchest_location.href",
            ),
            (
                "window.top.location = u",
                "window.__warchest_top.__warchest_location = u",
            ),
            ("parent.location.href", "parent.__warchest_location.href"),
            (
                "window.parent.location.pathname",
                "window.parent.__warchest_location.pathname",
            ),
            ("self.location", "self.__warchest_location"),
            (
                "frames[0].location.href",
                "frames[0].__warchest_location.href",
            ),
            (
                "window.frames['a'].location",
                "window.frames['a'].__warchest_location",
            ),
            (
                "top.frames[i[0]].location",
                "__warchest_top.frames[i[0]].__warchest_location",
            ),
            (
                "window.top.document.location",
                "window.__warchest_top.document.__warchest_location",
            ),
            // Frame-busting: compared, then assigned.
            (
                "if (top != self) top.location = self.location;",
                "if (__warchest_top != self) __warchest_top.__warchest_location = self.__warchest_location;",
            ),
            ("if (self !== top) {}", "if (self !== __warchest_top) {}"),
            ("window.top === window", "window.__warchest_top === window"),
            ("x = window.top;", "x = window.__warchest_top;"),
            // Not windows.
            ("el.style.top = '3px'", "el.style.top = '3px'"),
            ("var top = r.top + 1;", "var top = r.top + 1;"),
            ("{top: 0, left: 1}", "{top: 0, left: 1}"),
            ("x = top + 1", "x = top + 1"),
            ("if (top == 0) {}", "if (top == 0) {}"),
            ("a.self == top", "a.self == top"),
            ("window.self == top", "window.self == __warchest_top"),
            ("top===this", "__warchest_top===this"),
            ("top.toFixed(2)", "top.toFixed(2)"),
            ("'left:0;top:0'", "'left:0;top:0'"),
            ("node.parent.location", "node.parent.location"),
            ("a[0].location", "a[0].location"),
            ("f()[0].location", "f()[0].location"),
            ("stop.location", "stop.location"),
            ("desktop == 1", "desktop == 1"),
        ] {
            assert_eq!(rw(a), b, "{a}");
        }
    }

    #[test]
    fn long_and_broken_chains_are_bounded() {
        let long = format!("{}location", "window.".repeat(100));
        assert_eq!(rw(&long), long);
        let open = format!("frames[{}].location", "x".repeat(1000));
        assert_eq!(rw(&open), open);
        assert_eq!(rw("].location"), "].location");
        assert_eq!(rw("[[].location"), "[[].location");
    }
}
