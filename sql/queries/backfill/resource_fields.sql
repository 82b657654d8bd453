-- The `->>` texts the page reads of each element of an attempt's
-- resource_json ($1), in the order of resources::Field::ALL: asked only when
-- the in-place reader (resources.rs) finds a jsonb layout it does not expect.
SELECT resource.ordinal::integer,
       resource.value ->> 'kind',
       resource.value ->> 'sandboxId',
       resource.value ->> 'modalAppId',
       resource.value ->> 'daytonaOrganizationId',
       resource.value ->> 'runtimeEnvironment',
       resource.value ->> 'daytonaEnvironment'
FROM jsonb_array_elements(
    CASE WHEN jsonb_typeof($1) = 'array' THEN $1 ELSE jsonb_build_array($1) END
) WITH ORDINALITY AS resource(value, ordinal)
ORDER BY resource.ordinal
