-- Backfill paging: result types.
CREATE TYPE @extschema@.backfill_cursor AS (
    updated_at       timestamptz,
    run_id           text,
    attempt          integer,
    resource_ordinal integer
);
COMMENT ON TYPE @extschema@.backfill_cursor IS
'Keyset position of the operation backfill: the attempt''s updated_at (full microsecond precision), run_id, attempt, and the 1-based ordinal of the resource in its resource_json array. A page starts strictly after it.';

CREATE TYPE @extschema@.backfill_target AS (
    run_id           text,
    attempt          integer,
    resource_ordinal integer,
    provider         text,
    sandbox_id       text,
    would_insert     boolean
);
COMMENT ON TYPE @extschema@.backfill_target IS
'One sandbox resource in a backfill page: where it was found, its provider (modal or daytona) and sandbox id, and whether it inserts (or would insert) a runtime_sandbox_operations row.';

CREATE TYPE @extschema@.backfill_page AS (
    scanned_attempts    bigint,
    inserted_operations bigint,
    has_more            boolean,
    next_cursor         @extschema@.backfill_cursor,
    targets             @extschema@.backfill_target[]
);
COMMENT ON TYPE @extschema@.backfill_page IS
'One backfill page. scanned_attempts counts sandbox resources in the page (the application''s name), has_more is true on a full page, next_cursor is the last resource (NULL on an empty page), targets lists every resource in keyset order.';

CREATE TYPE @extschema@.backfill_progress AS (
    phase                text,
    dry_run              boolean,
    batches              bigint,
    scanned_attempts     bigint,
    inserted_operations  bigint,
    projected_operations bigint,
    targets              @extschema@.backfill_target[],
    next_cursor          @extschema@.backfill_cursor
);
COMMENT ON TYPE @extschema@.backfill_progress IS
'What one advance_sandbox_operation_backfill call did: phase pending or complete, pages applied (or 1 previewed), sums over them, projected operations (applied: the scanned resources; dry run: the would_insert targets), targets (dry run only) and the cursor the next call starts after (NULL when complete).';
