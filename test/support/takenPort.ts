import net from 'node:net';
import { freePort } from './bot.js';

/**
 * Ports for a server under test where the first one handed out is already taken (a listener that
 * never answers holds it), the rest free: what a port found free looks like when someone else binds
 * it first.
 */
export async function portsTakenFirst(): Promise<{
  port: () => Promise<number>;
  takenPort: number;
  handedOut: () => number;
  close: () => void;
}> {
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()));
  const takenPort = (taken.address() as net.AddressInfo).port;
  let handedOut = 0;
  return {
    port: async () => (handedOut++ === 0 ? takenPort : freePort()),
    takenPort,
    handedOut: () => handedOut,
    close: () => taken.close(),
  };
}
