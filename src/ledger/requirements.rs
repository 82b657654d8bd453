//! What the extension's functions (and the application's own SQL) rely on in
//! a ledger schema: the tables, the columns with the types they accept, the
//! keys and indexes, and the operation-state enum. `check.rs` holds a
//! schema's catalog against this list; `install_ledger` creates what it
//! names.

/// The operation-state enum and the labels the SQL writes.
pub const OPERATION_STATE: &str = "runtime_sandbox_operation_state";
pub const OPERATION_STATES: &[&str] = &["reserved", "live", "deleting", "deleted"];

/// Which column types the functions can work with (domains count as their
/// base type). Every statement reads a column as its canonical type (a cast
/// in the SQL) and writes through PostgreSQL's assignment casts, so these are
/// the types for which both work and comparisons keep their meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// text, varchar(n) or citext: compared with text, written from text.
    Text,
    /// An id the statements only compare and write as the application's do:
    /// a `Text` type, or char(n) (compared without its trailing blanks, as
    /// PostgreSQL compares it with text; read as its own text, blanks and all,
    /// where the application's statements return it).
    Id,
    /// Anything with a text form: only read (as text), never written or compared.
    Any,
    /// smallint, integer or bigint, read as integer (as the application does).
    Int,
    /// integer or bigint, read as bigint (identity keys).
    BigInt,
    /// timestamptz, or timestamp without time zone (read in the session's time zone).
    Timestamp,
    /// jsonb, or json (read as jsonb).
    Json,
    /// text, varchar or citext, or the type of `runs.org_id` (the backfill
    /// copies it from there, as the application does; the reconcile reads it
    /// as text).
    OrgId,
    /// jsonb, json, or text holding JSON: read as the application reads it (a
    /// text value is a string to it), written as it writes it (jsonb's text).
    JsonOrText,
    Bool,
    /// The ledger's `runtime_sandbox_operation_state` enum, or a `Text` type.
    State,
    /// `GENERATED ALWAYS AS (coalesce(routing_domain, '')) STORED`.
    Key,
    /// A transaction id (xid8): the stream's rows of one transaction.
    Xid8,
}

impl Ty {
    /// The type named in messages and in the DDL that fixes a column.
    pub fn canonical(self) -> &'static str {
        match self {
            Ty::Text | Ty::Id | Ty::Any | Ty::Key | Ty::OrgId => "text",
            Ty::Int => "integer",
            Ty::BigInt => "bigint",
            Ty::Timestamp => "timestamptz",
            Ty::Json | Ty::JsonOrText => "jsonb",
            Ty::Bool => "boolean",
            Ty::State => OPERATION_STATE,
            Ty::Xid8 => "xid8",
        }
    }

    /// What it accepts, in words.
    pub fn accepts(self) -> &'static str {
        match self {
            Ty::Text => "text, varchar or citext",
            Ty::Id => "text, varchar, citext or char(n)",
            Ty::OrgId => "text, varchar, citext or the type of runs.org_id",
            Ty::Any => "any type",
            Ty::Int => "smallint, integer or bigint",
            Ty::BigInt => "integer or bigint",
            Ty::Timestamp => "timestamptz or timestamp",
            Ty::Json => "jsonb or json",
            Ty::JsonOrText => "jsonb, json, text, varchar or citext",
            Ty::Bool => "boolean",
            Ty::State => "the runtime_sandbox_operation_state enum, text or varchar",
            Ty::Key => "text",
            Ty::Xid8 => "xid8",
        }
    }

    /// Whether a column whose base type is `base` (pg_type.typname) is accepted.
    /// `State` is decided by the caller (the enum is the ledger's own type).
    pub fn accepts_base(self, base: &str) -> bool {
        match self {
            Ty::Text | Ty::State | Ty::Key | Ty::OrgId => matches!(base, "text" | "varchar" | "citext"),
            Ty::Id => matches!(base, "text" | "varchar" | "citext" | "bpchar"),
            Ty::Any => true,
            Ty::Int => matches!(base, "int2" | "int4" | "int8"),
            Ty::BigInt => matches!(base, "int4" | "int8"),
            Ty::Timestamp => matches!(base, "timestamptz" | "timestamp"),
            Ty::Json => matches!(base, "jsonb" | "json"),
            Ty::JsonOrText => matches!(base, "jsonb" | "json" | "text" | "varchar" | "citext"),
            Ty::Bool => base == "bool",
            Ty::Xid8 => base == "xid8",
        }
    }
}

/// A column the functions or the application's SQL use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub ty: Ty,
    /// The functions write NULL into it: it must be nullable.
    pub nullable: bool,
    /// Added to an existing table by install_ledger as `ADD COLUMN <name> <add>`.
    pub add: &'static str,
    /// Missing, it limits what the functions can do (check_ledger warns and
    /// says what, in `limits`) instead of refusing the table.
    pub limits: Option<&'static str>,
}

const fn col(name: &'static str, ty: Ty, add: &'static str) -> Column {
    Column { name, ty, nullable: false, add, limits: None }
}

const fn null(name: &'static str, ty: Ty, add: &'static str) -> Column {
    Column { name, ty, nullable: true, add, limits: None }
}

/// The environment of a run or snapshot (0.4.0). A ledger installed earlier
/// keeps working for 'production', the only environment it could hold.
const fn environment(limits: &'static str) -> Column {
    Column { name: "environment", ty: Ty::Text, nullable: false, add: "text NOT NULL DEFAULT 'production'", limits: Some(limits) }
}

const KEY: &str = "text GENERATED ALWAYS AS (coalesce(routing_domain, '')) STORED";

/// A table, its columns, and the columns every INSERT of the functions sets
/// (`None`: the functions never insert into it). Any other NOT NULL column
/// needs a default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
    pub inserted: Option<&'static [&'static str]>,
}

pub const TABLES: &[Table] = &[
    Table {
        name: "runs",
        columns: &[col("run_id", Ty::Id, "text"), col("org_id", Ty::Any, "text")],
        inserted: None,
    },
    Table {
        name: "attempts",
        columns: &[
            col("run_id", Ty::Id, "text"),
            col("attempt", Ty::Int, "integer"),
            null("resource_json", Ty::Json, "jsonb"),
            col("updated_at", Ty::Timestamp, "timestamptz DEFAULT now()"),
        ],
        inserted: None,
    },
    Table {
        name: "runtime_sandbox_operations",
        columns: &[
            col("operation_key", Ty::Text, "text"),
            col("provider", Ty::Text, "text"),
            col("run_id", Ty::Text, "text"),
            col("attempt", Ty::Int, "integer"),
            col("org_id", Ty::OrgId, "text"),
            col("environment", Ty::Text, "text DEFAULT 'production'"),
            null("sandbox_id", Ty::Text, "text"),
            null("routing_domain", Ty::Text, "text"),
            col("routing_domain_key", Ty::Key, KEY),
            col("state", Ty::State, "@ledger@.runtime_sandbox_operation_state DEFAULT 'reserved'"),
            null("provider_operation_token", Ty::Text, "text"),
            null("provider_created_at", Ty::Timestamp, "timestamptz"),
            null("delete_confirmed_at", Ty::Timestamp, "timestamptz"),
            col("updated_at", Ty::Timestamp, "timestamptz DEFAULT now()"),
        ],
        inserted: Some(&[
            "operation_key",
            "provider",
            "run_id",
            "attempt",
            "org_id",
            "environment",
            "sandbox_id",
            "routing_domain",
            "state",
            "provider_created_at",
        ]),
    },
    Table {
        name: "sandbox_cleanup_jobs_v2",
        columns: &[
            col("provider", Ty::Text, "text"),
            col("sandbox_id", Ty::Text, "text"),
            col("run_id", Ty::Text, "text"),
            col("attempt", Ty::Int, "integer"),
            col("environment", Ty::Text, "text DEFAULT 'production'"),
            null("routing_domain", Ty::Text, "text"),
            col("routing_domain_key", Ty::Key, KEY),
            col("status", Ty::Text, "text DEFAULT 'pending'"),
            null("lease_owner", Ty::Text, "text"),
            null("lease_expires_at", Ty::Timestamp, "timestamptz"),
            col("available_at", Ty::Timestamp, "timestamptz DEFAULT now()"),
            null("deleted_at", Ty::Timestamp, "timestamptz"),
            null("last_error", Ty::Text, "text"),
            col("updated_at", Ty::Timestamp, "timestamptz DEFAULT now()"),
        ],
        inserted: Some(&["provider", "sandbox_id", "run_id", "attempt", "environment", "routing_domain"]),
    },
    Table {
        name: "sandbox_cleanup_events_v2",
        columns: &[
            col("provider", Ty::Text, "text"),
            col("sandbox_id", Ty::Text, "text"),
            null("routing_domain", Ty::Text, "text"),
            col("run_id", Ty::Text, "text"),
            col("attempt", Ty::Int, "integer"),
            col("cleanup_attempt", Ty::Int, "integer DEFAULT 0"),
            null("lease_owner", Ty::Text, "text"),
            col("event_type", Ty::Text, "text"),
            col("details_json", Ty::Json, "jsonb DEFAULT '{}'::jsonb"),
        ],
        inserted: Some(&[
            "provider",
            "sandbox_id",
            "routing_domain",
            "run_id",
            "attempt",
            "cleanup_attempt",
            "lease_owner",
            "event_type",
            "details_json",
        ]),
    },
    Table {
        name: "runtime_sandbox_capacity_leases",
        columns: &[
            col("lease_id", Ty::Text, "text"),
            col("org_id", Ty::Text, "text"),
            col("run_id", Ty::Text, "text"),
            col("provider", Ty::Text, "text"),
            col("sandbox_id", Ty::Id, "text"),
            null("routing_domain", Ty::Text, "text"),
            col("expires_at", Ty::Timestamp, "timestamptz"),
            null("released_at", Ty::Timestamp, "timestamptz"),
        ],
        inserted: Some(&["lease_id", "org_id", "run_id", "provider", "sandbox_id", "routing_domain", "expires_at", "released_at"]),
    },
    Table {
        name: "control",
        columns: &[col("key", Ty::Text, "text"), col("value", Ty::JsonOrText, "jsonb")],
        inserted: Some(&["key", "value"]),
    },
    Table {
        name: "reconciliation_runs",
        columns: &[
            col("id", Ty::BigInt, "bigint GENERATED BY DEFAULT AS IDENTITY"),
            col("provider", Ty::Text, "text DEFAULT 'daytona'"),
            col("started_at", Ty::Timestamp, "timestamptz"),
            col("finished_at", Ty::Timestamp, "timestamptz"),
            col("dry_run", Ty::Bool, "boolean"),
            col("status", Ty::Text, "text"),
            col("summary", Ty::Json, "jsonb"),
            null("snapshot_id", Ty::BigInt, "bigint"),
            environment("runs of environments other than 'production' are refused until it is added"),
        ],
        inserted: Some(&["provider", "started_at", "finished_at", "dry_run", "status", "summary"]),
    },
    Table {
        name: "provider_inventory_snapshots",
        columns: &[
            col("snapshot_id", Ty::BigInt, "bigint GENERATED BY DEFAULT AS IDENTITY"),
            col("provider", Ty::Text, "text"),
            col("captured_at", Ty::Timestamp, "timestamptz"),
            col("recorded_at", Ty::Timestamp, "timestamptz DEFAULT now()"),
            col("item_count", Ty::Int, "integer"),
            null("reconciled_run_id", Ty::BigInt, "bigint"),
            environment("snapshots of environments other than 'production' are refused until it is added"),
        ],
        inserted: Some(&["provider", "captured_at", "recorded_at", "item_count"]),
    },
    Table {
        name: "provider_inventory_items",
        columns: &[
            col("snapshot_id", Ty::BigInt, "bigint"),
            col("item_index", Ty::Int, "integer"),
            col("sandbox_id", Ty::Text, "text"),
            null("operation_key", Ty::Text, "text"),
            null("routing_domain", Ty::Text, "text"),
        ],
        inserted: Some(&["snapshot_id", "item_index", "sandbox_id", "operation_key", "routing_domain"]),
    },
    Table {
        name: "provider_inventory_stream",
        columns: &[
            col("stream", Ty::Xid8, "xid8 DEFAULT pg_current_xact_id()"),
            col("item_index", Ty::BigInt, "bigint GENERATED ALWAYS AS IDENTITY"),
            null("sandbox_id", Ty::Text, "text"),
            null("routing_domain", Ty::Text, "text"),
            null("operation_key", Ty::Text, "text"),
        ],
        inserted: None,
    },
];

/// The views install_ledger creates (for operators, not for the functions).
pub const VIEWS: &[&str] = &["reconciliation_health"];

/// Unique keys on exactly these columns (`ON CONFLICT` targets, or keys the
/// joins assume).
pub const UNIQUE_KEYS: &[(&str, &[&str])] = &[
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

/// The unique keys only the backfill's insert needs (its ON CONFLICT target):
/// no reconcile statement (the application's or the extension's) relies on
/// them, so a ledger without one — identity keys split per environment into
/// partial unique indexes — refuses only the backfill's writing calls, as the
/// application's own backfill insert fails there (42P10).
pub const BACKFILL_KEYS: &[(&str, &[&str])] = &[("runtime_sandbox_operations", &["provider", "sandbox_id", "routing_domain_key"])];

/// The functions that run the backfill's insert: those working on `control`
/// (the backfill alone keeps its checkpoint there) that are not READING.
pub fn backfill_writers() -> Vec<&'static str> {
    FUNCTIONS
        .iter()
        .filter(|(f, tables)| tables.contains(&"control") && !READING.contains(f))
        .map(|&(f, _)| f)
        .collect()
}

/// Indexes whose leading columns are these, in this order (correct without
/// them, but slow).
pub const INDEXES: &[(&str, &[&str])] = &[
    ("attempts", &["updated_at", "run_id", "attempt"]),
    ("runtime_sandbox_operations", &["provider_operation_token"]),
    ("runtime_sandbox_operations", &["provider", "provider_created_at", "operation_key"]),
    ("runtime_sandbox_operations", &["sandbox_id"]),
    ("runtime_sandbox_operations", &["environment", "sandbox_id"]),
    ("runtime_sandbox_operations", &["environment", "provider_operation_token"]),
    ("sandbox_cleanup_jobs_v2", &["provider", "sandbox_id"]),
    ("sandbox_cleanup_jobs_v2", &["sandbox_id"]),
    ("sandbox_cleanup_events_v2", &["provider", "sandbox_id"]),
    ("runtime_sandbox_capacity_leases", &["provider", "sandbox_id"]),
    ("runtime_sandbox_capacity_leases", &["sandbox_id"]),
    ("provider_inventory_snapshots", &["provider", "captured_at", "snapshot_id"]),
    ("provider_inventory_items", &["snapshot_id", "sandbox_id"]),
    ("reconciliation_runs", &["provider", "environment", "id"]),
];

pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.name == name)
}

/// Every table name, in report order.
pub fn table_names() -> Vec<&'static str> {
    TABLES.iter().map(|t| t.name).collect()
}

/// Which tables each function works on: the check of a call looks only at
/// these (a dry run reads three tables; an apply also writes four more). The
/// gates check exactly these lists, and a missing table's error names them in
/// this order; a `table.column` entry is a column a gate names when missing
/// (it counts as its table).
pub mod uses {
    pub const RECONCILE_READ: &[&str] = &["runtime_sandbox_operations", "runtime_sandbox_capacity_leases", "sandbox_cleanup_jobs_v2"];
    pub const RECONCILE_APPLY: &[&str] = &[
        "runtime_sandbox_operations",
        "runtime_sandbox_capacity_leases",
        "sandbox_cleanup_jobs_v2",
        "sandbox_cleanup_events_v2",
        "attempts",
        "reconciliation_runs",
    ];
    pub const SNAPSHOT: &[&str] = &["provider_inventory_snapshots", "provider_inventory_items"];
    /// A listing streamed into provider_inventory_stream, published as a snapshot.
    pub const PUBLISH: &[&str] = &["provider_inventory_stream", "provider_inventory_snapshots", "provider_inventory_items"];
    pub const LATEST_READ: &[&str] = &[
        "provider_inventory_snapshots",
        "provider_inventory_items",
        "runtime_sandbox_operations",
        "runtime_sandbox_capacity_leases",
        "sandbox_cleanup_jobs_v2",
    ];
    /// The history row names the snapshot it reconciled.
    pub const LATEST_APPLY: &[&str] = &[
        "provider_inventory_snapshots",
        "provider_inventory_items",
        "reconciliation_runs",
        "reconciliation_runs.snapshot_id",
        "runtime_sandbox_operations",
        "runtime_sandbox_capacity_leases",
        "sandbox_cleanup_jobs_v2",
        "sandbox_cleanup_events_v2",
        "attempts",
    ];
    /// The backfill reads attempts and runs, inserts into the operations and keeps its checkpoint in control.
    pub const BACKFILL: &[&str] = &["attempts", "control", "runs", "runtime_sandbox_operations"];
}

/// The functions as check_ledger's `breaks` names them, each with the tables
/// it works on (the lists its gate checks): an error on one of those tables
/// refuses it, an error elsewhere does not.
pub const FUNCTIONS: &[(&str, &[&str])] = &[
    ("reconcile_daytona (dry run)", uses::RECONCILE_READ),
    ("reconcile_daytona (apply)", uses::RECONCILE_APPLY),
    ("reconcile_daytona_latest (dry run)", uses::LATEST_READ),
    ("reconcile_daytona_latest (apply)", uses::LATEST_APPLY),
    ("record_inventory_snapshot", uses::SNAPSHOT),
    ("publish_inventory_snapshot", uses::PUBLISH),
    ("schedule_reconciliation", uses::LATEST_APPLY),
    ("preview_sandbox_operation_backfill", uses::BACKFILL),
    ("backfill_sandbox_operations", uses::BACKFILL),
    ("advance_sandbox_operation_backfill (dry run)", uses::BACKFILL),
    ("advance_sandbox_operation_backfill (apply)", uses::BACKFILL),
    ("backfill_status", uses::BACKFILL),
    ("run_sandbox_operation_backfill", uses::BACKFILL),
    ("complete_sandbox_operation_backfill", uses::BACKFILL),
    ("schedule_sandbox_operation_backfill", uses::BACKFILL),
];

/// The functions among FUNCTIONS that only read the ledger: a problem only
/// writing statements have does not refuse them.
pub const READING: &[&str] = &[
    "reconcile_daytona (dry run)",
    "reconcile_daytona_latest (dry run)",
    "preview_sandbox_operation_backfill",
    "advance_sandbox_operation_backfill (dry run)",
    "backfill_status",
];

/// The functions an error on `table` refuses (None: the whole schema, every
/// one); `writes_only`: an error only writing statements have (a missing
/// BACKFILL_KEYS key: backfill_writers).
pub fn breaks(table: Option<&str>, writes_only: bool) -> Vec<&'static str> {
    FUNCTIONS
        .iter()
        .filter(|(f, tables)| table.is_none_or(|t| tables.contains(&t)) && !(writes_only && READING.contains(f)))
        .map(|&(f, _)| f)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// install_ledger must create everything the check asks for.
    #[test]
    fn install_script_mentions_every_required_name() {
        let script = include_str!("../../sql/ddl/ledger_tables.sql");
        for name in std::iter::once(OPERATION_STATE).chain(OPERATION_STATES.iter().copied()).chain(VIEWS.iter().copied()) {
            assert!(script.contains(name), "ledger_tables.sql lacks {name}");
        }
        for table in TABLES {
            assert!(script.contains(&format!("@ledger@.{} (", table.name)), "ledger_tables.sql lacks table {}", table.name);
            for column in table.columns {
                assert!(script.contains(column.name), "ledger_tables.sql lacks {}.{}", table.name, column.name);
            }
        }
        for (table, columns) in UNIQUE_KEYS.iter().chain(INDEXES) {
            for column in *columns {
                assert!(script.contains(column), "ledger_tables.sql lacks {table}.{column}");
            }
        }
    }

    #[test]
    fn keys_and_uses_name_listed_tables_and_columns() {
        for (table_name, columns) in UNIQUE_KEYS.iter().chain(INDEXES) {
            let table = table(table_name).unwrap_or_else(|| panic!("{table_name}"));
            for column in *columns {
                assert!(table.columns.iter().any(|c| c.name == *column), "{table_name}.{column}");
            }
        }
        for table in TABLES {
            for column in table.inserted.unwrap_or(&[]) {
                assert!(table.columns.iter().any(|c| c.name == *column), "{}.{column}", table.name);
            }
        }
        for list in [uses::RECONCILE_READ, uses::RECONCILE_APPLY, uses::SNAPSHOT, uses::LATEST_READ, uses::LATEST_APPLY, uses::BACKFILL] {
            for name in list {
                // A table, or `table.column` of one of its columns.
                let (table_name, column) = name.split_once('.').map_or((*name, None), |(t, c)| (t, Some(c)));
                let table = table(table_name).unwrap_or_else(|| panic!("{name}"));
                assert!(column.is_none_or(|c| table.columns.iter().any(|col| col.name == c)), "{name}");
            }
        }
    }

    #[test]
    fn a_tables_problem_breaks_only_the_functions_that_use_it() {
        assert_eq!(
            breaks(Some("control"), false),
            [
                "preview_sandbox_operation_backfill",
                "backfill_sandbox_operations",
                "advance_sandbox_operation_backfill (dry run)",
                "advance_sandbox_operation_backfill (apply)",
                "backfill_status",
                "run_sandbox_operation_backfill",
                "complete_sandbox_operation_backfill",
                "schedule_sandbox_operation_backfill"
            ]
        );
        assert_eq!(
            breaks(Some("reconciliation_runs"), false),
            ["reconcile_daytona (apply)", "reconcile_daytona_latest (apply)", "schedule_reconciliation"]
        );
        assert_eq!(breaks(Some("provider_inventory_items"), false).len(), 5);
        assert_eq!(breaks(Some("provider_inventory_stream"), false), ["publish_inventory_snapshot"]);
        assert!(breaks(Some("runtime_sandbox_operations"), false).contains(&"reconcile_daytona (dry run)"));
        assert!(breaks(Some("runtime_sandbox_operations"), false).contains(&"backfill_status"));
        assert_eq!(breaks(None, false).len(), FUNCTIONS.len());
        assert_eq!(
            backfill_writers(),
            [
                "backfill_sandbox_operations",
                "advance_sandbox_operation_backfill (apply)",
                "run_sandbox_operation_backfill",
                "complete_sandbox_operation_backfill",
                "schedule_sandbox_operation_backfill"
            ]
        );
        assert!(READING.iter().all(|f| FUNCTIONS.iter().any(|(g, _)| g == f)));
        assert_eq!(breaks(None, true).len(), FUNCTIONS.len() - READING.len());
        // Every table a function uses is a ledger table; every ledger table but the snapshots' is used by the backfill or a reconcile.
        for (_, tables) in FUNCTIONS {
            assert!(tables.iter().all(|t| table(t.split('.').next().unwrap()).is_some()));
        }
        // Each reading list is within its apply's.
        for (read, apply) in [(uses::RECONCILE_READ, uses::RECONCILE_APPLY), (uses::LATEST_READ, uses::LATEST_APPLY)] {
            assert!(read.iter().all(|t| apply.contains(t)));
        }
    }
}
