//! URI rules shared by capture (redirect targets) and replay (links).

/// Removes `.` and `..` segments (RFC 3986 section 5.2.4); a path that
/// started with `/` keeps it.
pub fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segs: Vec<&str> = path.split('/').collect();
    let last = segs.len().saturating_sub(1);
    for (i, s) in segs.iter().enumerate() {
        match *s {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let j = out.join("/");
    if path.starts_with('/') && !j.starts_with('/') {
        format!("/{j}")
    } else {
        j
    }
}
