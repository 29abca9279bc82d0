import { readFileSync } from 'node:fs';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { JsonRpcConnection } from '../../../src/msp/connection.js';
import { performHandshake } from '../../../src/msp/handshake.js';
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

/** Handshakes with a host that answers `result`; returns the warnings logged. */
async function handshakeWarnings(result: Json): Promise<Json[]> {
  const lines: Json[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as Json) });
  const connection = {
    request: async () => result,
    notify: () => undefined,
  } as unknown as JsonRpcConnection;
  await performHandshake(connection, { clientVersion: '1.2.3', logger });
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
