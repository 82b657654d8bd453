-- The TimeZone the server's configuration files set (postgresql.conf, then
-- ALTER SYSTEM's postgresql.auto.conf: the applied line wins); no row when
-- they set none. pg_show_all_file_settings() is a superuser's unless granted:
-- the caller checks the privilege first.
SELECT s.setting
FROM pg_catalog.pg_show_all_file_settings() AS s
WHERE pg_catalog.lower(s.name) = 'timezone' AND s.applied
ORDER BY s.seqno DESC
LIMIT 1
