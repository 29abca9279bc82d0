// Approval frames carry a view cursor the host chooses the size of. The bot reads nothing from
// it, but the parsed frame is held (while Redis is away, every event of the wait), so it is held
// to the bound of a session's cursor: a longer one is dropped and the frame kept, as a longer
// cursor from session/resume is not kept and the session still followed.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { approvalEventFromNotification } from '../../../src/msp/approvalEvents.js';
import { MAX_VIEW_CURSOR_CHARS } from '../../../src/msp/protocol.js';
import { parsePendingListing } from '../../../src/msp/sessionListing.js';
import { transcriptLines } from '../../support/transcripts.js';

type Params = Record<string, unknown>;

const FRAMES = transcriptLines('approval-round-trip')
  .filter((line) => line.dir === 'server')
  .map((line) => JSON.parse(line.raw) as { method?: string; params?: Params });
const paramsOf = (method: string): Params => {
  const params = FRAMES.find((frame) => frame.method === method)?.params;
  if (params === undefined) throw new Error(`approval-round-trip has no ${method}`);
  return params;
};
const REQUESTED = paramsOf('approval/requested');
const RESOLVED = paramsOf('approval/resolved');
/** An update to the request as a host sends one (no recorded transcript has one). */
const UPDATED: Params = {
  sessionId: REQUESTED.sessionId,
  approvalId: REQUESTED.approvalId,
  currentRequirementId: REQUESTED.currentRequirementId,
  change: { kind: 'stageResolved', choiceId: 'allow_once', decision: 'approved' },
  availableChoices: REQUESTED.availableChoices,
  subject: REQUESTED.subject,
};
const FRAMES_BY_METHOD: Array<[string, Params]> = [
  ['approval/requested', REQUESTED],
  ['approval/reviewing', REQUESTED],
  ['approval/updated', UPDATED],
  ['approval/resolved', RESOLVED],
];

const logger = pino({ level: 'silent' });
const origin = { hostId: 'host-a', incarnation: 'inc-1' };
const AT_BOUND = 'v'.repeat(MAX_VIEW_CURSOR_CHARS);
const PAST_BOUND = `${AT_BOUND}${'x'.repeat(1024 * 1024)}`;

/** The params of the event a notification becomes; throws when it becomes none. */
function eventParams(method: string, params: Params): Params {
  const event = approvalEventFromNotification(method, params, origin, logger);
  if (event === undefined || !('params' in event)) throw new Error(`${method} was skipped`);
  return event.params as Params;
}

describe('the view cursor of an approval frame', () => {
  it.each(FRAMES_BY_METHOD)('%s keeps a cursor of MAX_VIEW_CURSOR_CHARS', (method, params) => {
    expect(eventParams(method, { ...params, viewCursor: AT_BOUND }).viewCursor).toBe(AT_BOUND);
  });

  it.each(FRAMES_BY_METHOD)('%s drops a longer cursor, and the frame is still handled', (method, params) => {
    const parsed = eventParams(method, { ...params, viewCursor: PAST_BOUND });
    expect(parsed.approvalId).toBe(params.approvalId);
    expect(parsed.viewCursor).toBeUndefined();
  });

  it('is dropped from a listPending entry too, the entry still listed', () => {
    const listed = parsePendingListing(
      { approvals: [{ ...REQUESTED, viewCursor: PAST_BOUND }], userInputs: [] },
      logger,
    );
    expect(listed?.ids).toEqual([REQUESTED.approvalId]);
    expect(listed?.approvals).toHaveLength(1);
    expect(listed?.approvals[0]?.viewCursor).toBeUndefined();
  });
});
