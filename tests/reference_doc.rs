//! docs/reference.md against the catalog of a fresh install: every function (name, arguments with types
//! and defaults, result type and columns, volatility, EXECUTE for PUBLIC, STRICT) and every type (composite
//! attributes, enum labels) of schema runtime_sandbox has its entry, and nothing documented is missing
//! from the catalog; every function lists its errors, and every SQLSTATE the code raises is in the page's
//! error table. A function added without an entry fails with the entry to paste.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug, Default)]
struct Entry {
    line: usize,
    lines: Vec<String>,
}

impl Entry {
    /// The rows of the table whose first header cell is `first`, cells without backticks.
    fn table(&self, first: &str) -> Option<Vec<Vec<String>>> {
        let mut rows = None::<Vec<Vec<String>>>;
        for line in &self.lines {
            let line = line.trim();
            if !line.starts_with('|') {
                if rows.is_some() {
                    break;
                }
                continue;
            }
            let cells: Vec<String> =
                line.trim_matches('|').split('|').map(|c| c.trim().trim_matches('`').trim().to_string()).collect();
            match &mut rows {
                None if cells[0] == first => rows = Some(Vec::new()),
                Some(rows) if !cells[0].starts_with("---") => rows.push(cells),
                _ => {}
            }
        }
        rows
    }

    /// `- key: value` as written, with the indented lines that continue it.
    fn item(&self, key: &str) -> Option<String> {
        let start = self.lines.iter().position(|l| l.starts_with(&format!("- {key}: ")))?;
        let mut value = self.lines[start][key.len() + 4..].to_string();
        for more in self.lines[start + 1..].iter().take_while(|l| l.starts_with("  ")) {
            value.push(' ');
            value.push_str(more.trim());
        }
        Some(value)
    }

    /// The entry's first line, `- returns R; V; PUBLIC: yes|no; errors E; [page](page)`, as its fields.
    fn heading(&self) -> Option<(String, String, String, String)> {
        let line = self.lines.iter().find_map(|l| l.strip_prefix("- returns "))?;
        let fields: Vec<&str> = line.split("; ").collect();
        let field = |i: usize, prefix: &str| fields.get(i).and_then(|f| f.strip_prefix(prefix)).map(str::to_string);
        Some((fields[0].to_string(), fields.get(1)?.to_string(), field(2, "PUBLIC: ")?, field(3, "errors ")?))
    }

    /// `- arguments: \`name type = default\`, ...` (an entry whose rules are all empty), optionally ending in
    /// `then those of \`other\``; else the `| argument |` table. (name, type, default) each.
    fn arguments(&self, entries: &BTreeMap<String, Entry>) -> Vec<(String, String, String)> {
        let Some(line) = self.item("arguments") else {
            return self
                .table("argument")
                .unwrap_or_default()
                .into_iter()
                .map(|r| (r[0].clone(), normalize_type(&r[1]), normalize_default(r.get(2).map_or("", |d| d.as_str()))))
                .collect();
        };
        let (own, other) = match line.split_once("then those of `") {
            Some((own, other)) => (own, other.split('`').next()),
            None => (line.as_str(), None),
        };
        let mut args: Vec<(String, String, String)> = own
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|span| {
                let (decl, default) = span.split_once(" = ").unwrap_or((span, ""));
                let (name, ty) = decl.split_once(' ').unwrap_or((decl, ""));
                (name.to_string(), normalize_type(ty), normalize_default(default))
            })
            .collect();
        if let Some(other) = other {
            args.extend(entries.get(other).map(|e| e.arguments(entries)).unwrap_or_default());
        }
        args
    }
}

/// `### \`f\`` (functions) and `### type \`t\`` (types) entries, and the error table of `## Errors`.
fn parse_reference() -> (BTreeMap<String, Entry>, BTreeMap<String, Entry>, Entry) {
    let text = std::fs::read_to_string(repo().join("docs/reference.md")).expect("docs/reference.md");
    let (mut functions, mut types, mut errors) = (BTreeMap::new(), BTreeMap::new(), Entry::default());
    let mut current: Option<&mut Entry> = None;
    for (n, line) in text.lines().enumerate() {
        if let Some(heading) = line.strip_prefix("### ") {
            let (map, name) = match heading.strip_prefix("type ") {
                Some(t) => (&mut types, t),
                None => (&mut functions, heading),
            };
            let name = name.trim().trim_matches('`').to_string();
            assert!(!map.contains_key(&name), "docs/reference.md:{}: {name} documented twice", n + 1);
            current = Some(map.entry(name).or_insert(Entry { line: n + 1, lines: Vec::new() }));
        } else if line.starts_with("## ") {
            current = (line.trim() == "## Errors").then_some(&mut errors);
        } else if let Some(entry) = current.as_deref_mut() {
            entry.lines.push(line.to_string());
        }
    }
    (functions, types, errors)
}

/// Types as format_type prints them, without the extension's schema; a few common aliases accepted.
fn normalize_type(t: &str) -> String {
    let t = t.trim().replace("runtime_sandbox.", "");
    let (base, array) = match t.strip_suffix("[]") {
        Some(b) => (b.to_string(), "[]"),
        None => (t.clone(), ""),
    };
    let base = match base.as_str() {
        "timestamptz" => "timestamp with time zone",
        "int" | "int4" => "integer",
        "int8" => "bigint",
        "bool" => "boolean",
        "float8" => "double precision",
        "varchar" => "character varying",
        other => other,
    };
    format!("{base}{array}")
}

/// A default expression without its trailing cast (`'public'::name` -> `'public'`).
fn normalize_default(d: &str) -> String {
    let d = d.trim();
    match d.rfind("::") {
        Some(i) if !d[i..].contains('\'') && !d[i..].contains(')') => d[..i].to_string(),
        _ => d.to_string(),
    }
}

#[derive(Debug)]
struct Function {
    name: String,
    procedure: bool,
    result: Option<String>,
    volatility: String,
    public: bool,
    args: Vec<(String, String, String)>,
    columns: Vec<(String, String)>,
    strict: bool,
}

const FUNCTIONS: &str = r#"
SELECT p.proname::text, p.prokind = 'p', pg_catalog.pg_get_function_result(p.oid),
       CASE p.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END,
       EXISTS (SELECT FROM pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) a
                WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'),
       -- input arguments: [name, type, default]
       coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(a.n, pg_catalog.format_type(a.t, NULL),
                            coalesce(pg_catalog.pg_get_function_arg_default(p.oid, a.o::int), '')) ORDER BY a.o)
                   FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]), p.proargnames,
                               coalesce(p.proargmodes, array_fill('i'::"char", ARRAY[p.pronargs::int])))
                        WITH ORDINALITY AS a(t, n, m, o)
                  WHERE a.m IN ('i', 'b', 'v')), '[]')::text,
       -- result columns [name, type]: OUT/TABLE arguments, else the attributes of a composite result type
       coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(a.n, pg_catalog.format_type(a.t, NULL))
                                             ORDER BY a.o)
                   FROM unnest(p.proallargtypes, p.proargnames, p.proargmodes) WITH ORDINALITY AS a(t, n, m, o)
                  WHERE a.m IN ('o', 'b', 't')),
                (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(att.attname,
                            pg_catalog.format_type(att.atttypid, att.atttypmod)) ORDER BY att.attnum)
                   FROM pg_catalog.pg_type rt JOIN pg_catalog.pg_attribute att ON att.attrelid = rt.typrelid
                  WHERE rt.oid = p.prorettype AND att.attnum > 0 AND NOT att.attisdropped),
                '[]')::text,
       p.proisstrict
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = 'runtime_sandbox'::regnamespace
 ORDER BY 1
"#;

const TYPES: &str = r#"
SELECT t.typname::text, t.typtype = 'e',
       coalesce((SELECT pg_catalog.jsonb_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_catalog.pg_enum e
                  WHERE e.enumtypid = t.oid),
                (SELECT pg_catalog.jsonb_agg(att.attname || ' ' || pg_catalog.format_type(att.atttypid, att.atttypmod)
                                             ORDER BY att.attnum)
                   FROM pg_catalog.pg_attribute att
                  WHERE att.attrelid = t.typrelid AND att.attnum > 0 AND NOT att.attisdropped), '[]')::text
  FROM pg_catalog.pg_type t
 WHERE t.typnamespace = 'runtime_sandbox'::regnamespace AND t.typtype IN ('c', 'e')
   AND (t.typrelid = 0 OR (SELECT relkind FROM pg_catalog.pg_class WHERE oid = t.typrelid) = 'c')
 ORDER BY 1
"#;

fn json<T: serde::de::DeserializeOwned>(text: String) -> T {
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn catalog() -> (Vec<Function>, Vec<(String, bool, Vec<String>)>) {
    let db = common::fresh_database("it_reference_doc");
    let mut c = common::connect(&db);
    let functions = c
        .query(FUNCTIONS, &[])
        .unwrap()
        .iter()
        .map(|r| Function {
            name: r.get(0),
            procedure: r.get(1),
            result: r.get(2),
            volatility: r.get(3),
            public: r.get(4),
            args: json::<Vec<Vec<String>>>(r.get(5))
                .into_iter()
                .map(|a| (a[0].clone(), a[1].clone(), normalize_default(&a[2])))
                .collect(),
            columns: json::<Vec<Vec<String>>>(r.get(6)).into_iter().map(|a| (a[0].clone(), a[1].clone())).collect(),
            strict: r.get(7),
        })
        .collect();
    let types = c.query(TYPES, &[]).unwrap().iter().map(|r| (r.get(0), r.get(1), json(r.get(2)))).collect();
    (functions, types)
}

fn returns_text(f: &Function) -> String {
    f.result.as_deref().map(|r| r.replace("runtime_sandbox.", "")).unwrap_or_default()
}

/// The entry to add for a function, from the catalog (rules, meanings and errors left to fill in).
fn suggested_entry(f: &Function) -> String {
    let mut s = format!("### `{}`\n- returns ", f.name);
    if f.procedure {
        s += "nothing (a procedure: `CALL` it)";
    } else {
        s += &format!("`{}`", returns_text(f));
    }
    s += &format!(
        "; `{}`; PUBLIC: {}; errors `22023`; [<page>.md](<page>.md)\n",
        f.volatility,
        if f.public { "yes" } else { "no" }
    );
    if !f.args.is_empty() {
        s += "\n| argument | type | default | rule |\n|---|---|---|---|\n";
        for (n, t, d) in &f.args {
            let d = if d.is_empty() { String::new() } else { format!("`{d}`") };
            s += &format!("| `{n}` | `{}` | {d} | <rule> |\n", normalize_type(t));
        }
    }
    if !f.columns.is_empty() {
        s += "\n| result column | type | meaning |\n|---|---|---|\n";
        for (n, t) in &f.columns {
            s += &format!("| `{n}` | `{}` | <meaning> |\n", normalize_type(t));
        }
    }
    s
}

/// Position by position, what the page says against what the catalog has.
fn differences<T: std::fmt::Debug + PartialEq>(what: &str, documented: &[T], actual: &[T]) -> Vec<String> {
    (0..documented.len().max(actual.len()))
        .filter(|&i| documented.get(i) != actual.get(i))
        .map(|i| format!("{what} {}: the page has {:?}, the catalog {:?}", i + 1, documented.get(i), actual.get(i)))
        .collect()
}

fn check_function(
    f: &Function,
    entry: &Entry,
    entries: &BTreeMap<String, Entry>,
    error_codes: &BTreeSet<String>,
    problems: &mut Vec<String>,
) {
    let at = format!("docs/reference.md:{} ({})", entry.line, f.name);
    let mut problem = |what: String| problems.push(format!("{at}: {what}"));
    let Some((returns, volatility, public, errors)) = entry.heading() else {
        problem("no first line `- returns R; VOLATILITY; PUBLIC: yes|no; errors E; [page](page)`".into());
        return;
    };
    match returns.as_str() {
        r if f.procedure && r.starts_with("nothing") => {}
        r if !f.procedure && r.trim_matches('`') == returns_text(f) => {}
        r => problem(format!(
            "returns: {r:?}, the catalog says `{}`",
            if f.procedure { "nothing (a procedure)".to_string() } else { returns_text(f) }
        )),
    }
    if volatility.trim_matches('`') != f.volatility {
        problem(format!("volatility: {volatility:?}, the catalog says {}", f.volatility));
    }
    if public != if f.public { "yes" } else { "no" } {
        problem(format!("PUBLIC: {public:?}, the catalog says {}", if f.public { "yes" } else { "no" }));
    }
    let documented = entry.arguments(entries);
    let actual: Vec<(String, String, String)> =
        f.args.iter().map(|(n, t, d)| (n.clone(), normalize_type(t), d.clone())).collect();
    for what in differences("argument (name, type, default)", &documented, &actual) {
        problem(what);
    }
    // `- columns: as for `other`` borrows another entry's result table (the same result type, said once).
    let columns_entry = match entry.item("columns") {
        Some(c) => {
            let other = c.strip_prefix("as for `").and_then(|r| r.split('`').next()).unwrap_or_default();
            match entries.get(other) {
                Some(e) => e,
                None => {
                    problem(format!("columns: {c:?} names no documented function"));
                    entry
                }
            }
        }
        None => entry,
    };
    let documented: Vec<(String, String)> = columns_entry
        .table("result column")
        .unwrap_or_default()
        .into_iter()
        .map(|r| (r[0].clone(), normalize_type(&r[1])))
        .collect();
    let actual: Vec<(String, String)> = f.columns.iter().map(|(n, t)| (n.clone(), normalize_type(t))).collect();
    for what in differences("result column (name, type)", &documented, &actual) {
        problem(what);
    }
    // A STRICT function (NULL in, NULL out, the body never runs) says so in its entry; no other does.
    let says_strict = entry.lines.iter().any(|l| l.contains("STRICT"));
    if says_strict != f.strict {
        problem(format!(
            "the catalog says {}STRICT, the entry {}",
            if f.strict { "" } else { "not " },
            if says_strict { "says STRICT" } else { "does not say STRICT (e.g. `STRICT: NULL gives NULL` in the argument's rule)" }
        ));
    }
    if errors.trim() != "none" {
        for code in errors.split(',').map(|c| c.trim().trim_matches('`')) {
            if !error_codes.contains(code) {
                problem(format!("SQLSTATE {code} is not in the table of ## Errors"));
            }
        }
    }
}

#[test]
fn reference_lists_every_function_and_type_as_the_catalog_has_them() {
    let (functions, types) = catalog();
    let (doc_functions, doc_types, errors) = parse_reference();
    let error_codes: BTreeSet<String> =
        errors.table("SQLSTATE").expect("## Errors has a | SQLSTATE | table").into_iter().map(|r| r[0].clone()).collect();
    assert!(functions.len() >= 16 && !types.is_empty(), "a fresh install has the functions and types");

    let mut problems = Vec::new();
    for f in &functions {
        match doc_functions.get(&f.name) {
            Some(entry) => check_function(f, entry, &doc_functions, &error_codes, &mut problems),
            None => problems.push(format!(
                "runtime_sandbox.{} has no entry in docs/reference.md; add this under ## Functions (alphabetical) \
                 and fill in the rules, meanings and errors:\n\n{}",
                f.name,
                suggested_entry(f)
            )),
        }
    }
    let in_catalog: BTreeSet<&str> = functions.iter().map(|f| f.name.as_str()).collect();
    for (name, entry) in &doc_functions {
        if !in_catalog.contains(name.as_str()) {
            problems.push(format!("docs/reference.md:{}: {name} is not a function of the extension", entry.line));
        }
    }

    // Types: a composite that some function returns is documented by its result table; every other
    // type has an entry (an enum always: its labels).
    let results: BTreeSet<String> = functions.iter().filter_map(|f| f.result.as_deref()).map(normalize_type).collect();
    for (name, is_enum, members) in &types {
        if !is_enum && (results.contains(name) || results.contains(&format!("SETOF {name}"))) {
            continue;
        }
        let Some(entry) = doc_types.get(name) else {
            let body = if *is_enum {
                format!("- labels: {}", members.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", "))
            } else {
                let rows: Vec<String> = members
                    .iter()
                    .map(|m| {
                        let (n, t) = m.split_once(' ').unwrap();
                        format!("| `{n}` | `{}` |", normalize_type(t))
                    })
                    .collect();
                format!("| attribute | type |\n|---|---|\n{}", rows.join("\n"))
            };
            problems.push(format!(
                "type runtime_sandbox.{name} has no entry in docs/reference.md; add under ## Types:\n\n### type `{name}`\n<what it is>\n\n{body}\n"
            ));
            continue;
        };
        let at = format!("docs/reference.md:{} (type {name})", entry.line);
        if *is_enum {
            let labels: Vec<String> = entry
                .item("labels")
                .unwrap_or_default()
                .split(',')
                .map(|l| l.trim().trim_matches('`').to_string())
                .filter(|l| !l.is_empty())
                .collect();
            if &labels != members {
                problems.push(format!("{at}: labels {labels:?}, the catalog has {members:?} (in this order)"));
            }
        } else {
            let documented: Vec<String> = entry
                .table("attribute")
                .unwrap_or_default()
                .into_iter()
                .map(|r| format!("{} {}", r[0], normalize_type(&r[1])))
                .collect();
            let actual: Vec<String> = members
                .iter()
                .map(|m| {
                    let (n, t) = m.split_once(' ').unwrap();
                    format!("{n} {}", normalize_type(t))
                })
                .collect();
            if documented != actual {
                problems.push(format!("{at}: attributes {documented:?}, the catalog has {actual:?}"));
            }
        }
    }
    for (name, entry) in &doc_types {
        if !types.iter().any(|(t, ..)| t == name) {
            problems.push(format!("docs/reference.md:{}: type {name} is not a type of the extension", entry.line));
        }
    }
    assert!(problems.is_empty(), "docs/reference.md is out of step with the catalog:\n\n{}", problems.join("\n\n"));
}

/// The rule every change follows: every function and type of the extension has a COMMENT (what \df+ and
/// \dT+ show).
#[test]
fn every_function_and_type_has_a_comment() {
    let db = common::fresh_database("it_reference_comments");
    let mut c = common::connect(&db);
    let missing: Vec<String> = c
        .query(
            "SELECT 'function ' || p.oid::regprocedure::text FROM pg_catalog.pg_proc p
              WHERE p.pronamespace = 'runtime_sandbox'::regnamespace
                AND pg_catalog.obj_description(p.oid, 'pg_proc') IS NULL
             UNION ALL
             SELECT 'type ' || t.oid::regtype::text FROM pg_catalog.pg_type t
              WHERE t.typnamespace = 'runtime_sandbox'::regnamespace AND t.typtype IN ('c', 'e', 'd')
                AND (t.typrelid = 0 OR (SELECT relkind FROM pg_catalog.pg_class WHERE oid = t.typrelid) = 'c')
                AND pg_catalog.obj_description(t.oid, 'pg_type') IS NULL
             ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(missing.is_empty(), "no COMMENT ON (add one in the SQL and in the update script): {missing:?}");
}

/// SQLSTATE of every `ERRCODE_*` the Rust code names, from PostgreSQL's errcodes.h.
fn sqlstates_by_name() -> BTreeMap<String, String> {
    let pg_config = std::env::var("PG_CONFIG").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin/pg_config".into());
    let out = std::process::Command::new(pg_config).arg("--includedir-server").output().unwrap();
    let dir = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let header = std::fs::read_to_string(format!("{dir}/utils/errcodes.h")).expect("utils/errcodes.h");
    header
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("#define ")?;
            let (name, value) = rest.split_once(' ')?;
            let code: String = value.chars().filter(|c| c.is_ascii_alphanumeric()).skip("MAKESQLSTATE".len()).collect();
            Some((name.to_string(), code))
        })
        .collect()
}

fn source_files(dir: PathBuf, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

#[test]
fn every_sqlstate_the_code_raises_is_in_the_reference() {
    let (_, _, errors) = parse_reference();
    let listed: BTreeSet<String> =
        errors.table("SQLSTATE").expect("## Errors has a | SQLSTATE | table").into_iter().map(|r| r[0].clone()).collect();
    let codes = sqlstates_by_name();
    let mut files = Vec::new();
    source_files(repo().join("src"), "rs", &mut files);
    source_files(repo().join("sql"), "sql", &mut files);
    let mut missing = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let shown = file.strip_prefix(repo()).unwrap().display().to_string();
        // Rust: ereport!(…, PgSqlErrorCode::ERRCODE_X, …) and error!(…) (XX000); SQL: ERRCODE = 'xxxxx'.
        let mut raised: Vec<String> = text
            .split("ERRCODE_")
            .skip(1)
            .map(|rest| rest.chars().take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit()).collect())
            .map(|name: String| codes.get(&format!("ERRCODE_{name}")).cloned().unwrap_or(format!("ERRCODE_{name}?")))
            .collect();
        if text.contains("error!(") {
            raised.push("XX000".into());
        }
        for part in text.split("ERRCODE = '").skip(1) {
            raised.push(part.chars().take(5).collect());
        }
        for code in raised {
            if !listed.contains(&code) && !missing.contains(&(code.clone(), shown.clone())) {
                missing.push((code, shown.clone()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "SQLSTATEs raised by the code but not in docs/reference.md's ## Errors table (add a row: SQLSTATE, message, when): {missing:?}"
    );
}

#[test]
fn defaults_and_types_normalize_as_documented() {
    assert_eq!(normalize_default("'runtime_scheduler'::name"), "'runtime_scheduler'");
    assert_eq!(normalize_default("NULL::runtime_sandbox.backfill_cursor"), "NULL");
    assert_eq!(normalize_default("'00:10:00'::interval"), "'00:10:00'");
    assert_eq!(normalize_default("'a::b'"), "'a::b'");
    assert_eq!(normalize_type("runtime_sandbox.backfill_target[]"), "backfill_target[]");
    assert_eq!(normalize_type("timestamptz"), "timestamp with time zone");
}

/// The rows of the error table: (SQLSTATE, the message's template: its first backticked part).
fn documented_errors() -> Vec<(String, String)> {
    let (_, _, errors) = parse_reference();
    errors
        .lines
        .iter()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| SQLSTATE") && !l.starts_with("|---"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let template = cells[1].split('`').nth(1).unwrap_or_default().to_string();
            (cells[0].to_string(), template)
        })
        .collect()
}

/// Whether `message` starts as `template` does, a `<placeholder>` standing for any text.
fn fits(template: &str, message: &str) -> bool {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        parts.push(&rest[..open]);
        rest = rest[open..].find('>').map_or("", |close| &rest[open + close + 1..]);
    }
    parts.push(rest);
    let mut at = 0;
    for (i, part) in parts.iter().enumerate() {
        let part = part.trim_end_matches("...").trim_end();
        if part.is_empty() {
            continue;
        }
        match if i == 0 { message.starts_with(part).then_some(0) } else { message[at..].find(part) } {
            Some(found) => at += found + part.len(),
            None => return false,
        }
    }
    true
}

/// Set-up (as the superuser, in the test's database) and the call that raises each documented error; or why this
/// test does not raise it (then another test does, or nothing can).
fn raise(sqlstate: &str, template: &str) -> Result<(&'static str, &'static str), &'static str> {
    let t = |prefix: &str| template.starts_with(prefix);
    Ok(match sqlstate {
        "22023" => ("", "SELECT * FROM runtime_sandbox.reconcile_daytona('[]', now(), NULL)"),
        "22000" => (
            "SELECT runtime_sandbox.install_ledger('e_checkpoint');
             INSERT INTO e_checkpoint.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1',
               '{\"phase\": \"pending\", \"cursor\": {\"updatedAt\": \"no date\", \"runId\": \"r\", \"attempt\": 1, \"resourceOrdinal\": 1}}')",
            "SELECT * FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 10, 1, 'e_checkpoint')",
        ),
        "23505" => (
            "CREATE SCHEMA e_app; SELECT runtime_sandbox.install_environment_tables('e_app');
             INSERT INTO e_app.environments (name, driver) VALUES ('Daytona', 'local')",
            "SELECT * FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => 'e_app')",
        ),
        "42P01" if t("runtime_sandbox: app_schema") => (
            "CREATE SCHEMA e_empty_app",
            "SELECT * FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => 'e_empty_app')",
        ),
        "42P01" => ("CREATE SCHEMA e_empty_ledger", "SELECT * FROM runtime_sandbox.backfill_status('e_empty_ledger')"),
        "54000" if t("runtime_sandbox: a value of") => (
            "CREATE SCHEMA e_deep; SELECT runtime_sandbox.install_environment_tables('e_deep');
             INSERT INTO e_deep.environments (name, driver, config, metadata)
             SELECT 'Daytona', 'sandbox', (repeat('[', 200) || repeat(']', 200))::jsonb, '{\"managedByPaperclip\": true}'",
            "SELECT * FROM runtime_sandbox.reconcile_managed_environment('Daytona', 'daytona', app_schema => 'e_deep')",
        ),
        "54000" => ("", "SELECT runtime_sandbox.stable_json((repeat('[', 1001) || repeat(']', 1001))::jsonb)"),
        "55000" if t("runtime_sandbox: <function>: pg_cron") => (
            "SELECT runtime_sandbox.install_ledger('e_cron')",
            "SELECT runtime_sandbox.schedule_reconciliation(ledger_schema => 'e_cron')",
        ),
        "55000" if t("runtime_sandbox: ledger_schema") => (
            "SELECT runtime_sandbox.install_ledger('e_unusable');
             ALTER TABLE e_unusable.control ALTER COLUMN value TYPE integer USING 0",
            "SELECT * FROM runtime_sandbox.backfill_status('e_unusable')",
        ),
        "55000" if t("runtime_sandbox: scheduled reconciliation") => (
            "SELECT runtime_sandbox.install_ledger('e_scheduled')",
            "CALL runtime_sandbox.run_reconciliation_job(ledger_schema => 'e_scheduled')",
        ),
        "2D000" => (
            "SELECT runtime_sandbox.install_ledger('e_in_block')",
            "BEGIN; CALL runtime_sandbox.run_sandbox_operation_backfill(ledger_schema => 'e_in_block')",
        ),
        "42501" if t("permission denied") => (
            "DROP ROLE IF EXISTS rs_errors_nobody; CREATE ROLE rs_errors_nobody",
            "SET ROLE rs_errors_nobody; SELECT * FROM runtime_sandbox.reconcile_daytona('[]', now(), true)",
        ),
        "42501" if t("runtime_sandbox: <function> runs on schema") => (
            "SELECT runtime_sandbox.install_ledger('e_owned');
             DROP ROLE IF EXISTS rs_errors_stranger; CREATE ROLE rs_errors_stranger;
             GRANT EXECUTE ON FUNCTION runtime_sandbox.backfill_status(name) TO rs_errors_stranger",
            "SET ROLE rs_errors_stranger; SELECT * FROM runtime_sandbox.backfill_status('e_owned')",
        ),
        "42501" if t("runtime_sandbox: <function>: the job would run as role") => {
            return Err("pg_cron schedules only from its own database: tests/reconcile_cron.rs")
        }
        "42501" if t("runtime_sandbox: schema runtime_sandbox already exists") => {
            return Err("CREATE EXTENSION in a database of its own: tests/extension_lifecycle.rs")
        }
        "55000" if t("runtime_sandbox: schema runtime_sandbox already holds") => {
            return Err("CREATE EXTENSION in a database of its own: tests/extension_lifecycle.rs")
        }
        "55000" if t("runtime_sandbox: type managed_stock_status") => return Err("only after the extension's enum is altered by hand"),
        "40001" => return Err("two sessions: tests/managed_concurrency.rs"),
        "22021" => return Err("a SQL_ASCII database: tests/managed_errors.rs"),
        "XX001" => return Err("corrupted storage"),
        "25006" => return Err("a standby: tests/standby.rs"),
        "55P03" => return Err("PostgreSQL's own, with a second session holding the lock"),
        "XX000" => return Err("the unforeseen, by definition"),
        _ => return Err("NO ENTRY"),
    })
}

#[test]
fn each_documented_error_is_raised_with_its_sqlstate_and_message() {
    let db = common::fresh_database("it_reference_errors");
    let mut problems = Vec::new();
    let mut raised = 0;
    for (sqlstate, template) in documented_errors() {
        let (setup, call) = match raise(&sqlstate, &template) {
            Ok(steps) => steps,
            Err("NO ENTRY") => {
                problems.push(format!("{sqlstate} `{template}`: no entry in raise() (a call that raises it, or why not)"));
                continue;
            }
            Err(_) => continue,
        };
        let mut c = common::connect(&db);
        if !setup.is_empty() {
            c.batch_execute(setup).unwrap_or_else(|e| panic!("{sqlstate} set-up: {}", common::db_message(&e)));
        }
        match c.batch_execute(call) {
            Ok(()) => problems.push(format!("{sqlstate} `{template}`: {call} raised nothing")),
            Err(e) => {
                let db_error = e.as_db_error().unwrap_or_else(|| panic!("{call}: {e}"));
                let (code, message) = (db_error.code().code(), db_error.message());
                if code != sqlstate || !fits(&template, message) {
                    problems.push(format!("documented {sqlstate} `{template}`\n    raised {code} `{message}`\n    by {call}"));
                }
                raised += 1;
            }
        }
    }
    assert!(raised >= 13, "only {raised} errors raised");
    assert!(problems.is_empty(), "docs/reference.md's error table against the code:\n{}", problems.join("\n"));
}

#[test]
fn the_error_template_matcher_holds_placeholders_apart() {
    assert!(fits("runtime_sandbox: ledger_schema \"<schema>\" cannot be used by <function>: <object>", "runtime_sandbox: ledger_schema \"l\" cannot be used by the backfill: l.control: x"));
    assert!(!fits("runtime_sandbox: ledger_schema \"<schema>\" cannot be used", "runtime_sandbox: ledger_schema \"l\" lacks"));
    assert!(fits("permission denied for function <name>", "permission denied for function reconcile_daytona"));
    assert!(!fits("runtime_sandbox: invalid argument <argument>", "runtime_sandbox: something else"));
}
