//! The house rules of the source tree, checked on the files (no server needed):
//! - a capability's pure core has no pgrx in it: only its shell (`shell.rs`, or a
//!   `shell/` folder split by entry point), `mod.rs` (`extension_sql_file!`, the pg
//!   tests' module), `pg_tests.rs`, `src/shell/` and `lib.rs` may name pgrx;
//! - no import cycles between modules (a file's `use crate::…`, `use super::…`
//!   and `crate::…` paths, module level), and the shared modules (`args`,
//!   `error`, `fast_hash`, `jsonb`, `shell`) import no capability;
//! - unit tests inline (`#[cfg(test)] mod tests`), no `#[path]`, and `include!`
//!   only for `pg_tests.rs`;
//! - SQL by what it is: `sql/extension/` (what `extension_sql_file!` loads),
//!   `sql/ddl/`, `sql/queries/<capability>/`, and the install and update scripts;
//!   statements name schemas only by the `@ledger@`/`@app@` placeholders (and the
//!   backfill's fetch size `@fetch@`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, ext: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path.strip_prefix(repo()).unwrap().display().to_string());
        }
    }
    out.sort();
}

fn read(file: &str) -> String {
    std::fs::read_to_string(repo().join(file)).unwrap()
}

/// The text without `//` comments (doc comments included); string literals stay.
fn code(text: &str) -> String {
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

fn rust_files() -> Vec<String> {
    let mut out = Vec::new();
    files(&repo().join("src"), "rs", &mut out);
    out
}

#[test]
fn pure_cores_do_not_use_pgrx() {
    let shell = |f: &str| {
        f == "src/lib.rs"
            || f.starts_with("src/shell/")
            || f.contains("/shell/")
            || ["/shell.rs", "/mod.rs", "/pg_tests.rs"].iter().any(|s| f.ends_with(s))
    };
    let offenders: Vec<String> = rust_files()
        .into_iter()
        .filter(|f| !shell(f))
        .filter(|f| {
            let c = code(&read(f));
            c.contains("pgrx") || c.contains("pg_sys")
        })
        .collect();
    assert!(offenders.is_empty(), "pure files that name pgrx (move that code to the capability's shell.rs): {offenders:?}");
}

/// `src/a/b.rs` → `crate::a::b`; `mod.rs` is its folder; `pg_tests.rs` and `tests.rs` belong to their module.
fn module_of(file: &str) -> String {
    let mut parts: Vec<&str> = file.trim_start_matches("src/").trim_end_matches(".rs").split('/').collect();
    if matches!(parts.last(), Some(&"mod") | Some(&"lib") | Some(&"pg_tests") | Some(&"tests")) {
        parts.pop();
    }
    std::iter::once("crate").chain(parts).collect::<Vec<_>>().join("::")
}

/// The modules a file names: `crate::…` paths and `use super::…` (a file's own `mod tests` excluded).
fn named_modules(file: &str, module: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let text = code(&read(file));
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut paths = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        if at > 0 && text[..at].ends_with(|c: char| ident(c) || c == ':') {
            continue;
        }
        let path: String = text[at..].chars().take_while(|&c| ident(c) || c == ':').collect();
        paths.push(path.trim_end_matches(':').to_owned());
    }
    // `use super::x` / `use super::{x, y}` from the file's module (pg_tests.rs sits one level deeper, in `mod tests`).
    let included = file.ends_with("/pg_tests.rs") || file.ends_with("/tests.rs");
    for (at, _) in text.match_indices("use super::") {
        let (mut tail, mut ups) = (&text[at + "use ".len()..], 0);
        while let Some(rest) = tail.strip_prefix("super::") {
            (tail, ups) = (rest, ups + 1);
        }
        let mut base: Vec<String> = module.split("::").map(str::to_owned).collect();
        if included {
            base.push("tests".into());
        }
        let names: Vec<String> = if let Some(group) = tail.strip_prefix('{') {
            group.split('}').next().unwrap_or("").split(',').map(|n| n.trim().split("::").next().unwrap_or("").to_owned()).collect()
        } else {
            vec![tail.chars().take_while(|&c| ident(c)).collect()]
        };
        for name in names {
            let mut target = base[..base.len().saturating_sub(ups)].to_vec();
            if !name.is_empty() && name != "self" {
                target.push(name);
            }
            paths.push(target.join("::"));
        }
    }
    paths
        .into_iter()
        .filter_map(|p| {
            let parts: Vec<&str> = p.split("::").collect();
            (1..=parts.len()).rev().map(|n| parts[..n].join("::")).find(|m| known.contains(m))
        })
        .filter(|m| m != module && !module.starts_with(&format!("{m}::")))
        .collect()
}

fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(v: &str, graph: &BTreeMap<String, BTreeSet<String>>, state: &mut BTreeMap<String, u8>, stack: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        state.insert(v.to_owned(), 1);
        stack.push(v.to_owned());
        for w in graph.get(v).into_iter().flatten() {
            match state.get(w.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|s| s == w).unwrap();
                    out.push(stack[from..].iter().cloned().chain([w.clone()]).collect());
                }
                None => visit(w, graph, state, stack, out),
                _ => {}
            }
        }
        stack.pop();
        state.insert(v.to_owned(), 2);
    }
    let (mut state, mut out) = (BTreeMap::new(), Vec::new());
    for v in graph.keys() {
        if !state.contains_key(v.as_str()) {
            visit(v, graph, &mut state, &mut Vec::new(), &mut out);
        }
    }
    out
}

#[test]
fn no_import_cycles() {
    let files = rust_files();
    let known: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(file);
        let named = named_modules(file, &module, &known);
        graph.entry(module).or_default().extend(named);
    }
    // Between files, and between capabilities (the first level under crate).
    let top = |m: &str| m.split("::").take(2).collect::<Vec<_>>().join("::");
    let mut capabilities: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in &graph {
        for t in to {
            if top(from) != top(t) {
                capabilities.entry(top(from)).or_default().insert(top(t));
            }
        }
    }
    if std::env::var_os("RUNTIME_SANDBOX_PRINT_MODULES").is_some() {
        for (from, to) in &capabilities {
            println!("{from} -> {}", to.iter().cloned().collect::<Vec<_>>().join(", "));
        }
    }
    assert!(!graph["crate::backfill::shell"].is_empty(), "the graph reads the imports");
    // What every capability shares imports no capability.
    let shared = ["crate::args", "crate::error", "crate::fast_hash", "crate::jsonb", "crate::shell", "crate::stack"];
    let upward: Vec<String> = capabilities
        .iter()
        .filter(|(from, _)| shared.contains(&from.as_str()))
        .flat_map(|(from, to)| to.iter().filter(|t| !shared.contains(&t.as_str())).map(move |t| format!("{from} -> {t}")))
        .collect();
    assert!(upward.is_empty(), "shared modules importing a capability: {upward:?}");
    assert_eq!(cycles(&graph), Vec::<Vec<String>>::new(), "import cycles between modules");
    assert_eq!(cycles(&capabilities), Vec::<Vec<String>>::new(), "import cycles between capabilities");
}

#[test]
fn unit_tests_are_inline_and_pg_tests_in_pg_tests_rs() {
    let mut problems = Vec::new();
    for file in rust_files() {
        let text = code(&read(&file));
        if text.contains("#[path") {
            problems.push(format!("{file}: #[path] (put unit tests in #[cfg(test)] mod tests at the bottom)"));
        }
        for (at, _) in text.match_indices("include!(") {
            if !text[at..].starts_with("include!(\"pg_tests.rs\")") {
                problems.push(format!("{file}: include! of something else than pg_tests.rs"));
            }
        }
        if text.contains("#[pg_test") && !file.ends_with("/pg_tests.rs") {
            problems.push(format!("{file}: #[pg_test] outside pg_tests.rs"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The `@name@` placeholders of an SQL text.
fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices('@') {
        let name: String = text[at + 1..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
        if !name.is_empty() && text[at + 1 + name.len()..].starts_with('@') {
            out.push(name);
        }
    }
    out
}

#[test]
fn sql_files_are_filed_by_what_they_are() {
    let mut sql = Vec::new();
    files(&repo().join("sql"), "sql", &mut sql);
    let mut problems = Vec::new();
    for file in &sql {
        let name = file.trim_start_matches("sql/");
        let placed = (name.starts_with("runtime_sandbox--") && !name.contains('/'))
            || name.starts_with("extension/")
            || name.starts_with("ddl/")
            || name.strip_prefix("queries/").is_some_and(|q| q.matches('/').count() == 1);
        if !placed {
            problems.push(format!("{file}: not in sql/extension, sql/ddl or sql/queries/<capability>"));
        }
        if name.starts_with("queries/") || name.starts_with("ddl/") {
            for placeholder in placeholders(&read(file)) {
                // What no parameter can carry: the quoted schemas, a FETCH count, and the
                // operator an environment compares with (citext's own `=` on a citext column, else `=`).
                if !["ledger", "app", "fetch", "environment_eq"].contains(&placeholder.as_str()) {
                    problems.push(format!("{file}: placeholder @{placeholder}@ (a variant is its own file, or a parameter)"));
                }
            }
        }
    }
    // What extension_sql_file! loads is in sql/extension/.
    for file in rust_files() {
        let text = code(&read(&file));
        for (at, _) in text.match_indices("extension_sql_file!(") {
            let path: String = text[at..].split('"').nth(1).unwrap_or("").to_owned();
            if !path.contains("sql/extension/") {
                problems.push(format!("{file}: extension_sql_file!(\"{path}\") outside sql/extension/"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
