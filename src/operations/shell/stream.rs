//! A listing streamed into the ledger rather than passed as one JSON value:
//! the caller COPYs its rows into provider_inventory_stream and, in the same
//! transaction, publish_inventory_snapshot checks them by the inventory's
//! rules, records them as a snapshot (normalized as record_inventory_snapshot
//! normalizes) and removes them. Until then no reader sees a snapshot: the
//! rows are not one, and no other transaction sees them at all.

use super::{prune, recording, rules, Recording};
use crate::args::ArgError;
use crate::error::Error;
use crate::ledger::requirements::uses;
use crate::reconcile::inventory::{streamed_problem, JS_WHITESPACE, MAX_ID_BYTES};
use crate::reconcile::summary;
use crate::shell::raise::Raise;
use crate::shell::spi::ReadValue;
use crate::shell::statement::{execute, planned, Ledger};
use crate::shell::types::Name;
use crate::shell::check;
use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;

const STREAM_TRANSACTION: &str = include_str!("../../../sql/queries/operations/stream_transaction.sql");
const PUBLISH_SNAPSHOT: &str = include_str!("../../../sql/queries/operations/publish_snapshot.sql");

const FUNCTION: &str = "publish_inventory_snapshot";

/// The publish hashes its listing's distinct items in memory rather than in batches on disk (a 1M listing:
/// ~150 MB for the statement, about what one JSON value of it costs record_inventory_snapshot).
const ONE_PASS: &[(&str, &str)] = &[("work_mem", "256MB")];

/// Publish the listing this transaction streamed into the ledger's
/// provider_inventory_stream (`streamed_items` rows, the caller's count) as
/// one snapshot of one environment, then prune as record_inventory_snapshot
/// does. Returns the snapshot id.
#[pg_extern(name = "publish_inventory_snapshot", volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn publish_inventory_snapshot_of(
    provider: Option<&str>,
    streamed_items: Option<i32>,
    captured_at: Option<TimestampWithTimeZone>,
    keep_last: default!(Option<i32>, 20),
    ledger_schema: default!(Option<Name>, "'runtime_scheduler'"),
    environment: default!(Option<&str>, "'production'"),
) -> i64 {
    let provider = check(rules::provider(check(summary::required("provider", provider))));
    let streamed_items = check(summary::required("streamed_items", streamed_items));
    check(rules::streamed_items(streamed_items));
    let Recording { captured_at, keep_last, schema, environment } =
        recording(captured_at, keep_last, ledger_schema, environment);

    let access = crate::ledger::require(&schema, uses::PUBLISH, FUNCTION);
    // The stream table came with 0.4.0's install_ledger, which adds this column too; a ledger given the
    // table by hand may still lack it.
    if !access.environment_column(&schema, "provider_inventory_snapshots", &environment, FUNCTION) {
        Error::from(ArgError::new(
            "ledger_schema",
            format!("{}.provider_inventory_snapshots has no environment column", schema.quoted),
        ))
        .hint(format!("SELECT runtime_sandbox.install_ledger('{}'); adds it", schema.name))
        .raise();
    }
    crate::shell::standby::refuse_writes(FUNCTION);
    access.run(|| Spi::connect_mut(|client| {
        let ledger = Ledger { quoted: &schema.quoted, environment_eq: "=" };
        let (table, _) = execute(client, STREAM_TRANSACTION, &[]);
        let row = table.first();
        let transaction: String = row.get::<String>(1).read_value().expect("the transaction's id");
        let oldest_running: String = row.get::<String>(2).read_value().expect("the snapshot's xmin");

        let params = [
            transaction.as_str().into(),
            provider.into(),
            captured_at.into(),
            environment.name.as_str().into(),
            JS_WHITESPACE.into(),
            oldest_running.as_str().into(),
            (MAX_ID_BYTES as i32).into(),
        ];
        // Checked and recorded in one pass; any refusal below rolls the statement's writes back.
        let (table, _) = planned(client, ONE_PASS, |client| execute(client, &ledger.sql(PUBLISH_SNAPSHOT), &params));
        let row = table.first();
        let rows = row.get::<i64>(2).read_value().unwrap_or(0);
        if rows != i64::from(streamed_items) {
            Error::from(ArgError::new(
                "streamed_items",
                format!(
                    "is {streamed_items}, but this transaction streamed {rows} rows into {}.provider_inventory_stream",
                    schema.quoted
                ),
            ))
            .hint(format!(
                "COPY {}.provider_inventory_stream (sandbox_id, routing_domain, operation_key) FROM STDIN, then call \
                 publish_inventory_snapshot, in one transaction",
                schema.quoted
            ))
            .raise();
        }
        if let Some(key) = row.get::<String>(4).read_value() {
            let element = row.get::<i64>(3).read_value().unwrap_or(0);
            let bytes = row.get::<i32>(5).read_value().map(|b| b as usize);
            Error::from(streamed_problem("streamed_items", element as usize, &key, bytes)).raise();
        }
        let snapshot_id = row.get::<i64>(1).read_value().expect("a snapshot when no row is refused");
        prune(client, &ledger, provider, keep_last, snapshot_id, Some(environment.name.as_str()));
        snapshot_id
    }))
}
