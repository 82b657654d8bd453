-- input.companyId ? [companyId] : every company (ordered, so results are stable).
SELECT id::text FROM @app@.companies ORDER BY id
