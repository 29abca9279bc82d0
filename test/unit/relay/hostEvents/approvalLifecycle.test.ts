// What a card shows as the host's events and answers move an approval along: the real handler and
// mutations over a keeper and store held in memory, the card rendered from each record.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { renderCard } from '../../../../src/cards/renderCard.js';
import { renderRequesterDm, renderThreadLine } from '../../../../src/cards/renderDecisionNotice.js';
import type { GrantStore } from '../../../../src/domain/grants/grant.js';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import { isTerminal } from '../../../../src/domain/record.js';
import { approvalEventFromNotification } from '../../../../src/msp/approvalEvents.js';
import type { HostEvent } from '../../../../src/msp/events.js';
import { ApprovalRequestParams } from '../../../../src/msp/protocol.js';
import type { Decider } from '../../../../src/relay/deciding/decider.js';
import { GrantMaker } from '../../../../src/relay/grants/grantMaker.js';
import { HostEventHandler } from '../../../../src/relay/hostEvents/hostEventHandler.js';
import { keepingCurrentVotes } from '../../../../src/relay/records/cardMutations.js';
import { claimed, requirementMoved } from '../../../../src/relay/records/decisionMutations.js';
import type { RecordKeeper } from '../../../../src/relay/records/recordKeeper.js';
import type { Mutation } from '../../../../src/store/approvalRecords.js';
import type { ApprovalStore } from '../../../../src/store/approvalStore.js';
import { shellApproval } from '../../../support/fakeHost.js';

const logger = pino({ level: 'silent' });
const ORIGIN = { hostId: 'h1', incarnation: 'inc-1' };

/** The real handler over records kept in a map, each approval's work run in its own queue. */
function relay() {
  const records = new Map<string, ApprovalRecord>();
  /** What the Decider was asked to settle (the host no longer lists a decision in flight). */
  const settled: ApprovalRecord[] = [];
  const queues = new Map<string, Promise<unknown>>();
  const work: Promise<unknown>[] = [];
  const run = <T>(id: string, task: () => Promise<T>): Promise<T> => {
    const done = (queues.get(id) ?? Promise.resolve()).then(task);
    queues.set(
      id,
      done.catch(() => undefined),
    );
    work.push(done);
    return done;
  };
  const mutate = async (id: string, mutation: Mutation) => {
    const record = records.get(id);
    if (!record) return undefined;
    const next = keepingCurrentVotes(mutation)(record);
    if (next) records.set(id, { ...next, version: record.version + 1 });
    return records.get(id);
  };
  const keeper = {
    run,
    enqueue: (id: string, task: () => Promise<unknown>) => void run(id, task),
    track: (task: Promise<unknown>) => void work.push(task),
    store: async (record: ApprovalRecord) => {
      if (records.has(record.approvalId)) return false;
      records.set(record.approvalId, record);
      return { posted: Promise.resolve() };
    },
    mutate,
    idle: async () => {
      while (work.length > 0) await Promise.all(work.splice(0));
    },
  } as unknown as RecordKeeper;
  const store = {
    knows: (id: string) => records.has(id),
    saveFullText: async () => {},
    openApprovalIds: async (hostId: string, sessionId?: string) =>
      [...records.values()]
        .filter((r) => !isTerminal(r) && r.hostId === hostId && (!sessionId || r.sessionId === sessionId))
        .map((r) => r.approvalId),
    get: async (id: string) => records.get(id),
    forgetOpen: async () => {},
    forgetOpenId: async () => {},
  } as unknown as ApprovalStore;
  const handler = new HostEventHandler({
    keeper,
    store,
    decider: {
      replay: () => {},
      settle: (r: ApprovalRecord) => void settled.push(r),
    } as unknown as Decider,
    host: () => ({ refreshSession: () => undefined }) as never,
    logger,
    routeFor: () => ({ name: 'default', channel: 'C1' }),
    sandboxModeOf: () => 'default',
  });
  const hear = async (event: HostEvent) => {
    handler.handleHostEvent(event);
    await handler.idle();
  };
  const record = (id = 'ap-1') => records.get(id)!;
  return { hear, mutate, record, settled };
}

function notification(method: string, params: unknown, origin = ORIGIN): HostEvent {
  const event = approvalEventFromNotification(method, params, origin, logger);
  if (!event) throw new Error(`${method} did not parse`);
  return event;
}

function request(params: unknown, origin = ORIGIN): HostEvent {
  return { type: 'approvalOpened', ...origin, via: 'request', params: ApprovalRequestParams.parse(params) };
}

/** `npm test && git push`: stage 0 offers a prefix rule, as the protocol's example does. */
const twoStages = shellApproval({
  approvalId: 'ap-1',
  sessionId: 's-1',
  stages: [
    ['npm', 'test'],
    ['git', 'push'],
  ],
});

/** The same approval asked at stage 1: stage 0 resolved, and no prefix rule offered. */
const atStageOne = {
  ...twoStages,
  currentRequirementId: { approvalId: 'ap-1', sourceIndex: 1 },
  availableChoices: twoStages.availableChoices.filter((c) => c.choiceId !== 'allow_local_prefix'),
  subject: {
    ...twoStages.subject,
    stages: twoStages.subject.stages!.map((s, i) =>
      i === 0 ? { ...s, resolution: { kind: 'allowOnce' } } : s,
    ),
  },
};

/** The card's buttons, as the choice and stage each one would decide. */
function buttonsOf(record: ApprovalRecord): Array<{ label: string; stage: number }> {
  const card = renderCard(record, { now: new Date('2026-12-07T10:00:00Z') });
  const buttons: Array<{ label: string; stage: number }> = [];
  for (const block of card.blocks as Array<{ type: string; elements?: Array<Record<string, unknown>> }>) {
    if (block.type !== 'actions') continue;
    for (const element of block.elements ?? []) {
      if (element.type !== 'button' || typeof element.value !== 'string') continue;
      const label = (element.text as { text: string }).text;
      buttons.push({ label, stage: (JSON.parse(element.value) as { s: number }).s });
    }
  }
  return buttons;
}

function textOf(record: ApprovalRecord): string {
  return JSON.stringify(renderCard(record, { now: new Date('2026-12-07T10:00:00Z') }).blocks);
}

const claim = (sourceIndex: number, choiceId: string, commandId: string, userId: string) => ({
  sourceIndex,
  choiceId,
  commandId,
  userId,
  claimedAt: '2026-12-07T09:59:00Z',
});

describe('a card through the approval’s life', () => {
  it('offers no choice after the host said its stage moved, until the session is read again', async () => {
    const { hear, mutate, record } = relay();
    await hear(notification('approval/requested', twoStages));
    await mutate('ap-1', claimed(claim(0, 'allow_once', 'cmd-1', 'U1')));
    // The stage advance was lost (a gap): the decide is answered -32053 naming stage 1.
    await mutate('ap-1', requirementMoved('cmd-1', { approvalId: 'ap-1', sourceIndex: 1 }));
    const moved = record();
    expect(moved.currentRequirementId.sourceIndex).toBe(1);
    expect(buttonsOf(moved)).toEqual([]);
    expect(textOf(moved)).toContain('moved on to another stage');
    // Stage 0's choices are not stage 1's: pressing one of them for stage 1 decides nothing.
    for (const choiceId of ['allow_local_prefix', 'allow_once']) {
      expect(claimed(claim(1, choiceId, 'cmd-2', 'U2'))(moved)).toBeUndefined();
    }
    // The session's listing re-sends the approval as the host asks it now.
    await hear(request(atStageOne));
    const asked = record();
    expect(asked.phase).toBe('pending');
    expect(buttonsOf(asked).map((b) => b.label)).toEqual(['Allow once', 'Reject']);
    expect(buttonsOf(asked).every((b) => b.stage === 1)).toBe(true);
    expect(claimed(claim(1, 'allow_once', 'cmd-2', 'U2'))(asked)?.phase).toBe('deciding');
  });

  /** approval/updated of `kind`, asking stage `sourceIndex` with stage 0's choices. */
  const update = (kind: string, sourceIndex = 0, extra: Record<string, unknown> = {}) =>
    notification('approval/updated', {
      sessionId: 's-1',
      approvalId: 'ap-1',
      currentRequirementId: { approvalId: 'ap-1', sourceIndex },
      availableChoices: twoStages.availableChoices,
      subject: twoStages.subject,
      sourceRange: twoStages.sourceRange,
      viewCursor: 'v:s-1:45',
      change: { kind, ...extra },
    });

  it('offers no choice once the host says a recovery found the request already decided', async () => {
    const { hear, record } = relay();
    await hear(notification('approval/requested', twoStages));
    await hear(update('alreadyTerminal'));
    expect(record().phase).toBe('unavailable');
    expect(buttonsOf(record())).toEqual([]);
    expect(textOf(record())).toContain('already decided');
    expect(claimed(claim(0, 'allow_once', 'cmd-1', 'U1'))(record())).toBeUndefined();
  });

  it('offers no choice while the host resolves a computer-use takeover itself', async () => {
    const { hear, record } = relay();
    await hear(notification('approval/reviewing', twoStages));
    await hear(update('resolving'));
    expect(record().phase).toBe('unavailable');
    expect(buttonsOf(record())).toEqual([]);
    expect(textOf(record())).toContain('resolving this request itself');
    // The host tells us when it is asked again: the buttons come back.
    await hear(request(twoStages));
    expect(buttonsOf(record()).length).toBeGreaterThan(0);
  });

  it('keeps a decision in flight through those updates: the host still answers it', async () => {
    const { hear, mutate, record } = relay();
    await hear(notification('approval/requested', twoStages));
    await mutate('ap-1', claimed(claim(0, 'allow_once', 'cmd-1', 'U1')));
    await hear(update('alreadyTerminal'));
    expect(record()).toMatchObject({ phase: 'deciding', claim: { commandId: 'cmd-1' } });
  });

  it('keeps a decision in flight while another client holds the session, and settles it once unlisted', async () => {
    const { hear, mutate, record, settled } = relay();
    await hear(notification('approval/requested', twoStages));
    await mutate('ap-1', claimed(claim(0, 'allow_once', 'cmd-1', 'U1')));
    // After a restart, say: the decide may have been applied before session/resume said sessionInUse.
    await hear({ type: 'sessionHeldElsewhere', ...ORIGIN, sessionId: 's-1' });
    expect(record()).toMatchObject({
      phase: 'unavailable',
      unavailable: 'heldElsewhere',
      claim: { commandId: 'cmd-1' },
    });
    expect(buttonsOf(record())).toEqual([]);
    // The host lists it no more: asked with the same commandId how it ended, not closed as nobody's.
    await hear({
      type: 'sessionReconciled',
      ...ORIGIN,
      sessionId: 's-1',
      pendingApprovalIds: [],
      listRequestedAt: performance.now(),
    });
    expect(settled.map((r) => r.claim?.commandId)).toEqual(['cmd-1']);
    expect(record().phase).toBe('unavailable');
  });

  /** Alice's rule-saving choice (cmd-1) resolved by the host, with `amendment` when given. */
  function ruleResolved(amendment: unknown) {
    return notification('approval/resolved', {
      sessionId: 's-1',
      approvalId: 'ap-1',
      itemId: twoStages.itemId,
      turnId: twoStages.turnId,
      decision: 'approvedPolicyAmendment',
      policyResult: 'allow',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-1',
      stageEvidence: [],
      ...(amendment === undefined ? {} : { amendment }),
      sourceRange: twoStages.sourceRange,
      viewCursor: 'v:s-1:50',
    });
  }

  /** A one-stage request, and the host's word that it could not save the rule asked for. */
  function ruleNotSaved() {
    const stageZero = {
      ...twoStages,
      subject: { ...twoStages.subject, stages: [twoStages.subject.stages![0]!] },
    };
    const failed = notification('approval/updated', {
      sessionId: 's-1',
      approvalId: 'ap-1',
      currentRequirementId: stageZero.currentRequirementId,
      availableChoices: stageZero.availableChoices,
      subject: stageZero.subject,
      sourceRange: twoStages.sourceRange,
      viewCursor: 'v:s-1:49',
      change: { kind: 'policyPersistence', status: 'failed', reason: 'disk full' },
    });
    return { stageZero, failed };
  }

  it('never says a rule was saved when the host said it could not save it, before or after the decision', async () => {
    const { stageZero, failed } = ruleNotSaved();
    const decided = notification('approval/resolved', {
      sessionId: 's-1',
      approvalId: 'ap-1',
      itemId: twoStages.itemId,
      turnId: twoStages.turnId,
      decision: 'approvedPolicyAmendment',
      policyResult: 'allow',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-tui',
      decidedAt: '2026-12-07T09:59:00Z',
      stageEvidence: [],
      amendment: {
        durability: 'localPersistent',
        rulePreview: 'Always allow in this workspace: npm test ...',
      },
      sourceRange: twoStages.sourceRange,
      viewCursor: 'v:s-1:50',
    });
    for (const order of [
      [failed, decided],
      [decided, failed],
    ]) {
      const { hear, record } = relay();
      await hear(notification('approval/requested', stageZero));
      for (const event of order) await hear(event);
      const resolved = record() as ApprovalRecord & { resolution: NonNullable<ApprovalRecord['resolution']> };
      expect(textOf(resolved)).toContain('Rule not saved');
      expect(textOf(resolved)).not.toContain('a rule was saved');
      expect(textOf(resolved)).toContain('Approved (a rule was asked for');
      expect(renderThreadLine(resolved)).not.toContain('a rule was saved');
      expect(renderRequesterDm(resolved, 'h1', undefined)).not.toContain('a rule was saved');
    }
  });

  it('says the rule was not saved without an amendment too (none sent, or one dropped unread)', async () => {
    const { stageZero, failed } = ruleNotSaved();
    for (const amendment of [undefined, { durability: 'localPersistent' }]) {
      for (const first of ['failed', 'decided'] as const) {
        const { hear, mutate, record } = relay();
        await hear(notification('approval/requested', stageZero));
        await mutate('ap-1', claimed(claim(0, 'allow_local_prefix', 'cmd-1', 'U_ALICE')));
        const decided = ruleResolved(amendment);
        for (const event of first === 'failed' ? [failed, decided] : [decided, failed]) await hear(event);
        const resolved = record() as ApprovalRecord & {
          resolution: NonNullable<ApprovalRecord['resolution']>;
        };
        expect(resolved.resolution).toMatchObject({
          decision: 'approvedPolicyAmendment',
          slackUserId: 'U_ALICE',
        });
        expect(resolved.resolution.amendment).toBeUndefined();
        expect(textOf(resolved)).toContain('Approved (a rule was asked for; it was not saved)');
        expect(textOf(resolved)).toContain('*Rule not saved* (disk full): the host could not save the rule.');
        expect(textOf(resolved)).not.toContain('a rule was saved');
        expect(renderThreadLine(resolved)).not.toContain('a rule was saved');
        expect(renderRequesterDm(resolved, 'h1', undefined)).not.toContain('a rule was saved');
        // Still no host-held grant listed on a guess at the rule.
        const listed: unknown[] = [];
        const grants = { create: async (input: unknown) => listed.push(input) } as unknown as GrantStore;
        const keeper = { track: () => {} } as unknown as RecordKeeper;
        const maker = new GrantMaker({
          grants,
          keeper,
          record: async () => resolved,
          grantsOf: () => undefined,
          logger,
        });
        maker.follow(resolved);
        expect(listed).toEqual([]);
      }
    }
  });

  it('closes on a resolution whose amendment it cannot read, and lists no grant the host kept', async () => {
    /** Alice's "Always allow" (localPersistent) answered with `amendment`; what GrantMaker lists. */
    const decidedWith = async (amendment: unknown) => {
      const { hear, mutate, record } = relay();
      await hear(notification('approval/requested', twoStages));
      await mutate('ap-1', claimed(claim(0, 'allow_local_prefix', 'cmd-1', 'U_ALICE')));
      await hear(ruleResolved(amendment));
      const listed: unknown[] = [];
      const grants = { create: async (input: unknown) => listed.push(input) } as unknown as GrantStore;
      const keeper = { track: () => {} } as unknown as RecordKeeper;
      const maker = new GrantMaker({
        grants,
        keeper,
        record: async () => record(),
        grantsOf: () => undefined,
        logger,
      });
      maker.follow(record());
      return { resolved: record(), listed };
    };
    const rule = 'Always allow in this workspace: npm test ...';
    // The host's word for the rule it keeps: listed as Alice's host-held grant.
    const kept = await decidedWith({ durability: 'localPersistent', rulePreview: rule });
    expect(kept.listed).toMatchObject([{ holder: 'host', grantedBy: 'U_ALICE', rulePreview: rule }]);
    // Without the rule's words the resolution stands, Alice's, but no grant is listed on a guess.
    const unread = await decidedWith({ durability: 'localPersistent' });
    expect(unread.resolved).toMatchObject({
      phase: 'resolved',
      resolution: { decision: 'approvedPolicyAmendment', slackUserId: 'U_ALICE' },
    });
    expect(unread.resolved.resolution?.amendment).toBeUndefined();
    expect(buttonsOf(unread.resolved)).toEqual([]);
    expect(textOf(unread.resolved)).not.toContain('Rule saved');
    expect(unread.listed).toEqual([]);
  });

  it('still hears of a rule not saved when the host gives no reason it can read', async () => {
    const { hear, record } = relay();
    await hear(notification('approval/requested', twoStages));
    await hear(update('policyPersistence', 0, { status: 'failed', reason: { code: 'EROFS' } }));
    expect(record().persistence).toEqual({ status: 'failed', reason: undefined });
  });

  it('reads a withdrawal by the process that asked again as a withdrawal, not a restart', async () => {
    const restarted = { hostId: 'h1', incarnation: 'inc-2' };
    const withdrawn = notification(
      'approval/resolved',
      {
        sessionId: 's-1',
        approvalId: 'ap-1',
        itemId: twoStages.itemId,
        turnId: twoStages.turnId,
        decision: 'abort',
        policyResult: 'deny',
        resolvedBy: 'user',
        stageEvidence: [],
        sourceRange: twoStages.sourceRange,
        viewCursor: 'v:s-1:50',
      },
      restarted,
    );
    // The new process asks it again under the same id, then withdraws it (its turn ended).
    const asked = relay();
    await asked.hear(notification('approval/requested', twoStages));
    await asked.hear(request(twoStages, restarted));
    await asked.hear(withdrawn);
    expect(asked.record().phase).toBe('superseded');
    expect(asked.record().supersededNote).toMatch(/withdrew/);
    // Only listed by the new process before its recovery closed it: the restart's doing still.
    const listed = relay();
    await listed.hear(notification('approval/requested', twoStages));
    await listed.hear({ ...(request(twoStages, restarted) as object), via: 'listPending' } as HostEvent);
    await listed.hear(withdrawn);
    expect(listed.record().supersededNote).toMatch(/restarted/);
  });

  it('keeps who decided a stage whose advance the host announced by asking again', async () => {
    const advance = {
      // §5.3: after a decide that was not terminal, an updated request may be all that comes.
      request: request(atStageOne),
      update: notification('approval/updated', {
        sessionId: 's-1',
        approvalId: 'ap-1',
        currentRequirementId: atStageOne.currentRequirementId,
        availableChoices: atStageOne.availableChoices,
        subject: atStageOne.subject,
        sourceRange: twoStages.sourceRange,
        viewCursor: 'v:s-1:42',
        change: {
          kind: 'stageResolved',
          requirementId: { approvalId: 'ap-1', sourceIndex: 0 },
          choiceId: 'allow_once',
          decision: 'approved',
        },
      }),
    };
    const decided = notification('approval/resolved', {
      sessionId: 's-1',
      approvalId: 'ap-1',
      itemId: twoStages.itemId,
      turnId: twoStages.turnId,
      decision: 'approved',
      policyResult: 'allow',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-2',
      stageEvidence: [],
      sourceRange: twoStages.sourceRange,
      viewCursor: 'v:s-1:50',
    });
    const alice = {
      sourceIndex: 0,
      via: 'click',
      userId: 'U_ALICE',
      choiceId: 'allow_once',
      decision: 'approved',
    };
    for (const announced of [advance.update, advance.request]) {
      const { hear, mutate, record } = relay();
      await hear(notification('approval/requested', twoStages));
      await mutate('ap-1', claimed(claim(0, 'allow_once', 'cmd-1', 'U_ALICE')));
      await hear(announced);
      expect(record().stageDecisions).toEqual([alice]);
      await mutate('ap-1', claimed(claim(1, 'allow_once', 'cmd-2', 'U_BOB')));
      await hear(decided);
      expect(record().resolution?.slackUserId).toBe('U_BOB');
      expect(record().stageDecisions).toEqual([alice]);
      expect(textOf(record())).toContain('U_ALICE');
    }
    // A stage the new request does not mark resolved, or marks resolved by policy, was not ours.
    for (const kind of ['unresolved', 'policyAllow']) {
      const { hear, mutate, record } = relay();
      await hear(notification('approval/requested', twoStages));
      await mutate('ap-1', claimed(claim(0, 'allow_once', 'cmd-1', 'U_ALICE')));
      const stages = atStageOne.subject.stages.map((stage, i) =>
        i === 0 ? { ...stage, resolution: { kind } } : stage,
      );
      await hear(request({ ...atStageOne, subject: { ...atStageOne.subject, stages } }));
      expect(record().stageDecisions).toBeUndefined();
    }
  });
});
