-- What a reconcile or archive decides from, as one text: the sandbox rows and
-- the row holding the name ($5), and the managed-slot bindings of the
-- companies ($1), each as its id and row version (xmin). At REPEATABLE READ
-- and SERIALIZABLE it is read with the transaction's snapshot and again with
-- the newest committed data: the same text means nothing the call reads was
-- committed after its snapshot (row locks change xmax, not xmin).
SELECT coalesce((SELECT string_agg(e.id::text || '@' || e.xmin::text, ',' ORDER BY e.id)
                   FROM @app@.environments AS e
                  WHERE e.driver = 'sandbox' OR e.name = $5), '')
       || ' | ' ||
       coalesce((SELECT string_agg(b.id::text || '@' || b.xmin::text, ',' ORDER BY b.id)
                   FROM @app@.built_in_managed_resources AS b
                   JOIN unnest($1::uuid[]) AS c(id) ON b.company_id = c.id
                  WHERE b.bundle_key = $2 AND b.resource_kind = $3 AND b.resource_key = $4), '')
