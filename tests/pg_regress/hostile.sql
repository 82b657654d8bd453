-- Look-alike objects a hostile user can put in `public` (scripts/regress.sh runs the whole pg_regress suite
-- in a database prepared with this file and expects the same output). The victim keeps PostgreSQL's
-- default search_path ("$user", public), where pg_catalog is searched first, so what can win a lookup is:
-- - a function, aggregate or operator whose argument types match a call better than pg_catalog's (an
--   exact match beats one that needs a cast or takes "any", anyarray, anynonarray or VARIADIC);
-- - a table or type under a name the code leaves unqualified (a ledger or app table, the extension's types).
-- Every one of them fails loudly when used. The extension pins search_path = pg_catalog, pg_temp in its
-- functions and qualifies every name in its procedure, so none may be reached.
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'rs_mallory') THEN
        CREATE ROLE rs_mallory NOLOGIN;
    END IF;
END $$;
GRANT CREATE ON SCHEMA public TO rs_mallory;   -- public as it was before PostgreSQL 15
SET ROLE rs_mallory;

CREATE FUNCTION public.hijacked(what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'hijacked by %', what USING ERRCODE = 'P0001';
END $$;

-- Functions the extension's SQL calls, with argument types that match some call better than pg_catalog's.
CREATE FUNCTION public.quote_ident(name) RETURNS text LANGUAGE sql AS $$ SELECT public.hijacked('quote_ident(name)')::text $$;
CREATE FUNCTION public.format(text, name) RETURNS text LANGUAGE sql AS $$ SELECT public.hijacked('format(text, name)')::text $$;
CREATE FUNCTION public.format(text, text) RETURNS text LANGUAGE sql AS $$ SELECT public.hijacked('format(text, text)')::text $$;
CREATE FUNCTION public.hashtext(name) RETURNS integer LANGUAGE sql AS $$ SELECT public.hijacked('hashtext(name)')::text::integer $$;
CREATE FUNCTION public.unnest(text[]) RETURNS SETOF text LANGUAGE sql AS $$ SELECT public.hijacked('unnest(text[])')::text $$;
CREATE FUNCTION public.unnest(uuid[]) RETURNS SETOF uuid LANGUAGE sql AS $$ SELECT public.hijacked('unnest(uuid[])')::text::uuid $$;
CREATE FUNCTION public.cardinality(text[]) RETURNS integer LANGUAGE sql AS $$ SELECT public.hijacked('cardinality(text[])')::text::integer $$;
CREATE FUNCTION public.array_to_string(text[], text) RETURNS text LANGUAGE sql AS $$ SELECT public.hijacked('array_to_string(text[], text)')::text $$;
CREATE FUNCTION public.jsonb_build_object(text, text) RETURNS jsonb LANGUAGE sql AS $$ SELECT public.hijacked('jsonb_build_object(text, text)')::text::jsonb $$;
CREATE FUNCTION public.jsonb_build_array(text) RETURNS jsonb LANGUAGE sql AS $$ SELECT public.hijacked('jsonb_build_array(text)')::text::jsonb $$;
CREATE FUNCTION public.jsonb_array_elements(json) RETURNS SETOF jsonb LANGUAGE sql AS $$ SELECT public.hijacked('jsonb_array_elements(json)')::text::jsonb $$;
CREATE FUNCTION public.to_regclass(name) RETURNS regclass LANGUAGE sql AS $$ SELECT public.hijacked('to_regclass(name)')::text::regclass $$;
CREATE FUNCTION public.pg_try_advisory_xact_lock(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT public.hijacked('pg_try_advisory_xact_lock(bigint, bigint)')::text::boolean $$;
CREATE FUNCTION public.stock_hash(jsonb) RETURNS text LANGUAGE sql AS $$ SELECT public.hijacked('stock_hash(jsonb)')::text $$;
CREATE FUNCTION public.managed_resource_status(text, text, text, text) RETURNS text LANGUAGE sql AS $$ SELECT public.hijacked('managed_resource_status')::text $$;
CREATE FUNCTION public.advance_sandbox_operation_backfill(boolean, integer, integer, name) RETURNS void LANGUAGE sql AS $$ SELECT public.hijacked('advance_sandbox_operation_backfill') $$;
CREATE FUNCTION public.backfill_run_lock_key(integer, integer, interval, name) RETURNS bigint LANGUAGE sql AS $$ SELECT public.hijacked('backfill_run_lock_key')::text::bigint $$;
CREATE FUNCTION public._backfill_run_lock_key(integer, integer, interval, name) RETURNS bigint LANGUAGE sql AS $$ SELECT public.hijacked('_backfill_run_lock_key')::text::bigint $$;
CREATE FUNCTION public._backfill_run_lock(bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT public.hijacked('_backfill_run_lock')::text::boolean $$;
CREATE FUNCTION public._backfill_run_unlock(bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT public.hijacked('_backfill_run_unlock')::text::boolean $$;
-- ... those the reconciliation's reads that follow the fleet call (pg_catalog's pg_relation_size takes
-- regclass and is called with an oid; unnest takes anyarray and is called with integer[]), and the names of
-- the snapshot functions (the pg_cron job's command calls one).
CREATE FUNCTION public.pg_relation_size(oid) RETURNS bigint LANGUAGE sql AS $$ SELECT public.hijacked('pg_relation_size(oid)')::text::bigint $$;
CREATE FUNCTION public.unnest(integer[]) RETURNS SETOF integer LANGUAGE sql AS $$ SELECT public.hijacked('unnest(integer[])')::text::integer $$;
CREATE FUNCTION public.record_inventory_snapshot(text, jsonb, timestamptz) RETURNS bigint LANGUAGE sql AS $$ SELECT public.hijacked('record_inventory_snapshot')::text::bigint $$;
CREATE FUNCTION public.reconcile_daytona_latest() RETURNS void LANGUAGE sql AS $$ SELECT public.hijacked('reconcile_daytona_latest') $$;

-- Aggregates: pg_catalog's take "any" or anynonarray; these match text exactly.
CREATE FUNCTION public.hijacked_count(bigint, text) RETURNS bigint LANGUAGE sql AS $$ SELECT public.hijacked('count(text)')::text::bigint $$;
CREATE AGGREGATE public.count(text) (SFUNC = public.hijacked_count, STYPE = bigint);
CREATE FUNCTION public.hijacked_array_agg(text[], text) RETURNS text[] LANGUAGE sql AS $$ SELECT public.hijacked('array_agg(text)')::text::text[] $$;
CREATE AGGREGATE public.array_agg(text) (SFUNC = public.hijacked_array_agg, STYPE = text[]);
CREATE FUNCTION public.hijacked_array_agg(integer[], integer) RETURNS integer[] LANGUAGE sql AS $$ SELECT public.hijacked('array_agg(integer)')::text::integer[] $$;
CREATE AGGREGATE public.array_agg(integer) (SFUNC = public.hijacked_array_agg, STYPE = integer[]);
CREATE FUNCTION public.hijacked_array_agg(boolean[], boolean) RETURNS boolean[] LANGUAGE sql AS $$ SELECT public.hijacked('array_agg(boolean)')::text::boolean[] $$;
CREATE AGGREGATE public.array_agg(boolean) (SFUNC = public.hijacked_array_agg, STYPE = boolean[]);
CREATE FUNCTION public.hijacked_jsonb_agg(jsonb, jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT public.hijacked('jsonb_agg(jsonb)')::text::jsonb $$;
CREATE AGGREGATE public.jsonb_agg(jsonb) (SFUNC = public.hijacked_jsonb_agg, STYPE = jsonb);

-- Operators: `'prefix:' || some_name` would pick the first (an exact match beats text || text), a jsonb
-- field read with a varchar key the second.
CREATE FUNCTION public.hijacked_cat(text, name) RETURNS text LANGUAGE sql AS $$ SELECT public.hijacked('||(text, name)')::text $$;
CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = name, FUNCTION = public.hijacked_cat);
CREATE FUNCTION public.hijacked_arrow(jsonb, varchar) RETURNS text LANGUAGE sql AS $$ SELECT public.hijacked('->>(jsonb, varchar)')::text $$;
CREATE OPERATOR public.->> (LEFTARG = jsonb, RIGHTARG = varchar, FUNCTION = public.hijacked_arrow);

-- Tables named like the ledger's (the ledgers live in runtime_scheduler and tour_ledger), with nothing a
-- query of the real ones could read or write.
CREATE TABLE public.runs (hijacked integer);
CREATE TABLE public.attempts (hijacked integer);
CREATE TABLE public.runtime_sandbox_operations (hijacked integer);
CREATE TABLE public.runtime_sandbox_capacity_leases (hijacked integer);
CREATE TABLE public.sandbox_cleanup_jobs_v2 (hijacked integer);
CREATE TABLE public.sandbox_cleanup_events_v2 (hijacked integer);
CREATE TABLE public.control (hijacked integer);
CREATE TABLE public.reconciliation_runs (hijacked integer);
CREATE TABLE public.provider_inventory_snapshots (hijacked integer);
CREATE TABLE public.provider_inventory_items (hijacked integer);
CREATE TABLE public.reconciliation_health (hijacked integer);
-- Types named like the extension's and the ledger's.
CREATE TYPE public.managed_stock_status AS ENUM ('hijacked');
CREATE TYPE public.runtime_sandbox_operation_state AS ENUM ('hijacked');
CREATE TYPE public.backfill_cursor AS (hijacked integer);
CREATE TYPE public.backfill_progress AS (hijacked integer);
CREATE DOMAIN public.timestamptz AS integer CHECK (VALUE IS NULL);
RESET ROLE;
