// Shared by the floors: spawn the MSP host, read its NDJSON lines, do the handshake.
import { spawn } from 'node:child_process';

/** Spawns the host command and calls onFrame(line, parsed) for each NDJSON line it writes. */
export function spawnHost(onFrame) {
  const host = spawn('/bin/sh', ['-c', process.env.HOST_COMMAND], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buf = '';
  host.stdout.setEncoding('utf8');
  host.stdout.on('data', (chunk) => {
    buf += chunk;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line) onFrame(line, JSON.parse(line));
      nl = buf.indexOf('\n');
    }
  });
  const write = (msg) => host.stdin.write(`${JSON.stringify(msg)}\n`);
  write({
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: { clientInfo: { name: 'floor', version: '0' }, capabilities: {} },
  });
  process.on('SIGTERM', () => {
    host.stdin.end();
    process.exit(0);
  });
  return { host, write };
}

/** Answers the handshake; `onReady` runs once it is done. */
export function handshakeDone(msg, write, onReady = announceReady) {
  if (msg.id !== 'init') return false;
  write({ jsonrpc: '2.0', method: 'initialized' });
  onReady();
  return true;
}

/** Tells the bench the floor is ready to be measured. */
export function announceReady() {
  process.stdout.write('ready\n');
}

/** Runs tasks one at a time per key, in order: the bot's per-channel ordering, kept by the floor too. */
export function keyedQueue() {
  const tails = new Map();
  return (key, task) => {
    const next = (tails.get(key) ?? Promise.resolve()).then(task);
    const tail = next.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return next;
  };
}
