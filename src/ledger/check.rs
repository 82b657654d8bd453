//! A ledger schema's catalog held against `requirements` (pure): every
//! problem with the DDL that fixes it. `check_ledger` lists them; every
//! function that works on a ledger refuses one with an `Error` problem on a
//! table it uses, before any work.
//!
//! Severities:
//! - `error`: a function using the table would fail or misread it (a missing
//!   table, column or unique key, a type the statements cannot use, a NOT NULL
//!   column nobody fills, an object owned by another role than the schema's);
//! - `warning`: the functions work, slower or with less to show (a missing
//!   index, a missing health view);
//! - `notice`: code the ledger's owner attached to a table (triggers, rules,
//!   policies, functions called by defaults, CHECKs, domains, casts, index
//!   expressions). The functions run it as the owner, never as the caller.

use super::requirements::{self, Table, Ty, INDEXES, OPERATION_STATE, OPERATION_STATES, TABLES, UNIQUE_KEYS, VIEWS};
use serde::Deserialize;

/// What the catalog says (sql/queries/ledger/facts.sql).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Facts {
    pub owner: String,
    pub owner_oid: u32,
    pub relations: Vec<Relation>,
    pub types: Vec<TypeFacts>,
    /// Citus's metadata of the schema, when Citus is installed in the database (read apart: its catalogs
    /// exist only then).
    #[serde(skip)]
    pub citus: Option<CitusFacts>,
}

/// What Citus knows of a ledger schema.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CitusFacts {
    /// The schema is a distributed schema (schema-based sharding: pg_dist_schema).
    pub schema_distributed: bool,
    /// The schema's tables in Citus's metadata (pg_dist_partition), by name.
    pub tables: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Relation {
    pub name: String,
    /// pg_class.relkind: r, p, v, m, f.
    pub kind: String,
    pub owner: String,
    pub row_security: bool,
    pub forced_row_security: bool,
    pub policies: Vec<String>,
    pub triggers: Vec<String>,
    /// Constraints and triggers that are DEFERRABLE INITIALLY DEFERRED.
    #[serde(default)]
    pub deferred: Vec<String>,
    pub rules: Vec<String>,
    pub checks_calling_functions: Vec<String>,
    /// The relation's comment (install_ledger's fingerprint of the health view).
    pub comment: Option<String>,
    /// Only for the relations the check asked about.
    pub columns: Option<Vec<ColumnFacts>>,
    pub indexes: Option<Vec<IndexFacts>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ColumnFacts {
    pub name: String,
    /// format_type, as the user wrote it (`character varying(64)`).
    #[serde(rename = "type")]
    pub type_name: String,
    pub type_oid: u32,
    /// pg_type.typtype: b, d (domain), e (enum), c, r, m, p.
    pub type_kind: String,
    /// The base type's typname (the column's own type unless a domain).
    pub base: String,
    pub base_oid: u32,
    /// The base type's schema.
    pub base_schema: String,
    /// The base type's pg_type.typtype (e: an enum, or a domain over one).
    #[serde(default)]
    pub base_kind: String,
    pub domain_checks: bool,
    pub user_casts: bool,
    pub not_null: bool,
    pub default: Option<String>,
    pub default_calls_function: bool,
    pub generated: bool,
    pub identity: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct IndexFacts {
    pub name: String,
    pub unique: bool,
    pub valid: bool,
    pub partial: bool,
    pub expressions: bool,
    pub calls_function: bool,
    /// Key columns in order (None for an expression).
    pub columns: Vec<Option<String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct TypeFacts {
    pub name: String,
    pub oid: u32,
    /// pg_type.typtype: e (enum), d (domain), c (composite), b, r, m.
    pub kind: String,
    pub owner: String,
    pub labels: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Notice,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Notice => "notice",
        }
    }
}

/// The words that mark the problems only writing statements have.
const NULL_WRITTEN: &str = "NOT NULL, but the functions write NULL into it";
const NOT_SET_BY_INSERTS: &str = ": the functions' inserts do not set it";
const MISSING_UNIQUE_KEY: &str = "missing unique key";
/// The words that mark the problems only the backfill's insert has (the
/// reconciliations and every dry run work): requirements::backfill_writers.
const BACKFILL_INSERT_ONLY: &str = "only the backfill's insert fails on it";

const RULE_ON_WRITTEN_TABLE: &str = "PostgreSQL refuses INSERT ... ON CONFLICT and data-modifying WITH on a table with rules";

/// One row of check_ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The table it concerns (the enum's problems concern the operations
    /// table, which holds the state); None: the whole schema.
    pub table: Option<&'static str>,
    pub object: String,
    pub problem: String,
    /// DDL that fixes it (None for a notice: nothing is wrong).
    pub fix: Option<String>,
    pub severity: Severity,
}

impl Problem {
    /// The functions this problem refuses (check_ledger's `breaks`): an
    /// error's, those that work on its table; a warning or notice breaks none.
    pub fn breaks(&self) -> Vec<&'static str> {
        if self.severity != Severity::Error {
            Vec::new()
        } else if self.backfill_only() {
            requirements::backfill_writers()
        } else {
            requirements::breaks(self.table, self.writes_only())
        }
    }

    /// Whether only the backfill's insert fails on it: a missing key of
    /// requirements::BACKFILL_KEYS, or a problem that says so.
    fn backfill_only(&self) -> bool {
        self.problem.contains(BACKFILL_INSERT_ONLY)
            || (self.problem == MISSING_UNIQUE_KEY
                && requirements::BACKFILL_KEYS
                    .iter()
                    .any(|(t, key)| self.table == Some(*t) && self.object.ends_with(&format!(" ({})", key.join(", ")))))
    }

    /// Whether a function working on `tables` (only reading them when
    /// `reading`) must refuse the ledger.
    pub fn blocks(&self, tables: &[&str], reading: bool) -> bool {
        self.severity == Severity::Error
            && self.table.is_none_or(|t| tables.contains(&t))
            && !(reading && self.writes_only())
            // The backfill alone works on control (requirements::backfill_writers).
            && !(self.backfill_only() && !tables.contains(&"control"))
    }

    /// Whether only the statements that write the table fail on it: a NOT
    /// NULL column an insert leaves empty or a write fills with NULL, a
    /// missing ON CONFLICT key, a rule (made here, below).
    pub fn writes_only(&self) -> bool {
        [NULL_WRITTEN, NOT_SET_BY_INSERTS, MISSING_UNIQUE_KEY, RULE_ON_WRITTEN_TABLE, BACKFILL_INSERT_ONLY]
            .iter()
            .any(|marker| self.problem.contains(marker))
    }
}

/// A role or other name quoted for DDL (always quoted: names from the catalog
/// may be anything).
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Everything wrong with the ledger `schema` (`quoted`: its quoted form),
/// in report order: the schema, the enum, then table by table (existence,
/// owner, columns, keys, indexes, the owner's code), then the views.
/// `facts` is None when the schema does not exist.
pub fn check(schema: &str, quoted: &str, facts: Option<&Facts>) -> Vec<Problem> {
    let install = format!("SELECT runtime_sandbox.install_ledger({});", quote_literal(schema));
    let Some(facts) = facts else {
        return vec![Problem {
            table: None,
            object: quoted_name(schema),
            problem: "missing schema".into(),
            fix: Some(install),
            severity: Severity::Error,
        }];
    };
    let mut out = Vec::new();
    let owner = &facts.owner;
    let owned_by = |what: &str, object: &str, found: &str, table: Option<&'static str>, out: &mut Vec<Problem>| {
        if found != owner {
            out.push(Problem {
                table,
                object: format!("{}.{}", quoted_name(schema), quoted_name(object)),
                problem: format!("owned by {found}, not by the schema's owner {owner}"),
                fix: Some(format!("ALTER {what} {quoted}.{} OWNER TO {};", quote_ident(object), quote_ident(owner))),
                severity: Severity::Error,
            });
        }
    };

    // The operation-state enum (written by the backfill and the reconcile).
    let state_type = facts.types.iter().find(|t| t.name == OPERATION_STATE);
    let enum_object = format!("{}.{OPERATION_STATE}", quoted_name(schema));
    let operations = Some("runtime_sandbox_operations");
    match state_type {
        None => out.push(Problem {
            table: operations,
            object: enum_object.clone(),
            problem: "missing enum type".into(),
            fix: Some(install.clone()),
            severity: Severity::Error,
        }),
        Some(t) if t.kind != "e" => out.push(Problem {
            table: operations,
            object: enum_object.clone(),
            problem: format!("is a {}, not an enum", type_kind(&t.kind)),
            fix: Some(format!(
                "ALTER {} {quoted}.{OPERATION_STATE} RENAME TO {OPERATION_STATE}_old; {install}",
                if t.kind == "d" { "DOMAIN" } else { "TYPE" }
            )),
            severity: Severity::Error,
        }),
        Some(t) => {
            let missing: Vec<&str> = OPERATION_STATES.iter().copied().filter(|l| !t.labels.iter().any(|x| x == l)).collect();
            if !missing.is_empty() {
                out.push(Problem {
                    table: operations,
                    object: enum_object.clone(),
                    problem: format!("missing enum labels: {}", missing.join(", ")),
                    fix: Some(
                        missing
                            .iter()
                            .map(|l| format!("ALTER TYPE {quoted}.{OPERATION_STATE} ADD VALUE IF NOT EXISTS {};", quote_literal(l)))
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                    severity: Severity::Error,
                });
            }
            owned_by("TYPE", OPERATION_STATE, &t.owner, operations, &mut out);
        }
    }
    // A column of the ledger's own state type is right; if the type is not
    // an enum, the row above says so.
    let state_oid = state_type.map(|t| t.oid);

    for table in TABLES {
        check_table(schema, quoted, facts, table, state_oid, &install, &mut out);
    }

    if let Some(citus) = &facts.citus {
        check_citus(schema, facts, citus, &mut out);
    }

    for view in VIEWS {
        match facts.relations.iter().find(|r| r.name == *view) {
            Some(r) if r.kind == "v" => owned_by("VIEW", view, &r.owner, None, &mut out),
            Some(r) => out.push(Problem {
                table: None,
                object: format!("{}.{view}", quoted_name(schema)),
                problem: format!("is a {}, not a view", relation_kind(&r.kind)),
                fix: None,
                severity: Severity::Warning,
            }),
            None => out.push(Problem {
                table: None,
                object: format!("{}.{view}", quoted_name(schema)),
                problem: "missing view".into(),
                fix: Some(install.clone()),
                severity: Severity::Warning,
            }),
        }
    }
    out
}

fn check_table(
    schema: &str,
    quoted: &str,
    facts: &Facts,
    table: &'static Table,
    state_oid: Option<u32>,
    install: &str,
    out: &mut Vec<Problem>,
) {
    let name = table.name;
    let object = format!("{}.{name}", quoted_name(schema));
    let at = |problem: String, fix: Option<String>, severity: Severity| Problem {
        table: Some(name),
        object: object.clone(),
        problem,
        fix,
        severity,
    };
    let Some(relation) = facts.relations.iter().find(|r| r.name == name) else {
        out.push(at("missing table".into(), Some(install.to_string()), Severity::Error));
        return;
    };
    if relation.kind != "r" && relation.kind != "p" {
        out.push(at(
            format!("is a {}, not a table", relation_kind(&relation.kind)),
            Some(format!("ALTER {} {quoted}.{name} RENAME TO {name}_old; {install}", relation_ddl_kind(&relation.kind))),
            Severity::Error,
        ));
        return;
    }
    if relation.owner != facts.owner {
        out.push(at(
            format!("owned by {}, not by the schema's owner {}", relation.owner, facts.owner),
            Some(format!("ALTER TABLE {quoted}.{name} OWNER TO {};", quote_ident(&facts.owner))),
            Severity::Error,
        ));
    }
    let columns = relation.columns.as_deref().unwrap_or(&[]);
    let column_object = |column: &str| format!("{object}.{}", quoted_name(column));

    for spec in table.columns {
        let Some(found) = columns.iter().find(|c| c.name == spec.name) else {
            out.push(Problem {
                table: Some(name),
                object: column_object(spec.name),
                problem: match spec.limits {
                    Some(limits) => format!("missing column: {limits}"),
                    None => "missing column".into(),
                },
                fix: Some(format!("ALTER TABLE {quoted}.{name} ADD COLUMN {} {};", spec.name, spec.add.replace("@ledger@", quoted))),
                severity: if spec.limits.is_some() { Severity::Warning } else { Severity::Error },
            });
            continue;
        };
        let column = |problem: String, fix: String| Problem {
            table: Some(name),
            object: column_object(spec.name),
            problem,
            fix: Some(fix),
            severity: Severity::Error,
        };
        // An enum environment of the operations: the reconciliations compare it
        // as the application's literal does there; the backfill's insert writes
        // text into it, which PostgreSQL refuses (42804) as it refuses the
        // application's own.
        if name == "runtime_sandbox_operations" && spec.name == "environment" && found.base_kind == "e" {
            let fix = format!("ALTER TABLE {quoted}.{name} ALTER COLUMN environment TYPE text USING environment::text;");
            if found.type_kind == "d" {
                out.push(column(
                    format!(
                        "is {}, a domain over an enum: PostgreSQL has no = for it, so the application's \
                         environment = 'production' fails there (42883), as the functions' comparisons would",
                        found.type_name
                    ),
                    fix,
                ));
                continue;
            }
            out.push(column(
                format!(
                    "an enum, {}: the backfill inserts text into it, which PostgreSQL refuses (42804) as for the \
                     application's insert; {BACKFILL_INSERT_ONLY}",
                    found.type_name
                ),
                fix,
            ));
            continue;
        }
        let type_ok = match spec.ty {
            Ty::State => Some(found.type_oid) == state_oid || Ty::Text.accepts_base(&found.base),
            Ty::OrgId => Ty::Text.accepts_base(&found.base) || runs_org_id_base(facts) == Some(found.base_oid),
            ty => ty.accepts_base(&found.base),
        };
        if spec.ty == Ty::Key {
            let expected = format!("COALESCE({}, ''::text)", "routing_domain");
            if !found.generated || found.default.as_deref() != Some(expected.as_str()) {
                out.push(column(
                    "not GENERATED ALWAYS AS (coalesce(routing_domain, '')) STORED".into(),
                    format!(
                        "ALTER TABLE {quoted}.{name} DROP COLUMN {col}, ADD COLUMN {col} {};",
                        spec.add,
                        col = spec.name
                    ),
                ));
                continue;
            }
        } else if !type_ok {
            let target = if spec.ty == Ty::State { format!("{quoted}.{OPERATION_STATE}") } else { spec.ty.canonical().to_string() };
            out.push(column(
                format!("is {}; the functions need {}", found.type_name, spec.ty.accepts()),
                if target == "text" {
                    format!("ALTER TABLE {quoted}.{name} ALTER COLUMN {col} TYPE text USING {col}::text;", col = spec.name)
                } else {
                    format!(
                        "ALTER TABLE {quoted}.{name} ALTER COLUMN {col} TYPE {target} USING {col}::text::{target};",
                        col = spec.name
                    )
                },
            ));
        }
        if spec.nullable && found.not_null {
            out.push(column(
                NULL_WRITTEN.into(),
                format!("ALTER TABLE {quoted}.{name} ALTER COLUMN {} DROP NOT NULL;", spec.name),
            ));
        }
    }

    // NOT NULL columns the functions' inserts leave to their default.
    if let Some(inserted) = table.inserted {
        for found in columns {
            let unfilled = found.not_null && found.default.is_none() && !found.identity && !found.generated;
            let spec = table.columns.iter().find(|c| c.name == found.name);
            // A column the functions write NULL into is reported above.
            if unfilled && !inserted.contains(&found.name.as_str()) && !spec.is_some_and(|c| c.nullable) {
                let extra = spec.is_none();
                out.push(Problem {
                    table: Some(name),
                    object: column_object(&found.name),
                    problem: format!(
                        "NOT NULL without a default{}{NOT_SET_BY_INSERTS}",
                        if extra { " (a column of the application's)" } else { "" }
                    ),
                    fix: Some(format!("ALTER TABLE {quoted}.{name} ALTER COLUMN {} DROP NOT NULL;", quote_ident(&found.name))),
                    severity: Severity::Error,
                });
            }
        }
    }

    let indexes = relation.indexes.as_deref().unwrap_or(&[]);
    fn names(index: &IndexFacts) -> Option<Vec<&str>> {
        index.columns.iter().map(|c| c.as_deref()).collect()
    }
    for (_, key) in UNIQUE_KEYS.iter().filter(|(t, _)| *t == name) {
        let found = indexes.iter().any(|i| {
            i.valid && i.unique && !i.partial && !i.expressions && names(i).is_some_and(|cols| {
                cols.len() == key.len() && key.iter().all(|k| cols.contains(k))
            })
        });
        if !found {
            out.push(Problem {
                table: Some(name),
                object: format!("{object} ({})", key.join(", ")),
                problem: MISSING_UNIQUE_KEY.into(),
                fix: Some(format!("CREATE UNIQUE INDEX CONCURRENTLY ON {quoted}.{name} ({});", key.join(", "))),
                severity: Severity::Error,
            });
        }
    }
    for (_, key) in INDEXES.iter().filter(|(t, _)| *t == name) {
        let found = indexes.iter().any(|i| {
            i.valid && i.columns.len() >= key.len() && i.columns[..key.len()].iter().zip(key.iter()).all(|(c, k)| c.as_deref() == Some(*k))
        });
        if !found {
            out.push(Problem {
                table: Some(name),
                object: format!("{object} ({})", key.join(", ")),
                problem: "missing index".into(),
                fix: Some(format!("CREATE INDEX CONCURRENTLY ON {quoted}.{name} ({});", key.join(", "))),
                severity: Severity::Warning,
            });
        }
    }

    // The owner's code: it runs when the functions touch the table, as the owner.
    let notice = |what: String| Problem {
        table: Some(name),
        object: object.clone(),
        problem: format!("{what}: runs as the ledger's owner {} when the functions use the table", facts.owner),
        fix: None,
        severity: Severity::Notice,
    };
    for trigger in &relation.triggers {
        out.push(notice(format!("trigger {}", quoted_name(trigger))));
    }
    for deferred in &relation.deferred {
        // PostgreSQL cannot queue it inside the owner's restricted context:
        // shell::owner makes it IMMEDIATE for the call instead.
        out.push(Problem {
            table: Some(name),
            object: object.clone(),
            problem: format!(
                "{} is DEFERRABLE INITIALLY DEFERRED: when a role other than the owner {} calls, it is checked at the \
                 end of each of the call's statements, as the owner, instead of at COMMIT",
                quoted_name(deferred),
                facts.owner
            ),
            fix: None,
            severity: Severity::Notice,
        });
    }
    for rule in &relation.rules {
        if name == "runs" {
            // Only read: its rules never fire.
            out.push(notice(format!("rule {}", quoted_name(rule))));
        } else {
            out.push(Problem {
                table: Some(name),
                object: object.clone(),
                problem: format!(
                    "rule {}: {RULE_ON_WRITTEN_TABLE}, which the functions' writes are",
                    quoted_name(rule)
                ),
                fix: Some(format!("DROP RULE {} ON {quoted}.{name};", quote_ident(rule))),
                severity: Severity::Error,
            });
        }
    }
    if relation.row_security {
        let policies = if relation.policies.is_empty() { "no policies".to_string() } else { relation.policies.join(", ") };
        out.push(notice(format!(
            "row level security{} ({policies}){}",
            if relation.forced_row_security { ", forced" } else { "" },
            if relation.forced_row_security { ", applied to the owner: rows it hides are invisible to the functions" } else { ", not applied to the owner" }
        )));
    }
    for check in &relation.checks_calling_functions {
        out.push(notice(format!("CHECK constraint {} calls a function", quoted_name(check))));
    }
    for index in indexes.iter().filter(|i| i.calls_function) {
        out.push(notice(format!("index {} calls a function", quoted_name(&index.name))));
    }
    for column in columns {
        if column.default_calls_function {
            let what = if column.generated { "generated column" } else { "default of column" };
            out.push(notice(format!("{what} {} calls a function", quoted_name(&column.name))));
        }
        if column.type_kind == "d" && column.domain_checks {
            out.push(notice(format!("column {} is of domain {} with CHECK constraints", quoted_name(&column.name), column.type_name)));
        }
        if column.user_casts {
            out.push(notice(format!("column {}: type {} has casts through user functions", quoted_name(&column.name), column.type_name)));
        }
    }
}

/// On Citus, a ledger is either all local or all distributed (a distributed schema): statements join its
/// tables, and Citus cannot join a local table with a distributed one. A ledger table outside Citus's
/// metadata in a distributed schema (made by a CREATE TABLE Citus did not convert), or a schema whose
/// tables are only partly distributed, is an error on every function.
fn check_citus(schema: &str, facts: &Facts, citus: &CitusFacts, out: &mut Vec<Problem>) {
    let ledger: Vec<&str> = TABLES
        .iter()
        .map(|t| t.name)
        .filter(|name| facts.relations.iter().any(|r| r.name == *name && (r.kind == "r" || r.kind == "p")))
        .collect();
    let (distributed, local): (Vec<&str>, Vec<&str>) = ledger.iter().partition(|t| citus.tables.iter().any(|d| d == *t));
    if local.is_empty() || (!citus.schema_distributed && distributed.is_empty()) {
        return;
    }
    let literal = quote_literal(&quoted_name(schema));
    out.push(Problem {
        table: None,
        object: quoted_name(schema),
        problem: if citus.schema_distributed {
            format!("a distributed schema (Citus) whose tables {} are not distributed", local.join(", "))
        } else {
            format!("partly distributed (Citus): {} distributed, {} not", distributed.join(", "), local.join(", "))
        },
        fix: Some(if citus.schema_distributed {
            format!(
                "SELECT citus_schema_undistribute({literal}); SELECT runtime_sandbox.install_ledger({}); \
                 SELECT citus_schema_distribute({literal});",
                quote_literal(schema)
            )
        } else {
            format!("SELECT undistribute_table(...) for each of {}; SELECT citus_schema_distribute({literal});", distributed.join(", "))
        }),
        severity: Severity::Error,
    });
}

/// A name as quote_ident prints it: bare when it is a plain lower-case identifier.
fn quoted_name(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        quote_ident(name)
    }
}

fn relation_kind(kind: &str) -> &'static str {
    match kind {
        "v" => "view",
        "m" => "materialized view",
        "f" => "foreign table",
        "p" => "partitioned table",
        _ => "table",
    }
}

fn relation_ddl_kind(kind: &str) -> &'static str {
    match kind {
        "v" => "VIEW",
        "m" => "MATERIALIZED VIEW",
        "f" => "FOREIGN TABLE",
        _ => "TABLE",
    }
}

fn type_kind(kind: &str) -> &'static str {
    match kind {
        "d" => "domain",
        "c" => "composite type",
        "r" => "range type",
        "m" => "multirange type",
        "p" => "pseudo-type",
        _ => "base type",
    }
}

/// The relations whose columns and indexes the check reads.
pub fn checked_tables() -> Vec<&'static str> {
    requirements::table_names()
}

impl Facts {
    /// The column `table`.`column`, as the catalog read it.
    pub fn column(&self, table: &str, column: &str) -> Option<&ColumnFacts> {
        let relation = self.relations.iter().find(|r| r.name == table)?;
        relation.columns.as_deref()?.iter().find(|c| c.name == column)
    }

    /// Whether the operations keep `org_id` in another type than text (the
    /// type of `runs.org_id`): the backfill's inserts then convert it.
    pub fn typed_org_id(&self) -> bool {
        self.column("runtime_sandbox_operations", "org_id").is_some_and(|c| !Ty::Text.accepts_base(&c.base))
    }

    /// Whether the attempts keep `run_id` as char(n): the backfill reads it
    /// with its blanks (as the application does) and inserts it without them.
    pub fn padded_run_id(&self) -> bool {
        self.column("attempts", "run_id").is_some_and(|c| c.base == "bpchar")
    }

    /// When the operations' `environment` is (a domain over) citext, the
    /// application's literal `'production'` is citext there and matches
    /// without regard to case: the statements then pass the environment as
    /// citext (this oid) and compare with citext's own `=`, named with its
    /// schema as the pinned `search_path` does not hold it. None: as text, `=`.
    pub fn citext_environment(&self) -> Option<(u32, String)> {
        let column = self.column("runtime_sandbox_operations", "environment").filter(|c| c.base == "citext")?;
        Some((column.base_oid, format!("OPERATOR({}.=)", quote_ident(&column.base_schema))))
    }

    /// When the operations' `environment` is (a domain over) an enum, the
    /// application's literal `'production'` is that enum's value there: the
    /// statements then pass the environment as the enum's value (its oid and
    /// qualified name here) and compare with the enum's own `=`.
    pub fn enum_environment(&self) -> Option<(u32, String)> {
        let column = self.column("runtime_sandbox_operations", "environment").filter(|c| c.base_kind == "e")?;
        Some((column.base_oid, format!("{}.{}", quote_ident(&column.base_schema), quote_ident(&column.base))))
    }
}

/// The base type of `runs.org_id`, which the backfill copies into the
/// operations' `org_id` (any type works there when both are the same).
fn runs_org_id_base(facts: &Facts) -> Option<u32> {
    facts.column("runs", "org_id").map(|c| c.base_oid)
}

/// Per function (check_ledger's `breaks` names), the errors that refuse it:
/// none means the function is ready on this ledger.
pub fn readiness(problems: &[Problem]) -> Vec<(&'static str, Vec<String>)> {
    requirements::FUNCTIONS
        .iter()
        .map(|&(function, _)| {
            let refusing = problems
                .iter()
                .filter(|p| p.breaks().contains(&function))
                .map(|p| format!("{}: {}", p.object, p.problem))
                .collect();
            (function, refusing)
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The facts of a ledger exactly as install_ledger makes it.
    pub(crate) fn canonical() -> Facts {
        let mut relations: Vec<Relation> = TABLES
            .iter()
            .map(|table| Relation {
                name: table.name.into(),
                kind: "r".into(),
                owner: "app".into(),
                columns: Some(
                    table
                        .columns
                        .iter()
                        .map(|c| ColumnFacts {
                            name: c.name.into(),
                            type_name: c.ty.canonical().into(),
                            type_oid: if c.ty == Ty::State { 9001 } else { 25 },
                            type_kind: if c.ty == Ty::State { "e".into() } else { "b".into() },
                            base: match c.ty {
                                Ty::State => OPERATION_STATE.into(),
                                Ty::Int => "int4".into(),
                                Ty::BigInt => "int8".into(),
                                Ty::Timestamp => "timestamptz".into(),
                                Ty::Json => "jsonb".into(),
                                Ty::Bool => "bool".into(),
                                Ty::Xid8 => "xid8".into(),
                                _ => "text".into(),
                            },
                            not_null: !c.nullable,
                            default: match c.ty {
                                Ty::Key => Some("COALESCE(routing_domain, ''::text)".into()),
                                _ if c.add.contains("DEFAULT") => Some("x".into()),
                                _ => None,
                            },
                            generated: c.ty == Ty::Key,
                            identity: c.add.contains("IDENTITY"),
                            ..Default::default()
                        })
                        .collect(),
                ),
                indexes: Some(
                    UNIQUE_KEYS
                        .iter()
                        .chain(INDEXES)
                        .filter(|(t, _)| *t == table.name)
                        .enumerate()
                        .map(|(i, (_, cols))| IndexFacts {
                            name: format!("{}_{i}", table.name),
                            unique: true,
                            valid: true,
                            columns: cols.iter().map(|c| Some(c.to_string())).collect(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            })
            .collect();
        relations.push(Relation { name: "reconciliation_health".into(), kind: "v".into(), owner: "app".into(), ..Default::default() });
        Facts {
            owner: "app".into(),
            owner_oid: 10,
            relations,
            types: vec![TypeFacts {
                name: OPERATION_STATE.into(),
                oid: 9001,
                kind: "e".into(),
                owner: "app".into(),
                labels: OPERATION_STATES.iter().map(|s| s.to_string()).collect(),
            }],
            citus: None,
        }
    }

    #[test]
    fn a_ledger_only_partly_in_citus_is_an_error() {
        let all: Vec<String> = TABLES.iter().map(|t| t.name.to_string()).collect();
        let mut facts = canonical();
        // Local on a Citus coordinator, or wholly distributed: nothing to say.
        facts.citus = Some(CitusFacts { schema_distributed: false, tables: vec![] });
        assert!(rows(&facts).is_empty());
        facts.citus = Some(CitusFacts { schema_distributed: true, tables: all.clone() });
        assert!(rows(&facts).is_empty());
        // A distributed schema whose tables Citus did not convert.
        facts.citus = Some(CitusFacts { schema_distributed: true, tables: all[1..].to_vec() });
        let problems = check("l", "\"l\"", Some(&facts));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].problem, format!("a distributed schema (Citus) whose tables {} are not distributed", all[0]));
        assert!(problems[0].fix.as_deref().unwrap().starts_with("SELECT citus_schema_undistribute('l');"));
        assert!(problems[0].blocks(requirements::uses::BACKFILL, true));
        // Some tables distributed one by one in a schema that is not.
        facts.citus = Some(CitusFacts { schema_distributed: false, tables: all[..2].to_vec() });
        assert!(rows(&facts)[0].starts_with(&format!("error l: partly distributed (Citus): {}, {} distributed", all[0], all[1])));
    }

    fn rows(facts: &Facts) -> Vec<String> {
        check("l", "\"l\"", Some(facts)).iter().map(|p| format!("{} {}: {}", p.severity.as_str(), p.object, p.problem)).collect()
    }

    fn column<'a>(facts: &'a mut Facts, table: &str, column: &str) -> &'a mut ColumnFacts {
        facts
            .relations
            .iter_mut()
            .find(|r| r.name == table)
            .and_then(|r| r.columns.as_mut())
            .and_then(|c| c.iter_mut().find(|c| c.name == column))
            .unwrap()
    }

    #[test]
    fn a_ledger_as_installed_has_no_problem() {
        assert_eq!(rows(&canonical()), Vec::<String>::new());
    }

    #[test]
    fn org_ids_of_the_runs_type_are_typed_and_accepted() {
        let mut facts = canonical();
        assert!(!facts.typed_org_id());
        for table in ["runs", "runtime_sandbox_operations"] {
            let c = column(&mut facts, table, "org_id");
            (c.base, c.base_oid, c.type_name) = ("uuid".into(), 2950, "uuid".into());
        }
        assert!(facts.typed_org_id());
        assert_eq!(rows(&facts), Vec::<String>::new());
        column(&mut facts, "runs", "org_id").base_oid = 25;
        assert_eq!(rows(&facts), vec!["error l.runtime_sandbox_operations.org_id: is uuid; the functions need text, varchar, citext or the type of runs.org_id"]);
    }

    #[test]
    fn a_citext_environment_compares_with_citexts_own_operator() {
        let mut facts = canonical();
        assert_eq!(facts.citext_environment(), None);
        let c = column(&mut facts, "runtime_sandbox_operations", "environment");
        (c.base, c.base_oid, c.base_schema, c.type_name) = ("citext".into(), 16385, "Ext \"s\"".into(), "env".into());
        assert_eq!(facts.citext_environment(), Some((16385, "OPERATOR(\"Ext \"\"s\"\"\".=)".to_string())));
        assert_eq!(rows(&facts), Vec::<String>::new());
    }

    #[test]
    fn readiness_names_the_errors_each_function_is_refused_for() {
        assert!(readiness(&check("s", "\"s\"", Some(&canonical()))).iter().all(|(_, refusing)| refusing.is_empty()));
        let mut facts = canonical();
        facts.relations.retain(|r| r.name != "control");
        let ready = readiness(&check("s", "\"s\"", Some(&facts)));
        assert_eq!(ready.len(), requirements::FUNCTIONS.len());
        for (function, refusing) in ready {
            // Only the backfill works on control.
            let backfill = function.contains("backfill");
            assert_eq!(refusing.len(), usize::from(backfill), "{function}: {refusing:?}");
            if backfill {
                assert_eq!(refusing[0], "s.control: missing table");
            }
        }
        let everything = readiness(&check("nowhere", "\"nowhere\"", None));
        assert!(everything.iter().all(|(_, refusing)| refusing == &vec!["nowhere: missing schema".to_string()]));
    }

    #[test]
    fn a_missing_schema_is_the_only_row() {
        let problems = check("nowhere", "\"nowhere\"", None);
        assert_eq!(problems.len(), 1);
        assert_eq!((problems[0].object.as_str(), problems[0].problem.as_str()), ("nowhere", "missing schema"));
        assert_eq!(problems[0].fix.as_deref(), Some("SELECT runtime_sandbox.install_ledger('nowhere');"));
    }

    #[test]
    fn accepted_types_are_not_problems() {
        let mut facts = canonical();
        for (table, name, base) in [
            ("runtime_sandbox_capacity_leases", "sandbox_id", "varchar"),
            ("runtime_sandbox_operations", "sandbox_id", "citext"),
            ("runtime_sandbox_operations", "state", "text"),
            ("attempts", "attempt", "int8"),
            ("attempts", "updated_at", "timestamp"),
            ("attempts", "resource_json", "json"),
            ("runs", "org_id", "uuid"),
        ] {
            let c = column(&mut facts, table, name);
            c.base = base.into();
            c.type_oid = 77;
        }
        assert_eq!(rows(&facts), Vec::<String>::new());
    }

    #[test]
    fn types_the_statements_cannot_use_are_errors_with_their_fix() {
        let mut facts = canonical();
        let c = column(&mut facts, "runtime_sandbox_capacity_leases", "lease_id");
        c.base = "uuid".into();
        c.type_name = "uuid".into();
        let c = column(&mut facts, "runtime_sandbox_operations", "state");
        c.type_oid = 23;
        c.base = "int4".into();
        c.type_name = "integer".into();
        let problems = check("l", "\"l\"", Some(&facts));
        let lease = problems.iter().find(|p| p.object == "l.runtime_sandbox_capacity_leases.lease_id").unwrap();
        assert_eq!(lease.problem, "is uuid; the functions need text, varchar or citext");
        assert_eq!(lease.fix.as_deref(), Some("ALTER TABLE \"l\".runtime_sandbox_capacity_leases ALTER COLUMN lease_id TYPE text USING lease_id::text;"));
        // A type every statement on the column fails on: the readers too.
        assert!(lease.blocks(requirements::uses::RECONCILE_READ, true));
        assert!(!lease.blocks(requirements::uses::BACKFILL, false));
        let state = problems.iter().find(|p| p.object == "l.runtime_sandbox_operations.state").unwrap();
        assert!(state.fix.as_deref().unwrap().contains("TYPE \"l\".runtime_sandbox_operation_state USING state::text::\"l\".runtime_sandbox_operation_state"));
    }

    #[test]
    fn not_null_columns_nobody_fills_are_errors() {
        let mut facts = canonical();
        column(&mut facts, "sandbox_cleanup_jobs_v2", "lease_owner").not_null = true;
        let leases = facts.relations.iter_mut().find(|r| r.name == "runtime_sandbox_capacity_leases").unwrap();
        leases.columns.as_mut().unwrap().push(ColumnFacts {
            name: "tenant".into(),
            type_name: "text".into(),
            base: "text".into(),
            not_null: true,
            ..Default::default()
        });
        // An extra column with a default, or nullable, is fine.
        leases.columns.as_mut().unwrap().push(ColumnFacts { name: "note".into(), not_null: true, default: Some("''".into()), ..Default::default() });
        // In a table the functions never insert into, too.
        let runs = facts.relations.iter_mut().find(|r| r.name == "runs").unwrap();
        runs.columns.as_mut().unwrap().push(ColumnFacts { name: "tenant".into(), not_null: true, ..Default::default() });
        assert_eq!(
            rows(&facts),
            vec![
                "error l.sandbox_cleanup_jobs_v2.lease_owner: NOT NULL, but the functions write NULL into it",
                "error l.runtime_sandbox_capacity_leases.tenant: NOT NULL without a default (a column of the application's): the functions' inserts do not set it",
            ]
        );
        // Only the writing statements fail on them: the calls that only read run.
        for problem in check("l", "\"l\"", Some(&facts)) {
            assert!(problem.writes_only(), "{problem:?}");
            assert!(problem.blocks(requirements::uses::RECONCILE_APPLY, false));
            assert!(!problem.blocks(requirements::uses::RECONCILE_READ, true));
            assert!(!problem.breaks().contains(&"reconcile_daytona (dry run)"));
            assert!(problem.breaks().contains(&"reconcile_daytona (apply)"));
        }
    }

    #[test]
    fn owners_other_than_the_schemas_are_errors() {
        let mut facts = canonical();
        facts.relations.iter_mut().find(|r| r.name == "control").unwrap().owner = "mallory".into();
        facts.types[0].owner = "mallory".into();
        let problems = check("l", "\"l\"", Some(&facts));
        let fixes: Vec<&str> = problems.iter().map(|p| p.fix.as_deref().unwrap()).collect();
        assert_eq!(
            fixes,
            vec![
                "ALTER TYPE \"l\".\"runtime_sandbox_operation_state\" OWNER TO \"app\";",
                "ALTER TABLE \"l\".control OWNER TO \"app\";"
            ]
        );
        assert!(problems[1].blocks(requirements::uses::BACKFILL, true));
    }

    #[test]
    fn a_domain_in_place_of_the_enum_and_a_view_in_place_of_a_table_are_errors() {
        let mut facts = canonical();
        facts.types[0].kind = "d".into();
        facts.relations.iter_mut().find(|r| r.name == "runs").unwrap().kind = "v".into();
        assert_eq!(
            rows(&facts),
            vec![
                "error l.runtime_sandbox_operation_state: is a domain, not an enum",
                "error l.runs: is a view, not a table",
            ]
        );
    }

    #[test]
    fn the_owners_code_is_a_notice() {
        let mut facts = canonical();
        let ops = facts.relations.iter_mut().find(|r| r.name == "runtime_sandbox_operations").unwrap();
        ops.triggers = vec!["audit".into()];
        ops.row_security = true;
        ops.policies = vec!["tenant".into()];
        let problems = check("l", "\"l\"", Some(&facts));
        assert_eq!(problems.len(), 2);
        assert!(problems.iter().all(|p| p.severity == Severity::Notice && p.fix.is_none() && !p.blocks(&["runtime_sandbox_operations"], false)));
        assert_eq!(problems[0].problem, "trigger audit: runs as the ledger's owner app when the functions use the table");
    }

    #[test]
    fn keys_match_as_sets_and_indexes_by_leading_columns() {
        let mut facts = canonical();
        let ops = facts.relations.iter_mut().find(|r| r.name == "runtime_sandbox_operations").unwrap();
        for index in ops.indexes.as_mut().unwrap() {
            index.columns.reverse();
            index.unique = index.columns.len() == 3;
        }
        let found = rows(&facts);
        assert!(found.contains(&"error l.runtime_sandbox_operations (operation_key): missing unique key".to_string()), "{found:?}");
        assert!(!found.iter().any(|p| p.contains("(provider, sandbox_id, routing_domain_key)")), "{found:?}");
        assert!(found.contains(&"warning l.runtime_sandbox_operations (provider, provider_created_at, operation_key): missing index".to_string()), "{found:?}");
    }

    #[test]
    fn identity_keys_split_per_environment_refuse_only_the_backfills_writes() {
        let mut facts = canonical();
        let ops = facts.relations.iter_mut().find(|r| r.name == "runtime_sandbox_operations").unwrap();
        for index in ops.indexes.as_mut().unwrap().iter_mut().filter(|i| i.columns.len() == 3 && i.unique) {
            index.partial = true;
        }
        let problems = check("l", "\"l\"", Some(&facts));
        let errors: Vec<&Problem> = problems.iter().filter(|p| p.severity == Severity::Error).collect();
        assert_eq!(errors.len(), 1, "{problems:?}");
        let key = errors[0];
        assert_eq!(key.object, "l.runtime_sandbox_operations (provider, sandbox_id, routing_domain_key)");
        assert!(key.writes_only());
        assert_eq!(key.breaks(), requirements::backfill_writers());
        assert!(!key.blocks(requirements::uses::RECONCILE_APPLY, false));
        assert!(!key.blocks(requirements::uses::LATEST_APPLY, false));
        assert!(!key.blocks(requirements::uses::BACKFILL, true));
        assert!(key.blocks(requirements::uses::BACKFILL, false));
        // The cleanup jobs' identity key is the reconcile's own ON CONFLICT target: every write needs it.
        let mut facts = canonical();
        let jobs = facts.relations.iter_mut().find(|r| r.name == "sandbox_cleanup_jobs_v2").unwrap();
        jobs.indexes.as_mut().unwrap().retain(|i| i.columns.len() != 3);
        let problems = check("l", "\"l\"", Some(&facts));
        let key = problems.iter().find(|p| p.severity == Severity::Error).unwrap();
        assert!(key.blocks(requirements::uses::RECONCILE_APPLY, false));
        assert!(key.breaks().contains(&"reconcile_daytona (apply)"));
    }
}
