//! The user pages (README.md and docs/*.md; docs/design/ is for contributors) are written for users: their
//! visible text names no test or source file of this repository, and their length stays within a ceiling
//! (each page's words are printed: `cargo test --test user_pages -- --nocapture`).

use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn user_pages() -> Vec<PathBuf> {
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

/// The words of all user pages may not grow past this (the target is 12,000; the pages are on their way there).
const CEILING: usize = 27_500;

#[test]
fn user_pages_name_no_test_or_source_file() {
    let mut found = Vec::new();
    for page in user_pages() {
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
    for page in user_pages() {
        let words = std::fs::read_to_string(&page).unwrap().split_whitespace().count();
        let prose = prose_words(&visible(&std::fs::read_to_string(&page).unwrap()));
        println!("{:>6} words ({:>6} of prose) {}", words, prose, page.strip_prefix(repo()).unwrap().display());
        total += words;
    }
    println!("{total:>6} words on user pages (ceiling {CEILING}, target 12,000)");
    assert!(total <= CEILING, "{total} words on user pages, over the ceiling of {CEILING}: move contributor material to docs/design/");
}
