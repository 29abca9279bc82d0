// Identifiers are stored and sent back exactly as the host sent them, so intake cannot cut them
// like text. Unbounded, one approval/requested of 9 MB of ids (a 140 KB requirementId.approvalId
// in each of 64 stages) was a record of 9 MB in Redis. A frame whose ids pass the bound is
// malformed: skipped with one log line that does not repeat the id, the request answered with an
// error, and nothing reaches a record.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { approvalEventFromNotification } from '../../../src/msp/approvalEvents.js';
import type { HostEvent } from '../../../src/msp/events.js';
import { handleHostRequest } from '../../../src/msp/hostMessages.js';
import type { Incarnation } from '../../../src/msp/incarnation.js';
import { serveRequest } from '../../../src/msp/incomingRequest.js';
import type { Json } from '../../../src/msp/jsonRpc.js';
import * as protocol from '../../../src/msp/protocol.js';
import {
  ApprovalRequestParams,
  ApprovalResolvedParams,
  ApprovalUpdatedParams,
} from '../../../src/msp/protocol.js';
import { transcriptLines } from '../../support/transcripts.js';

type Frame = { id?: number; method?: string; params?: Record<string, unknown> };

const FRAMES = transcriptLines('approval-round-trip')
  .filter((line) => line.dir === 'server')
  .map((line) => JSON.parse(line.raw) as Frame);
const paramsOf = (method: string) => {
  const params = FRAMES.find((frame) => frame.method === method)?.params;
  if (params === undefined) throw new Error(`approval-round-trip has no ${method}`);
  return params;
};
/** The recorded request, made a two-stage shell command as in the protocol's own example. */
const REQUESTED = { ...paramsOf('approval/requested') };
REQUESTED.subject = {
  kind: 'shell',
  command: 'npm test && git push',
  stages: [
    ['npm', 'test'],
    ['git', 'push'],
  ].map((argv, sourceIndex) => ({
    requirementId: { approvalId: REQUESTED.approvalId, sourceIndex },
    position: sourceIndex + 1,
    totalStages: 2,
    argv,
    argvComplete: true,
    resolution: { kind: 'unresolved' },
  })),
};
const RESOLVED = paramsOf('approval/resolved');
/** An update to the request as a host sends one (no recorded transcript has one). */
const UPDATED = {
  sessionId: REQUESTED.sessionId,
  approvalId: REQUESTED.approvalId,
  currentRequirementId: REQUESTED.currentRequirementId,
  change: {
    kind: 'stageResolved',
    requirementId: REQUESTED.currentRequirementId,
    choiceId: 'allow_once',
    decision: 'approved',
  },
  availableChoices: REQUESTED.availableChoices,
  subject: REQUESTED.subject,
} as Record<string, unknown>;

/** The bound as the code states it; 256 if the code states none (the test must fail, not throw). */
const BOUND = (protocol as Record<string, unknown>).MAX_HOST_ID_CHARS as number | undefined;
const HUGE = 'x'.repeat(100 * 1024);
const copy = <T>(value: T): T => structuredClone(value);

type Stage = { requirementId: Record<string, unknown> };
type Choice = Record<string, unknown>;
const stagesOf = (params: Record<string, unknown>) => (params.subject as { stages: Stage[] }).stages;
const choicesOf = (params: Record<string, unknown>) => params.availableChoices as Choice[];

/** The request with its approval renamed everywhere it is named, as a host would send it. */
function renamed(params: Record<string, unknown>, approvalId: string) {
  const next = copy(params);
  next.approvalId = approvalId;
  (next.currentRequirementId as Record<string, unknown>).approvalId = approvalId;
  for (const stage of stagesOf(next)) stage.requirementId.approvalId = approvalId;
  return next;
}

/** Ways a request can carry a huge id; each must make it malformed. */
const HUGE_IDS: Record<string, (params: Record<string, unknown>) => void> = {
  approvalId: (p) => Object.assign(p, renamed(p, HUGE)),
  sessionId: (p) => {
    p.sessionId = HUGE;
  },
  turnId: (p) => {
    p.turnId = HUGE;
  },
  itemId: (p) => {
    p.itemId = HUGE;
  },
  toolCallId: (p) => {
    p.toolCallId = HUGE;
  },
  choiceId: (p) => {
    choicesOf(p)[0]!.choiceId = HUGE;
  },
  'choice scope': (p) => {
    choicesOf(p)[0]!.scope = HUGE;
  },
  'a stage ref with a field of 100 KB': (p) => {
    stagesOf(p)[1]!.requirementId.note = HUGE;
  },
  'the current ref with a field of 100 KB': (p) => {
    (p.currentRequirementId as Record<string, unknown>).note = HUGE;
  },
};

describe('host ids', () => {
  it('the ids of the recorded transcripts, and ids at the bound, parse', () => {
    expect(BOUND).toBe(256);
    expect(ApprovalRequestParams.safeParse(REQUESTED).success).toBe(true);
    expect(ApprovalUpdatedParams.safeParse(UPDATED).success).toBe(true);
    expect(ApprovalResolvedParams.safeParse(RESOLVED).success).toBe(true);
    const longest = renamed(REQUESTED, `0198f0ac-${'7'.repeat(256 - 9)}`);
    longest.sessionId = 's'.repeat(256);
    choicesOf(longest)[0]!.choiceId = '€'.repeat(256);
    expect(ApprovalRequestParams.safeParse(longest).success).toBe(true);
  });

  for (const [name, make] of Object.entries(HUGE_IDS)) {
    it(`a request with a 100 KB ${name} is malformed`, () => {
      const params = copy(REQUESTED);
      make(params);
      expect(ApprovalRequestParams.safeParse(params).success).toBe(false);
    });
  }

  it('an id one past the bound is malformed, and so is one that JSON escapes past it', () => {
    expect(ApprovalRequestParams.safeParse(renamed(REQUESTED, 'a'.repeat(257))).success).toBe(false);
    // 200 UTF-16 units, 1,200 characters of JSON in the record.
    expect(ApprovalRequestParams.safeParse(renamed(REQUESTED, '\u0001'.repeat(200))).success).toBe(false);
  });

  it('a stage or current ref naming another approval is malformed', () => {
    const stage = copy(REQUESTED);
    stagesOf(stage)[1]!.requirementId.approvalId = 'another-approval';
    expect(ApprovalRequestParams.safeParse(stage).success).toBe(false);
    const current = copy(REQUESTED);
    (current.currentRequirementId as Record<string, unknown>).approvalId = 'another-approval';
    expect(ApprovalRequestParams.safeParse(current).success).toBe(false);
    const update = copy(UPDATED);
    stagesOf(update)[0]!.requirementId.approvalId = 'another-approval';
    expect(ApprovalUpdatedParams.safeParse(update).success).toBe(false);
  });

  it('updates and resolutions with a 100 KB id are malformed', () => {
    expect(ApprovalUpdatedParams.safeParse({ ...copy(UPDATED), sessionId: HUGE }).success).toBe(false);
    const choice = copy(UPDATED);
    choicesOf(choice)[0]!.choiceId = HUGE;
    expect(ApprovalUpdatedParams.safeParse(choice).success).toBe(false);
    const change = copy(UPDATED);
    (change.change as Record<string, unknown>).choiceId = HUGE;
    expect(ApprovalUpdatedParams.safeParse(change).success).toBe(false);
    for (const key of ['approvalId', 'sessionId', 'itemId', 'turnId', 'decidedByCommandId']) {
      expect(ApprovalResolvedParams.safeParse({ ...copy(RESOLVED), [key]: HUGE }).success).toBe(false);
    }
  });

  it('a notification with a huge id is skipped with one log line that does not repeat it', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
    const origin = { hostId: 'host-a', incarnation: 'inc-1' };
    for (const [method, params] of [
      ['approval/requested', renamed(REQUESTED, HUGE)],
      ['approval/reviewing', renamed(REQUESTED, HUGE)],
      ['approval/updated', { ...copy(UPDATED), approvalId: HUGE }],
      ['approval/resolved', { ...copy(RESOLVED), approvalId: HUGE }],
    ] as const) {
      lines.length = 0;
      expect(approvalEventFromNotification(method, params, origin, logger)).toBeUndefined();
      expect(lines).toHaveLength(1);
      const line = JSON.parse(lines[0]!) as Record<string, unknown>;
      expect(line).toMatchObject({ msg: 'skipping approval frame that does not parse', method });
      expect(lines[0]!.length).toBeLessThan(2_000);
    }
  });

  it('an approval/request with a huge id is answered with invalidParams and opens nothing', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
    const incarnation = { id: 'inc-1', logger, frameWarnings: logger } as unknown as Incarnation;
    const events: HostEvent[] = [];
    const sent: Json[] = [];
    const params = copy(REQUESTED);
    stagesOf(params)[0]!.requirementId.approvalId = HUGE;
    serveRequest(
      7,
      'approval/request',
      params,
      (request) => handleHostRequest('host-a', incarnation, request, (event) => events.push(event)),
      { logger, isClosed: () => false, send: (message) => sent.push(message) },
    );
    // The error leaves the approval pending at the host, which asks again on the next subscribe.
    expect(sent).toMatchObject([{ jsonrpc: '2.0', id: 7, error: { code: -32602 } }]);
    expect(events).toEqual([]);
    expect(lines.join('').length).toBeLessThan(2_000);
  });
});
