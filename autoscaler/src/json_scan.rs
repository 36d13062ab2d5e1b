//! JSON text read in chunks and cut into its values (a document's fields, each item of a
//! `List`), for the readers of large lists: `plan`'s dump reader and the controller's pod list
//! (`kube_adapter::pod_watch`). The cutting is done by a scanner that only follows JSON's structure,
//! at several times the speed of a parser building values. On the way it surveys each item —
//! its kind, apiVersion, name and namespace, and a fingerprint of its contents or, for a
//! reader that can read its input again, only where it lies — so that an item is parsed once,
//! straight into its type, and never as a `serde_json::Value` tree.
//!
//! The scanner checks the structure (brackets, strings, separators) and UTF-8; what lies
//! inside a scalar is checked by the parser that reads the item afterwards.

use std::borrow::Cow;
use std::hash::{BuildHasher, Hash, Hasher};
use std::io::Read;

use foldhash::quality::{FixedState, FoldHasher};
use serde_json::Value;

/// What the reader needs of an object before reading it as its type.
#[derive(Debug, Default, Clone)]
pub struct Survey {
    /// A JSON object (anything else is refused as an object).
    pub is_object: bool,
    pub kind: Option<String>,
    pub api_version: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// Whether the object has a `metadata` field at all.
    pub has_metadata: bool,
    pub contents: Contents,
}

/// How two copies of an object are told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contents {
    /// The object's fingerprint, taken as it was read.
    Fingerprint(Fingerprint),
    /// Where its text lies in the input (bytes from the start): a reader that can read its
    /// input again ([`Scanner::locating`]) fingerprints an object only when another copy of it
    /// turns up ([`fingerprint`]), which is rare; fingerprinting every object was a tenth of
    /// reading a dump.
    At { offset: u64, len: usize },
}

impl Default for Contents {
    fn default() -> Contents {
        Contents::Fingerprint(Fingerprint::default())
    }
}

/// The fingerprint of the JSON value `text` (whitespace around it allowed); `None` if `text`
/// is not one JSON value.
pub fn fingerprint(text: &[u8]) -> Option<Fingerprint> {
    match scan(text, true, &mut Vec::new(), true) {
        Ok((len, Survey { contents: Contents::Fingerprint(fingerprint), .. }))
            if skip_whitespace(text, len) == text.len() =>
        {
            Some(fingerprint)
        }
        _ => None,
    }
}

impl Survey {
    /// The survey of an object already parsed (YAML documents, a JSON document that is not a
    /// `List`): the same fingerprint as its JSON text has.
    pub fn of_value(value: &Value) -> Survey {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let meta = value.get("metadata");
        Survey {
            is_object: value.is_object(),
            kind: text(value.get("kind")),
            api_version: text(value.get("apiVersion")),
            name: text(meta.and_then(|m| m.get("name"))),
            namespace: text(meta.and_then(|m| m.get("namespace"))),
            has_metadata: meta.is_some(),
            contents: Contents::Fingerprint(Fingerprint::of_value(value)),
        }
    }
}

/// What tells two copies of an object apart: 128 bits of two independently seeded hashes over
/// the object's structure, with a mapping's entries combined in any order (two copies with
/// their fields in another order, or one written as YAML and one as JSON, are the same object,
/// as JSON says) and strings compared unescaped. Numbers and literals are compared as written
/// (`1.0` and `1` differ). Two different objects share one with a chance of about 2^-128.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint([u64; 2]);

const SEEDS: [u64; 2] = [0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344];

/// Tags that keep values of different types apart.
const SCALAR: u8 = 2;
const STRING: u8 = 3;
const LIST: u8 = 4;
const ENTRY: u8 = 5;
const MAPPING: u8 = 6;

impl Fingerprint {
    fn lanes(mut f: impl FnMut(FixedState) -> u64) -> Fingerprint {
        Fingerprint(SEEDS.map(|seed| f(FixedState::with_seed(seed))))
    }

    fn token(tag: u8, bytes: &[u8]) -> Fingerprint {
        Fingerprint::lanes(|h| h.hash_one((tag, bytes)))
    }

    /// A mapping entry's fingerprint, begun with its key: its key's text is hashed straight into
    /// the entry's (not first into a fingerprint of its own: keys are half of what the scanner
    /// hashes).
    fn entry_key(key: &[u8]) -> EntryKey {
        EntryKey(SEEDS.map(|seed| {
            let mut hasher = FixedState::with_seed(seed).build_hasher();
            (ENTRY, key).hash(&mut hasher);
            hasher
        }))
    }

    /// The entry begun with `key`, its value's fingerprint added.
    fn entry(key: EntryKey, value: Fingerprint) -> Fingerprint {
        let mut lanes = key.0;
        for (hasher, lane) in lanes.iter_mut().zip(value.0) {
            hasher.write_u64(lane);
        }
        Fingerprint(lanes.map(|hasher| hasher.finish()))
    }

    /// The fingerprint of a parsed value: the same as the scanner's of its JSON text.
    pub fn of_value(value: &Value) -> Fingerprint {
        match value {
            Value::Null => Fingerprint::token(SCALAR, b"null"),
            Value::Bool(b) => Fingerprint::token(SCALAR, if *b { b"true" } else { b"false" }),
            Value::Number(n) => Fingerprint::token(SCALAR, n.to_string().as_bytes()),
            Value::String(s) => Fingerprint::token(STRING, s.as_bytes()),
            Value::Array(items) => {
                let mut list = Container::new(false);
                items.iter().for_each(|item| list.add(Fingerprint::of_value(item)));
                list.finish()
            }
            Value::Object(map) => {
                let mut mapping = Container::new(true);
                for (key, value) in map {
                    let key = Fingerprint::entry_key(key.as_bytes());
                    mapping.add(Fingerprint::entry(key, Fingerprint::of_value(value)));
                }
                mapping.finish()
            }
        }
    }
}

/// A mapping entry's hashers, one per lane, its key written.
struct EntryKey([FoldHasher<'static>; 2]);

impl std::fmt::Debug for EntryKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EntryKey")
    }
}

/// A list's or mapping's fingerprint as its values come: a list's in order, a mapping's
/// entries summed (their order does not matter).
#[derive(Debug)]
struct Container {
    mapping: bool,
    lanes: [u64; 2],
    count: u64,
}

impl Container {
    fn new(mapping: bool) -> Container {
        Container { mapping, lanes: [0; 2], count: 0 }
    }

    fn add(&mut self, value: Fingerprint) {
        for (lane, (acc, v)) in self.lanes.iter_mut().zip(value.0).enumerate() {
            *acc =
                if self.mapping { acc.wrapping_add(v) } else { FixedState::with_seed(SEEDS[lane]).hash_one((*acc, v)) };
        }
        self.count += 1;
    }

    fn finish(&self) -> Fingerprint {
        let tag = if self.mapping { MAPPING } else { LIST };
        let mut lane = 0;
        Fingerprint::lanes(|h| {
            let out = h.hash_one((tag, self.lanes[lane], self.count));
            lane += 1;
            out
        })
    }
}

/// What a value read is to the survey.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The item itself.
    Item,
    Kind,
    ApiVersion,
    Metadata,
    Name,
    Namespace,
    Other,
}

#[derive(Debug)]
struct Frame {
    container: Container,
    /// The key of the entry whose value is being read (mappings).
    key: Option<EntryKey>,
    role: Role,
}

/// Why the scan of the value at the start of a buffer stopped short.
enum Stop {
    /// The buffer ends inside the value.
    More,
    /// Not JSON at byte `at`.
    Invalid { at: usize, message: &'static str },
}

/// How deep lists and mappings may nest, as serde_json allows (the values are parsed by it).
const MAX_DEPTH: usize = 128;

fn skip_whitespace(s: &[u8], mut i: usize) -> usize {
    // A line's indentation eight spaces at a time: `kubectl -o json` indents every line, and a
    // third of a dump's bytes are that indentation.
    const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
    while let Some(&b) = s.get(i) {
        match b {
            b'\n' => {
                i += 1;
                while let Some(word) = s.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
                    if u64::from_ne_bytes(word) != SPACES {
                        break;
                    }
                    i += 8;
                }
            }
            b' ' | b'\r' | b'\t' => i += 1,
            _ => break,
        }
    }
    i
}

/// The string starting at `s[at]` (a `"`): the index after it and its contents, unescaped.
fn string(s: &[u8], at: usize, at_eof: bool) -> Result<(usize, Cow<'_, [u8]>), Stop> {
    let mut i = at + 1;
    let mut escaped = false;
    loop {
        let Some(found) = memchr::memchr2(b'"', b'\\', &s[i..]) else {
            return Err(end_of_input(s.len(), at_eof, "EOF while parsing a string"));
        };
        i += found;
        if s[i] == b'"' {
            break;
        }
        escaped = true;
        i += 2;
        if i > s.len() {
            return Err(end_of_input(s.len(), at_eof, "EOF while parsing a string"));
        }
    }
    let end = i + 1;
    if !escaped {
        return Ok((end, Cow::Borrowed(&s[at + 1..i])));
    }
    match serde_json::from_slice::<String>(&s[at..end]) {
        Ok(text) => Ok((end, Cow::Owned(text.into_bytes()))),
        Err(_) => Err(Stop::Invalid { at, message: "invalid escape in a string" }),
    }
}

fn end_of_input(len: usize, at_eof: bool, message: &'static str) -> Stop {
    if at_eof { Stop::Invalid { at: len, message } } else { Stop::More }
}

fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Scans the value at the start of `s` (whitespace first is skipped and counted in `len`).
/// `at_eof`: nothing follows `s`, so a value cut short is an error rather than `More`.
/// `fingerprints`: the survey's contents are the value's fingerprint; otherwise its place
/// (`Contents::At`, offset 0), and nothing is hashed.
fn scan(s: &[u8], at_eof: bool, stack: &mut Vec<Frame>, fingerprints: bool) -> Result<(usize, Survey), Stop> {
    let token = |tag: u8, bytes: &[u8]| {
        if fingerprints { Fingerprint::token(tag, bytes) } else { Fingerprint::default() }
    };
    stack.clear();
    let mut survey = Survey::default();
    let mut i = 0;
    // The role of the value about to be read.
    let mut role = Role::Item;
    'value: loop {
        i = skip_whitespace(s, i);
        let Some(&c) = s.get(i) else { return Err(end_of_input(i, at_eof, "EOF while parsing a value")) };
        let mut value = match c {
            b'{' | b'[' => {
                let mapping = c == b'{';
                if role == Role::Item {
                    survey.is_object = mapping;
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(Stop::Invalid { at: i, message: "recursion limit exceeded" });
                }
                let frame_role =
                    if mapping && matches!(role, Role::Item | Role::Metadata) { role } else { Role::Other };
                stack.push(Frame { container: Container::new(mapping), key: None, role: frame_role });
                i = skip_whitespace(s, i + 1);
                let Some(&c) = s.get(i) else { return Err(end_of_input(i, at_eof, "EOF while parsing a value")) };
                if c == if mapping { b'}' } else { b']' } {
                    i += 1;
                    let container = stack.pop().expect("pushed above").container;
                    if fingerprints { container.finish() } else { Fingerprint::default() }
                } else if mapping {
                    (i, role) = key(s, i, at_eof, stack, &mut survey, fingerprints)?;
                    continue 'value;
                } else {
                    role = Role::Other;
                    continue 'value;
                }
            }
            b'"' => {
                let (end, text) = string(s, i, at_eof)?;
                match role {
                    Role::Kind => survey.kind = Some(text_of(&text)),
                    Role::ApiVersion => survey.api_version = Some(text_of(&text)),
                    Role::Name => survey.name = Some(text_of(&text)),
                    Role::Namespace => survey.namespace = Some(text_of(&text)),
                    Role::Item | Role::Metadata | Role::Other => {}
                }
                i = end;
                token(STRING, &text)
            }
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                let start = i;
                while i < s.len() && !matches!(s[i], b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t') {
                    i += 1;
                }
                if i == s.len() && !at_eof {
                    return Err(Stop::More);
                }
                token(SCALAR, &s[start..i])
            }
            _ => return Err(Stop::Invalid { at: i, message: "expected value" }),
        };
        // A value is complete: it goes into its list or mapping, which may then be complete.
        loop {
            let Some(top) = stack.last_mut() else {
                survey.contents =
                    if fingerprints { Contents::Fingerprint(value) } else { Contents::At { offset: 0, len: i } };
                return Ok((i, survey));
            };
            if fingerprints {
                match top.key.take() {
                    Some(key) => top.container.add(Fingerprint::entry(key, value)),
                    None => top.container.add(value),
                }
            }
            let mapping = top.container.mapping;
            i = skip_whitespace(s, i);
            let Some(&c) = s.get(i) else { return Err(end_of_input(i, at_eof, "EOF while parsing a value")) };
            match (c, mapping) {
                (b',', true) => {
                    (i, role) = key(s, skip_whitespace(s, i + 1), at_eof, stack, &mut survey, fingerprints)?;
                    continue 'value;
                }
                (b',', false) => {
                    i += 1;
                    role = Role::Other;
                    continue 'value;
                }
                (b'}', true) | (b']', false) => {
                    i += 1;
                    let container = stack.pop().expect("the top").container;
                    value = if fingerprints { container.finish() } else { Fingerprint::default() };
                }
                (_, true) => return Err(Stop::Invalid { at: i, message: "expected `,` or `}`" }),
                (_, false) => return Err(Stop::Invalid { at: i, message: "expected `,` or `]`" }),
            }
        }
    }
}

/// Reads the key at `s[at]` and its colon into the mapping at the top of `stack`: the index of
/// the value and its role.
fn key(
    s: &[u8],
    at: usize,
    at_eof: bool,
    stack: &mut [Frame],
    survey: &mut Survey,
    fingerprints: bool,
) -> Result<(usize, Role), Stop> {
    match s.get(at) {
        Some(b'"') => {}
        Some(_) => return Err(Stop::Invalid { at, message: "key must be a string" }),
        None => return Err(end_of_input(at, at_eof, "EOF while parsing an object")),
    }
    let (end, text) = string(s, at, at_eof)?;
    let top = stack.last_mut().expect("a mapping is open");
    if fingerprints {
        top.key = Some(Fingerprint::entry_key(&text));
    }
    let role = match (top.role, &*text) {
        (Role::Item, b"kind") => Role::Kind,
        (Role::Item, b"apiVersion") => Role::ApiVersion,
        (Role::Item, b"metadata") => {
            survey.has_metadata = true;
            Role::Metadata
        }
        (Role::Metadata, b"name") => Role::Name,
        (Role::Metadata, b"namespace") => Role::Namespace,
        _ => Role::Other,
    };
    let colon = skip_whitespace(s, end);
    match s.get(colon) {
        Some(b':') => Ok((colon + 1, role)),
        Some(_) => Err(Stop::Invalid { at: colon, message: "expected `:`" }),
        None => Err(end_of_input(colon, at_eof, "EOF while parsing an object")),
    }
}

/// A place in the text, as serde_json counts: lines from 1, columns from 1 (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: u64,
    pub column: u64,
}

impl Position {
    /// The position after `bytes`, read from here.
    fn after(self, bytes: &[u8]) -> Position {
        match memchr::memrchr(b'\n', bytes) {
            Some(last) => Position {
                line: self.line + memchr::memchr_iter(b'\n', bytes).count() as u64,
                column: (bytes.len() - last) as u64,
            },
            None => Position { line: self.line, column: self.column + bytes.len() as u64 },
        }
    }

    /// The position in the whole text of `inner`, a position counted within a value that
    /// starts here.
    pub fn within(self, inner: Position) -> Position {
        match inner.line {
            0 | 1 => Position { line: self.line, column: self.column + inner.column.saturating_sub(1) },
            line => Position { line: self.line + line - 1, column: inner.column },
        }
    }
}

/// Why the text could not be read.
#[derive(Debug)]
pub enum ScanError {
    Io(std::io::Error),
    Syntax { message: String, at: Position },
}

/// JSON text read from `input` in chunks, a value at a time.
pub struct Scanner<R> {
    input: R,
    buffer: Vec<u8>,
    /// The unread text is `buffer[start..end]`.
    start: usize,
    end: usize,
    eof: bool,
    /// The position of `buffer[start]`.
    at: Position,
    /// The byte offset of `buffer[start]` in the input.
    offset: u64,
    /// Whether surveys carry fingerprints, or only where their values lie (`locating`).
    fingerprints: bool,
    stack: Vec<Frame>,
}

/// A value found at the start of the unread text.
#[derive(Debug)]
pub struct Found {
    pub len: usize,
    pub survey: Survey,
    pub at: Position,
}

impl<R: Read> Scanner<R> {
    /// Room for the largest value read so far; 1 MiB to start with.
    const CHUNK: usize = 1 << 20;

    /// A scanner whose surveys carry each value's fingerprint.
    pub fn new(input: R) -> Scanner<R> {
        Scanner {
            input,
            buffer: vec![0; Self::CHUNK],
            start: 0,
            end: 0,
            eof: false,
            at: Position { line: 1, column: 1 },
            offset: 0,
            fingerprints: true,
            stack: Vec::new(),
        }
    }

    /// A scanner whose surveys say where each value lies (`Contents::At`), for a reader that
    /// can read its input again, or never compares copies. `offset`: where `input` starts in
    /// the text.
    pub fn locating(input: R, offset: u64) -> Scanner<R> {
        Scanner { offset, fingerprints: false, ..Scanner::new(input) }
    }

    /// Reads more of the input after the unread text, making room first.
    fn fill(&mut self) -> Result<(), ScanError> {
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buffer.len() {
            self.buffer.resize(self.buffer.len() * 2, 0);
        }
        loop {
            match self.input.read(&mut self.buffer[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ScanError::Io(e)),
            }
        }
    }

    /// The unread text.
    pub fn unread(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }

    /// Marks `n` bytes of the unread text as read.
    pub fn consume(&mut self, n: usize) {
        self.at = self.at.after(&self.buffer[self.start..self.start + n]);
        self.start += n;
        self.offset += n as u64;
    }

    /// The next byte that is not whitespace, which stays unread (`None` at the end).
    pub fn peek(&mut self) -> Result<Option<u8>, ScanError> {
        loop {
            let unread = self.unread();
            let skip = skip_whitespace(unread, 0);
            if skip < unread.len() {
                let next = unread[skip];
                self.consume(skip);
                return Ok(Some(next));
            }
            self.consume(skip);
            if self.eof {
                return Ok(None);
            }
            self.fill()?;
        }
    }

    /// Reads the byte `expected` (after whitespace).
    pub fn expect(&mut self, expected: u8, message: &'static str) -> Result<(), ScanError> {
        match self.peek()? {
            Some(b) if b == expected => {
                self.consume(1);
                Ok(())
            }
            _ => Err(self.error(0, message)),
        }
    }

    /// The whole value at the start of the unread text (after whitespace), left unread: its
    /// text is `unread()[..len]`, valid UTF-8.
    pub fn value(&mut self) -> Result<Found, ScanError> {
        if self.peek()?.is_none() {
            return Err(self.error(0, "EOF while parsing a value"));
        }
        loop {
            match scan(&self.buffer[self.start..self.end], self.eof, &mut self.stack, self.fingerprints) {
                Ok((len, mut survey)) => {
                    if let Contents::At { offset, .. } = &mut survey.contents {
                        *offset = self.offset;
                    }
                    if let Err(e) = std::str::from_utf8(&self.unread()[..len]) {
                        return Err(self.error(e.valid_up_to(), "invalid UTF-8"));
                    }
                    return Ok(Found { len, survey, at: self.at });
                }
                Err(Stop::More) => self.fill()?,
                Err(Stop::Invalid { at, message }) => return Err(self.error(at, message)),
            }
        }
    }

    /// Where the unread text starts.
    pub fn position(&self) -> Position {
        self.at
    }

    /// The error `message` at byte `at` of the unread text.
    pub fn error(&self, at: usize, message: &str) -> ScanError {
        let at = self.at.after(&self.unread()[..at.min(self.end - self.start)]);
        ScanError::Syntax { message: message.to_string(), at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whitespace_is_skipped_to_the_first_other_byte_whatever_its_mix_and_length() {
        for spaces in 0..20 {
            for before in ["", "\n", "\r\n", "\t", " \n\t"] {
                for after in ["", "\"x\"", "\t}", "\n  ]"] {
                    let text = format!("{before}{}{after}", " ".repeat(spaces));
                    let expected = text.len() - text.trim_start_matches([' ', '\n', '\r', '\t']).len();
                    assert_eq!(skip_whitespace(text.as_bytes(), 0), expected, "{text:?}");
                }
            }
        }
    }

    fn survey(text: &str) -> Survey {
        let mut scanner = Scanner::new(text.as_bytes());
        let found = scanner.value().unwrap_or_else(|e| panic!("{text}: {e:?}"));
        assert_eq!(skip_whitespace(&scanner.unread()[found.len..], 0), scanner.unread().len() - found.len, "{text}");
        found.survey
    }

    #[test]
    fn fingerprints_follow_the_contents_not_the_writing() {
        let object = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns",
            "labels": {"a": "b", "c": "d"}}, "spec": {"containers": [{"name": "c", "ports": [1, 2.5, -3]}],
            "x": [true, false, null, "é\u{1}"], "empty": {}, "none": []}});
        let compact = object.to_string();
        let pretty = serde_json::to_string_pretty(&object).unwrap();
        let reordered = compact.replace(r#""labels":{"a":"b","c":"d"}"#, r#""labels" : { "c":"d" , "a":"\u0062" }"#);
        assert_ne!(compact, reordered);
        let expected = Fingerprint::of_value(&object);
        for text in [&compact, &pretty, &reordered] {
            let s = survey(text);
            assert_eq!(s.contents, Contents::Fingerprint(expected), "{text}");
            assert_eq!(fingerprint(text.as_bytes()), Some(expected), "{text}");
            assert_eq!(
                (s.kind.as_deref(), s.api_version.as_deref(), s.name.as_deref(), s.namespace.as_deref()),
                (Some("Pod"), Some("v1"), Some("p"), Some("ns"))
            );
            assert!(s.is_object && s.has_metadata);
        }
        // Any change of contents, or a value moved to another key or place, is another object.
        for other in [
            compact.replace(r#""b""#, r#""B""#),
            compact.replace("2.5", "2.50"),
            compact.replace(r#"[1,2.5,-3]"#, r#"[2.5,1,-3]"#),
            compact.replace(r#""a":"b","c":"d""#, r#""a":"d","c":"b""#),
            compact.replace(r#""empty":{}"#, r#""empty":[]"#),
        ] {
            assert_ne!(survey(&other).contents, Contents::Fingerprint(expected), "{other}");
        }
        // Only the item's own kind and metadata are surveyed.
        let nested = survey(r#"{"spec": {"kind": "Pod", "metadata": {"name": "x"}}, "items": [{"kind": "Node"}]}"#);
        assert_eq!((nested.kind, nested.name, nested.has_metadata), (None, None, false));
        assert!(!survey("[1, 2]").is_object);
    }

    #[test]
    fn a_locating_scanner_says_where_each_value_lies_for_it_to_be_fingerprinted_later() {
        let values = [r#"{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": [1, "a"]}}"#, "7", r#"["é", {}]"#];
        let prefix = "xyz"; // what the reader skipped before handing the input over
        let text = format!("{prefix}{}", values.join(" ,\n   "));
        let mut scanner = Scanner::locating(&text.as_bytes()[prefix.len()..], prefix.len() as u64);
        for value in values {
            let found = scanner.value().unwrap();
            let Contents::At { offset, len } = found.survey.contents else { panic!("{value}: {found:?}") };
            let offset = usize::try_from(offset).unwrap();
            let located = &text.as_bytes()[offset..offset + len];
            assert_eq!(located.trim_ascii(), value.as_bytes());
            let expected = Fingerprint::of_value(&serde_json::from_str(value).unwrap());
            assert_eq!(fingerprint(located), Some(expected), "{value}");
            scanner.consume(found.len);
            if scanner.peek().unwrap() == Some(b',') {
                scanner.consume(1);
            }
        }
        assert_eq!(fingerprint(b"{} x"), None);
        assert_eq!(fingerprint(b"{\"a\": "), None);
    }

    #[test]
    fn values_are_found_across_chunks_and_malformed_text_is_placed() {
        // A reader that hands out a byte at a time: every value straddles reads.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let Some((&first, rest)) = self.0.split_first() else { return Ok(0) };
                buf[0] = first;
                self.0 = rest;
                Ok(1)
            }
        }
        let text = "  {\"a\": [1, \"x\\\"y\"]}\n\n  7 \"s\" ";
        let mut scanner = Scanner::new(Trickle(text.as_bytes()));
        let mut lens = Vec::new();
        while scanner.peek().unwrap().is_some() {
            let found = scanner.value().unwrap();
            lens.push((found.at, std::str::from_utf8(&scanner.unread()[..found.len]).unwrap().to_string()));
            scanner.consume(found.len);
        }
        let at = |line, column| Position { line, column };
        assert_eq!(
            lens,
            [
                (at(1, 3), "{\"a\": [1, \"x\\\"y\"]}".to_string()),
                (at(3, 3), "7".to_string()),
                (at(3, 5), "\"s\"".to_string())
            ]
        );
        let deep = "[".repeat(200);
        for (bad, message, line, column) in [
            ("{\"a\": 1,\n \"b\" 2}", "expected `:`", 2, 6),
            ("[1, 2", "EOF while parsing a value", 1, 6),
            ("{\"a\": [1}", "expected `,` or `]`", 1, 9),
            ("{\"a\": \"x", "EOF while parsing a string", 1, 9),
            ("{1: 2}", "key must be a string", 1, 2),
            ("\n  ]", "expected value", 2, 3),
            ("[\"\\u12\"]", "invalid escape in a string", 1, 2),
            (deep.as_str(), "recursion limit exceeded", 1, 129),
        ] {
            let error = Scanner::new(bad.as_bytes()).value().unwrap_err();
            let ScanError::Syntax { message: m, at: a } = error else { panic!("{bad}: {error:?}") };
            assert_eq!((m.as_str(), a), (message, at(line, column)), "{bad}");
        }
        let not_utf8 = b"{\"a\": \"\xff\"}";
        let ScanError::Syntax { message, at: a } = Scanner::new(&not_utf8[..]).value().unwrap_err() else { panic!() };
        assert_eq!((message.as_str(), a), ("invalid UTF-8", at(1, 8)));
    }
}
