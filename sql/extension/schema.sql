-- The extension's objects live in the fixed schema named in the control file
-- (runtime_sandbox). Nothing in it that writes is granted to PUBLIC: the
-- functions that change ledgers run with the caller's own privileges.
REVOKE ALL ON SCHEMA @extschema@ FROM PUBLIC;
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;
