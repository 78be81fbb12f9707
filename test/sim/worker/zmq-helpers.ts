// Test helpers for ZeroMQ: a subscriber that waits out the slow-joiner window, and a replay client.
import * as zmq from 'zeromq';

/** Receives one message or fails after `ms` (generous: the machine is shared). */
export async function receiveWithin(socket: zmq.Subscriber | zmq.Dealer, ms = 10_000): Promise<Buffer[]> {
  // The socket's own receive timeout: a raced receive() would stay pending and block the next.
  socket.receiveTimeout = ms;
  try {
    return await socket.receive();
  } catch (err) {
    throw new Error(`no ZeroMQ message within ${ms} ms (${(err as Error).message})`);
  }
}

/**
 * Connects a subscriber and returns once it provably receives: `probe` publishes something until
 * the first message arrives (PUB drops everything sent before the subscription propagates).
 * Returns the frames of the messages consumed while probing.
 */
export async function connectSubscriber(endpoint: string, topic: string, probe: () => void): Promise<{ sub: zmq.Subscriber; probed: Buffer[][] }> {
  const sub = new zmq.Subscriber({ linger: 0 });
  sub.connect(endpoint);
  sub.subscribe(topic);
  const probed: Buffer[][] = [];
  const deadline = Date.now() + 10_000;
  for (;;) {
    probe();
    try {
      probed.push(await receiveWithin(sub, 100));
      return { sub, probed };
    } catch (err) {
      if (Date.now() > deadline) {
        sub.close();
        throw err;
      }
    }
  }
}

/** Sends a replay request from a DEALER and collects replies up to and including the end marker. */
export async function replayFrom(endpoint: string, startSeq: number): Promise<Buffer[][]> {
  const dealer = new zmq.Dealer({ linger: 0 });
  dealer.connect(endpoint);
  try {
    const seq = Buffer.alloc(8);
    seq.writeBigUInt64BE(BigInt(startSeq));
    await dealer.send(['', seq]);
    const replies: Buffer[][] = [];
    for (;;) {
      const msg = await receiveWithin(dealer);
      replies.push(msg);
      if (msg[msg.length - 2]?.equals(Buffer.from('ffffffffffffffff', 'hex'))) return replies;
    }
  } finally {
    dealer.close();
  }
}

export const seqOf = (frame: Buffer): number => Number(frame.readBigUInt64BE(0));
