//! What install_ledger runs on a schema (pure): only the DDL whose object is
//! missing, decided from the catalog (`check::Facts`) before anything runs.
//! A run on a ledger that needs nothing runs nothing, so it takes no lock on
//! any table — safe on every deploy against a live application.
//!
//! The statements are `sql/ddl/ledger_tables.sql`'s, one per object; columns
//! a table lacks and unique keys an existing table lacks come from
//! `requirements`. Type changes, NOT NULLs and owners are the application's
//! data and are never changed here: the check after the run reports them.

use super::check::{CitusFacts, Facts};
use super::requirements::{OPERATION_STATE, OPERATION_STATES, TABLES, UNIQUE_KEYS};

const SCRIPT: &str = include_str!("../../sql/ddl/ledger_tables.sql");

/// One statement of the script and the object it creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// type, table, index or view.
    pub kind: &'static str,
    pub name: &'static str,
    /// The statement, `@ledger@` still in it.
    pub sql: &'static str,
}

/// The script's statements, in order.
pub fn statements() -> Vec<Statement> {
    let mut out = Vec::new();
    const MARK: &str = "\n-- object: ";
    let mut rest = SCRIPT;
    while let Some(at) = rest.find(MARK) {
        let after = &rest[at + MARK.len()..];
        let line_end = after.find('\n').unwrap_or(after.len());
        let mut words = after[..line_end].split_whitespace();
        let (kind, name) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let body = &after[line_end..];
        let end = body.find(MARK).unwrap_or(body.len());
        let kind = match kind {
            "type" => "type",
            "table" => "table",
            "index" => "index",
            "view" => "view",
            other => panic!("ledger_tables.sql: unknown object kind {other:?}"),
        };
        out.push(Statement { kind, name, sql: body[..end].trim() });
        rest = &body[end..];
    }
    out
}

/// One DDL step of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What it creates or changes (`table runs`, `column runs.org_id`, ...).
    pub object: String,
    /// The existing table it changes (a column, key or index added to it).
    pub table: Option<&'static str>,
    pub sql: String,
    /// An index on a table that already exists (may be built CONCURRENTLY).
    pub index_on_existing_table: bool,
}

impl Step {
    /// Whether it creates a table or the view (what Citus does not distribute when SPI runs it).
    pub fn creates_relation(&self) -> bool {
        self.object.starts_with("table ") || self.object.starts_with("view ")
    }
}

/// What install_ledger does on a Citus coordinator, around its steps. A ledger is wholly local or a
/// distributed schema, and Citus converts only the tables a top-level CREATE TABLE makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CitusAction {
    /// No Citus, or nothing to do for it.
    Nothing,
    /// A local ledger, schema-based sharding on: distribute it after the steps.
    Distribute,
    /// A distributed schema that gains tables or the view: undistribute, run the steps, distribute again.
    Redistribute,
    /// A local ledger with nothing to create and sharding off: say how to distribute it.
    Suggest,
}

/// The Citus action for a ledger (`citus`: its Citus facts, None without Citus), the steps planned for it and
/// whether `citus.enable_schema_based_sharding` is on.
pub fn citus_action(citus: Option<&CitusFacts>, steps: &[Step], sharding: bool) -> CitusAction {
    let Some(citus) = citus else { return CitusAction::Nothing };
    let local = !citus.schema_distributed && citus.tables.is_empty();
    if citus.schema_distributed && steps.iter().any(Step::creates_relation) {
        CitusAction::Redistribute
    } else if local && sharding {
        CitusAction::Distribute
    } else if local && steps.is_empty() {
        CitusAction::Suggest
    } else {
        CitusAction::Nothing
    }
}

/// The fingerprint install_ledger keeps as the health view's comment: the
/// view is replaced when its text here changes.
pub fn view_comment(sql: &str) -> String {
    format!("runtime_sandbox: alerting view of the ledger (definition {:016x})", fnv1a(sql.as_bytes()))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The steps that bring the schema (`quoted`) to what the functions need,
/// given its catalog (None: the schema is new and empty).
pub fn plan(quoted: &str, facts: Option<&Facts>) -> Vec<Step> {
    let empty = Facts::default();
    let facts = facts.unwrap_or(&empty);
    let relation = |name: &str| facts.relations.iter().find(|r| r.name == name);
    let has_index_named = |name: &str| {
        facts.relations.iter().any(|r| r.indexes.as_deref().unwrap_or(&[]).iter().any(|i| i.name == name))
    };
    let sql = |statement: &str| statement.replace("@ledger@", quoted);
    let mut steps = Vec::new();
    for statement in statements() {
        match statement.kind {
            "type" => {
                match facts.types.iter().find(|t| t.name == statement.name) {
                    None => steps.push(Step { object: format!("type {}", statement.name), sql: sql(statement.sql), index_on_existing_table: false, table: None }),
                    Some(t) if t.kind == "e" && statement.name == OPERATION_STATE => {
                        // Labels an earlier (or the application's) enum lacks.
                        for label in OPERATION_STATES.iter().filter(|l| !t.labels.iter().any(|x| x == *l)) {
                            steps.push(Step {
                                table: None,
                                object: format!("enum label {}.{label}", statement.name),
                                sql: format!("ALTER TYPE {quoted}.{} ADD VALUE IF NOT EXISTS '{label}'", statement.name),
                                index_on_existing_table: false,
                            });
                        }
                    }
                    Some(_) => {} // not an enum: the check reports it
                }
            }
            "table" => match relation(statement.name) {
                None => steps.push(Step { object: format!("table {}", statement.name), sql: sql(statement.sql), index_on_existing_table: false, table: None }),
                Some(r) if r.kind == "r" || r.kind == "p" => {
                    let table = TABLES.iter().find(|t| t.name == statement.name).expect("a listed table");
                    let columns = r.columns.as_deref().unwrap_or(&[]);
                    for column in table.columns {
                        if !columns.iter().any(|c| c.name == column.name) {
                            steps.push(Step {
                                table: Some(table.name),
                                object: format!("column {}.{}", table.name, column.name),
                                sql: format!("ALTER TABLE {quoted}.{} ADD COLUMN {} {}", table.name, column.name, sql(column.add)),
                                index_on_existing_table: false,
                            });
                        }
                    }
                    for (_, key) in UNIQUE_KEYS.iter().filter(|(t, _)| *t == table.name) {
                        let found = r.indexes.as_deref().unwrap_or(&[]).iter().any(|i| {
                            i.valid && i.unique && !i.partial && !i.expressions
                                && i.columns.len() == key.len()
                                && key.iter().all(|k| i.columns.iter().any(|c| c.as_deref() == Some(*k)))
                        });
                        let name = format!("{}_{}_key", table.name, key.join("_"));
                        if !found && !has_index_named(&name) {
                            steps.push(Step {
                                table: Some(table.name),
                                object: format!("unique key {}", name),
                                sql: format!("CREATE UNIQUE INDEX {name} ON {quoted}.{} ({})", table.name, key.join(", ")),
                                index_on_existing_table: true,
                            });
                        }
                    }
                }
                Some(_) => {} // a view or another relation in its place: the check reports it
            },
            "index" => {
                let on = statement.sql.split(" ON @ledger@.").nth(1).and_then(|s| s.split_whitespace().next()).unwrap_or("");
                let table = TABLES.iter().find(|t| t.name == on).map(|t| t.name).unwrap_or_else(|| panic!("index on {on}"));
                let table_ready = relation(table).is_some_and(|r| r.kind == "r" || r.kind == "p");
                let table_new = relation(table).is_none();
                if !has_index_named(statement.name) && (table_ready || table_new) {
                    steps.push(Step {
                        table: table_ready.then_some(table),
                        object: format!("index {}", statement.name),
                        sql: sql(statement.sql),
                        index_on_existing_table: table_ready,
                    });
                }
            }
            "view" => {
                let wanted = view_comment(statement.sql);
                let current = relation(statement.name);
                // Replaced only when its text here changed (its comment says which).
                let stale = match current {
                    None => true,
                    Some(r) => r.kind == "v" && r.comment.as_deref() != Some(wanted.as_str()),
                };
                if stale {
                    steps.push(Step {
                        table: None,
                        object: format!("view {}", statement.name),
                        sql: format!(
                            "{}; COMMENT ON VIEW {quoted}.{} IS '{}'",
                            sql(statement.sql).trim_end_matches(';'),
                            statement.name,
                            wanted
                        ),
                        index_on_existing_table: false,
                    });
                }
            }
            _ => unreachable!(),
        }
    }
    // A label added in this transaction cannot be used before it commits
    // (PostgreSQL: "unsafe use of new value"): what names one waits for the
    // next run.
    let added: Vec<String> = steps
        .iter()
        .filter(|s| s.object.starts_with("enum label "))
        .map(|s| format!("'{}'", s.object.rsplit('.').next().unwrap_or_default()))
        .collect();
    if !added.is_empty() {
        steps.retain(|s| s.object.starts_with("enum label ") || !added.iter().any(|label| s.sql.contains(label.as_str())));
    }
    steps
}

/// Whether `steps` add enum labels (the objects that name them are then left
/// to the next run, in a later transaction).
pub fn adds_labels(steps: &[Step]) -> bool {
    steps.iter().any(|s| s.object.starts_with("enum label "))
}

/// A step as a migration tool runs it: an index on an existing table built
/// CONCURRENTLY (outside a transaction block), everything else as is.
pub fn concurrently(step: &Step) -> String {
    if step.index_on_existing_table {
        step.sql.replacen("INDEX ", "INDEX CONCURRENTLY IF NOT EXISTS ", 1)
    } else {
        step.sql.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citus_actions_keep_a_ledger_wholly_local_or_wholly_distributed() {
        let table = Step { object: "table runs".into(), table: None, sql: String::new(), index_on_existing_table: false };
        let index = Step { object: "index i".into(), table: Some("runs"), sql: String::new(), index_on_existing_table: true };
        let local = CitusFacts { schema_distributed: false, tables: vec![] };
        let distributed = CitusFacts { schema_distributed: true, tables: vec!["runs".into()] };
        let partly = CitusFacts { schema_distributed: false, tables: vec!["runs".into()] };
        assert_eq!(citus_action(None, &[table.clone()], true), CitusAction::Nothing);
        assert_eq!(citus_action(Some(&local), &[table.clone()], true), CitusAction::Distribute);
        assert_eq!(citus_action(Some(&local), &[], true), CitusAction::Distribute);
        assert_eq!(citus_action(Some(&local), &[table.clone()], false), CitusAction::Nothing);
        assert_eq!(citus_action(Some(&local), &[], false), CitusAction::Suggest);
        assert_eq!(citus_action(Some(&distributed), &[table.clone()], false), CitusAction::Redistribute);
        assert_eq!(citus_action(Some(&distributed), &[index.clone()], true), CitusAction::Nothing);
        assert_eq!(citus_action(Some(&partly), &[table], true), CitusAction::Nothing);
    }
    use crate::ledger::check::tests::canonical;

    #[test]
    fn the_script_splits_into_one_statement_per_object() {
        let statements = statements();
        assert!(statements.len() > 20);
        for s in &statements {
            let creates = match s.kind {
                "type" => "CREATE TYPE @ledger@.",
                "table" if s.name == "provider_inventory_stream" => "CREATE UNLOGGED TABLE @ledger@.",
                "table" => "CREATE TABLE @ledger@.",
                "index" => "INDEX ",
                _ => "CREATE OR REPLACE VIEW @ledger@.",
            };
            assert!(s.sql.contains(creates) && s.sql.contains(s.name), "{s:?}");
            let ends = s.sql.lines().filter(|l| !l.trim_start().starts_with("--") && l.trim_end().ends_with(';')).count();
            assert_eq!(ends, 1, "one statement: {s:?}");
        }
        for table in TABLES {
            assert!(statements.iter().any(|s| s.kind == "table" && s.name == table.name), "{}", table.name);
        }
    }

    #[test]
    fn a_new_schema_gets_every_statement() {
        let steps = plan("\"l\"", None);
        assert_eq!(steps.len(), statements().len());
        assert!(steps.iter().all(|s| !s.sql.contains("@ledger@") && !s.index_on_existing_table));
    }

    #[test]
    fn an_installed_ledger_needs_nothing() {
        let mut facts = canonical();
        for statement in statements().iter().filter(|s| s.kind == "index") {
            let table = statement.sql.split(" ON @ledger@.").nth(1).unwrap().split_whitespace().next().unwrap();
            let relation = facts.relations.iter_mut().find(|r| r.name == table).unwrap();
            relation.indexes.as_mut().unwrap().push(crate::ledger::check::IndexFacts { name: statement.name.into(), ..Default::default() });
        }
        let view = statements().into_iter().find(|s| s.kind == "view").unwrap();
        facts.relations.iter_mut().find(|r| r.kind == "v").unwrap().comment = Some(view_comment(view.sql));
        assert_eq!(plan("\"l\"", Some(&facts)), vec![]);
    }

    #[test]
    fn an_earlier_ledger_gets_its_missing_parts_only() {
        let mut facts = canonical();
        facts.relations.retain(|r| r.name != "provider_inventory_items");
        let runs = facts.relations.iter_mut().find(|r| r.name == "reconciliation_runs").unwrap();
        runs.columns.as_mut().unwrap().retain(|c| c.name != "snapshot_id");
        facts.types[0].labels.retain(|l| l != "deleting");
        let steps: Vec<String> = plan("\"l\"", Some(&facts)).into_iter().map(|s| s.object).collect();
        assert!(steps.contains(&"enum label runtime_sandbox_operation_state.deleting".to_string()), "{steps:?}");
        // The indexes naming 'deleting' wait for a later transaction.
        assert!(!steps.contains(&"index runtime_sandbox_operations_current_idx".to_string()), "{steps:?}");
        assert!(steps.contains(&"column reconciliation_runs.snapshot_id".to_string()), "{steps:?}");
        assert!(steps.contains(&"table provider_inventory_items".to_string()), "{steps:?}");
        assert!(steps.contains(&"index provider_inventory_items_sandbox_idx".to_string()), "{steps:?}");
        assert!(steps.contains(&"view reconciliation_health".to_string()), "{steps:?}");
    }

    #[test]
    fn concurrent_index_builds_for_existing_tables() {
        let step = Step { object: "index i".into(), table: None, sql: "CREATE INDEX i ON \"l\".t (a)".into(), index_on_existing_table: true };
        assert_eq!(concurrently(&step), "CREATE INDEX CONCURRENTLY IF NOT EXISTS i ON \"l\".t (a)");
        let step = Step { object: "unique key k".into(), table: None, sql: "CREATE UNIQUE INDEX k ON \"l\".t (a)".into(), index_on_existing_table: true };
        assert_eq!(concurrently(&step), "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS k ON \"l\".t (a)");
    }
}
