//! A small, strict JSON parser (RFC 8259) for zerobox's `--status-fd` events and
//! `zerobox snapshot … --json` output.
//!
//! std has no JSON support and this crate takes no dependencies, so it carries its
//! own. Strict means: exactly one value with only whitespace around it, no trailing
//! commas, no leading zeros, no comments, no control characters inside strings, no
//! unpaired UTF-16 surrogates in `\u` escapes, and no duplicate object keys (zerobox
//! never writes them, so one would mean a confused reader, not data to pick from).
//!
//! Numbers keep the text they were written as: zerobox reports mtimes in
//! nanoseconds, which do not fit in an `f64` exactly.

use std::collections::BTreeMap;
use std::fmt;

/// Nesting deeper than this is refused, so hostile input cannot overflow the stack.
const MAX_DEPTH: usize = 256;

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number, exactly as written.
    Number(Number),
    /// A string, with escapes decoded.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object; keys are unique and kept in sorted order.
    Object(BTreeMap<String, Json>),
}

/// A JSON number, kept as its source text so that 64-bit integers survive exactly.
/// Two numbers are equal when their text is (`1.0` and `1` differ).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number(String);

impl Number {
    /// The number as written, e.g. `-12.5e3`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn is_integer(&self) -> bool {
        !self.0.contains(['.', 'e', 'E'])
    }

    /// The value if it is written as an integer (no fraction, no exponent) and fits.
    pub fn as_i64(&self) -> Option<i64> {
        if self.is_integer() {
            self.0.parse().ok()
        } else {
            None
        }
    }

    /// The value if it is written as a non-negative integer and fits.
    pub fn as_u64(&self) -> Option<u64> {
        if self.is_integer() {
            self.0.parse().ok()
        } else {
            None
        }
    }

    /// The nearest `f64` (infinite when out of range).
    pub fn as_f64(&self) -> f64 {
        // The grammar checked by the parser is a subset of what `f64::from_str` takes.
        self.0.parse().unwrap_or(f64::NAN)
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a text is not valid JSON, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset into the input where the problem was found.
    pub offset: usize,
    /// What is wrong, e.g. `expected ',' or ']'`.
    pub message: String,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid JSON at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for JsonError {}

static NULL: Json = Json::Null;

impl Json {
    /// Parses exactly one JSON value from `text`.
    ///
    /// ```
    /// use zerobox::Json;
    /// let ev = Json::parse(r#"{"v":1,"event":"child_exit","code":3}"#)?;
    /// assert_eq!(ev["event"].as_str(), Some("child_exit"));
    /// assert_eq!(ev["code"].as_i64(), Some(3));
    /// assert!(ev["signal"].is_null());
    /// assert!(Json::parse("[1,]").is_err());
    /// # Ok::<(), zerobox::json::JsonError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Json, JsonError> {
        let mut p = Parser { s: text.as_bytes(), text, pos: 0 };
        p.skip_ws();
        let v = p.value(0)?;
        p.skip_ws();
        if p.pos != p.s.len() {
            return Err(p.err("unexpected characters after the JSON value"));
        }
        Ok(v)
    }

    /// Parses exactly one JSON value from UTF-8 bytes (invalid UTF-8 is an error).
    pub fn from_slice(bytes: &[u8]) -> Result<Json, JsonError> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Json::parse(text),
            Err(e) => Err(JsonError { offset: e.valid_up_to(), message: "invalid UTF-8".to_string() }),
        }
    }

    /// The member `key` of an object; `None` for a missing key or a non-object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(m) => m.get(key),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number, if this is one.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Json::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The integer, if this is a number written as an integer that fits in `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        self.as_number().and_then(Number::as_i64)
    }

    /// The integer, if this is a number written as an integer that fits in `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        self.as_number().and_then(Number::as_u64)
    }

    /// The number as an `f64`, if this is a number.
    pub fn as_f64(&self) -> Option<f64> {
        self.as_number().map(Number::as_f64)
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The members, if this is an object.
    pub fn as_object(&self) -> Option<&BTreeMap<String, Json>> {
        match self {
            Json::Object(m) => Some(m),
            _ => None,
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }
}

/// `json["key"]`: the member, or `Null` when it is missing or `json` is not an object.
impl std::ops::Index<&str> for Json {
    type Output = Json;
    fn index(&self, key: &str) -> &Json {
        self.get(key).unwrap_or(&NULL)
    }
}

/// `json[i]`: the element, or `Null` when it is missing or `json` is not an array.
impl std::ops::Index<usize> for Json {
    type Output = Json;
    fn index(&self, i: usize) -> &Json {
        self.as_array().and_then(|a| a.get(i)).unwrap_or(&NULL)
    }
}

/// Compact JSON text; `Json::parse` of it gives back an equal value.
impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Number(n) => f.write_str(n.as_str()),
            Json::String(s) => write_string(f, s),
            Json::Array(a) => {
                f.write_str("[")?;
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Json::Object(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write_string(f, k)?;
                    write!(f, ":{v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

fn write_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, message: &str) -> JsonError {
        JsonError { offset: self.pos, message: message.to_string() }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        match self.peek() {
            None => Err(self.err("unexpected end of input")),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("expected a JSON value")),
        }
    }

    fn literal(&mut self, word: &str, v: Json) -> Result<Json, JsonError> {
        if self.s[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.err("expected a JSON value"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        self.pos += 1; // '{'
        let mut m = BTreeMap::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(m));
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key"));
            }
            let key_at = self.pos;
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.err("expected ':'"));
            }
            self.pos += 1;
            self.skip_ws();
            let v = self.value(depth)?;
            if m.insert(key, v).is_some() {
                return Err(JsonError { offset: key_at, message: "duplicate key".to_string() });
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(m));
                }
                _ => return Err(self.err("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        self.pos += 1; // '['
        let mut a = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(a));
        }
        loop {
            a.push(self.value(depth)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(a));
                }
                _ => return Err(self.err("expected ',' or ']'")),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Json, JsonError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.err("leading zeros are not allowed"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("expected a digit")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.err("expected a digit after '.'"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.err("expected a digit in the exponent"));
            }
        }
        Ok(Json::Number(Number(self.text[start..self.pos].to_string())))
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                _ => return Err(self.err("expected 4 hex digits after \\u")),
            };
            v = v * 16 + u32::from(d);
            self.pos += 1;
        }
        Ok(v)
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            // Copy a run of plain characters at once. It stops at an ASCII byte, so
            // both ends lie on UTF-8 character boundaries of the (valid) input.
            let run = self.pos;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(&self.text[run..self.pos]);
            match self.peek() {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let c = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            out.push(self.unicode_escape()?);
                            continue;
                        }
                        _ => return Err(self.err("invalid escape")),
                    };
                    self.pos += 1;
                    out.push(c);
                }
                Some(_) => return Err(self.err("control character in string")),
            }
        }
    }

    /// After `\u`: one code point, combining a UTF-16 surrogate pair.
    fn unicode_escape(&mut self) -> Result<char, JsonError> {
        let at = self.pos;
        let hi = self.hex4()?;
        let cp = match hi {
            0xD800..=0xDBFF => {
                if !self.s[self.pos..].starts_with(b"\\u") {
                    return Err(JsonError { offset: at, message: "unpaired surrogate".to_string() });
                }
                self.pos += 2;
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(JsonError { offset: at, message: "unpaired surrogate".to_string() });
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(JsonError { offset: at, message: "unpaired surrogate".to_string() }),
            _ => hi,
        };
        // Cannot fail: surrogates are excluded above and a pair tops out at U+10FFFF.
        char::from_u32(cp).ok_or_else(|| self.err("invalid code point"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Json {
        Json::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn bad(s: &str) -> JsonError {
        match Json::parse(s) {
            Ok(v) => panic!("{s:?} parsed as {v:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn scalars() {
        assert_eq!(ok("null"), Json::Null);
        assert_eq!(ok(" true "), Json::Bool(true));
        assert_eq!(ok("\n\tfalse\r\n"), Json::Bool(false));
        assert_eq!(ok(r#""hi""#), Json::String("hi".into()));
    }

    #[test]
    fn numbers() {
        assert_eq!(ok("0").as_i64(), Some(0));
        assert_eq!(ok("-0").as_i64(), Some(0));
        assert_eq!(ok("-12").as_i64(), Some(-12));
        assert_eq!(ok("1795956314745996147").as_i64(), Some(1795956314745996147));
        assert_eq!(ok("18446744073709551615").as_u64(), Some(u64::MAX));
        assert_eq!(ok("18446744073709551616").as_u64(), None);
        assert_eq!(ok("-1").as_u64(), None);
        assert_eq!(ok("1.5").as_i64(), None);
        assert_eq!(ok("1.5").as_f64(), Some(1.5));
        assert_eq!(ok("-2.5E-3").as_f64(), Some(-0.0025));
        assert_eq!(ok("1e+2").as_f64(), Some(100.0));
        assert_eq!(ok("1e2").as_i64(), None);
        assert_eq!(ok("1e400").as_f64(), Some(f64::INFINITY));
        assert_eq!(ok("12.50").as_number().unwrap().as_str(), "12.50");
        for s in ["01", "-", "-a", "1.", ".5", "1e", "1e+", "+1", "0x10", "1.e3", "--1", "NaN", "Infinity"] {
            bad(s);
        }
        assert_eq!(bad("01").message, "leading zeros are not allowed");
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(ok(r#""a\"b\\c\/d""#).as_str(), Some("a\"b\\c/d"));
        assert_eq!(ok(r#""\b\f\n\r\t""#).as_str(), Some("\u{8}\u{c}\n\r\t"));
        assert_eq!(ok(r#""\u0041\u00e9\u20AC""#).as_str(), Some("Aé€"));
        assert_eq!(ok(r#""\u0000""#).as_str(), Some("\0"));
        // U+1F600 as a surrogate pair, and as raw UTF-8
        assert_eq!(ok(r#""\ud83d\ude00""#).as_str(), Some("😀"));
        assert_eq!(ok("\"😀 ü\"").as_str(), Some("😀 ü"));
        assert_eq!(ok(r#""x\uDBFF\uDFFFy""#).as_str(), Some("x\u{10FFFF}y"));
    }

    #[test]
    fn bad_strings() {
        assert_eq!(bad(r#""\ud83d""#).message, "unpaired surrogate");
        assert_eq!(bad(r#""\ud83dx""#).message, "unpaired surrogate");
        assert_eq!(bad(r#""\ud83d\u0041""#).message, "unpaired surrogate");
        assert_eq!(bad(r#""\ude00""#).message, "unpaired surrogate");
        assert_eq!(bad(r#""\u12""#).message, "expected 4 hex digits after \\u");
        assert_eq!(bad(r#""\x""#).message, "invalid escape");
        assert_eq!(bad("\"a\nb\"").message, "control character in string");
        assert_eq!(bad("\"a\tb\"").message, "control character in string");
        assert_eq!(bad(r#""abc"#).message, "unterminated string");
        assert_eq!(bad(r#"'a'"#).message, "expected a JSON value");
    }

    #[test]
    fn nesting() {
        let v = ok(r#" {"a": [1, {"b": null}, []], "c": {}, "d": "x"} "#);
        assert_eq!(v["a"][0].as_i64(), Some(1));
        assert!(v["a"][1]["b"].is_null());
        assert_eq!(v["a"][2].as_array().map(<[Json]>::len), Some(0));
        assert_eq!(v["c"].as_object().map(BTreeMap::len), Some(0));
        assert_eq!(v["d"].as_str(), Some("x"));
        assert!(v["missing"].is_null());
        assert!(v["a"][9].is_null());
        assert!(v["d"]["not an object"].is_null());
        assert_eq!(ok("[[[[[]]]]]")[0][0][0][0].as_array().map(<[Json]>::len), Some(0));

        let deep_ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        ok(&deep_ok);
        let deep_bad = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(bad(&deep_bad).message, "nesting too deep");
    }

    #[test]
    fn bad_structure() {
        for s in [
            "",
            " ",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "{\"a\":}",
            "[",
            "]",
            "{",
            "1 2",
            "nul",
            "truex",
            "[true false]",
            "{\"a\":1 \"b\":2}",
            "/* c */ 1",
        ] {
            bad(s);
        }
        assert_eq!(bad("{\"a\":1,\"a\":2}").message, "duplicate key");
        assert_eq!(bad("1 2").offset, 2);
        assert_eq!(bad("[1,]").offset, 3);
    }

    #[test]
    fn bytes() {
        assert_eq!(Json::from_slice(b"[\"\xc3\xa9\"]").unwrap()[0].as_str(), Some("é"));
        let e = Json::from_slice(b"[\"\xff\"]").unwrap_err();
        assert_eq!((e.offset, e.message.as_str()), (2, "invalid UTF-8"));
    }

    #[test]
    fn display_round_trips() {
        for s in [r#"{"a":[1,-2.5e3,true,false,null],"b":"q\"\\\n\u0001é😀","c":{}}"#, "[]", r#""\u001f""#] {
            let v = ok(s);
            assert_eq!(ok(&v.to_string()), v, "{s}");
        }
        assert_eq!(ok(r#"{"b":1,"a":[true,null]}"#).to_string(), r#"{"a":[true,null],"b":1}"#);
        assert_eq!(ok(r#""\u0001\t""#).to_string(), r#""\u0001\t""#);
    }

    #[test]
    fn status_events() {
        let v = ok(r#"{"v":1,"event":"child_exit","signal":9}"#);
        assert_eq!(v["event"].as_str(), Some("child_exit"));
        assert_eq!(v["signal"].as_i64(), Some(9));
        assert!(v["code"].is_null());
    }
}
