// The upstream project's recorded MSP exchanges, kept in the repository (see
// test/fixtures/msp-transcripts/SOURCE.md for where each file comes from).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const TRANSCRIPTS_DIR = fileURLToPath(new URL('../fixtures/msp-transcripts/', import.meta.url));

export interface TranscriptLine {
  dir: 'client' | 'server';
  raw: string;
}

/** The lines of `<name>/transcript.ndjson`, in wire order. */
export function transcriptLines(name: string): TranscriptLine[] {
  return readFileSync(join(TRANSCRIPTS_DIR, name, 'transcript.ndjson'), 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as TranscriptLine);
}
