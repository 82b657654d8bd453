//! docs/reference.md's recorder section against the program: the flags and environment variables it documents are
//! exactly those `--help` lists, with the same defaults, and it documents every exit code the program has.

use std::collections::BTreeSet;
use std::process::Command;

fn reference_section() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/reference.md");
    let text = std::fs::read_to_string(path).expect("docs/reference.md");
    let start = text.find("## The recorder").expect("a section `## The recorder` in docs/reference.md");
    let rest = &text[start + 3..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
}

fn help() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_runtime-sandbox-recorder")).arg("--help").output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// `--flag` words of a text, without --help and --version.
fn flags(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .filter(|w| !matches!(*w, "--help" | "--version"))
        .map(str::to_string)
        .collect()
}

/// The names of `[env: NAME=]` in the help, and of `(NAME)` in the documented flag column.
fn env_names(text: &str, open: &str, close: char) -> BTreeSet<String> {
    text.split(open).skip(1).filter_map(|s| s.split(close).next()).map(|s| s.trim_end_matches('=').to_string()).collect()
}

#[test]
fn the_reference_documents_every_flag_variable_default_and_exit_code() {
    let (section, help) = (reference_section(), help());
    let table: String = section.lines().filter(|l| l.starts_with("| `--")).map(|l| format!("{l}\n")).collect();
    let first_column: String = table.lines().map(|l| l.split('|').nth(1).unwrap_or("")).collect::<Vec<_>>().join("\n");
    assert_eq!(flags(&first_column), flags(&help), "the flags documented vs --help");
    assert_eq!(env_names(&first_column, "(`", '`'), env_names(&help, "[env: ", ']'), "environment variables");
    for default in env_names(&help, "[default: ", ']') {
        assert!(table.contains(&format!("`{default}`")), "the default {default} is not in the table");
    }
    for code in [0, 2, 3, 4, 5, 6] {
        assert!(section.contains(&format!("\n| {code} |")), "exit code {code} is not documented");
    }
}
