//! Inputs: real files mutated as text and as documents, documents generated from the words the
//! real files use, and random strings of a reader's alphabet, all salted with hostile values
//! (huge and negative numbers, out-of-range durations and quantities, deep nesting, NUL bytes,
//! invalid UTF-8, YAML aliases and tags).

use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use serde_json::{Map, Number, Value};

/// No input is longer than this (bytes), so that memory and time can be judged against it.
pub const MAX_INPUT: usize = 1 << 20;

/// Values that readers have to refuse or bear: numbers at and past every integer and float
/// limit, quantities and durations at and past theirs, YAML's special words and characters,
/// control characters and bidi overrides.
pub const HOSTILE: &[&str] = &[
    "1e400",
    "-1e400",
    "1e-400",
    "8Ei",
    "9Ei",
    "-8Ei",
    "1E",
    "16Ei",
    "999999999999999999999999999999999999999Ei",
    "99999999999999999999",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967296",
    "1.7976931348623157e308",
    "5e-324",
    "-1",
    "-0",
    "0",
    "0.5",
    "-0.000000001",
    ".5",
    "5.",
    ".",
    "+",
    "-",
    "0x10",
    "1_000",
    "1e40",
    "1e41",
    "1e-41",
    "1Kii",
    "1e",
    "e1",
    "1n",
    "1u",
    "3920m",
    "16Gi",
    "99999999999999h",
    "2562047h47m16.854775807s",
    "2562047h47m16.854775808s",
    "2562048h",
    "1.00000000000000000000000000001h",
    "0.0000000001ns",
    "1h1h1h1h1h1h1h1h",
    "1µs",
    "1μs",
    "1d",
    "-5s",
    "+5s",
    "0s",
    "NaN",
    ".nan",
    ".inf",
    "-.inf",
    "inf",
    "~",
    "null",
    "Null",
    "true",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "[]",
    "{}",
    "\"\"",
    "''",
    "&a",
    "*a",
    "&a [*a, *a, *a, *a]",
    "<<: *a",
    "!!binary AAAA",
    "!!str",
    "!!int 3",
    "!!float",
    "!!map",
    "!custom",
    "? ",
    "- ",
    ": ",
    "---",
    "...",
    "%YAML 1.2",
    "%TAG ! tag:x,2000:",
    "|",
    ">-",
    "\t",
    "\r",
    "\r\n",
    "\u{0}",
    "\u{7}",
    "\u{1b}[2J",
    "\u{feff}",
    "\u{202e}",
    "\u{fffd}",
    "\u{10ffff}",
    "é",
    "字",
    "\\",
    "\\u0000",
    "\\ud800",
    "\"",
    "'",
    "`",
    "#",
    ";",
    "=",
    ":",
    ",",
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    "!",
    "%",
    "@",
    "/",
    "../../../../../../etc/passwd",
    "2026-11-21T12:00:00Z",
    "9999-12-31T23:59:59Z",
    "0000-01-01T00:00:00Z",
    "-009999-01-02T01:59:59Z",
    "2026-13-45T25:61:61Z",
    "1970-01-01T00:00:00.000000001+14:00",
];

/// One of the hostile values.
pub fn hostile(rng: &mut SmallRng) -> &'static str {
    HOSTILE.choose(rng).copied().unwrap_or("")
}

/// A hostile value as a document value: as a string, or as the number or literal it spells.
fn hostile_value(rng: &mut SmallRng) -> Value {
    match rng.random_range(0..12) {
        0 => Value::from(i64::MAX),
        1 => Value::from(i64::MIN),
        2 => Value::from(u64::MAX),
        3 => Value::from(-1),
        4 => Value::from(f64::MAX),
        5 => Value::from(-f64::MAX),
        6 => Value::from(f64::MIN_POSITIVE),
        7 => Value::from(i64::from(i32::MAX) + 1),
        8 => Value::Bool(rng.random()),
        9 => Value::Null,
        10 => Value::String("x".repeat(rng.random_range(1000..20_000))),
        _ => Value::String(hostile(rng).to_string()),
    }
}

/// A text mutation: what real files look like after a bad edit, a bad copy or a bad tool.
pub fn mutate_text(rng: &mut SmallRng, mut bytes: Vec<u8>, alphabet: &[u8]) -> Vec<u8> {
    let pos = |rng: &mut SmallRng, bytes: &Vec<u8>| rng.random_range(0..=bytes.len());
    match rng.random_range(0..16) {
        // A bit flipped or a byte replaced: often invalid UTF-8.
        0 if !bytes.is_empty() => {
            let i = rng.random_range(0..bytes.len());
            bytes[i] ^= 1 << rng.random_range(0..8);
        }
        1 if !bytes.is_empty() => {
            let i = rng.random_range(0..bytes.len());
            bytes[i] = rng.random();
        }
        // A character of the reader's alphabet inserted or replacing another.
        2 if !alphabet.is_empty() => {
            let i = pos(rng, &bytes);
            bytes.insert(i, *alphabet.choose(rng).unwrap_or(&b' '));
        }
        3 if !bytes.is_empty() && !alphabet.is_empty() => {
            let i = rng.random_range(0..bytes.len());
            bytes[i] = *alphabet.choose(rng).unwrap_or(&b' ');
        }
        // A hostile value inserted, or put in place of a word or a number.
        4 => {
            let i = pos(rng, &bytes);
            bytes.splice(i..i, hostile(rng).bytes());
        }
        5 | 6 => {
            if let Some((start, end)) = word_at(rng, &bytes) {
                bytes.splice(start..end, hostile(rng).bytes());
            }
        }
        // Truncated, or a span deleted.
        7 => {
            let i = pos(rng, &bytes);
            bytes.truncate(i);
        }
        8 if !bytes.is_empty() => {
            let start = rng.random_range(0..bytes.len());
            let end = (start + rng.random_range(1..64)).min(bytes.len());
            bytes.drain(start..end);
        }
        // Lines duplicated, removed, swapped, re-indented.
        9..=12 => {
            let mut lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
            let i = rng.random_range(0..lines.len());
            let j = rng.random_range(0..lines.len());
            match rng.random_range(0..5) {
                0 => {
                    let copies = if rng.random_bool(0.1) { rng.random_range(2..2000) } else { 1 };
                    let line = lines[i].clone();
                    for _ in 0..copies {
                        lines.insert(j, line.clone());
                    }
                }
                1 => {
                    lines.remove(i);
                }
                2 => lines.swap(i, j),
                3 => {
                    let indent = rng.random_range(0..8);
                    lines[i].splice(0..0, std::iter::repeat_n(b' ', indent));
                }
                _ => {
                    let first = lines[i].iter().take_while(|b| **b == b' ').count();
                    lines[i].drain(..rng.random_range(0..=first));
                }
            }
            bytes = lines.join(&b'\n');
        }
        // Deep nesting, in JSON's and YAML's ways of writing it.
        13 => {
            let depth = *[10usize, 100, 130, 300, 1_000, 10_000, 100_000].choose(rng).unwrap_or(&10);
            let (open, close): (&[u8], &[u8]) = match rng.random_range(0..4) {
                0 => (b"[", b"]"),
                1 => (b"{\"a\":", b"}"),
                2 => (b"{a: ", b"}"),
                _ => (b"- ", b""),
            };
            let mut nest = open.repeat(depth);
            if rng.random_bool(0.7) {
                nest.extend_from_slice(b"1");
                nest.extend_from_slice(&close.repeat(depth));
            }
            let i = pos(rng, &bytes);
            bytes.splice(i..i, nest);
        }
        // A span repeated many times.
        14 if !bytes.is_empty() => {
            let start = rng.random_range(0..bytes.len());
            let end = (start + rng.random_range(1..256)).min(bytes.len());
            let span = bytes[start..end].to_vec();
            let times = rng.random_range(2..(65_536 / span.len()).max(3));
            bytes.splice(end..end, span.repeat(times));
        }
        // Control characters, a byte-order mark, CRLF line ends.
        _ => {
            let i = pos(rng, &bytes);
            let insert: &[u8] =
                [&b"\0"[..], b"\xEF\xBB\xBF", b"\r", b"\t", b"\x0c", b"\xff\xfe"].choose(rng).copied().unwrap_or(b"\0");
            bytes.splice(i..i, insert.iter().copied());
        }
    }
    bytes.truncate(MAX_INPUT);
    bytes
}

/// A random word (letters, digits, `.`, `-`) of the text, as a byte range.
fn word_at(rng: &mut SmallRng, bytes: &[u8]) -> Option<(usize, usize)> {
    if bytes.is_empty() {
        return None;
    }
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-';
    let mut start = rng.random_range(0..bytes.len());
    while start < bytes.len() && !is_word(bytes[start]) {
        start += 1;
    }
    while start > 0 && is_word(bytes[start - 1]) {
        start -= 1;
    }
    let end = start + bytes[start..].iter().take_while(|b| is_word(**b)).count();
    (end > start).then_some((start, end))
}

/// Several text mutations in a row.
pub fn mutate_text_times(rng: &mut SmallRng, mut bytes: Vec<u8>, alphabet: &[u8]) -> Vec<u8> {
    for _ in 0..rng.random_range(1..=6) {
        bytes = mutate_text(rng, bytes, alphabet);
    }
    bytes
}

/// The words of a kind of document: every key and every scalar the real files use.
#[derive(Default)]
pub struct Vocabulary {
    pub keys: Vec<String>,
    pub scalars: Vec<Value>,
}

impl Vocabulary {
    pub fn of(documents: &[Value]) -> Vocabulary {
        let mut keys = std::collections::BTreeSet::new();
        let mut scalars = Vec::new();
        fn walk(v: &Value, keys: &mut std::collections::BTreeSet<String>, scalars: &mut Vec<Value>) {
            match v {
                Value::Object(map) => map.iter().for_each(|(k, v)| {
                    keys.insert(k.clone());
                    walk(v, keys, scalars);
                }),
                Value::Array(items) => items.iter().for_each(|v| walk(v, keys, scalars)),
                scalar => scalars.push(scalar.clone()),
            }
        }
        documents.iter().for_each(|d| walk(d, &mut keys, &mut scalars));
        scalars.sort_by_key(Value::to_string);
        scalars.dedup();
        Vocabulary { keys: keys.into_iter().collect(), scalars }
    }

    fn key(&self, rng: &mut SmallRng) -> String {
        match self.keys.choose(rng) {
            Some(k) if !rng.random_bool(0.05) => k.clone(),
            _ => hostile(rng).to_string(),
        }
    }

    fn scalar(&self, rng: &mut SmallRng) -> Value {
        match self.scalars.choose(rng) {
            Some(v) if rng.random_bool(0.8) => v.clone(),
            _ => hostile_value(rng),
        }
    }

    /// A value made of these words: maps of known keys, lists, known and hostile scalars.
    pub fn document(&self, rng: &mut SmallRng, depth: u32) -> Value {
        if depth == 0 || rng.random_bool(0.3) {
            return self.scalar(rng);
        }
        if rng.random_bool(0.25) {
            return Value::Array((0..rng.random_range(0..4)).map(|_| self.document(rng, depth - 1)).collect());
        }
        self.map(rng, depth)
    }

    /// A map made of these words (what every file format here has at its top).
    pub fn map(&self, rng: &mut SmallRng, depth: u32) -> Value {
        let mut map = Map::new();
        for _ in 0..rng.random_range(0..6) {
            map.insert(self.key(rng), self.document(rng, depth.saturating_sub(1)));
        }
        Value::Object(map)
    }
}

/// A document mutation: one value of the tree replaced, removed, retyped, copied elsewhere or
/// multiplied; an unknown field added.
pub fn mutate_document(rng: &mut SmallRng, doc: &mut Value, words: &Vocabulary) {
    // A random place in the tree: walk down from the root, stopping at random.
    let donor = pick(rng, doc).clone();
    let target = pick(rng, doc);
    match rng.random_range(0..10) {
        0 | 1 => *target = hostile_value(rng),
        2 => *target = words.scalar(rng),
        3 => *target = donor,
        4 => *target = words.document(rng, 3),
        5 => {
            // Another type with the same content, as YAML makes easy: `"4"` and `4`, a map and
            // its values, a list and its first item.
            *target = match std::mem::take(target) {
                Value::String(s) => {
                    s.parse::<f64>().ok().and_then(Number::from_f64).map_or(Value::Bool(true), Value::Number)
                }
                Value::Number(n) => Value::String(n.to_string()),
                Value::Object(map) => Value::Array(map.into_iter().map(|(_, v)| v).collect()),
                Value::Array(items) => items.into_iter().next().unwrap_or(Value::Null),
                other => Value::String(other.to_string()),
            }
        }
        6 => match target {
            Value::Object(map) => {
                map.insert(words.key(rng), words.document(rng, 2));
            }
            Value::Array(items) => items.push(donor),
            _ => {}
        },
        7 => match target {
            Value::Object(map) if !map.is_empty() => {
                let key = map.keys().nth(rng.random_range(0..map.len())).cloned().unwrap_or_default();
                map.remove(&key);
            }
            Value::Array(items) if !items.is_empty() => {
                items.remove(rng.random_range(0..items.len()));
            }
            _ => *target = Value::Null,
        },
        8 => {
            // Many copies of one list item (objects read twice, a list of a thousand pods).
            if let Value::Array(items) = target
                && let Some(item) = items.choose(rng).cloned()
            {
                let copies = *[2usize, 10, 200].choose(rng).unwrap_or(&2);
                items.extend(std::iter::repeat_n(item, copies));
            }
        }
        _ => {
            // A number nudged past its limits.
            *target = match target {
                Value::Number(n) if n.is_i64() || n.is_u64() => {
                    let v = n.as_i64().unwrap_or(i64::MAX);
                    Value::from(
                        *[v.wrapping_neg(), v.saturating_mul(1_000_000), v.saturating_add(1), -1]
                            .choose(rng)
                            .unwrap_or(&-1),
                    )
                }
                _ => hostile_value(rng),
            }
        }
    }
}

/// A random value of the tree below the root (the root only when it has nothing below):
/// down from the root, stopping at random. (A replaced root is a document of another shape,
/// which random documents already cover.)
fn pick<'a>(rng: &mut SmallRng, v: &'a mut Value) -> &'a mut Value {
    descend(rng, v, 0.0)
}

fn descend<'a>(rng: &mut SmallRng, v: &'a mut Value, stop: f64) -> &'a mut Value {
    let len = match &*v {
        Value::Object(map) => map.len(),
        Value::Array(items) => items.len(),
        _ => 0,
    };
    if len == 0 || rng.random_bool(stop) {
        return v;
    }
    let i = rng.random_range(0..len);
    match v {
        Value::Object(map) => descend(rng, map.values_mut().nth(i).expect("index within the map"), 0.25),
        Value::Array(items) => descend(rng, &mut items[i], 0.25),
        other => other,
    }
}

/// How a document is written out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Yaml,
}

pub fn render(doc: &Value, syntax: Syntax) -> Vec<u8> {
    let text = match syntax {
        Syntax::Json => serde_json::to_string_pretty(doc).expect("a Value serializes"),
        Syntax::Yaml => serde_saphyr::to_string(doc).expect("a Value serializes as YAML"),
    };
    let mut bytes = text.into_bytes();
    bytes.truncate(MAX_INPUT);
    bytes
}

/// Random characters of an alphabet (and now and then any byte).
pub fn random_text(rng: &mut SmallRng, alphabet: &[u8], max_len: usize) -> Vec<u8> {
    let len = rng.random_range(0..=max_len);
    (0..len)
        .map(|_| if rng.random_bool(0.02) { rng.random() } else { *alphabet.choose(rng).unwrap_or(&b'a') })
        .collect()
}

/// A real input: its text as written (comments and all) and the document it holds.
pub struct Seed {
    pub text: Vec<u8>,
    pub doc: Value,
}

impl Seed {
    /// A seed from a file's text (JSON or YAML).
    pub fn parse(text: &str) -> Seed {
        let doc = serde_saphyr::from_str(text).expect("a seed parses");
        Seed { text: text.as_bytes().to_vec(), doc }
    }

    /// A seed written out from a document.
    pub fn written(doc: Value, syntax: Syntax) -> Seed {
        Seed { text: render(&doc, syntax), doc }
    }
}

/// The characters documents are made of.
pub const DOCUMENT_ALPHABET: &[u8] = b"{}[]:,-\"' \n\n\t#&*!|>?%@`~.0123456789eEabcdefgikmnopstuyKMGTPi";

/// A real document with one or two values changed, written as its seed was: inputs that get
/// past syntax and types more often, for readers whose interesting work comes after them.
pub fn mild_document_input(rng: &mut SmallRng, seeds: &[Seed], words: &Vocabulary, syntax: Syntax) -> Vec<u8> {
    let Some(seed) = seeds.choose(rng) else { return Vec::new() };
    let mut doc = seed.doc.clone();
    for _ in 0..rng.random_range(1..=2) {
        mutate_document(rng, &mut doc, words);
    }
    render(&doc, syntax)
}

/// The input of a reader of documents (JSON or YAML): a real one mutated as a document and
/// written out in one of `syntaxes`, a real one mutated as text, a document from the real ones'
/// words, or random characters.
pub fn document_input(rng: &mut SmallRng, seeds: &[Seed], words: &Vocabulary, syntaxes: &[Syntax]) -> Vec<u8> {
    let syntax = *syntaxes.choose(rng).unwrap_or(&Syntax::Yaml);
    let Some(seed) = seeds.choose(rng) else { return random_text(rng, DOCUMENT_ALPHABET, 512) };
    match rng.random_range(0..20) {
        0..=9 => {
            let mut doc = seed.doc.clone();
            for _ in 0..rng.random_range(1..=4) {
                mutate_document(rng, &mut doc, words);
            }
            let bytes = render(&doc, syntax);
            if rng.random_bool(0.2) { mutate_text(rng, bytes, DOCUMENT_ALPHABET) } else { bytes }
        }
        10..=15 => mutate_text_times(rng, seed.text.clone(), DOCUMENT_ALPHABET),
        16..=18 => render(&words.map(rng, 6), syntax),
        _ => random_text(rng, DOCUMENT_ALPHABET, 512),
    }
}
