// The control connection of the test hosts (fake-host.mjs, replay-host.mjs): NDJSON both ways
// with the test's FakeHost (fakeHost.ts) on FAKE_HOST_CONTROL. Commands come in one a line; the
// host reports frames, acks and schema violations back.

import net from 'node:net';

/**
 * Connects to the control server on `port` (none when 0) and hands each command line to
 * `onLine`. `report` sends one message back, or does nothing once the test went away: the host
 * keeps serving the bot. `end` flushes what was reported, then calls back (at once without a
 * connection), so a host that exits loses no report.
 * @param {number} port
 * @param {(line: string) => void} onLine
 * @returns {{report: (msg: unknown) => void, end: (then: () => void) => void}}
 */
export function connectControl(port, onLine) {
  /** @type {net.Socket | null} */
  let control = null;
  if (port) {
    control = net.connect({ host: '127.0.0.1', port });
    control.setNoDelay(true);
    control.on('error', () => {
      control = null;
    });
    let buf = '';
    control.on('data', (chunk) => {
      buf += chunk.toString('utf8');
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) onLine(line);
        nl = buf.indexOf('\n');
      }
    });
  }
  return {
    report(msg) {
      if (!control || control.destroyed) return;
      try {
        control.write(`${JSON.stringify(msg)}\n`);
      } catch {
        // the test went away; keep serving the bot
      }
    },
    end(then) {
      if (control && !control.destroyed) control.end(then);
      else then();
    },
  };
}
