//! The calls of every function on one ledger (tests/adoption.rs on ledgers of many shapes, tests/citus.rs on
//! distributed ones), the rows they start from and every table's contents as text, to compare ledgers.
#![allow(dead_code)]

use postgres::Client;

/// The same rows in every ledger (values as literals, so they coerce to the shape's types).
pub const SEED: &str = r#"
INSERT INTO @s@.runs (run_id, org_id) VALUES
  ('run-1', '00000000-0000-0000-0000-00000000000a'), ('run-2', '00000000-0000-0000-0000-00000000000a'),
  ('run-3', '00000000-0000-0000-0000-00000000000a'), ('run-4', '00000000-0000-0000-0000-00000000000b'),
  ('run-5', '00000000-0000-0000-0000-00000000000b'), ('run-a', '00000000-0000-0000-0000-00000000000a');
INSERT INTO @s@.attempts (run_id, attempt, updated_at, resource_json) VALUES
  ('run-3', 1, '2026-01-02 00:00:00+00', NULL),
  ('run-a', 1, '2026-01-01 00:00:00+00', '[{"kind": "daytona_sandbox", "sandboxId": "dt-1"}, {"kind": "modal_sandbox", "sandboxId": "mo-1", "modalAppId": "app-7"}]'),
  ('run-4', 1, '2026-01-01 00:00:01+00', '{"kind": "daytona_sandbox", "sandboxId": "dt-2", "daytonaOrganizationId": "eu"}');
INSERT INTO @s@.runtime_sandbox_operations
       (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain, state, provider_operation_token, provider_created_at)
VALUES ('op-1', 'daytona', 'run-1', 1, 'org-1', 'sb-1', NULL, 'live', 'label-1', now() - interval '2 hours'),
       ('op-2', 'daytona', 'run-2', 1, 'org-1', 'sb-2', NULL, 'live', 'label-2', now() - interval '2 hours'),
       ('op-3', 'daytona', 'run-3', 1, 'org-1', NULL, NULL, 'reserved', 'label-3', NULL),
       ('op-4', 'daytona', 'run-4', 1, 'org-2', 'sb-4', 'eu', 'live', 'label-4', now() - interval '3 hours'),
       ('op-5', 'daytona', 'run-5', 1, 'org-2', 'sb-5', NULL, 'deleting', 'label-5', now() - interval '3 hours'),
       ('op-6', 'daytona', 'run-5', 2, 'org-2', 'sb-6', 'eu', 'live', 'label-6', now() - interval '3 hours');
INSERT INTO @s@.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at)
VALUES ('op-3', 'org-1', 'run-3', NULL, NULL, NULL, NULL),
       ('op-4', 'org-2', 'run-4', 'daytona', 'sb-4', 'eu', now());
INSERT INTO @s@.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, deleted_at)
VALUES ('daytona', 'sb-4', 'run-4', 1, 'eu', 'deleted', now() - interval '1 hour'),
       ('daytona', 'sb-6', 'run-5', 2, 'eu', 'pending', NULL);
"#;

pub const ALL: &[&str] = &[
    "runs",
    "attempts",
    "runtime_sandbox_operations",
    "sandbox_cleanup_jobs_v2",
    "sandbox_cleanup_events_v2",
    "runtime_sandbox_capacity_leases",
    "control",
    "reconciliation_runs",
    "provider_inventory_snapshots",
    "provider_inventory_items",
    "provider_inventory_stream",
];
pub const NONE: &[&str] = &[];
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
pub const BACKFILL: &[&str] = &["attempts", "control", "runs", "runtime_sandbox_operations"];
pub const PUBLISH: &[&str] = &["provider_inventory_stream", "provider_inventory_snapshots", "provider_inventory_items"];

/// The calls, in order, each answering one text line, with the tables each works on (docs/reference.md).
pub const CALLS: &[(&str, &[&str])] = &[
    ("SELECT count(*) FILTER (WHERE severity = 'error')::text FROM runtime_sandbox.check_ledger('@s@')", NONE),
    ("SELECT 'installed' FROM (SELECT runtime_sandbox.install_ledger('@s@')) AS done", ALL),
    (r#"SELECT (provider_sandbox_count, matched_live_sandboxes, unmatched_provider_sandbox_ids, live_leases_to_seed, absent_ledger_rows,
               seeded_leases, released_terminal_leases, marked_deleted, recovered_reserved_operations, has_more_absent_ledger_rows,
               status, absent_candidates, live_operations)::text
         FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1", "operationKey": "label-1"}, {"sandboxId": "sb-9", "operationKey": "label-3"},
               {"sandboxId": "sb-5"}, {"sandboxId": "sb-6", "routingDomain": "eu"}]', now(), true, ledger_schema => '@s@', max_absent_ratio => 1)"#,
     RECONCILE_READ),
    (r#"SELECT (provider_sandbox_count, matched_live_sandboxes, unmatched_provider_sandbox_ids, live_leases_to_seed, absent_ledger_rows,
               seeded_leases, released_terminal_leases, marked_deleted, recovered_reserved_operations, has_more_absent_ledger_rows,
               status, absent_candidates, live_operations)::text
         FROM runtime_sandbox.reconcile_daytona('[{"sandboxId": "sb-1", "operationKey": "label-1"}, {"sandboxId": "sb-9", "operationKey": "label-3"},
               {"sandboxId": "sb-5"}, {"sandboxId": "sb-6", "routingDomain": "eu"}]', now(), false, ledger_schema => '@s@', max_absent_ratio => 1)"#,
     RECONCILE_APPLY),
    (r#"SELECT (runtime_sandbox.record_inventory_snapshot('daytona', '[{"sandboxId": "sb-1"}, {"sandboxId": "sb-9"}]', now() - interval '1 minute', ledger_schema => '@s@') > 0)::text"#,
     SNAPSHOT),
    (r#"SELECT (runtime_sandbox.record_inventory_snapshot('daytona', '[{"sandboxId": "sb-9"}, {"sandboxId": "sb-5"}]', now(), keep_last => 2, ledger_schema => '@s@') > 0)::text"#,
     SNAPSHOT),
    ("SELECT (matched_live_sandboxes, absent_ledger_rows, marked_deleted, seeded_leases, status, confirming_snapshots)::text
       FROM runtime_sandbox.reconcile_daytona_latest(false, absent_confirmations => 2, minimum_age => '0', max_absent_ratio => 1, ledger_schema => '@s@')",
     &[
         "runtime_sandbox_operations",
         "runtime_sandbox_capacity_leases",
         "sandbox_cleanup_jobs_v2",
         "sandbox_cleanup_events_v2",
         "attempts",
         "reconciliation_runs",
         "provider_inventory_snapshots",
         "provider_inventory_items",
     ]),
    ("SELECT (scanned_attempts, inserted_operations, has_more, (next_cursor).run_id, targets)::text FROM runtime_sandbox.preview_sandbox_operation_backfill(2, NULL, '@s@')", BACKFILL),
    ("SELECT (scanned_attempts, inserted_operations, has_more, targets)::text FROM runtime_sandbox.backfill_sandbox_operations(1, NULL, '@s@')", BACKFILL),
    ("SELECT (phase, batches, scanned_attempts, projected_operations)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(true, 10, 1, '@s@')", BACKFILL),
    ("SELECT (phase, batches, scanned_attempts, inserted_operations)::text FROM runtime_sandbox.advance_sandbox_operation_backfill(false, 1, 1, '@s@')", BACKFILL),
    ("CALL runtime_sandbox.run_sandbox_operation_backfill(1, ledger_schema => '@s@')", BACKFILL),
    ("SELECT (phase, attempts_remaining)::text FROM runtime_sandbox.backfill_status('@s@')", BACKFILL),
    // COPY's rows and the publish in one transaction (a simple query's statements share one).
    ("INSERT INTO @s@.provider_inventory_stream (sandbox_id, operation_key) VALUES (' sb-1 ', 'label-1'), ('sb-9', NULL), ('sb-1', 'label-1');
      SELECT (runtime_sandbox.publish_inventory_snapshot('daytona', 3, now(), keep_last => 3, ledger_schema => '@s@') > 0)::text",
     PUBLISH),
];

/// Every table's rows, as text, in the columns install_ledger's tables have (clock values as NULL or not).
pub const CONTENTS: &str = r#"
SELECT concat_ws(E'\n--\n',
  (SELECT string_agg(concat_ws('|', run_id, org_id), ',' ORDER BY run_id::text) FROM @s@.runs),
  (SELECT string_agg(concat_ws('|', run_id, attempt, regexp_replace(resource_json::jsonb::text, '"billingStartedAt": [0-9.e+]+', '')), ','
                     ORDER BY run_id::text, attempt) FROM @s@.attempts),
  (SELECT string_agg(concat_ws('|', operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain,
                               routing_domain_key, state, provider_operation_token, provider_created_at IS NULL, delete_confirmed_at IS NULL),
                     ',' ORDER BY operation_key::text) FROM @s@.runtime_sandbox_operations),
  (SELECT string_agg(concat_ws('|', provider, sandbox_id, run_id, attempt, environment, routing_domain, status, lease_owner,
                               deleted_at IS NULL, last_error), ',' ORDER BY sandbox_id::text, routing_domain_key::text) FROM @s@.sandbox_cleanup_jobs_v2),
  (SELECT string_agg(concat_ws('|', provider, sandbox_id, routing_domain, run_id, attempt, cleanup_attempt, lease_owner, event_type,
                               details_json::jsonb), ',' ORDER BY sandbox_id::text, event_type::text) FROM @s@.sandbox_cleanup_events_v2),
  (SELECT string_agg(concat_ws('|', lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at IS NULL, released_at IS NULL),
                     ',' ORDER BY lease_id::text) FROM @s@.runtime_sandbox_capacity_leases),
  (SELECT string_agg(concat_ws('|', key, value::jsonb), ',' ORDER BY key::text) FROM @s@.control),
  (SELECT string_agg(concat_ws('|', provider, dry_run, status, summary::jsonb - 'diagnostics'), ',' ORDER BY id) FROM @s@.reconciliation_runs),
  (SELECT string_agg(concat_ws('|', provider, item_count, reconciled_run_id IS NULL), ',' ORDER BY snapshot_id) FROM @s@.provider_inventory_snapshots),
  (SELECT string_agg(concat_ws('|', item_index, sandbox_id, operation_key, routing_domain), ',' ORDER BY snapshot_id, item_index)
     FROM @s@.provider_inventory_items))
"#;

pub fn sql(template: &str, schema: &str) -> String {
    template.replace("@s@", schema)
}

/// Each call's answer (`ERROR SQLSTATE message` for an error, which is also rolled back); only the calls
/// `pick` chooses (others answer "skipped").
pub fn run_calls(c: &mut Client, schema: &str, pick: impl Fn(&[&str]) -> bool) -> Vec<String> {
    run_calls_where(c, schema, |_, tables| pick(tables))
}

/// `run_calls`, choosing by the call's text and its tables.
pub fn run_calls_where(c: &mut Client, schema: &str, pick: impl Fn(&str, &[&str]) -> bool) -> Vec<String> {
    CALLS
        .iter()
        .map(|&(call, tables)| {
            if !pick(call, tables) {
                return "skipped".to_string();
            }
            let sql = sql(call, schema);
            match c.simple_query(&sql) {
                Ok(messages) => messages
                    .iter()
                    .find_map(|m| match m {
                        postgres::SimpleQueryMessage::Row(row) => Some(row.get(0).unwrap_or("NULL").to_string()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "done".into()),
                Err(e) => {
                    let db = e.as_db_error().unwrap_or_else(|| panic!("{schema}: the connection was lost (a crash?): {e}\n  {sql}"));
                    format!("ERROR {} {}", db.code().code(), db.message())
                }
            }
        })
        .collect()
}

pub fn contents(c: &mut Client, schema: &str) -> String {
    c.query_one(&sql(CONTENTS, schema), &[])
        .unwrap_or_else(|e| panic!("{schema} contents: {}", super::db_message(&e)))
        .get::<_, Option<String>>(0)
        .unwrap_or_default()
}

