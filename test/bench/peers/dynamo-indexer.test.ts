// The client of the Dynamo peer's line protocol, against a stand-in peer (a script speaking the
// protocol), so the harness's error paths are tested without building the crate.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DynamoIndexer } from '../../../bench/peers/dynamo-indexer.js';

const dir = mkdtempSync(join(tmpdir(), 'kvroute-fake-peer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fakePeer(name: string, body: string): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    `#!${process.execPath}
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
const file = process.argv[2];
${body}
`,
  );
  chmodSync(file, 0o755);
  return file;
}

const READY = `out({ type: 'ready', crate: 'fake 0', event_threads: 4, block_size: 16, stored: 1, removed: 1, queries: 1, hash_check: { blocks: 2, mismatches: 0 }, clock_overhead_ns: 20, file });`;

describe('the Dynamo peer client', () => {
  it('starts the peer on the workload file, then sends a command per line and reads its reply', async () => {
    const bin = fakePeer(
      'ok.cjs',
      `${READY}
require('node:readline').createInterface({ input: process.stdin }).on('line', (l) => {
  if (l === 'quit') process.exit(0);
  if (l.startsWith('latency')) { const [, n, r] = l.split(' '); out({ type: 'latency', radix_ns: Array(+n).fill(+r), pool_ns: [] }); }
  else out({ type: 'error', error: 'unknown command ' + l });
});`,
    );
    const { peer, ready } = await DynamoIndexer.start(bin, '/tmp/workload.bin');
    expect(ready).toMatchObject({ crate: 'fake 0', file: '/tmp/workload.bin' });
    expect(await peer.latency(3, 7)).toEqual({ type: 'latency', radix_ns: [7, 7, 7], pool_ns: [] });
    await expect(peer.build()).rejects.toThrow('the Dynamo peer refused a command: unknown command build');
    await peer.close();
  });

  it('says so when the peer answers with the wrong reply', async () => {
    const bin = fakePeer('wrong.cjs', `${READY}\nprocess.stdin.on('data', () => out({ type: 'scores', radix: [], pool: [] }));`);
    const { peer } = await DynamoIndexer.start(bin, 'w');
    await expect(peer.remove()).rejects.toThrow('the Dynamo peer answered scores, expected removed');
    await peer.close();
  });

  it('reports a peer that exits, with what it wrote on stderr', async () => {
    const bin = fakePeer('dies.cjs', `process.stderr.write('w: bad workload file: truncated at byte 8\\n'); process.exit(2);`);
    await expect(DynamoIndexer.start(bin, 'w')).rejects.toThrow(/ended \(exit code 2\) before answering: w: bad workload file: truncated at byte 8/);
  });

  it('reports a peer binary that does not exist', async () => {
    await expect(DynamoIndexer.start(join(dir, 'missing'), 'w')).rejects.toThrow(/cannot start the Dynamo peer .*missing/);
  });
});
