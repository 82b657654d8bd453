-- Per-call `jit` ($1), transaction-local; returns the value it replaces so
-- the call can put it back. Why: the ledger read scans whole tables, so its
-- cost crosses jit_above_cost at 100k rows, and compiling it (~100 ms) costs
-- more than the scans it would speed up.
SELECT current_setting('jit'), set_config('jit', $1, true)
