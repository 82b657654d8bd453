-- Which of a page's winners already have an operation of their identity
-- ($1 providers, $2 sandbox ids, $3 routing domain keys, one element per
-- winner): the 1-based positions of those that do. The previews' would_insert.
SELECT identity.position::integer
FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY
     AS identity(provider, sandbox_id, routing_domain_key, position)
WHERE EXISTS (
    SELECT 1
    FROM @ledger@.runtime_sandbox_operations AS operation
    WHERE operation.provider = identity.provider
      AND operation.sandbox_id = identity.sandbox_id
      AND operation.routing_domain_key = identity.routing_domain_key
)
