//! Where a field path (`client.retry.backoff.base`, `timeline[2].at`) is
//! written in a YAML file, for messages about values that parsed but make
//! no sense.
//!
//! A small reader of block-style YAML structure: it follows indentation,
//! `key:` lines and `- ` list items. Flow collections (`{a: 1}`) are
//! searched for the key on the line of their parent. When the full path is
//! not written in the file (a default, or a value from a base file), the
//! deepest written ancestor is returned.

use std::collections::BTreeMap;

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

/// One meaningful line: its indentation (where the content starts, after
/// any `- ` markers), the list-item markers it opens, and its key if any.
struct Line<'a> {
    number: usize,
    indent: usize,
    dashes: Vec<usize>,
    key: Option<&'a str>,
    key_col: usize,
}

fn parse_line(number: usize, raw: &str) -> Option<Line<'_>> {
    let without_comment = match raw.find(" #") {
        Some(i) => &raw[..i],
        None if raw.trim_start().starts_with('#') => "",
        None => raw,
    };
    if without_comment.trim().is_empty() || without_comment.trim_start().starts_with("---") {
        return None;
    }
    let mut col = without_comment.len() - without_comment.trim_start().len();
    let mut dashes = Vec::new();
    let mut rest = &without_comment[col..];
    while let Some(r) = rest
        .strip_prefix("- ")
        .or_else(|| (rest == "-").then_some(""))
    {
        dashes.push(col);
        let skipped = rest.len() - r.len();
        let r2 = r.trim_start();
        col += skipped + (r.len() - r2.len());
        rest = r2;
    }
    let key = rest.find(':').and_then(|i| {
        let k = rest[..i].trim().trim_matches(|c| c == '"' || c == '\'');
        let after = &rest[i + 1..];
        let valid = !k.is_empty()
            && !k.contains(' ')
            && !k.starts_with('{')
            && !k.starts_with('[')
            && (after.is_empty() || after.starts_with(' '));
        valid.then_some(k)
    });
    Some(Line {
        number,
        indent: col,
        dashes,
        key,
        key_col: col,
    })
}

/// Where a line's content starts: its first `- `, or its text.
fn start_col(l: &Line) -> usize {
    l.dashes.first().copied().unwrap_or(l.indent)
}

/// Where every key and list item of a file is written: built in one pass
/// over its lines, so locating many errors in a large file stays linear.
#[derive(Clone, Debug, Default)]
pub struct Index {
    /// Field path (`timeline[3].set.value`) → where its key or item starts.
    at: BTreeMap<String, Location>,
    /// The text of each line, for keys written inline in flow mappings.
    lines: Vec<String>,
}

impl Index {
    /// Indexes `text`.
    pub fn build(text: &str) -> Index {
        let lines: Vec<Line> = text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| parse_line(i + 1, l))
            .collect();
        let mut index = Index {
            at: BTreeMap::new(),
            lines: text.lines().map(String::from).collect(),
        };
        index.walk(&lines, 0, lines.len(), None, "", false);
        index
    }

    /// Indexes the block `lines[from..to]`, whose lines sit right of
    /// `parent_indent`, under `prefix`; `item` when the block is one list
    /// item's content (its first line carries the item's dash).
    fn walk(
        &mut self,
        lines: &[Line],
        from: usize,
        to: usize,
        parent_indent: Option<usize>,
        prefix: &str,
        item: bool,
    ) {
        let Some(first) = lines[from..to]
            .iter()
            .find(|l| parent_indent.is_none_or(|p| l.indent > p || !l.dashes.is_empty()))
        else {
            return;
        };
        let col = (from..to).map(|i| start_col(&lines[i])).min();
        let items: Vec<usize> = match col {
            Some(c) if !prefix.is_empty() && !item => (from..to)
                .filter(|&i| lines[i].dashes.first() == Some(&c))
                .collect(),
            _ => Vec::new(),
        };
        if !items.is_empty() && items[0] == from {
            for (n, &start) in items.iter().enumerate() {
                let end = items.get(n + 1).copied().unwrap_or(to);
                let l = &lines[start];
                let path = format!("{prefix}[{n}]");
                self.at.entry(path.clone()).or_insert(Location {
                    line: l.number,
                    column: l.dashes[0] + 1,
                });
                self.walk(
                    lines,
                    start,
                    end,
                    Some(l.indent.saturating_sub(1)),
                    &path,
                    true,
                );
            }
            return;
        }
        let block_indent = first.indent;
        let keys: Vec<usize> = (from..to)
            .filter(|&i| lines[i].indent == block_indent && lines[i].key.is_some())
            .collect();
        for &i in &keys {
            let l = &lines[i];
            let key = l.key.unwrap_or_default();
            let path = if prefix.is_empty() {
                key.to_string()
            } else {
                format!("{prefix}.{key}")
            };
            self.at.entry(path.clone()).or_insert(Location {
                line: l.number,
                column: l.key_col + 1,
            });
            // The key's block: the lines after it that start further
            // right, or list items at its own column.
            let end = (i + 1..to)
                .find(|&j| {
                    let c = start_col(&lines[j]);
                    c < l.indent || (c == l.indent && lines[j].dashes.is_empty())
                })
                .unwrap_or(to);
            if i + 1 < end {
                self.walk(lines, i + 1, end, Some(l.indent), &path, false);
            }
        }
    }

    /// Where `path` is written, and whether the path itself is (rather
    /// than only an ancestor: a default, or a value from another file).
    pub fn find(&self, path: &str) -> Option<(Location, bool)> {
        if let Some(&loc) = self.at.get(path) {
            return Some((loc, true));
        }
        // The deepest written ancestor; a key written inline after it
        // (`timeout: { base: 1s }`) counts as written.
        let mut cut = path;
        while let Some(i) = cut.rfind(['.', '[']) {
            let rest = &path[i..];
            cut = &path[..i];
            if let Some(&loc) = self.at.get(cut) {
                // The keys after it, each looked for further along the
                // same line (`outputs: { recovery: { horizon: 0s } }`).
                let keys: Vec<&str> = rest.split(['.', '[']).filter(|k| !k.is_empty()).collect();
                let line = self.lines.get(loc.line - 1).map_or("", String::as_str);
                let mut from = loc.column - 1;
                let mut found = None;
                let mut all = true;
                for k in &keys {
                    if let Some(n) = k.strip_suffix(']') {
                        // An item of a flow sequence on the same line
                        // (`timeline: [ { at: 2s, ... } ]`).
                        match n.parse().ok().and_then(|n| flow_item(line, from, n)) {
                            Some(a) => {
                                found = Some(a);
                                from = a;
                                continue;
                            }
                            None => {
                                all = false;
                                break;
                            }
                        }
                    }
                    let needle = format!("{k}:");
                    match line.get(from..).and_then(|t| t.find(&needle)) {
                        Some(a) => {
                            found = Some(from + a);
                            from += a + needle.len();
                        }
                        None => {
                            all = false;
                            break;
                        }
                    }
                }
                return Some(match found {
                    Some(at) => (
                        Location {
                            line: loc.line,
                            column: at + 1,
                        },
                        all,
                    ),
                    None => (loc, false),
                });
            }
        }
        None
    }
}

/// Where item `n` of the first flow sequence at or after byte `from` of
/// `line` starts (its first non-blank byte); `None` when the line has no
/// such sequence or it has fewer items.
fn flow_item(line: &str, from: usize, n: usize) -> Option<usize> {
    let open = from + line.get(from..)?.find('[')?;
    let bytes = line.as_bytes();
    let (mut depth, mut item, mut quote) = (0usize, 0usize, None);
    let mut start = None;
    for (i, &b) in bytes.iter().enumerate().skip(open + 1) {
        if let Some(q) = quote {
            if b == q {
                quote = None;
            }
            continue;
        }
        if depth == 0 && item == n && start.is_none() && !b.is_ascii_whitespace() {
            if b == b']' {
                return None;
            }
            start = Some(i);
        }
        match b {
            b'\'' | b'"' => quote = Some(b),
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => return start,
            b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                if item == n {
                    return start;
                }
                item += 1;
            }
            _ => {}
        }
    }
    start
}

/// Finds where `path` is written in `text` (or its deepest written
/// ancestor). Builds an [`Index`]: to locate many paths, build one.
pub fn locate(text: &str, path: &str) -> Option<Location> {
    Index::build(text).find(path).map(|(l, _)| l)
}

/// Where `key` is written in the mapping that starts at `start` (the
/// location a YAML parser gives for a duplicate key: the mapping's, not the
/// key's): its first two occurrences, for "given twice" messages.
pub fn duplicate_key(text: &str, start: Location, key: &str) -> Option<[Location; 2]> {
    let raw: Vec<&str> = text.lines().collect();
    let first = raw.get(start.line.checked_sub(1)?)?;
    let found = if first.get(start.column.checked_sub(1)?..)?.starts_with('{') {
        flow_keys(&raw, start, key)
    } else {
        block_keys(&raw, start, key)
    };
    match found[..] {
        [a, b, ..] => Some([a, b]),
        _ => None,
    }
}

/// `key`'s occurrences in the block mapping whose first key is at `start`:
/// lines whose key sits in its column, until a line starts left of it.
fn block_keys(raw: &[&str], start: Location, key: &str) -> Vec<Location> {
    let col = start.column - 1;
    let mut out = Vec::new();
    for (i, text) in raw.iter().enumerate().skip(start.line - 1) {
        let Some(l) = parse_line(i + 1, text) else {
            continue;
        };
        if l.number > start.line {
            if start_col(&l) < col {
                break;
            }
            if start_col(&l) > col || !l.dashes.is_empty() {
                continue;
            }
        }
        if l.key_col == col && l.key == Some(key) {
            out.push(Location {
                line: l.number,
                column: col + 1,
            });
        }
    }
    out
}

/// `key`'s occurrences among the keys of the flow mapping (`{ a: 1, b: 2 }`)
/// that opens at `start`, which may span lines.
fn flow_keys(raw: &[&str], start: Location, key: &str) -> Vec<Location> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    // At depth 1, after `{` or `,`: the next token is a key.
    let mut expect_key = false;
    for (i, text) in raw.iter().enumerate().skip(start.line - 1) {
        let from = if i + 1 == start.line {
            start.column - 1
        } else {
            0
        };
        for (j, c) in text.char_indices().filter(|&(j, _)| j >= from) {
            if let Some(q) = quote {
                if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '{' | '[' => {
                    depth += 1;
                    expect_key = depth == 1;
                }
                '}' | ']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return out;
                    }
                }
                ',' if depth == 1 => expect_key = true,
                '#' if text[..j].ends_with(' ') => break,
                c if c.is_whitespace() => {}
                _ if expect_key => {
                    expect_key = false;
                    let rest = &text[j..];
                    let end = rest.find([':', ',', '}']).unwrap_or(rest.len());
                    let k = rest[..end].trim().trim_matches(|c| c == '"' || c == '\'');
                    if k == key && rest[end..].starts_with(':') {
                        out.push(Location {
                            line: i + 1,
                            column: j + 1,
                        });
                    }
                    if c == '"' || c == '\'' {
                        quote = Some(c);
                    }
                }
                '"' | '\'' => quote = Some(c),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_found_both_times_in_block_flow_and_list_items() {
        let at = |line, column| Location { line, column };
        let top = "name: x\n\nclock:\n  duration: 5s\nload: { rate: 5 }\n# clock: no\nclock:\n  bucket: 1s\n";
        assert_eq!(
            duplicate_key(top, at(1, 1), "clock"),
            Some([at(3, 1), at(7, 1)])
        );
        let nested = "client:\n  attempt_timeout: 1s\n  retry:\n    attempt_timeout: 9s\n  attempt_timeout: 2s\nload: {}\n";
        assert_eq!(
            duplicate_key(nested, at(2, 3), "attempt_timeout"),
            Some([at(2, 3), at(5, 3)])
        );
        let flow = "clock: { duration: 5s, bucket: { x: 1 }, \"duration\": 1s }\n";
        assert_eq!(
            duplicate_key(flow, at(1, 8), "duration"),
            Some([at(1, 10), at(1, 42)])
        );
        let item = "timeline:\n  - at: 5s\n    set: { at: 1 }\n    at: 6s\n  - at: 7s\n";
        assert_eq!(
            duplicate_key(item, at(2, 5), "at"),
            Some([at(2, 5), at(4, 5)])
        );
        // Once only, or a start that is not in the text: nothing to point at.
        assert_eq!(duplicate_key(item, at(5, 5), "at"), None);
        assert_eq!(duplicate_key(item, at(40, 1), "at"), None);
        assert_eq!(duplicate_key(item, at(1, 90), "at"), None);
    }

    #[test]
    fn a_key_nested_inline_is_found_where_it_is_written() {
        let index = Index::build("seed: 1\noutputs: { recovery: { horizon: 0s, sustain: 5s } }\n");
        let (loc, exact) = index.find("outputs.recovery.horizon").unwrap();
        assert_eq!((loc.line, loc.column, exact), (2, 24, true));
        let (loc, exact) = index.find("outputs.recovery.baseline").unwrap();
        assert_eq!((loc.line, loc.column, exact), (2, 12, false));
    }

    const DOC: &str = "\
name: demo
clock:
  start: \"14:00:00\"
  duration: 10m
client:
  retry:
    max_retries: 3
    backoff: { exponential: { base: 1s, cap: 16s } }
timeline:
  - at: \"14:02:30\"
    set: { param: upstream.latency_scale, value: 2.4 }
  - at: 5m
    ramp:
      param: load.rate
      to: 300
sweep:
  axes:
    - path: client.retry.max_retries
      values: [0, 1, 2]
";

    fn at(path: &str) -> Option<(usize, usize)> {
        locate(DOC, path).map(|l| (l.line, l.column))
    }

    #[test]
    fn finds_keys_items_and_inline_fields() {
        assert_eq!(at("name"), Some((1, 1)));
        assert_eq!(at("clock.duration"), Some((4, 3)));
        assert_eq!(at("client.retry.max_retries"), Some((7, 5)));
        assert_eq!(at("client.retry.backoff.exponential"), Some((8, 16)));
        assert_eq!(at("timeline[0].at"), Some((10, 5)));
        assert_eq!(at("timeline[1].ramp.to"), Some((15, 7)));
        assert_eq!(at("timeline[1]"), Some((12, 3)));
        assert_eq!(at("sweep.axes[0].values"), Some((19, 7)));
    }

    #[test]
    fn finds_items_of_a_flow_sequence_on_one_line() {
        let doc = "name: x\ntimeline: [ { at: 2s, set: { param: a, value: 0 } }, { at: 5s, pulse: { value: 1 } } ]\nvalues: [\"a,b\", 'c]', [1, 2], 9]\n";
        let at = |path: &str| locate(doc, path).map(|l| (l.line, l.column));
        assert_eq!(at("timeline[0]"), Some((2, 13)));
        assert_eq!(at("timeline[0].set.value"), Some((2, 40)));
        assert_eq!(at("timeline[1].at"), Some((2, 56)));
        assert_eq!(at("timeline[1].pulse.value"), Some((2, 73)));
        // Past the last item: the sequence's key.
        assert_eq!(at("timeline[2].at"), Some((2, 1)));
        // Quoted commas and brackets, and a nested sequence, are one item each.
        assert_eq!(at("values[2]"), Some((3, 23)));
        assert_eq!(at("values[3]"), Some((3, 31)));
        assert_eq!(at("values[4]"), Some((3, 1)));
    }

    #[test]
    fn falls_back_to_the_deepest_written_ancestor() {
        assert_eq!(at("client.retry.retry_after.mode"), Some((6, 3)));
        assert_eq!(at("timeline[7].at"), Some((9, 1)));
        assert_eq!(at("upstream.capacity"), None);
    }
}
