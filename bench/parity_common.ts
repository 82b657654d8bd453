// Shared by bench/<capability>/parity.ts (copied beside it by bench/parity.sh): the command line, a seeded
// random source (the same seed gives the same scenarios), a fresh database with the extension, and the twin
// ledger schemas `a` (the seed's code runs there) and `b` (the extension's).
import { Client } from 'pg';

export const port = Number(process.argv[2] ?? 28815);
export const rounds = Number(process.argv[3] ?? 200);
let rng = Number(process.argv[4] ?? 1);
export const rand = () => { rng |= 0; rng = (rng + 0x6d2b79f5) | 0; let t = Math.imul(rng ^ (rng >>> 15), 1 | rng); t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t; return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
export const pick = <T,>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
export const chance = (p: number) => rand() < p;

/** A new database `name` with the extension installed, connected. */
export async function freshDatabase(name: string): Promise<Client> {
  const admin = new Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const c = new Client({ host: '127.0.0.1', port, user: 'postgres', database: name });
  await c.connect();
  await c.query('SET client_min_messages = warning');
  await c.query('CREATE EXTENSION runtime_sandbox');
  return c;
}

/** Ledger schemas `a` and `b`, fresh, each filled by `sql` (`@s` stands for the schema). */
export async function twinLedgers(c: Client, sql: string[]) {
  for (const s of ['a', 'b']) {
    await c.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
    await c.query(`SELECT runtime_sandbox.install_ledger('${s}')`);
    for (const stmt of sql) await c.query(stmt.replaceAll('@s', s));
  }
}
