-- A fresh archive token (the application's randomUUID()).
SELECT pg_catalog.gen_random_uuid()::text
