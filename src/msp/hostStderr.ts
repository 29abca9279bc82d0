import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { FrameDecoder } from './framing.js';

// Host stderr is diagnostics for people: logged line by line, never parsed (the host's exit
// codes carry the machine-readable part).

const STDERR_MAX_LINE_BYTES = 64 * 1024;
const STDERR_TAIL_LINES = 20;

/** Logs each stderr line and keeps the last few in `tail` for the log line about a death. */
export function pipeHostStderr(stderr: Readable, logger: Logger, tail: string[]): void {
  const decoder = new FrameDecoder({
    maxFrameBytes: STDERR_MAX_LINE_BYTES,
    onOversized: ({ bytes }) => logger.warn({ bytes }, 'host stderr line too long; omitted'),
  });
  const log = (lines: string[]): void => {
    for (const line of lines) {
      tail.push(line);
      if (tail.length > STDERR_TAIL_LINES) tail.shift();
      logger.info({ stream: 'stderr', line }, 'host stderr');
    }
  };
  stderr.on('data', (chunk: Buffer) => log(decoder.push(chunk)));
  stderr.on('end', () => log(decoder.end()));
  stderr.on('error', (error) => logger.warn({ err: error }, 'host stderr failed'));
}
