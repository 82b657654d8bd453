// Differential check: the seed's own TypeScript (reconcileRuntimeDaytonaSandboxLedger) against
// runtime_sandbox.reconcile_daytona on twin schemas holding identical random ledgers; compares the
// summaries, diagnostics (phase, row count) and every ledger row. Run by bench/parity.sh reconcile.
import { Client } from 'pg';
import { chance, freshDatabase, pick, rounds, twinLedgers } from './parity_common';
import { reconcileRuntimeDaytonaSandboxLedger } from './seed';

// PARITY_CALM=1: no stray items, so fewer rounds stop at fail-closed and more reach every later phase.
const calm = process.env.PARITY_CALM === '1';
const q = (v: string | null) => (v === null ? 'NULL' : `'${v}'`);

function scenario() {
  const sql: string[] = [];
  const sandboxes = ['sb0', 'sb1', 'sb2', 'sb3', 'sb4', 'sb5'];
  const domains: (string | null)[] = [null, null, 'eu', ''];
  const used = new Set<string>();
  const ops: any[] = [];
  const runs = new Set<string>();
  for (let i = 0; i < 8; i++) {
    const state = pick(['reserved', 'reserved', 'live', 'live', 'live', 'deleting', 'deleted']);
    let sandbox: string | null = state === 'reserved' && chance(0.8) ? null : pick(sandboxes);
    const rd = sandbox === null ? null : pick(domains);
    const provider = chance(0.9) ? 'daytona' : 'modal';
    if (sandbox !== null) {
      const key = `${provider}|${sandbox}|${rd ?? ''}`;
      if (used.has(key)) sandbox = null; else used.add(key);
    }
    const op = {
      key: `op${i}`, provider, run: pick(['r0', 'r1', 'r2', 'r3']), attempt: pick([1, 2]),
      env: chance(0.9) ? 'production' : 'staging', sandbox, rd: sandbox === null ? null : rd, state,
      token: chance(0.85) ? pick(['t0', 't1', 't2', 't3', 't4', 't5', 't6']) : null,
      created: pick(["now() - interval '2 hours'", "now() - interval '1 hour'", "now() - interval '5 minutes'", 'NULL', "now() - interval '3 hours'"]),
    };
    ops.push(op); runs.add(op.run);
    sql.push(`INSERT INTO @s.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state, provider_operation_token, provider_created_at)
      VALUES ('${op.key}', '${op.provider}', '${op.run}', ${op.attempt}, 'org', '${op.env}', ${q(op.sandbox)}, ${q(op.rd)}, '${op.state}', ${q(op.token)}, ${op.created})`);
  }
  const leaseIds = new Set<string>();
  for (const op of ops) {
    if (!chance(0.6)) continue;
    const bound = op.sandbox !== null && chance(0.8);
    leaseIds.add(op.key);
    sql.push(`INSERT INTO @s.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, released_at)
      VALUES ('${op.key}', 'org', '${chance(0.85) ? op.run : 'rX'}', ${bound ? "'daytona'" : 'NULL'}, ${bound ? q(op.sandbox) : 'NULL'}, ${bound ? q(op.rd) : 'NULL'}, ${chance(0.2) ? 'now()' : 'NULL'})`);
  }
  for (let i = 0; i < 3; i++) {
    if (!chance(0.5)) continue;
    sql.push(`INSERT INTO @s.runtime_sandbox_capacity_leases (lease_id, org_id, run_id, provider, sandbox_id, routing_domain, released_at)
      VALUES ('extra${i}', 'org', '${pick(['r0', 'r1', 'r2'])}', 'daytona', '${pick(sandboxes)}', ${q(pick(domains))}, ${chance(0.3) ? 'now()' : 'NULL'})`);
  }
  const cleanupKeys = new Set<string>();
  for (let i = 0; i < 5; i++) {
    const sandbox = pick(sandboxes); const rd = pick(domains);
    const key = `${sandbox}|${rd ?? ''}`;
    if (cleanupKeys.has(key)) continue; cleanupKeys.add(key);
    const status = pick(['pending', 'pending', 'deleting', 'deleted', 'deleted']);
    sql.push(`INSERT INTO @s.sandbox_cleanup_jobs_v2 (provider, sandbox_id, run_id, attempt, routing_domain, status, lease_owner, deleted_at)
      VALUES ('daytona', '${sandbox}', '${pick(['r0', 'r1', 'r2', 'r3'])}', 1, ${q(rd)}, '${status}', ${chance(0.3) ? "'w1'" : 'NULL'}, ${status === 'deleted' && chance(0.85) ? 'now()' : 'NULL'})`);
  }
  for (const run of runs) sql.push(`INSERT INTO @s.runs (run_id, org_id) VALUES ('${run}', 'org')`);
  const attempts = new Set(ops.map((o) => `${o.run}|${o.attempt}`));
  for (const a of attempts) {
    if (!chance(0.9)) continue;
    const [run, attempt] = a.split('|');
    const json = pick(['NULL', `'[]'`, `'[{"kind":"x"}]'`, `'{"kind":"y"}'`, `'null'`]);
    sql.push(`INSERT INTO @s.attempts (run_id, attempt, resource_json) VALUES ('${run}', ${attempt}, ${json})`);
  }
  const inventory: any[] = [];
  for (const op of ops) {
    const owned = op.provider === 'daytona' && op.env === 'production' && (op.state === 'live' || op.state === 'deleting') && op.rd !== '';
    if (op.sandbox !== null && !owned && (calm || !chance(0.04))) continue;
    if (!chance(0.7)) continue;
    const pad = (v: string | null) => (v !== null && chance(0.2) ? ` ${v}\t` : v);
    if (op.sandbox === null) {
      if (op.token && (leaseIds.has(op.key) || (!calm && chance(0.05)))) inventory.push({ sandboxId: `new-${op.key}`, operationKey: op.token, routingDomain: chance(0.5) ? 'eu' : null });
    } else {
      inventory.push({ sandboxId: pad(op.sandbox), operationKey: chance(0.7) ? op.token : null, routingDomain: op.rd === '' ? (chance(0.5) ? '' : null) : pad(op.rd) });
      if (chance(0.15)) inventory.push({ sandboxId: op.sandbox, operationKey: 'other', routingDomain: op.rd });
    }
  }
  if (!calm && chance(0.03)) inventory.push({ sandboxId: 'unknown', operationKey: null, routingDomain: null });
  if (chance(0.2) && inventory.length) inventory.push({ ...inventory[0] });
  return { sql, inventory };
}

const TABLES: Record<string, string> = {
  operations: `SELECT operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state::text, provider_operation_token, provider_created_at IS NULL AS c0, delete_confirmed_at IS NULL AS c1, updated_at <> created_at AS touched FROM @s.runtime_sandbox_operations ORDER BY 1`,
  attempts: `SELECT run_id, attempt, CASE WHEN jsonb_typeof(resource_json) = 'array' THEN (SELECT jsonb_agg(CASE WHEN jsonb_typeof(e) = 'object' THEN e - 'billingStartedAt' ELSE e END) FROM jsonb_array_elements(resource_json) e) ELSE resource_json END AS r, updated_at <> created_at AS touched FROM @s.attempts ORDER BY 1, 2`,
  cleanup: `SELECT id, provider, sandbox_id, run_id, attempt, environment, routing_domain, status, lease_owner, lease_expires_at IS NULL AS l, deleted_at IS NULL AS d, last_error, updated_at <> created_at AS touched FROM @s.sandbox_cleanup_jobs_v2 ORDER BY id`,
  events: `SELECT id, provider, sandbox_id, routing_domain, run_id, attempt, cleanup_attempt, lease_owner, event_type, details_json FROM @s.sandbox_cleanup_events_v2 ORDER BY id`,
  leases: `SELECT lease_id, org_id, run_id, provider, sandbox_id, routing_domain, expires_at IS NULL AS e, released_at IS NULL AS r FROM @s.runtime_sandbox_capacity_leases ORDER BY 1`,
};

async function snapshot(c: Client, s: string) {
  const out: Record<string, unknown> = {};
  for (const [name, sql] of Object.entries(TABLES)) out[name] = (await c.query(sql.replaceAll('@s', s))).rows;
  return out;
}

const snake = (k: string) => k.replace(/[A-Z]/g, (m) => '_' + m.toLowerCase());

async function main() {
  const c = await freshDatabase('rc_parity');
  const cats = new Map<string, number>();
  let same = 0, differ = 0, bothErr = 0, blocked = 0, valve = 0;
  for (let round = 0; round < rounds; round++) {
    const { sql, inventory } = scenario();
    await twinLedgers(c, sql);
    const dryRun = chance(0.3);
    const batchSize = pick([1, 2, 500]);
    const minimumAgeMs = pick([0, 600000]);
    const capturedAt = Date.now();
    let seedOut: any, extOut: any, seedErr: any, extErr: any;
    try {
      seedOut = await reconcileRuntimeDaytonaSandboxLedger(c as any, { providerSandboxes: inventory, inventoryCapturedAtMs: capturedAt, dryRun, batchSize, minimumAgeMs }, { schema: 'a' });
    } catch (e) { seedErr = e; }
    try {
      // The application has no mass-absence valve: compared with it open
      // (PARITY_MAX_ABSENT_RATIO=0.5 shows what the default would block).
      extOut = (await c.query(`SELECT to_jsonb(r) AS j FROM runtime_sandbox.reconcile_daytona($1::jsonb, to_timestamp($2::double precision / 1000.0), $3::boolean, $4::integer, make_interval(secs => $5::double precision / 1000.0), 'b'::name, $6::real) r`,
        [JSON.stringify(inventory), capturedAt, dryRun, batchSize, minimumAgeMs, Number(process.env.PARITY_MAX_ABSENT_RATIO ?? 1)])).rows[0].j;
    } catch (e) { extErr = e; }
    const problems: string[] = [];
    if (seedErr || extErr) {
      if (!(seedErr && extErr)) problems.push(`error mismatch: seed=${seedErr?.message} ext=${extErr?.message}`);
      else bothErr++;
    } else {
      if (extOut.status === 'blocked_mass_absence') valve++;
      for (const [k, v] of Object.entries(seedOut)) {
        if (k === 'diagnostics') continue;
        if (JSON.stringify(v) !== JSON.stringify(extOut[snake(k)])) problems.push(`${k}: seed=${JSON.stringify(v)} ext=${JSON.stringify(extOut[snake(k)])}`);
      }
      // inspect_capacity_bindings counts only the sandboxes whose history decides (docs/reconcile.md): its
      // phase rows are compared, their counts are not.
      const count = (phase: string, n: number) => (phase === 'inspect_capacity_bindings' ? null : n);
      const sd = JSON.stringify(seedOut.diagnostics.map((d: any) => [d.phase, count(d.phase, d.rowCount)]));
      const ed = JSON.stringify(extOut.diagnostics.map((d: any) => [d.phase, count(d.phase, d.row_count)]));
      if (sd !== ed) problems.push(`diagnostics: seed=${sd} ext=${ed}`);
      if (extOut.status === 'blocked_unowned_sandboxes') blocked++;
      if (!seedErr) {
        const a = await snapshot(c, 'a'), b = await snapshot(c, 'b');
        for (const t of Object.keys(TABLES)) if (JSON.stringify(a[t]) !== JSON.stringify(b[t])) problems.push(`table ${t}:\n  seed=${JSON.stringify(a[t])}\n  ext =${JSON.stringify(b[t])}`);
      }
    }
    if (problems.length) {
      for (const p of problems) { const cat = p.startsWith('error mismatch') ? p.slice(0, 80) : p.split(/[:\n]/)[0]; cats.set(cat, (cats.get(cat) ?? 0) + 1); }
      differ++;
      if (differ <= Number(process.env.SHOW ?? 0)) {
        console.log(`--- round ${round} dry=${dryRun} batch=${batchSize} minAge=${minimumAgeMs}\ninventory=${JSON.stringify(inventory)}`);
        console.log(sql.join(';\n'));
        for (const p of problems) console.log('  ' + p);
      }
    } else same++;
  }
  console.log(cats);
  console.log(`rounds=${rounds} same=${same} differ=${differ} (both errored ${bothErr}, blocked ${blocked}, blocked by the valve ${valve})`);
  await c.end();
}
main().catch((e) => { console.error(e); process.exit(1); });
