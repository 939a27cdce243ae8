//! A JSON value that keeps its keys in the order they were added: the WAT
//! envelope is written key for key in Common Crawl's order, which a map
//! sorted by key would lose.

use std::fmt::Write as _;

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// A number, written as given (the caller formats it).
    Num(String),
    /// An array.
    Arr(Vec<Json>),
    /// An object, keys in order.
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// An empty object.
    pub fn obj() -> Json {
        Json::Obj(Vec::new())
    }

    /// Adds `key: value` to an object (nothing for other values).
    pub fn put(&mut self, key: &str, value: impl Into<Json>) -> &mut Json {
        if let Json::Obj(v) = self {
            v.push((key.to_string(), value.into()));
        }
        self
    }

    /// The value of `key` in an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(v) => v.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether an object or array is empty.
    pub fn is_empty(&self) -> bool {
        match self {
            Json::Obj(v) => v.is_empty(),
            Json::Arr(v) => v.is_empty(),
            _ => false,
        }
    }

    /// The value as compact JSON text.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Str(s) => string(out, s),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => out.push_str(n),
            Json::Arr(v) => {
                out.push('[');
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    x.write(out);
                }
                out.push(']');
            }
            Json::Obj(v) => {
                out.push('{');
                for (i, (k, x)) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    string(out, k);
                    out.push(':');
                    x.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Writes `s` as a JSON string: runs of bytes that need no escape are
/// copied whole (every byte of a multi-byte UTF-8 sequence is 0x80 or
/// more, so only ASCII bytes are looked at), which keeps a page's text
/// from being pushed a character at a time.
pub fn string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..0x20 => "",
            _ => continue,
        };
        // `i` is an ASCII byte's index, hence a character boundary.
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.to_string())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}

impl From<u64> for Json {
    /// Numbers are strings in the WAT, as Common Crawl writes them.
    fn from(n: u64) -> Json {
        Json::Str(n.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_and_escaped() {
        let mut o = Json::obj();
        o.put("b", "x\"\n\u{1}é")
            .put("a", 5u64)
            .put("c", Json::Arr(vec![true.into()]));
        assert_eq!(o.to_text(), r#"{"b":"x\"\n\u0001é","a":"5","c":[true]}"#);
        let v: serde_json::Value = serde_json::from_str(&o.to_text()).unwrap();
        assert_eq!(v["b"], "x\"\n\u{1}é");
    }

    #[test]
    fn escapes_every_control_and_keeps_the_rest() {
        let all: String = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain("é€😀 \u{7f}\u{2028}".chars())
            .collect();
        let mut out = String::new();
        string(&mut out, &all);
        assert!(!out.bytes().any(|b| b < 0x20));
        let back: String = serde_json::from_str(&out).unwrap();
        assert_eq!(back, all);
        let mut out = String::new();
        string(&mut out, "a\tb\u{1f}c\\");
        assert_eq!(out, r#""a\tb\u001fc\\""#);
    }
}
