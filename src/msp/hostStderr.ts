import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { maskSecrets } from '../secrets/maskSecrets.js';
import { FrameDecoder } from './framing.js';

// Host stderr is diagnostics for people: logged line by line, never parsed (the host's exit
// codes carry the machine-readable part). It may echo what the agent did, secrets included, so
// lines are masked and logged at debug; the tail kept for the death log line is masked too.

const STDERR_MAX_LINE_BYTES = 64 * 1024;
const STDERR_TAIL_LINES = 20;

/** Logs each stderr line and keeps the last few in `tail` for the log line about a death. */
export function pipeHostStderr(stderr: Readable, logger: Logger, tail: string[]): void {
  const decoder = new FrameDecoder({
    maxFrameBytes: STDERR_MAX_LINE_BYTES,
    onOversized: ({ bytes }) => logger.warn({ bytes }, 'host stderr line too long; omitted'),
  });
  const log = (lines: string[]): void => {
    for (const raw of lines) {
      const line = maskSecrets(raw).text;
      tail.push(line);
      if (tail.length > STDERR_TAIL_LINES) tail.shift();
      logger.debug({ stream: 'stderr', line }, 'host stderr');
    }
  };
  stderr.on('data', (chunk: Buffer) => log(decoder.push(chunk)));
  stderr.on('end', () => log(decoder.end()));
  stderr.on('error', (error) => logger.warn({ err: error }, 'host stderr failed'));
}
