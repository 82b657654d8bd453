-- Per-call planner settings ($1 jit, $2 enable_nestloop, $3 enable_mergejoin),
-- transaction-local; returns the values they replace so the call can put
-- them back. Why: the phase statements are hash joins over text that JIT does
-- not speed up (at 100k rows their costs cross jit_above_cost and each would
-- pay ~100 ms of compilation), and the planner cannot estimate joins against
-- the unnested inventory, so it picks nested loops that are quadratic in it.
SELECT current_setting('jit'), current_setting('enable_nestloop'), current_setting('enable_mergejoin'),
       set_config('jit', $1, true), set_config('enable_nestloop', $2, true), set_config('enable_mergejoin', $3, true)
