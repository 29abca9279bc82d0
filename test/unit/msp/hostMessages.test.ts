import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { HostEvent } from '../../../src/msp/events.js';
import { handleHostNotification, handleHostRequest } from '../../../src/msp/hostMessages.js';
import type { Incarnation } from '../../../src/msp/incarnation.js';
import { serveRequest } from '../../../src/msp/incomingRequest.js';
import type { Json } from '../../../src/msp/jsonRpc.js';
import { parsePendingListing } from '../../../src/msp/sessionListing.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { transcriptLines } from '../../support/transcripts.js';

const FRAMES = transcriptLines('approval-round-trip')
  .filter((line) => line.dir === 'server')
  .map((line) => JSON.parse(line.raw) as { id?: number; method?: string; params?: Record<string, unknown> });
const REQUEST = FRAMES.find((frame) => frame.method === 'approval/request');
if (REQUEST?.params === undefined || REQUEST.id === undefined) {
  throw new Error('approval-round-trip has no approval/request');
}
const PARAMS = REQUEST.params;

type Line = Record<string, unknown>;

/** An incarnation whose log lines, frame warnings included, are kept in `lines`. */
function loggingIncarnation() {
  const lines: Line[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const incarnation = { id: 'inc-1', logger, frameWarnings: logger } as unknown as Incarnation;
  return { incarnation, lines, logger };
}

/** Serves one host request as the connection does, and returns what went back on the wire. */
function serve(params: unknown, method = 'approval/request') {
  const { incarnation, lines, logger } = loggingIncarnation();
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

// Fields the bot reads that the vendored schema does not define (`reason`, `reviewerReason`,
// `cuaCardFacts`: shapes guessed from prose docs) or marks optional (`subagentOrigin`), each in a
// shape the bot does not expect. The card can be shown without any of them, so the approval is
// relayed without the field; refusing the whole frame would leave the agent waiting with no card.
const MARK = 'agent-text-never-logged';
const MALFORMED: Array<[string, unknown]> = [
  ['reason', { text: MARK }],
  ['reviewerReason', 42],
  ['cuaCardFacts', MARK],
  ['cuaCardFacts', { data: MARK }],
  ['subagentOrigin', { subagentId: 7, childRunId: MARK }],
];
const DROPPED = 'dropping a field of an approval frame that does not parse';

function droppedLines(lines: Line[]): Line[] {
  return lines.filter((line) => line.msg === DROPPED);
}

/** One warn line naming the field and the approval, which does not quote the value. */
function expectOneDropLine(lines: Line[], field: string, method: string): void {
  expect(droppedLines(lines)).toEqual([
    expect.objectContaining({
      level: 40,
      field,
      method,
      approvalId: PARAMS.approvalId,
      sessionId: PARAMS.sessionId,
    }),
  ]);
  for (const line of lines) expect(JSON.stringify(line)).not.toContain(MARK);
}

describe('an approval frame with a field of an unexpected shape', () => {
  it.each(MALFORMED)(
    'approval/request with a malformed %s: receipt, opened without it, one warn line',
    (field, value) => {
      const { sent, events, lines } = serve({ ...PARAMS, [field]: value });
      expect(sent).toEqual([{ jsonrpc: '2.0', id: 7, result: {} }]);
      expect(events).toHaveLength(1);
      const event = events[0]!;
      expect(event).toMatchObject({
        type: 'approvalOpened',
        via: 'request',
        params: { approvalId: PARAMS.approvalId },
      });
      expect((event as { params: Record<string, unknown> }).params[field]).toBeUndefined();
      expect(lines.some((line) => line.msg === 'skipping approval frame that does not parse')).toBe(false);
      expectOneDropLine(lines, field, 'approval/request');
    },
  );

  it.each(
    MALFORMED.flatMap(([field, value]) =>
      ['approval/requested', 'approval/reviewing'].map((method) => [method, field, value] as const),
    ),
  )('%s with a malformed %s is handed on without it', (method, field, value) => {
    const { incarnation, lines } = loggingIncarnation();
    const events: HostEvent[] = [];
    handleHostNotification('host-a', incarnation, method, { ...PARAMS, [field]: value }, (e) =>
      events.push(e),
    );
    expect(events).toHaveLength(1);
    const params = (events[0] as { params: Record<string, unknown> }).params;
    expect(params.approvalId).toBe(PARAMS.approvalId);
    expect(params[field]).toBeUndefined();
    expectOneDropLine(lines, field, method);
  });

  it.each(MALFORMED)('a listPending entry with a malformed %s is listed without it', (field, value) => {
    const { logger, lines } = loggingIncarnation();
    const listed = parsePendingListing(
      { approvals: [{ ...PARAMS, [field]: value }], userInputs: [] },
      logger,
    );
    expect(listed?.ids).toEqual([PARAMS.approvalId]);
    expect(listed?.approvals).toHaveLength(1);
    expect((listed!.approvals[0] as Record<string, unknown>)[field]).toBeUndefined();
    expectOneDropLine(lines, field, 'approval/listPending');
  });

  it('drops each malformed field, with a line for each, and keeps the well-formed ones', () => {
    const facts = { windowTitle: 'Checkout', page: { host: 'shop.example' } };
    const { sent, events, lines } = serve({
      ...PARAMS,
      reason: ['x'],
      reviewerReason: 'the judge was unsure',
      cuaCardFacts: facts,
      subagentOrigin: 'child',
    });
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 7, result: {} }]);
    const params = (events[0] as { params: Record<string, unknown> }).params;
    expect(params.reason).toBeUndefined();
    expect(params.subagentOrigin).toBeUndefined();
    expect(params.reviewerReason).toBe('the judge was unsure');
    expect(params.cuaCardFacts).toEqual(facts);
    expect(droppedLines(lines).map((line) => line.field)).toEqual(['reason', 'subagentOrigin']);
  });

  it('approval/updated with a malformed subagentOrigin is handed on without it', () => {
    const { incarnation, lines } = loggingIncarnation();
    const events: HostEvent[] = [];
    const update = {
      sessionId: PARAMS.sessionId,
      approvalId: PARAMS.approvalId,
      currentRequirementId: PARAMS.currentRequirementId,
      change: { kind: 'reviewStarted' },
      availableChoices: PARAMS.availableChoices,
      subject: PARAMS.subject,
      subagentOrigin: MARK,
    };
    handleHostNotification('host-a', incarnation, 'approval/updated', update, (e) => events.push(e));
    expect(events).toMatchObject([{ type: 'approvalUpdated', params: { approvalId: PARAMS.approvalId } }]);
    expect((events[0] as { params: Record<string, unknown> }).params.subagentOrigin).toBeUndefined();
    expectOneDropLine(lines, 'subagentOrigin', 'approval/updated');
  });

  it('approval/resolved with a decidedAt that is not a string resolves on our own clock', () => {
    const resolved = FRAMES.find((frame) => frame.method === 'approval/resolved')?.params;
    const { incarnation, lines } = loggingIncarnation();
    const events: HostEvent[] = [];
    handleHostNotification(
      'host-a',
      incarnation,
      'approval/resolved',
      { ...resolved, decidedAt: 1790000012000 },
      (e) => events.push(e),
    );
    expect(events).toMatchObject([{ type: 'approvalResolved', params: { approvalId: PARAMS.approvalId } }]);
    expect((events[0] as { params: Record<string, unknown> }).params.decidedAt).toBeUndefined();
    expectOneDropLine(lines, 'decidedAt', 'approval/resolved');
  });

  // `amendment` and `change.reason` are in the vendor's schema (optional), so a host that sends
  // one in another shape is off it. The frame still says what the approval came to: refusing it
  // whole would leave the card open on an approval the host resolved, or a stage it moved past.
  it.each<[string, unknown]>([
    ['without its rulePreview', { durability: 'session' }],
    ['that is a string', MARK],
    ['whose durability is no word', { durability: 7, rulePreview: MARK }],
  ])('approval/resolved with an amendment %s resolves without it', (_, amendment) => {
    const resolved = FRAMES.find((frame) => frame.method === 'approval/resolved')?.params;
    const { incarnation, lines } = loggingIncarnation();
    const events: HostEvent[] = [];
    handleHostNotification(
      'host-a',
      incarnation,
      'approval/resolved',
      { ...resolved, decision: 'approvedPolicyAmendment', amendment },
      (e) => events.push(e),
    );
    expect(events).toMatchObject([
      {
        type: 'approvalResolved',
        params: { approvalId: PARAMS.approvalId, decision: 'approvedPolicyAmendment', resolvedBy: 'user' },
      },
    ]);
    const params = (events[0] as { params: Record<string, unknown> }).params;
    expect(params.amendment).toBeUndefined();
    expect(params.unreadableFields).toEqual(['amendment']);
    expectOneDropLine(lines, 'amendment', 'approval/resolved');
  });

  /** An approval/updated of PARAMS' approval reporting `change`. */
  const updateWith = (change: Record<string, unknown>) => ({
    sessionId: PARAMS.sessionId,
    approvalId: PARAMS.approvalId,
    currentRequirementId: PARAMS.currentRequirementId,
    change,
    availableChoices: PARAMS.availableChoices,
    subject: PARAMS.subject,
  });

  it.each<[unknown]>([[42], [{ text: MARK }], [[MARK]]])(
    'approval/updated with a change reason %j is handed on without it, the change kept',
    (reason) => {
      const { incarnation, lines } = loggingIncarnation();
      const events: HostEvent[] = [];
      const change = { kind: 'policyPersistence', status: 'failed', reason };
      handleHostNotification('host-a', incarnation, 'approval/updated', updateWith(change), (e) =>
        events.push(e),
      );
      expect(events).toMatchObject([
        {
          type: 'approvalUpdated',
          params: { approvalId: PARAMS.approvalId, change: { kind: 'policyPersistence', status: 'failed' } },
        },
      ]);
      const params = (events[0] as { params: { change: Record<string, unknown> } }).params;
      expect(params.change.reason).toBeUndefined();
      expect((params as Record<string, unknown>).unreadableFields).toEqual(['change.reason']);
      expectOneDropLine(lines, 'change.reason', 'approval/updated');
    },
  );

  it('approval/updated with a string change reason keeps it, and says nothing', () => {
    const { incarnation, lines } = loggingIncarnation();
    const events: HostEvent[] = [];
    const change = { kind: 'policyPersistence', status: 'failed', reason: 'disk full' };
    handleHostNotification('host-a', incarnation, 'approval/updated', updateWith(change), (e) =>
      events.push(e),
    );
    const params = (events[0] as { params: Record<string, unknown> }).params;
    expect(params.change).toEqual(change);
    expect(params.unreadableFields).toBeUndefined();
    expect(droppedLines(lines)).toEqual([]);
  });

  it('what a resolution or an update says stays strict: without it the frame is skipped', () => {
    const resolved = FRAMES.find((frame) => frame.method === 'approval/resolved')?.params;
    const { incarnation, lines } = loggingIncarnation();
    const events: HostEvent[] = [];
    const hear = (method: string, params: unknown) =>
      handleHostNotification('host-a', incarnation, method, params, (e) => events.push(e));
    hear('approval/resolved', { ...resolved, amendment: MARK, decision: undefined });
    hear('approval/resolved', { ...resolved, amendment: MARK, resolvedBy: 42 });
    hear('approval/updated', updateWith({ reason: 42 }));
    hear('approval/updated', { ...updateWith({ kind: 'stageResolved' }), change: MARK });
    expect(events).toEqual([]);
    expect(lines.filter((line) => line.msg === 'skipping approval frame that does not parse')).toHaveLength(
      4,
    );
  });

  it('a field the schema requires stays strict: the frame is still refused', () => {
    const { sent, events } = serve({ ...PARAMS, availableChoices: 'allow' });
    expect((sent[0] as { error?: { code: number } }).error?.code).toBe(-32602);
    expect(events).toEqual([]);
  });

  it('a bot-side list of dropped fields cannot be sent by the host', () => {
    const { events } = serve({ ...PARAMS, unreadableFields: ['cuaCardFacts'] });
    expect((events[0] as { params: Record<string, unknown> }).params.unreadableFields).toBeUndefined();
  });
});
