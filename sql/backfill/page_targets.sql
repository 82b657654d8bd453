COALESCE(array_agg(ROW(resources.run_id, resources.attempt, resources.resource_ordinal,
                              resources.provider, resources.sandbox_id, resources.would_insert
                          )::runtime_sandbox.backfill_target
                          ORDER BY resources.position),
                '{}')
