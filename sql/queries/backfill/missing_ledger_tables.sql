-- Ledger tables the backfill reads or writes that $1 lacks.
SELECT string_agg(wanted.name, ', ' ORDER BY wanted.name)
FROM unnest(ARRAY['attempts', 'control', 'runs', 'runtime_sandbox_operations']) AS wanted(name)
WHERE to_regclass(quote_ident($1) || '.' || quote_ident(wanted.name)) IS NULL
