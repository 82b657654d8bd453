// Differential check: the seed's own TypeScript (advanceRuntimeSandboxOperationBackfill) against
// runtime_sandbox.advance_sandbox_operation_backfill on twin schemas holding identical random attempts;
// every call's progress (cursor timestamps to the microsecond), the checkpoint JSON in control and every
// operation row are compared; a call that fails must fail on both sides. Run by bench/parity.sh backfill.
import { chance, freshDatabase, pick, rand, rounds, twinLedgers } from './parity_common';
import { advanceRuntimeSandboxOperationBackfill } from './seed';

/** JSON text with object keys sorted (jsonb orders keys its own way). */
const canon = (v: unknown): string => JSON.stringify(v, (_k, x) =>
  x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x);
const lit = (v: unknown) => `'${JSON.stringify(v).replaceAll("'", "''")}'`;

function field(): unknown {
  return pick<unknown>(['', 'x', 'org-1', 'app-2', null, 7, 1.5e3, { a: 1 }, [1], true, undefined, undefined]);
}

function element(): unknown {
  if (chance(0.08)) return pick<unknown>([1, 'daytona_sandbox', null, [], true]);
  const e: Record<string, unknown> = {};
  const kind = pick<unknown>(['daytona_sandbox', 'daytona_sandbox', 'modal_sandbox', 'modal_sandbox', 'other', 3, undefined]);
  if (kind !== undefined) e.kind = kind;
  const id = pick<unknown>(['sb1', 'sb2', 'sb3', 'sb4', 'sb1', '', 5, null, undefined, ' sb1']);
  if (id !== undefined) e.sandboxId = id;
  for (const k of ['modalAppId', 'daytonaOrganizationId', 'runtimeEnvironment', 'daytonaEnvironment']) {
    const v = field();
    if (v !== undefined && chance(0.5)) e[k] = v;
  }
  return e;
}

function scenario() {
  const sql: string[] = [];
  const runs = ['r1', 'r2', 'r3', 'r4'];
  for (const r of runs) if (chance(0.85)) sql.push(`INSERT INTO @s.runs (run_id, org_id) VALUES ('${r}', 'org-${r}')`);
  const times = ["'2026-01-01 00:00:00+00'", "'2026-01-01 00:00:00.000001+00'", "'2026-01-01 00:00:00.000001+00'", "'2026-01-02 10:00:00.5+00'", "'2025-12-31 23:59:59.999999+00'"];
  const used = new Set<string>();
  for (let i = 0; i < 8; i++) {
    const run = pick(runs), attempt = pick([1, 2, 3]);
    if (used.has(`${run}|${attempt}`)) continue;
    used.add(`${run}|${attempt}`);
    let json: string;
    const shape = rand();
    if (shape < 0.08) json = 'NULL';
    else if (shape < 0.16) json = lit(element());
    else if (shape < 0.2) json = lit(pick<unknown>([null, 3, 'x', []]));
    else json = lit(Array.from({ length: Math.floor(rand() * 4) }, element));
    sql.push(`INSERT INTO @s.attempts (run_id, attempt, resource_json, updated_at) VALUES ('${run}', ${attempt}, ${json}, ${pick(times)})`);
  }
  // Now and then a checkpoint left behind, with odd cursors: texts PostgreSQL reads but Date.parse does not
  // (or the other way round), blank or non-integer fields, wrong JSON types.
  if (chance(0.2)) {
    const updatedAt = pick<unknown>(['2026-01-01 00:00:00.000001+00', '2026-01-01 00:00:00+00', 'infinity', '-infinity', 'epoch',
      'now', 'Jan 1 2026', '2026-01-01T00:00:00Z', '01/01/2026 00:00:00 UTC', '2026-01-01 00:00:00+00 BC', 'J2461042',
      '2026-01-01 00:00:00+05:30:15', '275760-09-13 00:00:00.001+00', '2026-02-30 00:00:00+00', ' ', 'garbage', 7]);
    const cursor = { updatedAt, runId: pick<unknown>(['r1', 'r2', ' ', '']), attempt: pick<unknown>([1, 2, 0, 1.5, '1']),
      resourceOrdinal: pick<unknown>([1, 2, 0]) };
    sql.push(`INSERT INTO @s.control (key, value) VALUES ('runtime_sandbox_operation_backfill_v1', ${lit({ phase: pick(['pending', 'pending', 'complete']), cursor })})`);
  }
  // Operations that already exist (never changed by the backfill).
  for (let i = 0; i < 2; i++) {
    if (!chance(0.4)) continue;
    const provider = pick(['daytona', 'modal']), sandbox = pick(['sb1', 'sb2']), domain = pick(['org-1', 'app-2', null]);
    sql.push(`INSERT INTO @s.runtime_sandbox_operations (operation_key, provider, run_id, attempt, org_id, sandbox_id, routing_domain, state)
      VALUES ('pre-${i}', '${provider}', 'r9', 1, 'org', '${sandbox}', ${domain === null ? 'NULL' : `'${domain}'`}, 'deleting') ON CONFLICT DO NOTHING`);
  }
  return sql;
}

const OPERATIONS = `SELECT operation_key, provider, run_id, attempt, org_id, environment, sandbox_id, routing_domain, state::text, provider_created_at, delete_confirmed_at FROM @s.runtime_sandbox_operations ORDER BY 1`;
const CHECKPOINT = `SELECT value FROM @s.control WHERE key = 'runtime_sandbox_operation_backfill_v1'`;

/** The seed's progress as the extension names it; cursor timestamps as exact text via the server. */
function seedShape(p: any) {
  return {
    phase: p.phase, dry_run: p.dryRun, batches: p.batches, scanned_attempts: p.scannedAttempts,
    inserted_operations: p.insertedOperations, projected_operations: p.projectedOperations,
    targets: p.targets.map((t: any) => ({ run_id: t.runId, attempt: t.attempt, resource_ordinal: t.resourceOrdinal, provider: t.provider, sandbox_id: t.sandboxId, would_insert: t.wouldInsert })),
    next_cursor: p.nextCursor && { updated_at: p.nextCursor.updatedAt, run_id: p.nextCursor.runId, attempt: p.nextCursor.attempt, resource_ordinal: p.nextCursor.resourceOrdinal },
  };
}

async function main() {
  const c = await freshDatabase('bf_parity');
  const cats = new Map<string, number>();
  let same = 0, differ = 0, bothErr = 0, calls = 0;
  for (let round = 0; round < rounds; round++) {
    const sql = scenario();
    await twinLedgers(c, sql);
    const problems: string[] = [];
    const log: string[] = [];
    for (let step = 0; step < 12 && !problems.length; step++) {
      const dryRun = chance(0.3), batchSize = pick([1, 2, 3, 5, 500]), maxBatches = pick([1, 1, 2, 3, 200]);
      log.push(`advance(dry=${dryRun}, batch=${batchSize}, max=${maxBatches})`);
      let seedOut: any, extOut: any, seedErr: any, extErr: any;
      try { seedOut = seedShape(await advanceRuntimeSandboxOperationBackfill(c as any, { dryRun, batchSize, maxBatches }, { schema: 'a' })); } catch (e) { seedErr = e; }
      try {
        extOut = (await c.query(`SELECT to_jsonb(p) AS j, (p.next_cursor).updated_at::text AS t FROM runtime_sandbox.advance_sandbox_operation_backfill($1, $2, $3, 'b') p`, [dryRun, batchSize, maxBatches])).rows[0];
        extOut = { ...extOut.j, next_cursor: extOut.j.next_cursor && { ...extOut.j.next_cursor, updated_at: extOut.t } };
      } catch (e) { extErr = e; }
      calls++;
      if (seedErr || extErr) {
        if (!(seedErr && extErr)) problems.push(`error mismatch: seed=${seedErr?.message} ext=${extErr?.message}`);
        else bothErr++;
        break;
      }
      if (canon(seedOut) !== canon(extOut)) problems.push(`progress:\n  seed=${canon(seedOut)}\n  ext =${canon(extOut)}`);
      for (const [name, q] of [['operations', OPERATIONS], ['checkpoint', CHECKPOINT]]) {
        const a = (await c.query(q.replaceAll('@s', 'a'))).rows, b = (await c.query(q.replaceAll('@s', 'b'))).rows;
        if (canon(a) !== canon(b)) problems.push(`${name}:\n  seed=${canon(a)}\n  ext =${canon(b)}`);
      }
      if (!dryRun && seedOut.phase === 'complete' && chance(0.5)) break;
    }
    if (problems.length) {
      for (const p of problems) { const cat = p.startsWith('error mismatch') ? p.slice(0, 80) : p.split(/[:\n]/)[0]; cats.set(cat, (cats.get(cat) ?? 0) + 1); }
      differ++;
      if (differ <= Number(process.env.SHOW ?? 0)) {
        console.log(`--- round ${round}\n${sql.join(';\n')}\n${log.join('\n')}`);
        for (const p of problems) console.log('  ' + p);
      }
    } else same++;
  }
  console.log(cats);
  console.log(`rounds=${rounds} same=${same} differ=${differ} (advance calls ${calls}, both errored ${bothErr})`);
  await c.end();
}
main().catch((e) => { console.error(e); process.exit(1); });
