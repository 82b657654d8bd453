//! What the extension's functions (and the application's own SQL) rely on in
//! a ledger schema: the list `check_ledger` verifies against the catalogs.

/// One thing a ledger schema must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// The operation-state enum, with every label the SQL writes.
    Enum {
        name: &'static str,
        labels: &'static [&'static str],
    },
    Table {
        table: &'static str,
    },
    Column {
        table: &'static str,
        column: &'static str,
    },
    /// `coalesce(<source>, '')` as a stored generated column: the identity
    /// keys treat a NULL routing domain as ''.
    GeneratedKey {
        table: &'static str,
        column: &'static str,
        source: &'static str,
    },
    /// A unique index on exactly these columns (an `ON CONFLICT` target or a
    /// key the joins assume).
    Unique {
        table: &'static str,
        columns: &'static [&'static str],
    },
    /// Any index whose leading columns are these, in this order.
    Index {
        table: &'static str,
        columns: &'static [&'static str],
    },
    /// A view install_ledger creates (for operators, not for the functions).
    View {
        view: &'static str,
    },
}

pub const OPERATION_STATE: &str = "runtime_sandbox_operation_state";

const TABLES: &[(&str, &[&str])] = &[
    ("runs", &["run_id", "org_id"]),
    ("attempts", &["run_id", "attempt", "resource_json", "updated_at"]),
    (
        "runtime_sandbox_operations",
        &[
            "operation_key",
            "provider",
            "run_id",
            "attempt",
            "org_id",
            "environment",
            "sandbox_id",
            "routing_domain",
            "routing_domain_key",
            "state",
            "provider_operation_token",
            "provider_created_at",
            "delete_confirmed_at",
            "updated_at",
        ],
    ),
    (
        "sandbox_cleanup_jobs_v2",
        &[
            "provider",
            "sandbox_id",
            "run_id",
            "attempt",
            "environment",
            "routing_domain",
            "routing_domain_key",
            "status",
            "lease_owner",
            "lease_expires_at",
            "available_at",
            "deleted_at",
            "last_error",
            "updated_at",
        ],
    ),
    (
        "sandbox_cleanup_events_v2",
        &[
            "provider",
            "sandbox_id",
            "routing_domain",
            "run_id",
            "attempt",
            "cleanup_attempt",
            "lease_owner",
            "event_type",
            "details_json",
        ],
    ),
    (
        "runtime_sandbox_capacity_leases",
        &["lease_id", "org_id", "run_id", "provider", "sandbox_id", "routing_domain", "expires_at", "released_at"],
    ),
    ("control", &["key", "value"]),
    ("reconciliation_runs", &["id", "provider", "started_at", "finished_at", "dry_run", "status", "summary", "snapshot_id"]),
    (
        "provider_inventory_snapshots",
        &["snapshot_id", "provider", "captured_at", "recorded_at", "item_count", "reconciled_run_id"],
    ),
    ("provider_inventory_items", &["snapshot_id", "item_index", "sandbox_id", "operation_key", "routing_domain"]),
];

const VIEWS: &[&str] = &["reconciliation_health"];

const UNIQUE_KEYS: &[(&str, &[&str])] = &[
    ("runs", &["run_id"]),
    ("attempts", &["run_id", "attempt"]),
    ("runtime_sandbox_operations", &["operation_key"]),
    ("runtime_sandbox_operations", &["provider", "sandbox_id", "routing_domain_key"]),
    ("sandbox_cleanup_jobs_v2", &["provider", "sandbox_id", "routing_domain_key"]),
    ("runtime_sandbox_capacity_leases", &["lease_id"]),
    ("control", &["key"]),
    ("reconciliation_runs", &["id"]),
    ("provider_inventory_snapshots", &["snapshot_id"]),
    ("provider_inventory_items", &["snapshot_id", "item_index"]),
];

const INDEXES: &[(&str, &[&str])] = &[
    ("attempts", &["updated_at", "run_id", "attempt"]),
    ("runtime_sandbox_operations", &["provider_operation_token"]),
    ("runtime_sandbox_operations", &["provider", "provider_created_at", "operation_key"]),
    ("runtime_sandbox_operations", &["sandbox_id"]),
    ("sandbox_cleanup_jobs_v2", &["provider", "sandbox_id"]),
    ("sandbox_cleanup_jobs_v2", &["sandbox_id"]),
    ("sandbox_cleanup_events_v2", &["provider", "sandbox_id"]),
    ("runtime_sandbox_capacity_leases", &["provider", "sandbox_id"]),
    ("runtime_sandbox_capacity_leases", &["sandbox_id"]),
    ("provider_inventory_snapshots", &["provider", "captured_at", "snapshot_id"]),
    ("provider_inventory_items", &["snapshot_id", "sandbox_id"]),
];

/// Every requirement, in report order: type, then per table its existence,
/// columns, generated keys, unique keys and indexes, then the views.
pub fn requirements() -> Vec<Requirement> {
    let mut all =
        vec![Requirement::Enum { name: OPERATION_STATE, labels: &["reserved", "live", "deleting", "deleted"] }];
    for &(table, columns) in TABLES {
        all.push(Requirement::Table { table });
        all.extend(columns.iter().map(|&column| Requirement::Column { table, column }));
        if columns.contains(&"routing_domain_key") {
            all.push(Requirement::GeneratedKey { table, column: "routing_domain_key", source: "routing_domain" });
        }
        all.extend(
            UNIQUE_KEYS
                .iter()
                .filter(|(t, _)| *t == table)
                .map(|&(table, columns)| Requirement::Unique { table, columns }),
        );
        all.extend(
            INDEXES.iter().filter(|(t, _)| *t == table).map(|&(table, columns)| Requirement::Index { table, columns }),
        );
    }
    all.extend(VIEWS.iter().map(|&view| Requirement::View { view }));
    all
}

/// The requirements as parallel columns for the catalog query:
/// (kind, table or type, detail names joined by commas).
pub fn as_columns() -> (Vec<&'static str>, Vec<&'static str>, Vec<String>) {
    let mut kinds = Vec::new();
    let mut objects = Vec::new();
    let mut details = Vec::new();
    for requirement in requirements() {
        let (kind, object, detail): (&str, &str, Vec<&str>) = match requirement {
            Requirement::Enum { name, labels } => ("enum", name, labels.to_vec()),
            Requirement::Table { table } => ("table", table, vec![]),
            Requirement::Column { table, column } => ("column", table, vec![column]),
            Requirement::GeneratedKey { table, column, source } => ("generated_key", table, vec![column, source]),
            Requirement::Unique { table, columns } => ("unique", table, columns.to_vec()),
            Requirement::Index { table, columns } => ("index", table, columns.to_vec()),
            Requirement::View { view } => ("view", view, vec![]),
        };
        kinds.push(kind);
        objects.push(object);
        details.push(detail.join(","));
    }
    (kinds, objects, details)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// install_ledger must create everything check_ledger asks for.
    #[test]
    fn install_script_mentions_every_required_name() {
        let script = include_str!("../../sql/ddl/ledger_tables.sql");
        for requirement in requirements() {
            let names: Vec<&str> = match requirement {
                Requirement::Enum { name, labels } => std::iter::once(name).chain(labels.iter().copied()).collect(),
                Requirement::Table { table } | Requirement::View { view: table } => vec![table],
                Requirement::Column { table, column } => vec![table, column],
                Requirement::GeneratedKey { table, column, .. } => vec![table, column],
                Requirement::Unique { table, columns } | Requirement::Index { table, columns } => {
                    std::iter::once(table).chain(columns.iter().copied()).collect()
                }
            };
            for name in names {
                assert!(script.contains(name), "install.sql lacks {name} ({requirement:?})");
            }
        }
    }

    #[test]
    fn every_column_belongs_to_a_listed_table() {
        let tables: Vec<&str> = TABLES.iter().map(|(t, _)| *t).collect();
        for (table, _) in UNIQUE_KEYS.iter().chain(INDEXES) {
            assert!(tables.contains(table), "{table}");
        }
        let (kinds, objects, details) = as_columns();
        assert_eq!(kinds.len(), objects.len());
        assert_eq!(kinds.len(), details.len());
    }
}
