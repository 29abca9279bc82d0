import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { HostEvent } from '../../../src/msp/events.js';
import { handleHostRequest } from '../../../src/msp/hostMessages.js';
import type { Incarnation } from '../../../src/msp/incarnation.js';
import { serveRequest } from '../../../src/msp/incomingRequest.js';
import type { Json } from '../../../src/msp/jsonRpc.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { transcriptLines } from '../../support/transcripts.js';

const REQUEST = transcriptLines('approval-round-trip')
  .filter((line) => line.dir === 'server')
  .map((line) => JSON.parse(line.raw) as { id?: number; method?: string; params?: Record<string, unknown> })
  .find((frame) => frame.method === 'approval/request');
if (REQUEST?.params === undefined || REQUEST.id === undefined) {
  throw new Error('approval-round-trip has no approval/request');
}
const PARAMS = REQUEST.params;

/** Serves one host request as the connection does, and returns what went back on the wire. */
function serve(params: unknown, method = 'approval/request') {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const incarnation = { id: 'inc-1', logger, frameWarnings: logger } as unknown as Incarnation;
  const events: HostEvent[] = [];
  const sent: Json[] = [];
  serveRequest(
    7,
    method,
    params,
    (request) => handleHostRequest('host-a', incarnation, request, (event) => events.push(event)),
    { logger, isClosed: () => false, send: (message) => sent.push(message) },
  );
  return { sent, events, lines };
}

describe('handleHostRequest: approval/request', () => {
  it('answers a request it can present with the {} receipt and opens it', () => {
    const { sent, events } = serve(PARAMS);
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 7, result: {} }]);
    expect(events).toMatchObject([{ type: 'approvalOpened', via: 'request' }]);
  });

  it('answers params that do not parse with invalidParams, not a receipt, and skips the frame', () => {
    const { currentRequirementId: _dropped, ...params } = PARAMS;
    const { sent, events, lines } = serve(params);
    // The receipt would tell the host that a surface shows the approval: it is re-issued on the
    // next subscribe only when we answer with an error.
    expect(sent).toEqual([
      {
        jsonrpc: '2.0',
        id: 7,
        error: {
          code: -32602,
          message: expect.stringContaining('approval/request'),
          data: { kind: 'invalidParams', retryable: false },
        },
      },
    ]);
    expect(events).toEqual([]);
    expect(lines.some((line) => line.msg === 'skipping approval frame that does not parse')).toBe(true);
  });
});

describe('handleHostRequest: a method we do not serve', () => {
  const TOKEN = FAKE_SLACK_BOT_TOKEN;
  const METHOD = `${TOKEN} ${'M'.repeat(1_000_000)}`;

  it('logs the method masked and cut, and echoes only its start to the host', () => {
    const { sent, lines } = serve({}, METHOD);
    const refusal = lines.find((line) => line.msg === 'refusing host request we do not serve');
    expect(refusal).toBeDefined();
    for (const line of lines) {
      const raw = JSON.stringify(line);
      expect(raw.length).toBeLessThan(1024);
      expect(raw).not.toContain(TOKEN);
    }
    expect(String(refusal!.method)).toContain('[masked slack-token]');
    const error = (sent[0] as { error: { code: number; message: string } }).error;
    expect(error.code).toBe(-32601);
    expect(error.message.startsWith(`method not found: ${TOKEN} MMM`)).toBe(true);
    expect(error.message.length).toBeLessThan(1024);
  });
});
