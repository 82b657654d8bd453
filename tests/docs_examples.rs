//! The docs cannot drift from the output: every SQL example block in README.md and docs/*.md is an excerpt
//! of a pg_regress expected output (tests/pg_regress/expected/NAME.out, which `make test` checks against
//! the real output), or says why it is not checked. No database needed.
//!
//! A block is marked on the line before its opening fence:
//!   <!-- regress: NAME -->          its statements and output lines appear, in order, in NAME.out
//!   <!-- not checked: the reason --> e.g. timings, or a recipe that needs pg_cron
//! Statements start at a psql prompt (`=# `, `db=# `) or, in a block without prompts, at a line beginning
//! with an SQL keyword or a psql meta-command, and end at `;`; they are compared without whitespace, so
//! a page may break lines its own way. Every other line is output: it must equal (up to spaces) a line of
//! NAME.out that comes after its statement and before the next statement of the block; `-- ` before an
//! output line is allowed (for ```sql blocks). A page may leave lines out (trimmed output, hidden set-up).

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const KEYWORDS: &[&str] = &[
    "SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CALL", "CREATE", "DROP", "ALTER", "TRUNCATE", "SET", "RESET",
    "GRANT", "REVOKE", "BEGIN", "COMMIT", "ROLLBACK", "COMMENT", "DO", "EXPLAIN", "VACUUM", "ANALYZE",
];

struct Block {
    file: String,
    line: usize, // of the opening fence, 1-based
    marker: Option<(String, String)>,
    lines: Vec<(usize, String)>,
}

fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap();
    let file = path.strip_prefix(repo()).unwrap().display().to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        if !trimmed.starts_with("```") {
            i += 1;
            continue;
        }
        let indent = lines[i].len() - trimmed.len();
        let marker = lines[..i].iter().rev().find(|l| !l.trim().is_empty()).and_then(|l| {
            let l = l.trim();
            let inner = l.strip_prefix("<!--")?.strip_suffix("-->")?.trim();
            let (kind, arg) = inner.split_once(':')?;
            Some((kind.trim().to_string(), arg.trim().to_string()))
        });
        let start = i;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            let l = lines[i];
            let cut = l.len() - l.trim_start().len();
            body.push((i + 1, l[cut.min(indent)..].to_string()));
            i += 1;
        }
        out.push(Block { file: file.clone(), line: start + 1, marker, lines: body });
        i += 1;
    }
    out
}

/// `db=# ` / `=# ` / `db-> ` at the start of a line.
fn strip_prompt(line: &str) -> Option<&str> {
    let end = line.find("=# ").or_else(|| line.find("-> "))?;
    line[..end].chars().all(|c| c.is_ascii_alphanumeric() || c == '_').then(|| &line[end + 3..])
}

fn starts_statement(line: &str) -> bool {
    line.starts_with('\\')
        || KEYWORDS.iter().any(|k| {
            line.strip_prefix(k).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', ';', '(']))
        })
}

fn without_comment(line: &str) -> &str {
    line.find(" --").map_or(line, |i| &line[..i])
}

#[derive(Debug)]
enum Item {
    Statement { line: usize, text: String },
    Output { line: usize, text: String },
}

fn items(block: &Block) -> Result<Vec<Item>, String> {
    let prompts = block.lines.iter().any(|(_, l)| strip_prompt(l).is_some());
    let mut items = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (n, line) in &block.lines {
        if let Some((start, mut text)) = open.take() {
            text.push('\n');
            text.push_str(line);
            if without_comment(line).trim_end().ends_with(';') {
                items.push(Item::Statement { line: start, text });
            } else {
                open = Some((start, text));
            }
            continue;
        }
        let statement = if prompts { strip_prompt(line) } else { Some(line.as_str()).filter(|l| starts_statement(l)) };
        match statement {
            Some(s) if s.starts_with('\\') => items.push(Item::Statement { line: *n, text: s.to_string() }),
            Some(s) if without_comment(s).trim_end().ends_with(';') => {
                items.push(Item::Statement { line: *n, text: s.to_string() })
            }
            Some(s) => open = Some((*n, s.to_string())),
            None if !line.trim().is_empty() => items.push(Item::Output { line: *n, text: line.clone() }),
            None => {}
        }
    }
    match open {
        Some((start, _)) => Err(format!("{}:{start}: a statement without its closing `;`", block.file)),
        None => Ok(items),
    }
}

fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn no_space(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The lines of an expected output, each as (spaces squeezed, without spaces).
fn output_lines(name: &str) -> Option<Vec<(String, String)>> {
    let text = std::fs::read_to_string(repo().join(format!("tests/pg_regress/expected/{name}.out"))).ok()?;
    Some(text.lines().filter(|l| !l.trim().is_empty()).map(|l| (squeeze(l), no_space(l))).collect())
}

/// Where a statement's echo starts and ends (exclusive) in the output, at or after `from`.
fn find_statement(out: &[(String, String)], from: usize, text: &str) -> Option<(usize, usize)> {
    let want = no_space(text);
    (from..out.len()).find_map(|i| {
        let mut have = String::new();
        for (j, (_, line)) in out.iter().enumerate().skip(i) {
            have.push_str(line);
            if have == want {
                return Some((i, j + 1));
            }
            if !want.starts_with(&have) {
                return None;
            }
        }
        None
    })
}

fn check_block(block: &Block, name: &str, errors: &mut Vec<String>) {
    let Some(out) = output_lines(name) else {
        errors.push(format!("{}:{}: tests/pg_regress/expected/{name}.out does not exist", block.file, block.line));
        return;
    };
    match items(block) {
        Ok(items) => errors.extend(check_items(&block.file, &items, &out, name)),
        Err(e) => errors.push(e),
    }
}

fn check_items(file: &str, items: &[Item], out: &[(String, String)], name: &str) -> Vec<String> {
    let fix = format!("fix the page, or tests/pg_regress/sql/{name}.sql and its expected output");
    let mut errors = Vec::new();
    let mut pos = 0;
    for (k, item) in items.iter().enumerate() {
        match item {
            Item::Statement { line, text } => match find_statement(out, pos, text) {
                Some((_, end)) => pos = end,
                None => {
                    let first = text.lines().next().unwrap_or_default();
                    errors.push(format!(
                        "{file}:{line}: statement `{first}` is not run by tests/pg_regress/sql/{name}.sql at this point ({fix})"
                    ));
                    return errors;
                }
            },
            Item::Output { line, text } => {
                let next = items[k..].iter().find_map(|i| match i {
                    Item::Statement { text, .. } => Some(text),
                    _ => None,
                });
                let limit = next.and_then(|s| find_statement(out, pos, s)).map_or(out.len(), |(start, _)| start);
                let want = squeeze(text);
                let bare = squeeze(text.trim_start().strip_prefix("--").unwrap_or(text));
                match (pos..limit).find(|&i| out[i].0 == want || out[i].0 == bare) {
                    Some(i) => pos = i + 1,
                    None => errors.push(format!(
                        "{file}:{line}: `{}` is not in the output of the statement before it in tests/pg_regress/expected/{name}.out ({fix})",
                        text.trim()
                    )),
                }
            }
        }
    }
    errors
}

fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn regress_tests() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("tests/pg_regress/sql"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter_map(|n| n.strip_suffix(".sql").map(str::to_string))
        .collect();
    names.sort();
    names
}

#[test]
fn every_sql_example_in_the_docs_is_checked_output_or_says_why_not() {
    let mut errors = Vec::new();
    let mut used = std::collections::BTreeSet::new();
    let mut checked = 0;
    for page in pages() {
        for block in blocks(&page) {
            let has_sql = block.lines.iter().any(|(_, l)| {
                let l = strip_prompt(l).unwrap_or(l);
                KEYWORDS.iter().any(|k| l.strip_prefix(k).is_some_and(|r| r.is_empty() || r.starts_with([' ', ';'])))
            });
            match &block.marker {
                Some((kind, name)) if kind == "regress" => {
                    used.insert(name.clone());
                    check_block(&block, name, &mut errors);
                    checked += 1;
                }
                Some((kind, reason)) if kind == "not checked" && !reason.is_empty() => {}
                _ if has_sql => errors.push(format!(
                    "{}:{}: an SQL example with no marker: put `<!-- regress: NAME -->` on the line before the fence \
                     (NAME.sql in tests/pg_regress/sql runs it, `make test-regress REGRESS_ACCEPT=1` writes its \
                     expected output; review it) or `<!-- not checked: why -->`",
                    block.file, block.line
                )),
                _ => {}
            }
        }
    }
    for name in regress_tests().iter().filter(|n| n.starts_with("docs_")) {
        if !used.contains(name) {
            errors.push(format!("tests/pg_regress/sql/{name}.sql is the example of no docs block (<!-- regress: {name} -->)"));
        }
    }
    assert!(errors.is_empty(), "docs examples out of step with their checked output:\n{}", errors.join("\n"));
    assert!(checked >= 8, "only {checked} blocks are checked");
}

#[test]
fn every_regress_test_has_expected_output_and_the_tour_is_tested_as_it_is() {
    let expected = repo().join("tests/pg_regress/expected");
    for name in regress_tests() {
        assert!(expected.join(format!("{name}.out")).exists(), "tests/pg_regress/expected/{name}.out is missing");
    }
    for entry in std::fs::read_dir(&expected).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let test = name.strip_suffix(".out").unwrap_or(&name);
        assert!(regress_tests().iter().any(|t| t == test), "tests/pg_regress/expected/{name} has no test");
    }
    // make demo runs scripts/tour/*.sql; each is a regress test through a symlink, so they cannot part.
    for entry in std::fs::read_dir(repo().join("scripts/tour")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let link = repo().join(format!("tests/pg_regress/sql/tour_{name}"));
        let target = std::fs::read_link(&link).unwrap_or_else(|_| {
            panic!("tests/pg_regress/sql/tour_{name} must be a symlink to ../../../scripts/tour/{name}")
        });
        assert_eq!(target, PathBuf::from(format!("../../../scripts/tour/{name}")), "tour_{name} points elsewhere");
    }
}

#[test]
fn the_checker_finds_drift() {
    let out = vec![
        (squeeze("SELECT a"), no_space("SELECT a")),
        (squeeze("  FROM t;"), no_space("  FROM t;")),
        (squeeze(" x "), no_space(" x ")),
        (squeeze("---"), no_space("---")),
        (squeeze(" 1"), no_space(" 1")),
        (squeeze("SELECT 2;"), no_space("SELECT 2;")),
        (squeeze(" 2"), no_space(" 2")),
    ];
    assert_eq!(find_statement(&out, 0, "SELECT a FROM t;"), Some((0, 2)));
    assert_eq!(find_statement(&out, 0, "SELECT a\n     FROM   t;"), Some((0, 2)));
    assert_eq!(find_statement(&out, 0, "SELECT b FROM t;"), None);
    assert_eq!(find_statement(&out, 2, "SELECT a FROM t;"), None);
    let block = |text: &str| Block {
        file: "x.md".into(),
        line: 1,
        marker: None,
        lines: text.lines().enumerate().map(|(i, l)| (i + 2, l.to_string())).collect(),
    };
    let parsed = items(&block("=# SELECT a\n     FROM t;\n 1\n=# \\x on")).unwrap();
    assert!(matches!(&parsed[..], [Item::Statement { .. }, Item::Output { .. }, Item::Statement { .. }]), "{parsed:?}");
    assert!(items(&block("SELECT a\n")).is_err(), "an unterminated statement is an error");
    let parsed = items(&block("SELECT 1;  -- one\n-- 1\nSELECT 2;")).unwrap();
    assert!(matches!(&parsed[..], [Item::Statement { .. }, Item::Output { .. }, Item::Statement { .. }]), "{parsed:?}");
    // Output is looked for between its statement and the next one.
    let ok = items(&block("=# SELECT a FROM t;\n x\n---\n 1\n=# SELECT 2;\n 2")).unwrap();
    assert_eq!(check_items("x.md", &ok, &out, "t"), Vec::<String>::new());
    let late = items(&block("=# SELECT a FROM t;\n 2\n=# SELECT 2;")).unwrap();
    assert_eq!(check_items("x.md", &late, &out, "t").len(), 1, "output of the next statement");
    let changed = items(&block("=# SELECT a FROM t;\n 3")).unwrap();
    assert_eq!(check_items("x.md", &changed, &out, "t").len(), 1, "output that changed");
}

// The user pages (README.md and docs/*.md; docs/design/ is for contributors) are written for users: their
// visible text names no test or source file of this repository, and their length stays within a ceiling (each
// page's words are printed: `cargo test --test docs_examples -- --nocapture`).

/// The text a reader sees: without HTML comments (the docs checks' markers).
fn visible(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        rest = rest[start..].find("-->").map_or("", |end| &rest[start + end + 3..]);
    }
    out.push_str(rest);
    out
}

/// Words outside fenced blocks (prose a user reads through).
fn prose_words(text: &str) -> usize {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .map(|l| l.split_whitespace().count())
        .sum()
}

/// The words a reader sees on all user pages (README.md and docs/ outside docs/design/) may not grow past this: about
/// 50 minutes of reading for everything, the newcomer's path (README, concepts, one capability page) a quarter of it.
/// (12,000 until the adoption path — who runs each step, with which grants — needed its room.)
const CEILING: usize = 12_500;

#[test]
fn user_pages_name_no_test_or_source_file() {
    let mut found = Vec::new();
    for page in pages() {
        let text = visible(&std::fs::read_to_string(&page).unwrap());
        for (n, line) in text.lines().enumerate() {
            for word in line.split(|c: char| c.is_whitespace() || "`()[],;:".contains(c)) {
                let ours = (word.starts_with("tests/") || word.starts_with("src/")) && word.ends_with(".rs");
                if ours || word.starts_with("tests/pg_regress") {
                    found.push(format!("{}:{}: {word}", page.strip_prefix(repo()).unwrap().display(), n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "test or source files on user pages (say what is tested, not where):\n{}", found.join("\n"));
}

#[test]
fn user_pages_stay_within_their_length() {
    let mut total = 0;
    for page in pages() {
        // What a reader sees: the docs checks' HTML-comment markers are not counted; table pipes are.
        let text = visible(&std::fs::read_to_string(&page).unwrap());
        let (words, prose) = (text.split_whitespace().count(), prose_words(&text));
        println!("{:>6} words ({:>6} of prose) {}", words, prose, page.strip_prefix(repo()).unwrap().display());
        total += words;
    }
    println!("{total:>6} words on user pages (ceiling {CEILING})");
    assert!(total <= CEILING, "{total} words on user pages, over the ceiling of {CEILING}: move contributor material to docs/design/");
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_link_between_pages_reaches_its_page_and_heading() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap().to_path_buf();
        for (n, line) in text.lines().enumerate() {
            for link in line.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
                if link.starts_with("http") || link.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
                let target = if file.is_empty() { page.clone() } else { dir.join(file) };
                let at = format!("{}:{}: ({link})", page.strip_prefix(repo()).unwrap().display(), n + 1);
                if !target.exists() {
                    broken.push(format!("{at}: no such file"));
                    continue;
                }
                if !anchor.is_empty() {
                    let headings = std::fs::read_to_string(&target).unwrap_or_default();
                    if !headings.lines().filter(|l| l.starts_with('#')).any(|l| slug(l) == anchor) {
                        broken.push(format!("{at}: no heading with that anchor"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
