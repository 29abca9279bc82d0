// What a resolution's notices do with the audit entry and the ledger, against a ledger and a
// decision trail kept in memory.

import { describe, expect, it } from 'vitest';
import type { DecisionEntry } from '../../../../src/domain/audit.js';
import type { NoticeNames } from '../../../../src/domain/decisionNotice.js';
import { DecisionNotices, type NoticeSender } from '../../../../src/relay/deciding/decisionNotices.js';
import { captureLogger } from '../../../support/logCapture.js';
import { sampleRecord } from '../../../support/sampleRecord.js';

/** `answers`: what each appendDecision says in turn (true: written now, false: written before, Error: Redis failed). */
function notices(answers: Array<boolean | Error> = [true], writtenWithResolution: string[] = []) {
  const events: string[] = [];
  const appended: DecisionEntry[] = [];
  const { logger, lines } = captureLogger('debug');
  const sender: NoticeSender = {
    decisionLine: async () => {
      events.push('thread line');
    },
    requesterDm: async () => {},
    permalink: async () => undefined,
    nameOf: async () => undefined,
  };
  const held = new Set(writtenWithResolution);
  const followed = new DecisionNotices({
    sender,
    ledger: {
      claim: async (_id, kind) => {
        events.push(`claim ${kind}`);
        return true;
      },
      settle: async (_id, kind, outcome) => {
        events.push(`settle ${kind} ${outcome}`);
      },
    },
    audit: {
      appendDecision: async (entry) => {
        appended.push(entry);
        const answer = answers.shift() ?? false;
        if (answer instanceof Error) throw answer;
        return answer;
      },
    },
    writtenWithResolution: { take: (id) => held.delete(id) },
    ownerOf: () => undefined,
    logger,
  });
  const decisionLines = () => lines.filter((l) => l.msg === 'decision');
  return { followed, events, appended, lines, decisionLines };
}

const resolved = sampleRecord('dn-1', {
  phase: 'resolved',
  resolution: { decision: 'approved', resolvedBy: 'policy', decidedAt: '2026-11-30T10:00:01.000Z' },
});

describe('DecisionNotices', () => {
  it('writes the entry and logs its line once, however often the resolved record is stored again', async () => {
    const { followed, appended, decisionLines } = notices([true]);
    followed.follow(resolved);
    await followed.idle();
    followed.follow({ ...resolved, reason: 'a later change' });
    await followed.idle();
    expect(appended).toEqual([
      expect.objectContaining({ kind: 'decision', approvalId: 'dn-1', via: 'policy' }),
    ]);
    expect(decisionLines()).toEqual([expect.objectContaining({ approvalId: 'dn-1', via: 'policy' })]);
  });

  it('audits a decision its host went away with once, as unknown, naming who pressed it; no notices', async () => {
    const { followed, appended, events, decisionLines } = notices([true]);
    const orphaned = sampleRecord('dn-2', {
      phase: 'orphaned',
      unsettledClaim: {
        sourceIndex: 0,
        userId: 'U0ALICE',
        via: 'click',
        choiceId: 'allow_once',
        commandId: 'cmd-9',
        claimedAt: '2026-11-30T10:00:00.000Z',
      },
    });
    followed.follow(orphaned);
    await followed.idle();
    followed.follow({ ...orphaned, version: orphaned.version + 1 });
    await followed.idle();
    expect(appended).toEqual([
      expect.objectContaining({
        kind: 'decision',
        approvalId: 'dn-2',
        userId: 'U0ALICE',
        choiceId: 'allow_once',
        commandId: 'cmd-9',
        decision: 'unknown',
        unsettled: 'hostLost',
      }),
    ]);
    expect(decisionLines()).toEqual([
      expect.objectContaining({
        approvalId: 'dn-2',
        decision: 'unknown',
        unsettled: 'hostLost',
        userId: 'U0ALICE',
      }),
    ]);
    expect(events).toEqual([]);
    // Orphaned with nothing in flight: nothing to audit.
    followed.follow(sampleRecord('dn-3', { phase: 'orphaned' }));
    await followed.idle();
    expect(appended).toHaveLength(1);
  });

  it('an entry the resolving write wrote is not written again: only its line is logged', async () => {
    const { followed, appended, decisionLines } = notices([], ['dn-1']);
    followed.follow(resolved);
    await followed.idle();
    expect(appended).toEqual([]);
    expect(decisionLines()).toHaveLength(1);
  });

  it('an entry written elsewhere (another replica, an earlier process) is not logged here', async () => {
    const { followed, appended, decisionLines } = notices([false]);
    followed.follow(resolved);
    await followed.idle();
    expect(appended).toHaveLength(1);
    expect(decisionLines()).toEqual([]);
  });

  it("an entry Redis did not take is logged without the reviewer's free text", async () => {
    const { followed, lines } = notices([new Error('connection lost')]);
    const withFeedback = sampleRecord('dn-1', {
      phase: 'resolved',
      resolution: {
        decision: 'denied',
        resolvedBy: 'user',
        decidedAt: '2026-11-30T10:00:01.000Z',
        feedback: 'FEEDBACK-MARK sk_live',
      },
    });
    followed.follow(withFeedback);
    await followed.idle();
    const line = lines.find((l) => l.msg === 'audit entry not written');
    expect(line).toMatchObject({ level: 50, approvalId: 'dn-1', auditEntry: { kind: 'decision' } });
    expect(JSON.stringify(lines)).not.toContain('FEEDBACK-MARK');
  });

  it('an entry Redis did not take is tried again when the record is next seen', async () => {
    const { followed, appended, lines, decisionLines } = notices([new Error('connection lost'), true]);
    followed.follow(resolved);
    await followed.idle();
    expect(lines.find((l) => l.msg === 'audit entry not written')).toMatchObject({
      level: 50,
      approvalId: 'dn-1',
    });
    expect(decisionLines()).toEqual([]);
    followed.follow(resolved);
    await followed.idle();
    expect(appended).toHaveLength(2);
    expect(decisionLines()).toHaveLength(1);
  });

  it('stores the thread line as sent only once it was posted', async () => {
    const { followed, events } = notices();
    followed.follow({ ...resolved, slack: { channel: 'C1', ts: '1.000001' } });
    await followed.idle();
    expect(events).toEqual(['claim thread', 'thread line', 'settle thread sent']);
  });

  it('looks up the names of the earlier stages’ deciders too, so the line names them without a ping', async () => {
    let names: NoticeNames | undefined;
    const followed = new DecisionNotices({
      sender: {
        decisionLine: async (_card, _record, known) => {
          names = known;
        },
        requesterDm: async () => {},
        permalink: async () => undefined,
        nameOf: async (id) => `name of ${id}`,
      },
      ledger: { claim: async () => true, settle: async () => {} },
      audit: { appendDecision: async () => true },
      writtenWithResolution: { take: () => false },
      ownerOf: () => undefined,
      logger: captureLogger('debug').logger,
    });
    followed.follow({
      ...resolved,
      slack: { channel: 'C1', ts: '1.000002' },
      resolution: { ...resolved.resolution!, resolvedBy: 'user', slackUserId: 'U0BOB', via: 'click' },
      stageDecisions: [
        { sourceIndex: 0, via: 'click', userId: 'U0ALICE', choiceId: 'allow_once', decision: 'approved' },
        { sourceIndex: 1, via: 'click', userId: 'U0DAN', onBehalfOf: 'U0ERIN', choiceId: 'allow_once' },
      ],
    });
    await followed.idle();
    for (const id of ['U0BOB', 'U0ALICE', 'U0DAN', 'U0ERIN'])
      expect(names?.nameOf?.(id)).toBe(`name of ${id}`);
  });
});
