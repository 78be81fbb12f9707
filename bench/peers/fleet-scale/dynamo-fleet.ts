// The Dynamo peer in its fleet-scale mode (`kvroute-dynamo-indexer --fleet <timeline>`,
// bench/peers/dynamo-indexer/src/fleet.rs): one replay of the timeline per command.
import { LinePeer } from '../line-peer.js';

export interface DynamoReplayed {
  type: 'replayed';
  window_ms: number;
  ops: number;
  offered_ops_per_s: number;
  achieved_ops_per_s: number;
  cpu_s: number;
  ops_per_cpu_s: number;
  find_p50_ns: number;
  find_p99_ns: number;
  behind_ms: number;
  rejected: number;
  blocks_at_end: number;
}

export class DynamoFleet {
  private constructor(private readonly peer: LinePeer) {}

  static async start(binary: string, timelineFile: string): Promise<DynamoFleet> {
    const line = await LinePeer.start('the Dynamo fleet peer', binary, ['--fleet', timelineFile]);
    await line.next<{ type: 'ready' }>('ready');
    return new DynamoFleet(line);
  }

  replay = (windowMs: number) => this.peer.command<DynamoReplayed>(`replay ${windowMs}`, 'replayed');
  close = () => this.peer.close(30_000);
}
