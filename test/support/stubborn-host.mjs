#!/usr/bin/env node
// A badly behaved MSP host for shutdown tests. Plain Node ESM, no dependencies.
//
// It answers `initialize` and `session/list` (no sessions) like a host with nothing to do, then
// ignores end of input on stdin and SIGTERM, and keeps a child process that ignores SIGTERM too.
// Run it under a shell that cannot exec it (`node stubborn-host.mjs FILE; echo …`), so that the
// shell stays in between. Once the child is running it writes "<shell pid> <own pid> <child pid>"
// to FILE (argv[2]).

import { spawn } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const pidFile = process.argv[2];
if (!pidFile) throw new Error('usage: stubborn-host.mjs PID_FILE');

process.on('SIGTERM', () => process.stderr.write('stubborn host: ignoring SIGTERM\n'));

const child = spawn(
  process.execPath,
  ['-e', "process.on('SIGTERM', () => {}); setInterval(() => {}, 60_000); process.send('up');"],
  { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] },
);
child.once('message', () => {
  child.disconnect();
  // Written whole or not at all: the test polls for the file.
  writeFileSync(`${pidFile}.tmp`, `${process.ppid} ${process.pid} ${child.pid}\n`);
  renameSync(`${pidFile}.tmp`, pidFile);
});

const send = (frame) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...frame })}\n`);
createInterface({ input: process.stdin })
  .on('line', (line) => {
    const message = JSON.parse(line);
    if (message.id === undefined || typeof message.method !== 'string') return;
    if (message.method === 'initialize') {
      send({ id: message.id, result: { grantedCapabilities: [], sessionDurability: 'durable' } });
    } else if (message.method === 'session/list') {
      send({ id: message.id, result: { sessions: [], nextCursor: null } });
    } else {
      send({
        id: message.id,
        error: { code: -32601, message: 'no such method', data: { kind: 'methodNotFound' } },
      });
    }
  })
  .on('close', () => process.stderr.write('stubborn host: ignoring end of input\n'));
// The child keeps the event loop alive on its own only while connected; this keeps us alive after.
setInterval(() => {}, 60_000);
