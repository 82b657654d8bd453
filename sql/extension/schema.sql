-- The extension's objects live in the fixed schema named in the control file
-- (runtime_sandbox). CREATE EXTENSION creates it for the installing role; a
-- schema of that name made beforehand by another role, or holding objects
-- already, is refused: its owner could later rename it away and put look-alike
-- functions where callers (a superuser's pg_cron job) would run them.
DO $bootstrap$
DECLARE
    owner_name name;
    found bigint;
BEGIN
    SELECT pg_catalog.pg_get_userbyid(n.nspowner) INTO owner_name
      FROM pg_catalog.pg_namespace AS n WHERE n.oid OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace;
    IF owner_name OPERATOR(pg_catalog.<>) CURRENT_USER THEN
        RAISE EXCEPTION 'runtime_sandbox: schema @extschema@ already exists and belongs to role %, not to %', owner_name, CURRENT_USER
            USING ERRCODE = '42501',
                  HINT = 'The extension installs into a schema of its own: drop or rename that schema, or install as its owner.';
    END IF;
    SELECT (SELECT pg_catalog.count(*) FROM pg_catalog.pg_class WHERE relnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace)
         OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc WHERE pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace)
         OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM pg_catalog.pg_type WHERE typnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace)
      INTO found;
    IF found OPERATOR(pg_catalog.>) 0 THEN
        RAISE EXCEPTION 'runtime_sandbox: schema @extschema@ already holds % objects', found
            USING ERRCODE = '55000',
                  HINT = 'The extension installs into a schema of its own: drop or rename that schema first.';
    END IF;
END
$bootstrap$;

-- Nothing in it that writes is granted to PUBLIC; the functions that change
-- ledgers run their statements as the ledger's owner (docs/privileges.md, "The trust model").
REVOKE ALL ON SCHEMA @extschema@ FROM PUBLIC;
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;
