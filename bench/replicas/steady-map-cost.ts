// What a request costs ReplicaSync's table of held bookings, Map against SteadyMap (the churn
// without the GC: see bench/PERFORMANCE.md, "The router after its first full GC"): 64 requests
// held, each request one set, one get (its prefill done) and one delete, keys as sync.ts builds
// them from UUIDs. Rounds alternate between the two; medians of ns per request.
//   npx tsx bench/replicas/steady-map-cost.ts [rounds]
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { SteadyMap } from '../../src/util/steady-map.js';
import { median } from '../lib/stats.js';

interface Table {
  set(k: string, v: object): unknown;
  get(k: string): object | undefined;
  delete(k: string): boolean;
}

const rounds = Number(process.argv[2] ?? 9);
if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`rounds must be a positive integer, got ${process.argv[2]}`);
const REQUESTS = 200_000;
const HELD = 64;
const ids = Array.from({ length: 4096 }, () => randomUUID());

function nsPerRequest(table: Table): number {
  const keyOf = (i: number) => `d:${ids[i % ids.length]}`;
  for (let i = 0; i < HELD; i++) table.set(keyOf(i), { i });
  const start = process.hrtime.bigint();
  for (let i = HELD; i < REQUESTS + HELD; i++) {
    table.set(keyOf(i), { i });
    if (table.get(keyOf(i - HELD / 2)) === undefined) throw new Error('a held booking was lost');
    table.delete(keyOf(i - HELD));
  }
  return Number(process.hrtime.bigint() - start) / REQUESTS;
}

const results: Record<string, number[]> = { Map: [], SteadyMap: [] };
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? (['Map', 'SteadyMap'] as const) : (['SteadyMap', 'Map'] as const);
  for (const name of order) results[name].push(nsPerRequest(name === 'Map' ? new Map<string, object>() : new SteadyMap<object>()));
}
console.log(
  `load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}; ${REQUESTS} requests a round, ${HELD} held, ${rounds} rounds`,
);
for (const [name, ns] of Object.entries(results))
  console.log(
    `${name}: median ${median(ns).toFixed(0)} ns per request (set + get + delete, the key built each time), rounds ${ns.map((x) => x.toFixed(0)).join(' ')}`,
  );
