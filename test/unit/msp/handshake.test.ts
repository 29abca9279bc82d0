import { readFileSync } from 'node:fs';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { JsonRpcConnection } from '../../../src/msp/connection.js';
import { performHandshake } from '../../../src/msp/handshake.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { transcriptLines } from '../../support/transcripts.js';

type Json = Record<string, unknown>;

const NOT_WRITTEN_AGAINST = 'host speaks an MSP schema this client was not written against';

/** The `initialize` result a recorded transcript's host answered with. */
function initializeResult(scenario: string): Json {
  for (const line of transcriptLines(scenario)) {
    if (line.dir !== 'server') continue;
    const frame = JSON.parse(line.raw) as { result?: Json };
    if (frame.result?.schema !== undefined) return frame.result;
  }
  throw new Error(`${scenario} has no initialize result`);
}

/** The fingerprint of the stable bundle upstream ships (test/fixtures/msp-schema/SOURCE.md). */
const STABLE_FINGERPRINT = (
  JSON.parse(
    readFileSync(new URL('../../fixtures/msp-schema/stable-manifest.json', import.meta.url), 'utf8'),
  ) as { fingerprint: string }
).fingerprint;

/** Handshakes with a host that answers `result`; returns the lines logged, as written. */
async function handshakeLines(result: Json): Promise<string[]> {
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
  const connection = {
    request: async () => result,
    notify: () => undefined,
  } as unknown as JsonRpcConnection;
  await performHandshake(connection, { clientVersion: '1.2.3', logger });
  return lines;
}

/** Handshakes with a host that answers `result`; returns the warnings logged. */
async function handshakeWarnings(result: Json): Promise<Json[]> {
  const lines = (await handshakeLines(result)).map((line) => JSON.parse(line) as Json);
  return lines.filter((line) => (line.level as number) >= 40);
}

describe('performHandshake: the schema fingerprint', () => {
  it.each(['approval-round-trip', 'approval-deny-round-trip', 'snapshot-suffix-pending-approval'])(
    'knows the schema of the host recorded in %s',
    async (scenario) => {
      expect(await handshakeWarnings(initializeResult(scenario))).toEqual([]);
    },
  );

  it('knows the schema of a host built from the stable bundle upstream ships', async () => {
    const result = initializeResult('approval-round-trip');
    const schema = { ...(result.schema as Json), fingerprint: STABLE_FINGERPRINT };
    expect(await handshakeWarnings({ ...result, schema })).toEqual([]);
  });

  it('warns, once, about a schema it was not checked against', async () => {
    const result = initializeResult('approval-round-trip');
    const fingerprint = `sha256:${'0'.repeat(64)}`;
    const warnings = await handshakeWarnings({
      ...result,
      schema: { ...(result.schema as Json), fingerprint },
    });
    expect(warnings).toMatchObject([{ msg: NOT_WRITTEN_AGAINST, fingerprint }]);
  });
});

describe('performHandshake: what the host says of itself', () => {
  // Each start of the host logs it, and the host chooses every word of it.
  const HUGE = `${FAKE_SLACK_BOT_TOKEN} ${'x'.repeat(1024 * 1024)}`;

  it('logs the recorded host as it introduced itself', async () => {
    const result = initializeResult('approval-round-trip');
    const done = (await handshakeLines(result))
      .map((line) => JSON.parse(line) as Json)
      .find((line) => line.msg === 'MSP handshake done');
    expect(done).toMatchObject({
      serverInfo: result.serverInfo,
      grantedCapabilities: result.grantedCapabilities,
      fingerprint: (result.schema as Json).fingerprint,
    });
  });

  it('logs a megabyte of name, version, fingerprint and capabilities cut, and masked', async () => {
    const result = initializeResult('approval-round-trip');
    const lines = await handshakeLines({
      ...result,
      serverInfo: { name: HUGE, version: HUGE, about: HUGE },
      schema: { ...(result.schema as Json), fingerprint: HUGE },
      sessionDurability: HUGE,
      grantedCapabilities: [HUGE, ...Array.from({ length: 10_000 }, (_, i) => `capability-${i}`)],
    });
    expect(lines.map((line) => JSON.parse(line) as Json).map((line) => line.msg)).toContain(
      'MSP handshake done',
    );
    for (const line of lines) {
      expect(line.length).toBeLessThan(4096);
      expect(line).not.toContain(FAKE_SLACK_BOT_TOKEN);
    }
  });
});
