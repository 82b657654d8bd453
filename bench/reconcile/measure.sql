-- Best of :rounds for: a bare hash join of the inventory against the
-- operations table, reconcile_daytona dry run, and apply (each apply in a
-- subtransaction that is rolled back, so every round starts from the same
-- ledger). Prints one row.
SET client_min_messages = warning;
CREATE OR REPLACE FUNCTION pg_temp.best_ms(sql text, rounds int, roll_back boolean) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE started timestamptz; took numeric; best numeric;
BEGIN
    FOR round IN 1..rounds LOOP
        BEGIN
            started := clock_timestamp();
            EXECUTE sql;
            took := extract(epoch FROM clock_timestamp() - started) * 1000;
            IF roll_back THEN RAISE EXCEPTION 'roll back'; END IF;
        EXCEPTION WHEN raise_exception THEN NULL;
        END;
        best := least(best, took);
    END LOOP;
    RETURN best;
END $$;

-- The settings are the function's own (SET clauses end with the call; SET
-- LOCAL inside it would also bind the reconcile calls measured after it in
-- this transaction).
CREATE OR REPLACE FUNCTION pg_temp.bare_join() RETURNS bigint LANGUAGE plpgsql
SET enable_mergejoin = off SET enable_nestloop = off
SET jit = off  -- as reconcile_daytona runs its statements
AS $$
DECLARE n bigint;
BEGIN
    SELECT count(*) INTO n
    FROM bench_inventory,
         jsonb_to_recordset(inventory) AS item("sandboxId" text, "operationKey" text, "routingDomain" text)
    JOIN bench.runtime_sandbox_operations AS operation ON operation.sandbox_id = item."sandboxId";
    RETURN n;
END $$;

WITH t AS (
    SELECT pg_temp.best_ms('SELECT pg_temp.bare_join()', :rounds, false) AS join_ms,
           pg_temp.best_ms($q$SELECT runtime_sandbox.reconcile_daytona(inventory, now(), true, ledger_schema => 'bench') FROM bench_inventory$q$, :rounds, false) AS dry_ms,
           pg_temp.best_ms($q$SELECT runtime_sandbox.reconcile_daytona(inventory, now(), false, ledger_schema => 'bench') FROM bench_inventory$q$, :rounds, true) AS apply_ms
)
SELECT :n AS n, round(join_ms, 1) AS join_ms, round(dry_ms, 1) AS dry_ms, round(apply_ms, 1) AS apply_ms,
       round(dry_ms / join_ms, 2) AS dry_x_join, round(apply_ms / join_ms, 2) AS apply_x_join
FROM t;
