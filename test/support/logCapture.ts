// A logger whose JSON lines the test reads back as objects.

import { Writable } from 'node:stream';
import type pino from 'pino';
import { createLogger } from '../../src/util/log.js';

export function captureLogger(level: pino.LevelWithSilent = 'debug'): {
  logger: pino.Logger;
  lines: Record<string, unknown>[];
} {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      callback();
    },
  });
  return { logger: createLogger({ level, destination }), lines };
}
