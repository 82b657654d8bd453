-- Tell listeners (LISTEN runtime_sandbox) that a run did not go through;
-- delivered when the caller's transaction commits.
SELECT pg_catalog.pg_notify('runtime_sandbox', $1)
