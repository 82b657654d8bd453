-- The calling transaction (whose rows a publish reads) and the oldest one running (older streams ended
-- without publishing), as text: xid8 has no binary form the shell reads.
SELECT pg_catalog.pg_current_xact_id()::text, pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot())::text
