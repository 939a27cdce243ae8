//! robots.txt (RFC 9309): the rules of the group that names our product
//! token, else of the `*` group; the longest matching rule wins, Allow on a
//! tie; `*` matches any run of characters and a final `$` anchors the end.

/// The rules for one user agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Robots {
    /// (allow, pattern) in file order.
    rules: Vec<(bool, String)>,
}

/// A group: its user agents, and its rules (allow, pattern).
type Group = (Vec<String>, Vec<(bool, String)>);

/// The most of a robots.txt that is read (RFC 9309 section 2.5 asks for at
/// least 500 KiB).
pub const MAX_ROBOTS: usize = 512 << 10;

impl Robots {
    /// Everything allowed (no robots.txt, or a 4xx for it).
    pub fn allow_all() -> Robots {
        Robots::default()
    }

    /// Everything disallowed (a 5xx for robots.txt: RFC 9309 2.3.1.4).
    pub fn disallow_all() -> Robots {
        Robots {
            rules: vec![(false, "/".into())],
        }
    }

    /// The rules of `text` for `agent` (a product token such as
    /// `warchest`, matched case-insensitively).
    pub fn parse(text: &str, agent: &str) -> Robots {
        let agent = agent.to_ascii_lowercase();
        let mut groups: Vec<Group> = Vec::new();
        let mut in_agents = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            match k.as_str() {
                "user-agent" => {
                    if !in_agents {
                        groups.push((Vec::new(), Vec::new()));
                        in_agents = true;
                    }
                    if let Some(g) = groups.last_mut() {
                        g.0.push(v.to_ascii_lowercase());
                    }
                }
                "allow" | "disallow" => {
                    in_agents = false;
                    if let Some(g) = groups.last_mut()
                        && !v.is_empty()
                    {
                        g.1.push((k == "allow", v.to_string()));
                    }
                }
                _ => {}
            }
        }
        let pick = |want: &dyn Fn(&str) -> bool| -> Option<Vec<(bool, String)>> {
            let mut found = false;
            let mut rules = Vec::new();
            for (agents, r) in &groups {
                if agents.iter().any(|a| want(a)) {
                    found = true;
                    rules.extend(r.iter().cloned());
                }
            }
            found.then_some(rules)
        };
        let rules = pick(&|a| !a.is_empty() && a != "*" && agent.starts_with(a))
            .or_else(|| pick(&|a| a == "*"))
            .unwrap_or_default();
        Robots { rules }
    }

    /// Whether `path_and_query` may be fetched. `/robots.txt` always may.
    pub fn allowed(&self, path_and_query: &str) -> bool {
        if path_and_query == "/robots.txt" {
            return true;
        }
        let mut best: Option<(usize, bool)> = None;
        for (allow, pat) in &self.rules {
            if matches(pat.as_bytes(), path_and_query.as_bytes()) {
                let len = pat.len();
                best = match best {
                    Some((l, a)) if l > len || (l == len && a) => Some((l, a)),
                    _ => Some((len, *allow)),
                };
            }
        }
        best.is_none_or(|(_, a)| a)
    }
}

/// Whether `pat` matches a prefix of `s` (`*` any run, final `$` the end).
/// Iterative with one backtrack point, so linear-ish and never recursive.
fn matches(pat: &[u8], s: &[u8]) -> bool {
    let (pat, anchored) = match pat.strip_suffix(b"$") {
        Some(p) => (p, true),
        None => (pat, false),
    };
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p == pat.len() {
            if !anchored || i == s.len() {
                return true;
            }
        } else if pat[p] == b'*' {
            star = Some((p, i));
            p += 1;
            continue;
        } else if i < s.len() && pat[p] == s[i] {
            p += 1;
            i += 1;
            continue;
        }
        match star {
            Some((sp, si)) if si < s.len() => {
                star = Some((sp, si + 1));
                p = sp + 1;
                i = si + 1;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_longest_match() {
        let text = "User-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /private\nAllow: /private/ok\nDisallow: /*.pdf$\n";
        let r = Robots::parse(text, "warchest");
        assert!(r.allowed("/"));
        assert!(!r.allowed("/private/x"));
        assert!(r.allowed("/private/ok/x"));
        assert!(!r.allowed("/a/b.pdf"));
        assert!(r.allowed("/a/b.pdf?x"));
        assert!(r.allowed("/robots.txt"));
        let r = Robots::parse(
            "User-agent: Warchest\nDisallow: /\nUser-agent: *\nAllow: /\n",
            "warchest/0.1",
        );
        assert!(!r.allowed("/x"));
        assert!(!Robots::disallow_all().allowed("/x"));
        assert!(Robots::allow_all().allowed("/x"));
        assert!(matches(b"/a*b*c", b"/axxbyyc"));
        assert!(!matches(b"/a*b*c$", b"/axxbyycd"));
    }
}
