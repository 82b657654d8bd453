-- The result row, built from the summary Rust assembled.
SELECT jsonb_populate_record(NULL::runtime_sandbox.reconciliation_summary, $1::jsonb)
