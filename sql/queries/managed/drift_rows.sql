-- The drift report's rows from the core's answer (parallel arrays, in order).
SELECT ROW(d.company_id, d.environment_id, d.binding_stock_hash, d.current_hash,
           d.stock_status::runtime_sandbox.managed_stock_status)::runtime_sandbox.managed_environment_drift
  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY
       AS d(company_id, environment_id, binding_stock_hash, current_hash, stock_status, n)
 ORDER BY d.n
