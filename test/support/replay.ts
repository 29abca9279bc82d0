// Replays of the vendor's recorded transcripts (test/fixtures/msp-transcripts/) against the bot:
// builds the scripts replay-host.mjs serves, and starts it behind a FakeHost driver so that the
// test sees every frame the bot sends. docs/development.md says how to add a replay.

import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FakeHost, type RpcFrame } from './fakeHost.js';
import { transcriptLines } from './transcripts.js';

const REPLAY_HOST_SCRIPT = fileURLToPath(new URL('./replay-host.mjs', import.meta.url));

/** One transcript line, with its frame parsed. */
export interface RecordedLine {
  dir: 'client' | 'server';
  raw: string;
  frame: RpcFrame & { result?: Record<string, unknown> & { session?: Record<string, unknown> } };
}

/** Line `n` of a transcript, counted from 1 as the manifests' `source` ranges count. */
export function line(name: string, n: number): RecordedLine {
  const entry = transcriptLines(name)[n - 1];
  if (!entry) throw new Error(`${name} has no line ${n}`);
  return { ...entry, frame: JSON.parse(entry.raw) as RecordedLine['frame'] };
}

/** Every line of a transcript, numbered from 1. */
export function lines(name: string): Array<RecordedLine & { n: number }> {
  return transcriptLines(name).map((_, i) => ({ ...line(name, i + 1), n: i + 1 }));
}

/** A recorded client request and the server lines the host answers it with. */
export interface ReplayStep {
  client: string;
  server: string[];
}

/**
 * The client request on line `n` and the server lines that follow it, up to the next client
 * line (or up to line `last`).
 */
export function exchange(name: string, n: number, last?: number): ReplayStep {
  const all = lines(name);
  const client = all[n - 1];
  if (client?.dir !== 'client' || client.frame.method === undefined) {
    throw new Error(`${name} line ${n} is not a client request`);
  }
  const server: string[] = [];
  for (const l of all.slice(n)) {
    if (l.dir === 'client' || (last !== undefined && l.n > last)) break;
    server.push(l.raw);
  }
  return { client: client.raw, server };
}

/** A line the replay host writes for a request the transcript does not record. */
export type FallbackLine =
  | string
  | { result: Record<string, unknown>; echo?: string[] }
  | { error: { code: number; message: string; data?: Record<string, unknown> } };

/** What one host process serves (see replay-host.mjs). */
export interface ReplayScript {
  /** The recorded server line answering `initialize`. */
  initialize: string;
  steps?: ReplayStep[];
  fallback?: Record<string, FallbackLine[]>;
}

/**
 * Starts the replay host's driver: `scripts[i]` is served by host process i + 1 (the last one
 * by every later process). Pass `env` to the bot (World.start's second argument).
 */
export async function startReplay(
  scripts: ReplayScript[],
): Promise<{ host: FakeHost; env: Record<string, string> }> {
  const host = await FakeHost.start({}, { script: REPLAY_HOST_SCRIPT });
  // Next to the host's state file, so that host.close() removes it too.
  const path = join(dirname(host.statePath), 'replay-script.json');
  writeFileSync(path, JSON.stringify(scripts));
  return { host, env: { FAKE_HOST_REPLAY: path } };
}

/** Replaces the replay host's fallback answer to `method` (for the host process running now). */
export async function answer(host: FakeHost, method: string, fallback: FallbackLine[]): Promise<void> {
  await host.control('answer', { method, lines: fallback });
}
