-- Whether Citus's schema-based sharding is on in this session (NULL without Citus).
SELECT pg_catalog.current_setting('citus.enable_schema_based_sharding', true) = 'on'
