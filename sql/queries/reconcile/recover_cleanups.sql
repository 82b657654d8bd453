-- Recovery, step 4: a pending cleanup row for each recovered sandbox (its
-- lease bound), unless one exists for the identity. $1 sandboxes, $2 runs,
-- $3 attempts, $4 environments, $5 routing domains.
INSERT INTO @ledger@.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, environment, routing_domain)
SELECT 'daytona', recovered.sandbox_id, recovered.run_id, recovered.attempt, recovered.environment, recovered.routing_domain
FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[])
         AS recovered(sandbox_id, run_id, attempt, environment, routing_domain)
ON CONFLICT (provider, sandbox_id, routing_domain_key) DO NOTHING
