//! Where a field path (`client.retry.backoff.base`, `timeline[2].at`) is
//! written in a YAML file, for messages about values that parsed but make
//! no sense.
//!
//! A small reader of block-style YAML structure: it follows indentation,
//! `key:` lines and `- ` list items. Flow collections (`{a: 1}`) are
//! searched for the key on the line of their parent. When the full path is
//! not written in the file (a default, or a value from a base file), the
//! deepest written ancestor is returned.

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

#[derive(Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

fn segments(path: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            out.push(Seg::Key(name.to_string()));
        }
        for idx in rest.split('[').filter(|s| !s.is_empty()) {
            if let Ok(i) = idx.trim_end_matches(']').parse() {
                out.push(Seg::Index(i));
            }
        }
    }
    out
}

/// One meaningful line: its indentation (where the content starts, after
/// any `- ` markers), the list-item markers it opens, and its key if any.
struct Line<'a> {
    number: usize,
    indent: usize,
    dashes: Vec<usize>,
    key: Option<&'a str>,
    key_col: usize,
    text: &'a str,
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
        text: raw,
    })
}

/// Where a line's content starts: its first `- `, or its text.
fn start_col(l: &Line) -> usize {
    l.dashes.first().copied().unwrap_or(l.indent)
}

/// Finds where `path` is written in `text`.
pub fn locate(text: &str, path: &str) -> Option<Location> {
    let segs = segments(path);
    let lines: Vec<Line> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| parse_line(i + 1, l))
        .collect();
    let mut best: Option<Location> = None;
    // The block being searched: lines[from..to], children at indent > parent.
    let (mut from, mut to, mut parent_indent) = (0usize, lines.len(), None::<usize>);
    for seg in &segs {
        match seg {
            Seg::Key(k) => {
                // The first line in the block at the block's own indent with
                // this key.
                let block_indent = lines[from..to]
                    .iter()
                    .find(|l| parent_indent.is_none_or(|p| l.indent > p))
                    .map(|l| l.indent);
                let found = (from..to).find(|&i| {
                    let l = &lines[i];
                    Some(l.indent) == block_indent && l.key == Some(k.as_str())
                });
                match found {
                    Some(i) => {
                        let l = &lines[i];
                        best = Some(Location {
                            line: l.number,
                            column: l.key_col + 1,
                        });
                        // The key's block: the lines after it that start
                        // further right, or list items at its own column.
                        let end = (i + 1..to)
                            .find(|&j| {
                                let c = start_col(&lines[j]);
                                c < l.indent || (c == l.indent && lines[j].dashes.is_empty())
                            })
                            .unwrap_or(to);
                        from = i + 1;
                        to = end;
                        parent_indent = Some(l.indent);
                        if from == to {
                            // Nothing below: the rest of the path, if any,
                            // is inline.
                            return inline(l, &segs, seg).or(best);
                        }
                    }
                    None => return best,
                }
            }
            Seg::Index(n) => {
                // The n-th list item among the block's lines: those whose
                // dash stands at the block's leftmost column.
                let Some(col) = (from..to).map(|i| start_col(&lines[i])).min() else {
                    return best;
                };
                let items: Vec<usize> = (from..to)
                    .filter(|&i| lines[i].dashes.first() == Some(&col))
                    .collect();
                let Some(&start) = items.get(*n) else {
                    return best;
                };
                let end = items.get(n + 1).copied().unwrap_or(to);
                let l = &lines[start];
                best = Some(Location {
                    line: l.number,
                    column: l.dashes[0] + 1,
                });
                // The item's content starts on its own line, at `indent`.
                from = start;
                to = end;
                parent_indent = Some(l.indent.saturating_sub(1));
            }
        }
    }
    best
}

/// A key written inline after its parent (`timeout: { base: 1s }`).
fn inline(l: &Line, segs: &[Seg], last: &Seg) -> Option<Location> {
    let pos = segs.iter().position(|s| s == last)?;
    let Seg::Key(next) = segs.get(pos + 1)? else {
        return None;
    };
    let needle = format!("{next}:");
    let at = l.text.find(&needle)?;
    Some(Location {
        line: l.number,
        column: at + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn falls_back_to_the_deepest_written_ancestor() {
        assert_eq!(at("client.retry.retry_after.mode"), Some((6, 3)));
        assert_eq!(at("timeline[7].at"), Some((9, 1)));
        assert_eq!(at("upstream.capacity"), None);
    }
}
