//! The filter language's lexer and recursive-descent parser.
//!
//! Hostile input is bounded three ways before any work is done on it: the
//! expression's length ([`MAX_EXPR_LEN`]), the nesting of `!` and
//! parentheses ([`MAX_DEPTH`], which bounds the parser's and the evaluator's
//! recursion) and the number of comparisons and regular expressions
//! ([`MAX_COMPARISONS`], [`MAX_REGEXES`], each regex also size-limited).

use std::fmt;

use regex::Regex;

/// Longest expression accepted, in bytes.
pub const MAX_EXPR_LEN: usize = 16 << 10;
/// Deepest nesting of `!` and parentheses.
pub const MAX_DEPTH: usize = 64;
/// Most comparisons in one expression.
pub const MAX_COMPARISONS: usize = 1024;
/// Most regular expressions (`=~`, `!~`) in one expression.
pub const MAX_REGEXES: usize = 64;
/// Largest compiled form of one regular expression, in bytes.
const REGEX_SIZE_LIMIT: usize = 256 << 10;

/// Why an expression does not parse: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("filter expression, column {column}: {message}")]
pub struct FilterError {
    /// Byte offset in the expression.
    pub offset: usize,
    /// 1-based column (in characters) of that offset.
    pub column: usize,
    /// What was expected and what was found.
    pub message: String,
}

/// A field an expression can look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldRef {
    /// A WARC header field by name (first occurrence).
    Warc(String),
    /// An HTTP header field of the record's HTTP message (first occurrence).
    Http(String),
    /// `:status`, `http:status`: the HTTP response status code.
    Status,
    /// `:method`: the HTTP request method.
    Method,
    /// `:content-type`: the payload's media type.
    ContentType,
    /// `:uri`: WARC-Target-URI without `<>`.
    Uri,
    /// `:host`: the host of the target URI, lower-cased.
    Host,
    /// `:type`: WARC-Type.
    Type,
    /// `:length`: Content-Length.
    Length,
    /// `:offset`: where the record is stored.
    Offset,
}

impl FieldRef {
    /// True when the field needs the record's HTTP head.
    pub(crate) fn uses_http(&self) -> bool {
        matches!(
            self,
            FieldRef::Http(_) | FieldRef::Status | FieldRef::Method | FieldRef::ContentType
        )
    }
}

/// The pseudo-fields, `:name`, for messages.
pub(crate) const PSEUDO_FIELDS: &str =
    ":status, :method, :content-type, :uri, :host, :type, :length, :offset";

/// A comparison operator and its right-hand side.
#[derive(Debug, Clone)]
pub(crate) enum Test {
    StrEq(String),
    StrNe(String),
    NumEq(i64),
    NumNe(i64),
    Lt(i64),
    Le(i64),
    Gt(i64),
    Ge(i64),
    Match(Regex),
    NoMatch(Regex),
}

/// A parsed expression.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Cmp(FieldRef, Test),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// A field name or a number: `[A-Za-z0-9:_.-]+`.
    Word(String),
    Str(String),
    Op(&'static str),
    End,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Word(w) => write!(f, "`{w}`"),
            Tok::Str(s) => write!(f, "string {s:?}"),
            Tok::Op(o) => write!(f, "`{o}`"),
            Tok::End => f.write_str("the end of the expression"),
        }
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'.' | b'-')
}

/// Operators, longest first so `<=` wins over `<`.
const OPS: &[&str] = &[
    "&&", "||", "==", "!=", "=~", "!~", "<=", ">=", "<", ">", "!", "(", ")",
];

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn error(&self, offset: usize, message: impl Into<String>) -> FilterError {
        error_at(self.src, offset, message)
    }

    /// The next token and its offset.
    fn next(&mut self) -> Result<(Tok, usize), FilterError> {
        let bytes = self.src.as_bytes();
        while self.pos < bytes.len() && bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&b) = bytes.get(start) else {
            return Ok((Tok::End, start));
        };
        if b == b'"' || b == b'\'' {
            // No escapes, as in jwarc: a backslash stays a backslash, which
            // is what regular expressions want. The other quote character
            // writes a string holding this one.
            let body = start + 1;
            return match memchr::memchr(b, &bytes[body..]) {
                Some(n) => {
                    self.pos = body + n + 1;
                    Ok((Tok::Str(self.src[body..body + n].to_string()), start))
                }
                None => Err(self.error(start, "string not terminated: add the closing quote")),
            };
        }
        if is_word_byte(b) {
            let n = bytes[start..]
                .iter()
                .take_while(|&&c| is_word_byte(c))
                .count();
            self.pos = start + n;
            return Ok((Tok::Word(self.src[start..start + n].to_string()), start));
        }
        for op in OPS {
            if bytes[start..].starts_with(op.as_bytes()) {
                self.pos = start + op.len();
                return Ok((Tok::Op(op), start));
            }
        }
        let c = self.src[start..].chars().next().unwrap_or('?');
        let hint = match c {
            '&' => " (did you mean `&&`?)",
            '|' => " (did you mean `||`?)",
            '=' => " (did you mean `==`?)",
            _ => "",
        };
        Err(self.error(start, format!("unexpected character `{c}`{hint}")))
    }
}

fn error_at(src: &str, offset: usize, message: impl Into<String>) -> FilterError {
    let column = src
        .get(..offset)
        .map_or(offset, |s| s.chars().count())
        .saturating_add(1);
    FilterError {
        offset,
        column,
        message: message.into(),
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    tok: Tok,
    at: usize,
    depth: usize,
    comparisons: usize,
    regexes: usize,
}

/// Parses a whole expression.
pub(crate) fn parse(src: &str) -> Result<Expr, FilterError> {
    if src.len() > MAX_EXPR_LEN {
        return Err(error_at(
            src,
            MAX_EXPR_LEN,
            format!(
                "expression longer than {MAX_EXPR_LEN} bytes ({} bytes)",
                src.len()
            ),
        ));
    }
    let mut lexer = Lexer { src, pos: 0 };
    let (tok, at) = lexer.next()?;
    let mut p = Parser {
        lexer,
        tok,
        at,
        depth: 0,
        comparisons: 0,
        regexes: 0,
    };
    if p.tok == Tok::End {
        return Err(
            p.error("empty expression: expected a comparison such as `warc-type == \"response\"`")
        );
    }
    let e = p.expr()?;
    match &p.tok {
        Tok::End => Ok(e),
        Tok::Op(")") => Err(p.error("`)` without a matching `(`")),
        t => Err(p.error(format!("expected `&&`, `||` or the end, found {t}"))),
    }
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> FilterError {
        self.lexer.error(self.at, message)
    }

    fn bump(&mut self) -> Result<(), FilterError> {
        let (t, at) = self.lexer.next()?;
        self.tok = t;
        self.at = at;
        Ok(())
    }

    /// `unary { ("&&" | "||") unary }`, one operator only unless
    /// parenthesised: jwarc groups `a && b || c` as `a && (b || c)`, C-like
    /// languages as `(a && b) || c`, so the mix is refused rather than
    /// silently meaning one of them.
    fn expr(&mut self) -> Result<Expr, FilterError> {
        let first = self.unary()?;
        let mut terms = vec![first];
        let mut op: Option<&'static str> = None;
        while let Tok::Op(o @ ("&&" | "||")) = self.tok {
            match op {
                Some(prev) if prev != o => {
                    return Err(self.error(format!(
                        "`&&` and `||` mixed without parentheses: write `(a && b) || c` or \
                         `a && (b || c)` (found `{o}` after `{prev}`)"
                    )));
                }
                _ => op = Some(o),
            }
            self.bump()?;
            terms.push(self.unary()?);
        }
        Ok(match op {
            None => terms.pop().unwrap_or(Expr::And(Vec::new())),
            Some("&&") => Expr::And(terms),
            Some(_) => Expr::Or(terms),
        })
    }

    fn enter(&mut self) -> Result<(), FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(format!(
                "nesting deeper than {MAX_DEPTH} levels of `!` and parentheses"
            )));
        }
        Ok(())
    }

    /// `"!" unary | "(" expr ")" | comparison`
    fn unary(&mut self) -> Result<Expr, FilterError> {
        match self.tok {
            Tok::Op("!") => {
                self.enter()?;
                self.bump()?;
                let inner = self.unary()?;
                self.depth -= 1;
                Ok(Expr::Not(Box::new(inner)))
            }
            Tok::Op("(") => {
                self.enter()?;
                let open = self.at;
                self.bump()?;
                let inner = self.expr()?;
                if self.tok != Tok::Op(")") {
                    let found = self.tok.to_string();
                    return Err(self.lexer.error(
                        self.at,
                        format!(
                            "expected `)` to close the `(` at column {}, found {found}",
                            error_at(self.lexer.src, open, "").column
                        ),
                    ));
                }
                self.bump()?;
                self.depth -= 1;
                Ok(inner)
            }
            _ => self.comparison(),
        }
    }

    /// `field op value`
    fn comparison(&mut self) -> Result<Expr, FilterError> {
        let name = match &self.tok {
            Tok::Word(w) => w.clone(),
            t => {
                return Err(self.error(format!(
                    "expected a field name (a WARC field, `http:NAME` or one of {PSEUDO_FIELDS}), `!` or `(`, found {t}"
                )));
            }
        };
        let field = self.field(&name)?;
        self.comparisons += 1;
        if self.comparisons > MAX_COMPARISONS {
            return Err(self.error(format!("more than {MAX_COMPARISONS} comparisons")));
        }
        self.bump()?;
        let op = match self.tok {
            Tok::Op(o @ ("==" | "!=" | "=~" | "!~" | "<" | "<=" | ">" | ">=")) => o,
            ref t => {
                return Err(self.error(format!(
                    "expected a comparison operator (==, !=, =~, !~, <, <=, >, >=) after `{name}`, found {t}"
                )));
            }
        };
        self.bump()?;
        let test = match op {
            "==" | "!=" => match &self.tok {
                Tok::Str(s) if op == "==" => Test::StrEq(s.clone()),
                Tok::Str(s) => Test::StrNe(s.clone()),
                Tok::Word(_) => {
                    let n = self.number(op)?;
                    if op == "==" {
                        Test::NumEq(n)
                    } else {
                        Test::NumNe(n)
                    }
                }
                t => {
                    return Err(self.error(format!(
                        "expected a string or a number after `{op}`, found {t}"
                    )));
                }
            },
            "=~" | "!~" => {
                let Tok::Str(s) = &self.tok else {
                    return Err(self.error(format!(
                        "expected a regular expression in quotes after `{op}`, found {}",
                        self.tok
                    )));
                };
                self.regexes += 1;
                if self.regexes > MAX_REGEXES {
                    return Err(self.error(format!("more than {MAX_REGEXES} regular expressions")));
                }
                // Anchored at both ends: the whole value must match, as in jwarc.
                let re = regex::RegexBuilder::new(&format!("^(?:{s})$"))
                    .size_limit(REGEX_SIZE_LIMIT)
                    .dfa_size_limit(REGEX_SIZE_LIMIT)
                    .nest_limit(MAX_DEPTH as u32)
                    .build()
                    .map_err(|e| {
                        self.error(format!(
                            "bad regular expression: {}",
                            e.to_string().lines().last().unwrap_or("invalid")
                        ))
                    })?;
                if op == "=~" {
                    Test::Match(re)
                } else {
                    Test::NoMatch(re)
                }
            }
            _ => {
                let n = match &self.tok {
                    Tok::Word(_) => self.number(op)?,
                    t => {
                        return Err(
                            self.error(format!("expected a number after `{op}`, found {t}"))
                        );
                    }
                };
                match op {
                    "<" => Test::Lt(n),
                    "<=" => Test::Le(n),
                    ">" => Test::Gt(n),
                    _ => Test::Ge(n),
                }
            }
        };
        self.bump()?;
        Ok(Expr::Cmp(field, test))
    }

    fn number(&self, op: &str) -> Result<i64, FilterError> {
        let Tok::Word(w) = &self.tok else {
            return Err(self.error(format!("expected a number after `{op}`")));
        };
        let digits = w.strip_prefix('-').unwrap_or(w);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            let what = if matches!(op, "==" | "!=") {
                "a string in quotes or a number"
            } else {
                "a number"
            };
            return Err(self.error(format!("expected {what} after `{op}`, found `{w}`")));
        }
        w.parse::<i64>()
            .map_err(|_| self.error(format!("number `{w}` out of range")))
    }

    fn field(&self, name: &str) -> Result<FieldRef, FilterError> {
        if let Some(p) = name.strip_prefix(':') {
            return match p.to_ascii_lowercase().as_str() {
                "status" => Ok(FieldRef::Status),
                "method" => Ok(FieldRef::Method),
                "content-type" => Ok(FieldRef::ContentType),
                "uri" => Ok(FieldRef::Uri),
                "host" => Ok(FieldRef::Host),
                "type" => Ok(FieldRef::Type),
                "length" => Ok(FieldRef::Length),
                "offset" => Ok(FieldRef::Offset),
                _ => Err(self.error(format!(
                    "unknown pseudo-field `{name}`: expected one of {PSEUDO_FIELDS}"
                ))),
            };
        }
        // Bytes: byte 5 of a name may fall inside a character.
        if name
            .as_bytes()
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"http:"))
        {
            let h = &name[5..];
            if h.is_empty() || h.contains(':') {
                return Err(self.error(format!(
                    "`{name}`: expected an HTTP header name after `http:`"
                )));
            }
            if h.eq_ignore_ascii_case("status") {
                return Ok(FieldRef::Status);
            }
            return Ok(FieldRef::Http(h.to_string()));
        }
        if name.contains(':') || name.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            return Err(self.error(format!(
                "`{name}` is not a field name: expected a WARC field, `http:NAME` or one of {PSEUDO_FIELDS}"
            )));
        }
        Ok(FieldRef::Warc(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders an expression back in a canonical form, to compare shapes.
    fn show(e: &Expr) -> String {
        match e {
            Expr::And(v) => format!("(and {})", v.iter().map(show).collect::<Vec<_>>().join(" ")),
            Expr::Or(v) => format!("(or {})", v.iter().map(show).collect::<Vec<_>>().join(" ")),
            Expr::Not(e) => format!("(not {})", show(e)),
            Expr::Cmp(f, t) => {
                let f = match f {
                    FieldRef::Warc(n) => n.clone(),
                    FieldRef::Http(n) => format!("http:{n}"),
                    other => format!("{other:?}"),
                };
                let t = match t {
                    Test::StrEq(s) => format!("== {s:?}"),
                    Test::StrNe(s) => format!("!= {s:?}"),
                    Test::NumEq(n) => format!("== {n}"),
                    Test::NumNe(n) => format!("!= {n}"),
                    Test::Lt(n) => format!("< {n}"),
                    Test::Le(n) => format!("<= {n}"),
                    Test::Gt(n) => format!("> {n}"),
                    Test::Ge(n) => format!(">= {n}"),
                    Test::Match(r) => format!("=~ {}", r.as_str()),
                    Test::NoMatch(r) => format!("!~ {}", r.as_str()),
                };
                format!("[{f} {t}]")
            }
        }
    }

    #[test]
    fn parses() {
        let cases: &[(&str, &str)] = &[
            ("warc-type == \"response\"", "[warc-type == \"response\"]"),
            (
                "warc-type == \"response\" && http:status == 200 && :content-type =~ \"text/html\"",
                "(and [warc-type == \"response\"] [Status == 200] [ContentType =~ ^(?:text/html)$])",
            ),
            ("a==1||b!=-2", "(or [a == 1] [b != -2])"),
            ("!(a == 'x\"y')", "(not [a == \"x\\\"y\"])"),
            ("! ! a == \"\"", "(not (not [a == \"\"]))"),
            (
                "(a < 1 && b <= 2) || (c > 3 && d >= 4)",
                "(or (and [a < 1] [b <= 2]) (and [c > 3] [d >= 4]))",
            ),
            (
                "a == \"1\" && (b == \"2\" || c == \"3\")",
                "(and [a == \"1\"] (or [b == \"2\"] [c == \"3\"]))",
            ),
            (
                "http:Content-Type !~ \"image/.*\"",
                "[http:Content-Type !~ ^(?:image/.*)$]",
            ),
            ("HTTP:STATUS == 404", "[Status == 404]"),
            (":STATUS != 200", "[Status != 200]"),
            (":method == \"POST\"", "[Method == \"POST\"]"),
            (
                ":uri =~ 'https?://[^/]*/\\d+'",
                "[Uri =~ ^(?:https?://[^/]*/\\d+)$]",
            ),
            (":host == \"example.com\"", "[Host == \"example.com\"]"),
            (":type == \"revisit\"", "[Type == \"revisit\"]"),
            (":length > 1000000", "[Length > 1000000]"),
            (":offset >= 0", "[Offset >= 0]"),
            ("  ( ( a == 1 ) )  ", "[a == 1]"),
            ("warc.x_y-z == \"\"", "[warc.x_y-z == \"\"]"),
            ("a == \"é\"", "[a == \"é\"]"),
        ];
        for (src, want) in cases {
            let e = parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
            assert_eq!(show(&e), *want, "{src}");
        }
    }

    #[test]
    fn errors_say_where_and_what() {
        // (expression, column, part of the message)
        let cases: &[(&str, usize, &str)] = &[
            ("", 1, "empty expression"),
            ("   ", 4, "empty expression"),
            ("warc-type", 10, "expected a comparison operator"),
            (
                "warc-type ==",
                13,
                "expected a string or a number after `==`",
            ),
            (
                "warc-type == response",
                14,
                "expected a string in quotes or a number",
            ),
            ("a < \"1\"", 5, "expected a number after `<`"),
            ("a < x", 5, "expected a number after `<`, found `x`"),
            ("a =~ 1", 6, "expected a regular expression in quotes"),
            ("a =~ \"(\"", 6, "bad regular expression"),
            ("a == \"x", 6, "string not terminated"),
            ("a == 1 & b == 2", 8, "did you mean `&&`?"),
            ("a == 1 | b == 2", 8, "did you mean `||`?"),
            ("a = 1", 3, "did you mean `==`?"),
            (
                "a == 1 b == 2",
                8,
                "expected `&&`, `||` or the end, found `b`",
            ),
            (
                "a == 1 && b == 2 || c == 3",
                18,
                "mixed without parentheses",
            ),
            (
                "a == 1 || b == 2 && c == 3",
                18,
                "mixed without parentheses",
            ),
            ("(a == 1", 8, "expected `)` to close the `(` at column 1"),
            ("a == 1)", 7, "`)` without a matching `(`"),
            ("&& a == 1", 1, "expected a field name"),
            ("!", 2, "expected a field name"),
            (":nope == 1", 1, "unknown pseudo-field `:nope`"),
            ("http: == 1", 1, "expected an HTTP header name"),
            ("a:b == 1", 1, "is not a field name"),
            ("200 == 1", 1, "is not a field name"),
            ("a == 99999999999999999999", 6, "out of range"),
            ("a == 1 && é", 11, "unexpected character `é`"),
            ("é == 1", 1, "unexpected character"),
        ];
        for (src, col, msg) in cases {
            let e = parse(src).expect_err(src);
            assert_eq!(e.column, *col, "{src}: {e}");
            assert!(e.message.contains(msg), "{src}: {e}");
            assert!(
                e.to_string().starts_with("filter expression, column "),
                "{e}"
            );
        }
    }

    #[test]
    fn hostile_expressions_are_refused_not_overflowed() {
        let deep = format!("{}a == 1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(parse(&deep).unwrap_err().message.contains("longer than"));
        let deep = format!("{}a == 1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(parse(&deep).unwrap_err().message.contains("nesting deeper"));
        let nots = format!("{}a == 1", "!".repeat(5000));
        assert!(parse(&nots).unwrap_err().message.contains("nesting deeper"));
        let ok = format!("{}a == 1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        let many = vec!["a == 1"; MAX_COMPARISONS + 1].join("&&");
        assert!(parse(&many).unwrap_err().message.contains("comparisons"));
        let many = vec!["a =~ \"x\""; MAX_REGEXES + 1].join("||");
        assert!(
            parse(&many)
                .unwrap_err()
                .message
                .contains("regular expressions")
        );
        let huge = "a =~ \"(((a{100}){100}){100})\"";
        assert!(
            parse(huge)
                .unwrap_err()
                .message
                .contains("bad regular expression")
        );
        // A long flat chain is no recursion at all.
        let chain = vec!["a == 1"; MAX_COMPARISONS].join(" || ");
        assert!(parse(&chain).is_ok());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn any_text_parses_or_errors_inside_it(s in "[ a-z:\"'()!&|=~<>0-9-]{0,60}") {
            if let Err(e) = parse(&s) {
                proptest::prop_assert!(e.offset <= s.len());
                proptest::prop_assert!(e.column <= s.chars().count() + 1);
            }
        }
    }
}
