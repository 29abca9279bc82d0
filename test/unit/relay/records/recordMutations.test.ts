import { describe, expect, it } from 'vitest';
import { describeResolution } from '../../../../src/cards/describeDecision.js';
import { renderCard } from '../../../../src/cards/renderCard.js';
import { decisionEntry, unsettledEntry } from '../../../../src/domain/decisionEntry.js';
import type { ResolvedRecord } from '../../../../src/domain/decisionNotice.js';
import { ApprovalRecord } from '../../../../src/domain/record.js';
import {
  ApprovalRequestParams,
  ApprovalResolvedParams,
  ApprovalUpdatedParams,
} from '../../../../src/msp/protocol.js';
import { cardRevealed } from '../../../../src/relay/records/cardMutations.js';
import { claimed, decidedByClaim, unclaimed } from '../../../../src/relay/records/decisionMutations.js';
import {
  escalationFired,
  escalationStarted,
  heldElsewhere,
  newRecord,
  orphaned,
  reopened,
  resolved,
  unavailable,
  updated,
} from '../../../../src/relay/records/recordMutations.js';
import { allText } from '../../../support/cardFixtures.js';

const shell = ApprovalRequestParams.parse({
  sessionId: 's1',
  approvalId: 'a1',
  toolName: 'bash',
  rawArgs: '{"command":"npm test && git push"}',
  subject: {
    kind: 'shell',
    command: 'npm test && git push',
    stages: [
      {
        requirementId: { approvalId: 'a1', sourceIndex: 0 },
        position: 1,
        totalStages: 2,
        argv: ['npm', 'test'],
        argvComplete: true,
        resolution: { kind: 'unresolved' },
      },
      {
        requirementId: { approvalId: 'a1', sourceIndex: 1 },
        position: 2,
        totalStages: 2,
        argv: ['git', 'push'],
        argvComplete: true,
        resolution: { kind: 'unresolved' },
      },
    ],
  },
  currentRequirementId: { approvalId: 'a1', sourceIndex: 0 },
  availableChoices: [
    { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
    { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
  ],
});

/** Where and how `base` (and each record built like it) was taken in. */
const TAKEN = {
  hostId: 'h',
  incarnation: 'inc-1',
  caller: 'session:s1',
  channel: 'C1',
  route: 'test',
  sandboxMode: 'default',
  phase: 'pending',
  now: new Date('2026-11-30T10:00:00Z'),
} as const;
const base = newRecord(shell, TAKEN);
const claim = { sourceIndex: 0, userId: 'U1', choiceId: 'allow_once', commandId: 'cmd-1', claimedAt: 'now' };

/** The host resolved stage 1 and asks about stage 2. */
const stageOneResolved = ApprovalUpdatedParams.parse({
  sessionId: 's1',
  approvalId: 'a1',
  change: { kind: 'stageResolved', requirementId: { approvalId: 'a1', sourceIndex: 0 } },
  currentRequirementId: { approvalId: 'a1', sourceIndex: 1 },
  availableChoices: shell.availableChoices,
  subject: shell.subject,
});

/** A resolution credited to nobody: none of a claim's person, choice, grant or reason is on it. */
function expectNobodyCredited(resolution: ApprovalRecord['resolution']): void {
  for (const field of ['slackUserId', 'choiceId', 'via', 'voters', 'grant', 'feedback'] as const) {
    expect(resolution?.[field]).toBeUndefined();
  }
}

describe('record mutations', () => {
  it('a successor card keeps the steps fired before it, even when its next step is stored first', () => {
    const start = { startedAt: '2026-12-01T10:00:00.000Z', origin: 'a0' };
    const remind = { step: 0, action: 'remind' as const, afterMs: 1_000, at: '2026-12-01T10:00:01.000Z' };
    const mention = { step: 1, action: 'mention' as const, afterMs: 3_000, at: '2026-12-01T10:00:05.000Z' };
    // The mention fires on the successor before the carried-over start is stored.
    const firedFirst = escalationFired(mention, start)(base)!;
    const merged = escalationStarted({ ...start, fired: [remind] })(firedFirst)!;
    expect(merged.escalation?.fired.map((f) => f.action)).toEqual(['remind', 'mention']);
    expect(merged.escalation?.origin).toBe('a0');
    // In the usual order, and stored again, nothing changes.
    const usual = escalationFired(mention, start)(escalationStarted({ ...start, fired: [remind] })(base)!)!;
    expect(usual.escalation).toEqual(merged.escalation);
    expect(escalationStarted({ ...start, fired: [remind] })(usual)).toBeUndefined();
  });

  it('derives the exec capability of the stage being asked, and follows the stage as it advances', () => {
    expect(base.requiredCapabilities).toEqual(['exec:npm test']);
    expect(updated(stageOneResolved)(base)?.requiredCapabilities).toEqual(['exec:git push']);
    expect(base.caller).toBe('session:s1');
  });

  it('treats a redelivered question as no change', () => {
    expect(reopened(shell, 'inc-1', 'pending')(base)).toBeUndefined();
  });

  it('takes a question asked again as a protected write, or with other computer-use facts, as a change', () => {
    // Who may decide a protected write, and what the card marks, follow the record: a re-ask
    // that only changes these must reach it (and the card), not pass as a redelivery.
    expect(reopened({ ...shell, protectedWrite: true }, 'inc-1', 'pending')(base)?.protectedWrite).toBe(true);
    const facts = { page: { host: 'bank.example' }, steps: [{ text: 'click Transfer' }] };
    const withFacts = reopened({ ...shell, cuaCardFacts: facts }, 'inc-1', 'pending')(base)!;
    expect(withFacts.cuaCardFacts).toEqual(facts);
    const otherPage = { ...facts, page: { host: 'evil.example' } };
    expect(
      reopened({ ...shell, cuaCardFacts: otherPage }, 'inc-1', 'pending')(withFacts)?.cuaCardFacts,
    ).toEqual(otherPage);
    // The same facts again are a redelivery still.
    expect(reopened({ ...shell, cuaCardFacts: facts }, 'inc-1', 'pending')(withFacts)).toBeUndefined();
  });

  it('keeps a claim through a redelivery of the same stage, drops it when the stage advances', () => {
    const deciding = claimed(claim)(base)!;
    expect(deciding.phase).toBe('deciding');
    const next = updated(stageOneResolved)(deciding)!;
    expect(next.phase).toBe('pending');
    expect(next.claim).toBeUndefined();
    expect(next.currentRequirementId.sourceIndex).toBe(1);
  });

  it('never carries a claim over a restart recovery under the same id', () => {
    const deciding = claimed(claim)(base)!;
    const recovered = updated(
      ApprovalUpdatedParams.parse({
        sessionId: 's1',
        approvalId: 'a1',
        change: { kind: 'restartRecovered' },
        currentRequirementId: { approvalId: 'a1', sourceIndex: 0 },
        availableChoices: shell.availableChoices,
        subject: shell.subject,
      }),
    )(deciding)!;
    expect(recovered.phase).toBe('pending');
    expect(recovered.claim).toBeUndefined();
  });

  it('keeps a decision in flight on a card orphaned by its host, for the trail to name who pressed it', () => {
    const deciding = claimed(claim)(base)!;
    const gone = orphaned(deciding)!;
    expect(gone.phase).toBe('orphaned');
    // The claim itself goes (its stage's key is let go of), what it was is kept.
    expect(gone.claim).toBeUndefined();
    expect(gone.unsettledClaim).toMatchObject({ userId: 'U1', choiceId: 'allow_once', commandId: 'cmd-1' });
    expect(ApprovalRecord.parse(gone)).toEqual(gone);
    const entry = unsettledEntry({ ...gone, unsettledClaim: gone.unsettledClaim! });
    expect(entry).toMatchObject({
      kind: 'decision',
      approvalId: 'a1',
      userId: 'U1',
      via: 'click',
      choiceId: 'allow_once',
      commandId: 'cmd-1',
      decision: 'unknown',
      unsettled: 'hostLost',
      at: gone.updatedAt,
    });
    expect(entry.resolvedBy).toBeUndefined();
    const text = allText(renderCard(gone, { now: new Date() }));
    expect(text).toContain('could not keep this request');
    expect(text).toContain('The decision by U1 (Allow once)');
    expect(text).toContain('is not known');
    // Nothing in flight: nothing unsettled, and the card says nothing was decided.
    const idle = orphaned(base)!;
    expect(idle.unsettledClaim).toBeUndefined();
    expect(allText(renderCard(idle, { now: new Date() }))).toContain('Nothing was decided');
    // Asked again after all (a host thought gone), the card is open again and unsettles nothing.
    expect(reopened(shell, 'inc-2', 'pending')(gone)?.unsettledClaim).toBeUndefined();
  });

  it('keeps a claim while another client holds the session, so the host’s resolution credits it', () => {
    const deciding = claimed(claim)(base)!;
    const held = heldElsewhere(deciding)!;
    expect(held).toMatchObject({ phase: 'unavailable', unavailable: 'heldElsewhere' });
    expect(held.claim?.commandId).toBe('cmd-1');
    expect(allText(renderCard(held, { now: new Date() }))).toContain('The decision by U1 (Allow once)');
    // A decide the host refused as sessionInUse was not applied: its claim goes.
    expect(unavailable('heldElsewhere')(deciding)?.claim).toBeUndefined();
    // Listed while still held: the claim stays; listed once it lets go: deciding again, replayed.
    const listedHeld = reopened(shell, 'inc-1', 'pending', { heldElsewhere: true })(held) ?? held;
    expect(listedHeld.claim?.commandId).toBe('cmd-1');
    expect(listedHeld.phase).toBe('unavailable');
    const released = reopened(shell, 'inc-1', 'pending')(listedHeld)!;
    expect(released.phase).toBe('deciding');
    expect(released.claim?.commandId).toBe('cmd-1');
    // The host's resolution naming our commandId, heard while held, is Alice's.
    const params = ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      decision: 'approved',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-1',
    });
    expect(resolved(params, 'inc-1', new Date())(held)?.resolution).toMatchObject({
      slackUserId: 'U1',
      choiceId: 'allow_once',
    });
    // And one asking a later stage drops it: that claim was for the stage before.
    const later = { ...shell, currentRequirementId: { approvalId: 'a1', sourceIndex: 1 } };
    expect(reopened(later, 'inc-1', 'pending', { heldElsewhere: true })(held)?.claim).toBeUndefined();
  });

  it('credits the Slack user whose commandId decided it', () => {
    const deciding = claimed(claim)(base)!;
    const params = ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      decision: 'approved',
      policyResult: 'allow',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-1',
      decidedAt: '2026-11-30T10:01:00Z',
    });
    expect(resolved(params, 'inc-1', new Date())(deciding)?.resolution).toMatchObject({
      decision: 'approved',
      slackUserId: 'U1',
      decidedAt: '2026-11-30T10:01:00Z',
    });
  });

  it("measures the wait on the bot's clock, whatever the host's says; the trail keeps the host's time", () => {
    // The card was opened at 10:00:00 by the bot's clock, and the resolution heard 1.2 s later.
    const heardAt = new Date(Date.parse(base.openedAt) + 1_200);
    for (const decidedAt of [
      '2026-11-30T10:00:01Z', // whole seconds, as the protocol's example has it
      '2026-11-30T10:03:01.200Z', // a host clock 3 min ahead
      '2026-11-30T09:57:01.200Z', // and 3 min behind
    ]) {
      const params = ApprovalResolvedParams.parse({
        sessionId: 's1',
        approvalId: 'a1',
        decision: 'approved',
        resolvedBy: 'policy',
        decidedAt,
      });
      const done = resolved(params, 'inc-1', heardAt)(base)!;
      const entry = decisionEntry(done as ResolvedRecord, 60_000);
      expect({ decidedAt, waitedMs: entry.waitedMs, slaBreached: entry.slaBreached, at: entry.at }).toEqual({
        decidedAt,
        waitedMs: 1_200,
        slaBreached: false,
        at: decidedAt,
      });
    }
  });

  it('credits the clicker only with the decision of the choice pressed, never one the host put in its place', () => {
    const lie = ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      decision: 'approvedPolicyAmendment',
      policyResult: 'allow',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-1',
      amendment: { durability: 'localPersistent', rulePreview: 'Always allow: rm -rf /srv' },
    });
    const heard: unknown[] = [];
    // "Allow once" pressed, a saved rule reported.
    const amended = resolved(lie, 'inc-1', new Date(), (facts) => heard.push(facts))(claimed(claim)(base)!)!;
    expect(amended.phase).toBe('resolved');
    expect(amended.resolution).toMatchObject({ decision: 'approvedPolicyAmendment', resolvedBy: 'user' });
    expectNobodyCredited(amended.resolution);
    expect(heard).toEqual([
      {
        approvalId: 'a1',
        choiceId: 'allow_once',
        choiceDecision: 'approved',
        reported: 'approvedPolicyAmendment',
        choiceScope: 'once',
        ruleDurability: 'localPersistent',
      },
    ]);
    // A Reject reported as an approval.
    const rejecting = claimed({ ...claim, choiceId: 'abort', feedback: 'no' })(base)!;
    const approved = resolved(
      { ...lie, decision: 'approved', amendment: undefined },
      'inc-1',
      new Date(),
    )(rejecting)!;
    expect(approved.resolution).toMatchObject({ decision: 'approved' });
    expect(approved.resolution?.slackUserId).toBeUndefined();
    expect(approved.resolution?.feedback).toBeUndefined();
    // A grant's (or a timeout's) decision is not its own either when the host changed it.
    const grant = { grantId: 'g-1', grantedBy: 'U0ALICE' };
    const byGrant = claimed({ ...claim, userId: undefined, via: 'grant' as const, grant })(base)!;
    const notGrant = resolved(lie, 'inc-1', new Date())(byGrant)!;
    expect(notGrant.resolution?.via).toBeUndefined();
    expect(notGrant.resolution?.grant).toBeUndefined();
  });

  describe('a rule the host says the decision left', () => {
    /** The same question, with a session choice and a for-good one beside "Allow once". */
    const scoped = newRecord(
      {
        ...shell,
        availableChoices: [
          ...shell.availableChoices,
          {
            choiceId: 'allow_session',
            label: 'Allow for this session',
            decision: 'approvedForSession',
            scope: 'session',
          },
          {
            choiceId: 'allow_local',
            label: 'Always allow in this workspace',
            decision: 'approvedPolicyAmendment',
            scope: 'localPersistent',
          },
        ],
      },
      TAKEN,
    );
    const resolvedWith = (decision: string, durability: string | undefined) =>
      ApprovalResolvedParams.parse({
        sessionId: 's1',
        approvalId: 'a1',
        decision,
        policyResult: 'allow',
        resolvedBy: 'user',
        decidedByCommandId: 'cmd-1',
        ...(durability ? { amendment: { durability, rulePreview: 'Always allow: rm -rf /srv' } } : {}),
      });
    const LISTED = 'it is listed in `/countersign grants`';

    it('credits nobody with a rule saved for good on "Allow once", under the same decision word', () => {
      const pressed = claimed(claim)(scoped)!;
      expect(pressed.claim.scope).toBe('once');
      const heard: unknown[] = [];
      const done = resolved(resolvedWith('approved', 'localPersistent'), 'inc-1', new Date(), (facts) =>
        heard.push(facts),
      )(pressed)!;
      expect(done.phase).toBe('resolved');
      expect(done.resolution).toMatchObject({ decision: 'approved', resolvedBy: 'user' });
      expectNobodyCredited(done.resolution);
      expect(heard).toEqual([
        {
          approvalId: 'a1',
          choiceId: 'allow_once',
          choiceDecision: 'approved',
          reported: 'approved',
          choiceScope: 'once',
          ruleDurability: 'localPersistent',
        },
      ]);
      // The card shows the rule as the host's own, and says nothing of a listing there is not.
      const text = allText(renderCard(done, { now: new Date() }));
      expect(text).toContain('*Decided by:* user (another client)');
      expect(text).toContain('*Decision:* Approved, and the host saved a rule too');
      expect(text).not.toContain('this request only');
      expect(text).toContain('*Rule saved* (saved in this workspace): Always allow: rm -rf /srv');
      expect(text).not.toContain('U1');
      expect(text).not.toContain(LISTED);
      // And the audit names nobody for it.
      const entry = decisionEntry(done as ResolvedRecord, undefined);
      expect(entry.userId).toBeUndefined();
      expect(entry.choiceId).toBe('');
      expect(entry.via).toBe('otherClient');
      // Any rule on "Allow once", even one for the session only.
      const sessionRule = resolved(resolvedWith('approved', 'session'), 'inc-1', new Date())(pressed)!;
      expect(sessionRule.resolution?.slackUserId).toBeUndefined();
    });

    it('credits nobody with a rule kept for good on a session choice, nor the other way round', () => {
      const session = claimed({ ...claim, choiceId: 'allow_session' })(scoped)!;
      const forGood = resolved(
        resolvedWith('approvedForSession', 'localPersistent'),
        'inc-1',
        new Date(),
      )(session)!;
      expect(forGood.resolution?.slackUserId).toBeUndefined();
      expect(forGood.resolution?.choiceId).toBeUndefined();
      const forGoodText = allText(renderCard(forGood, { now: new Date() }));
      expect(forGoodText).not.toContain(LISTED);
      expect(forGoodText).not.toContain('U1');
      const local = claimed({ ...claim, choiceId: 'allow_local' })(scoped)!;
      const sessionOnly = resolved(
        resolvedWith('approvedPolicyAmendment', 'session'),
        'inc-1',
        new Date(),
      )(local)!;
      expect(sessionOnly.resolution?.slackUserId).toBeUndefined();
      // A durability the protocol does not name is no choice's either.
      const unnamed = resolved(resolvedWith('approvedForSession', 'forever'), 'inc-1', new Date())(session)!;
      expect(unnamed.resolution?.slackUserId).toBeUndefined();
    });

    it('credits the presser with the rule their choice asks for, or with none reported', () => {
      for (const [choiceId, decision, durability] of [
        ['allow_session', 'approvedForSession', 'session'],
        ['allow_local', 'approvedPolicyAmendment', 'localPersistent'],
      ] as const) {
        const done = resolved(
          resolvedWith(decision, durability),
          'inc-1',
          new Date(),
        )(claimed({ ...claim, choiceId })(scoped)!)!;
        expect(done.resolution).toMatchObject({ slackUserId: 'U1', choiceId, amendment: { durability } });
        expect(allText(renderCard(done, { now: new Date() }))).toContain(LISTED);
      }
      // No amendment (none sent, or one dropped unread): the choice as pressed.
      for (const [choiceId, decision] of [
        ['allow_once', 'approved'],
        ['allow_session', 'approvedForSession'],
      ] as const) {
        const done = resolved(
          resolvedWith(decision, undefined),
          'inc-1',
          new Date(),
        )(claimed({ ...claim, choiceId })(scoped)!)!;
        expect(done.resolution?.slackUserId).toBe('U1');
      }
    });

    it('reads the scope of a claim stored before it was kept from the question it was pressed on', () => {
      const { scope: _scope, ...older } = claimed({ ...claim, choiceId: 'allow_session' })(scoped)!.claim;
      const stored = { ...scoped, phase: 'deciding' as const, claim: older };
      const kept = resolved(resolvedWith('approvedForSession', 'session'), 'inc-1', new Date())(stored)!;
      expect(kept.resolution?.slackUserId).toBe('U1');
      const forGood = resolved(
        resolvedWith('approvedForSession', 'localPersistent'),
        'inc-1',
        new Date(),
      )(stored)!;
      expect(forGood.resolution?.slackUserId).toBeUndefined();
      // A claim whose choice the record no longer offers: no rule is credited to it.
      const gone = { ...stored, claim: { ...older, choiceId: 'gone' } };
      const unknown = resolved(resolvedWith('approvedForSession', 'session'), 'inc-1', new Date())(gone)!;
      expect(unknown.resolution?.slackUserId).toBeUndefined();
    });
  });

  describe('a question the host changed while a pressed choice was being decided', () => {
    const rejecting = claimed({ ...claim, choiceId: 'abort', feedback: 'no' })(base)!;
    /** The same stage asked again, its Reject now an approval. */
    const swapped = {
      ...shell,
      availableChoices: [
        { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
        { choiceId: 'abort', label: 'Allow', decision: 'approved', scope: 'once' },
      ],
    };
    const approvedByOurCommand = ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      decision: 'approved',
      policyResult: 'allow',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-1',
    });

    it('credits nobody with a Reject the host turned into an approval, asked again or updated', () => {
      const reasked = reopened(swapped, 'inc-1', 'pending', { asked: true })(rejecting)!;
      const updatedSwap = updated(
        ApprovalUpdatedParams.parse({
          sessionId: 's1',
          approvalId: 'a1',
          change: { kind: 'choicesChanged' },
          currentRequirementId: swapped.currentRequirementId,
          availableChoices: swapped.availableChoices,
          subject: swapped.subject,
        }),
      )(rejecting)!;
      for (const inFlight of [reasked, updatedSwap]) {
        const heard: unknown[] = [];
        const done = resolved(approvedByOurCommand, 'inc-1', new Date(), (facts) => heard.push(facts))(
          inFlight,
        )!;
        expect(done.resolution).toMatchObject({ decision: 'approved', resolvedBy: 'user' });
        expectNobodyCredited(done.resolution);
        expect(allText(renderCard(done, { now: new Date() }))).not.toContain('U1');
        expect(heard).toEqual([
          {
            approvalId: 'a1',
            choiceId: 'abort',
            choiceDecision: 'abort',
            reported: 'approved',
            askedOtherwise: true,
          },
        ]);
        // Nor when the host's answer to a replay is all that says it was applied.
        const replayed = decidedByClaim('cmd-1', new Date())(inFlight)!;
        expect(replayed.phase).toBe('resolved');
        expect(replayed.resolution?.slackUserId).toBeUndefined();
        expect(replayed.resolution?.choiceId).toBeUndefined();
      }
      // Nor as the decision of its stage, should the host move on to the next one.
      const moved = updated(stageOneResolved)(updatedSwap)!;
      expect(moved.stageDecisions).toBeUndefined();
    });

    it('credits nobody with an approval of a command other than the one they were shown', () => {
      const approving = claimed(claim)(base)!;
      const otherCommand = {
        ...shell.subject,
        command: 'rm -rf /srv && git push',
        stages: shell.subject.stages!.map((s, i) => (i === 0 ? { ...s, argv: ['rm', '-rf', '/srv'] } : s)),
      };
      const reasked = reopened({ ...shell, subject: otherCommand }, 'inc-1', 'pending')(approving)!;
      expect(reasked.claim?.commandId).toBe('cmd-1');
      const done = resolved(approvedByOurCommand, 'inc-1', new Date())(reasked)!;
      expect(done.resolution).toMatchObject({ decision: 'approved' });
      expect(done.resolution?.slackUserId).toBeUndefined();
      // A quorum's votes were cast on the command shown: not credited with the other one.
      const byQuorum = claimed({ ...claim, voters: ['U1', 'U2'] })(base)!;
      const quorumDone = resolved(
        approvedByOurCommand,
        'inc-1',
        new Date(),
      )(reopened({ ...shell, subject: otherCommand }, 'inc-1', 'pending')(byQuorum)!)!;
      expect(quorumDone.resolution?.voters).toBeUndefined();
      expect(quorumDone.resolution?.slackUserId).toBeUndefined();
    });

    it('credits nobody with a stage the host marks resolved in the very frame that asks it otherwise', () => {
      const forcePush = (s: NonNullable<typeof shell.subject.stages>[number]) =>
        s.requirementId.sourceIndex === 1 ? { ...s, argv: ['git', 'push', '--force'] } : s;
      const rmSrv = (s: NonNullable<typeof shell.subject.stages>[number]) =>
        s.requirementId.sourceIndex === 0 ? { ...s, argv: ['rm', '-rf', '/srv'] } : s;
      const allowOnce = { kind: 'allowOnce' } as const;
      // The last stage, marked resolved as our choice decided it, but about another command.
      const lastStage = claimed({ ...claim, sourceIndex: 1 })(updated(stageOneResolved)(base)!)!;
      const markedOtherwise = updated(
        ApprovalUpdatedParams.parse({
          ...stageOneResolved,
          change: {
            kind: 'stageResolved',
            requirementId: stageOneResolved.currentRequirementId,
            choiceId: 'allow_once',
            decision: 'approved',
          },
          subject: {
            ...shell.subject,
            command: 'npm test && git push --force',
            stages: shell.subject.stages!.map((s) => ({ ...forcePush(s), resolution: allowOnce })),
          },
        }),
      )(lastStage)!;
      expect(markedOtherwise.stageDecisions).toBeUndefined();
      const done = resolved(approvedByOurCommand, 'inc-1', new Date())(markedOtherwise)!;
      expect(done.resolution?.slackUserId).toBeUndefined();
      expect(allText(renderCard(markedOtherwise, { now: new Date() }))).not.toMatch(/Stage \d of \d.*U1/);
      expect(allText(renderCard(done, { now: new Date() }))).not.toContain('U1');
      // The first stage, resolved with another command in its place as the host moves on, by an
      // update or by the request asking the next stage.
      const approving = claimed(claim)(base)!;
      const otherFirst = {
        ...shell.subject,
        command: 'rm -rf /srv && git push',
        stages: shell.subject.stages!.map((s) =>
          s.requirementId.sourceIndex === 0 ? { ...rmSrv(s), resolution: allowOnce } : s,
        ),
      };
      const movedOn = updated(
        ApprovalUpdatedParams.parse({
          ...stageOneResolved,
          change: { ...stageOneResolved.change, choiceId: 'allow_once', decision: 'approved' },
          subject: otherFirst,
        }),
      )(approving)!;
      expect(movedOn.stageDecisions).toBeUndefined();
      const nextAsked = { ...shell, currentRequirementId: stageOneResolved.currentRequirementId };
      expect(
        reopened({ ...nextAsked, subject: otherFirst }, 'inc-1', 'pending')(approving)?.stageDecisions,
      ).toBe(undefined);
      // The same command moving on is still the stage its person decided.
      const asked = {
        ...shell.subject,
        stages: shell.subject.stages!.map((s) =>
          s.requirementId.sourceIndex === 0 ? { ...s, resolution: allowOnce } : s,
        ),
      };
      expect(
        reopened({ ...nextAsked, subject: asked }, 'inc-1', 'pending')(approving)?.stageDecisions,
      ).toMatchObject([{ sourceIndex: 0, userId: 'U1', choiceId: 'allow_once', decision: 'approved' }]);
    });

    it('still credits the person whose question stood until it was decided', () => {
      // A redelivery of the same question changes nothing, and the claim stands.
      expect(reopened(shell, 'inc-1', 'pending', { asked: true })(rejecting)).toBeUndefined();
      const rejected = resolved(
        { ...approvedByOurCommand, decision: 'abort', policyResult: 'deny' },
        'inc-1',
        new Date(),
      )(rejecting)!;
      expect(rejected.resolution).toMatchObject({ decision: 'abort', slackUserId: 'U1', choiceId: 'abort' });
      expect(decidedByClaim('cmd-1', new Date())(rejecting)?.resolution).toMatchObject({
        decision: 'abort',
        slackUserId: 'U1',
      });
      // A claim an earlier release stored keeps neither what was pressed nor the question: as before.
      const olderClaim: ApprovalRecord = { ...base, phase: 'deciding', claim };
      expect(resolved(approvedByOurCommand, 'inc-1', new Date())(olderClaim)?.resolution).toMatchObject({
        decision: 'approved',
        slackUserId: 'U1',
      });
      // The host marks the last stage resolved before it resolves the approval (§9): its progress,
      // not another question.
      const lastStage = claimed({ ...claim, sourceIndex: 1 })(updated(stageOneResolved)(base)!)!;
      const marked = updated(
        ApprovalUpdatedParams.parse({
          ...stageOneResolved,
          change: { kind: 'stageResolved', requirementId: stageOneResolved.currentRequirementId },
          subject: {
            ...shell.subject,
            stages: shell.subject.stages!.map((s) => ({ ...s, resolution: { kind: 'allowOnce' } })),
          },
        }),
      )(lastStage)!;
      expect(marked.claim?.commandId).toBe('cmd-1');
      expect(resolved(approvedByOurCommand, 'inc-1', new Date())(marked)?.resolution).toMatchObject({
        decision: 'approved',
        slackUserId: 'U1',
        choiceId: 'allow_once',
      });
      // And the stage a person decided is kept for the audit as it was.
      const approving = claimed(claim)(base)!;
      expect(
        updated({ ...stageOneResolved, change: { ...stageOneResolved.change, decision: 'approved' } })(
          approving,
        )?.stageDecisions,
      ).toMatchObject([{ sourceIndex: 0, userId: 'U1', choiceId: 'allow_once', decision: 'approved' }]);
    });
  });

  it('reads a recovery abort of an approval from an earlier host process as superseded', () => {
    const params = ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      decision: 'abort',
      policyResult: 'deny',
      resolvedBy: 'user',
    });
    const recovered = resolved(params, 'inc-2', new Date())(base);
    expect(recovered?.phase).toBe('superseded');
    expect(recovered?.supersededNote).toMatch(/restarted/);
    // From the host process that asked it, with no deciding command: withdrawn, not rejected.
    const withdrawn = resolved(params, 'inc-1', new Date())(base);
    expect(withdrawn?.phase).toBe('superseded');
    expect(withdrawn?.supersededNote).toMatch(/withdrew/);
    // Re-listed by the new process before the recovery closed it: still the restart's doing.
    const relisted = reopened(shell, 'inc-2', 'pending')(base)!;
    expect(resolved(params, 'inc-2', new Date())(relisted)?.supersededNote).toMatch(/restarted/);
  });

  it('reads an abort answering our own claim as the rejection it is', () => {
    const deciding = claimed({ ...claim, choiceId: 'abort', feedback: 'no' })(base)!;
    const params = ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      decision: 'abort',
      policyResult: 'deny',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-1',
    });
    expect(resolved(params, 'inc-1', new Date())(deciding)?.resolution).toMatchObject({
      decision: 'abort',
      slackUserId: 'U1',
      feedback: 'no',
    });
    // A rejection by another client (its own commandId) is a rejection too.
    const theirs = resolved({ ...params, decidedByCommandId: 'cmd-other' }, 'inc-1', new Date())(base);
    expect(theirs?.phase).toBe('resolved');
  });

  /** The host's word that it could not save the rule a decision asked for. */
  function failedRuleSave() {
    return ApprovalUpdatedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      change: { kind: 'policyPersistence', status: 'failed', reason: 'disk full' },
      currentRequirementId: { approvalId: 'a1', sourceIndex: 0 },
      availableChoices: shell.availableChoices,
      subject: shell.subject,
    });
  }

  /** A resolution that asked for a rule, with `amendment` when given. */
  function ruleResolution(amendment?: { durability: string; rulePreview: string }) {
    return ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      decision: 'approvedPolicyAmendment',
      policyResult: 'allow',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-9',
      ...(amendment ? { amendment } : {}),
    });
  }

  it('keeps a failed rule save on the card whether it comes before or after the resolution', () => {
    const failed = failedRuleSave();
    const resolution = ruleResolution({ durability: 'localPersistent', rulePreview: 'npm test' });
    const after = updated(failed)(resolved(resolution, 'inc-1', new Date())(base)!);
    expect(after?.resolution?.amendment).toMatchObject({
      persistence: 'failed',
      persistenceReason: 'disk full',
    });
    // Before the resolution the update still refreshes the question it carries.
    const moved = updated({ ...failed, subject: { ...shell.subject, command: 'npm ci && git push' } })(base)!;
    expect(moved.subject.command).toBe('npm ci && git push');
    expect(moved.persistence).toEqual({ status: 'failed', reason: 'disk full' });
    const before = resolved(resolution, 'inc-1', new Date())(updated(failed)(base)!);
    expect(before?.resolution?.amendment).toMatchObject({
      persistence: 'failed',
      persistenceReason: 'disk full',
    });
  });

  it("keeps no host status longer than any status is: a long one is stored as 'unknown'", () => {
    const failed = failedRuleSave();
    const long = { ...failed, change: { ...failed.change, status: `failed${'x'.repeat(100_000)}` } };
    expect(updated(long)(base)?.persistence).toEqual({ status: 'unknown', reason: 'disk full' });
    const resolution = ruleResolution({ durability: 'localPersistent', rulePreview: 'npm test' });
    const after = updated(long)(resolved(resolution, 'inc-1', new Date())(base)!);
    expect(after?.resolution?.amendment?.persistence).toBe('unknown');
  });

  it('says a rule was not saved when the resolution carries no amendment, in either order', () => {
    const failed = failedRuleSave();
    // No amendment: the host sent none, or one the bot could not read and dropped.
    const resolution = ruleResolution();
    // As the store keeps it: only what the record's schema reads survives.
    const apply = (mutation: (r: ApprovalRecord) => ApprovalRecord | undefined, record: ApprovalRecord) =>
      ApprovalRecord.parse(JSON.parse(JSON.stringify(mutation(record) ?? record)));
    const resolve = resolved(resolution, 'inc-1', new Date());
    const before = apply(resolve, apply(updated(failed), base));
    const after = apply(updated(failed), apply(resolve, base));
    for (const record of [before, after]) {
      expect(record.resolution?.amendment).toBeUndefined();
      expect(describeResolution(record.resolution!)).toBe(
        'Approved (a rule was asked for; it was not saved)',
      );
      const text = allText(renderCard(record, { now: new Date() }));
      expect(text).toContain(':warning: *Rule not saved* (disk full)');
      expect(text).not.toContain('a rule was saved');
    }
    // The same report again changes nothing.
    expect(updated(failed)(after)).toBeUndefined();
  });

  it('gives the question back only for the claim that failed', () => {
    const deciding = claimed(claim)(base)!;
    expect(unclaimed('someone-else')(deciding)).toBeUndefined();
    expect(unclaimed('cmd-1')(deciding)).toMatchObject({ phase: 'pending', claim: undefined });
  });

  it('refuses a claim for a stage that is no longer the current one, or a choice no longer offered', () => {
    const atStage1 = { ...base, currentRequirementId: { approvalId: 'a1', sourceIndex: 1 } };
    expect(claimed(claim)(atStage1)).toBeUndefined();
    expect(claimed({ ...claim, choiceId: 'allow_forever' })(base)).toBeUndefined();
    const taken = claimed(claim)(base)!;
    expect(claimed({ ...claim, userId: 'U2', commandId: 'cmd-2' })(taken)).toBeUndefined();
  });

  it('remembers which stage a grant decided, and names the grant on the resolution it made', () => {
    const grant = { grantId: 'g-1', grantedBy: 'U0ALICE', expiresAt: '2026-12-01T18:00:00Z' };
    const byGrant = claimed({ ...claim, userId: undefined, via: 'grant' as const, grant })(base)!;
    const advanced = updated(stageOneResolved)(byGrant)!;
    expect(advanced.grantUses).toEqual([{ ...grant, sourceIndex: 0 }]);
    expect(advanced.claim).toBeUndefined();
    // A person's click on the next stage adds nothing.
    expect(updated(stageOneResolved)(claimed(claim)(base)!)?.grantUses).toBeUndefined();

    const done = ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      decision: 'approved',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-1',
    });
    expect(resolved(done, 'inc-1', new Date())(byGrant)?.resolution).toMatchObject({ via: 'grant', grant });
  });

  it('keeps who decided an earlier stage, through a grant deciding the last one', () => {
    const done = ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a1',
      decision: 'approved',
      resolvedBy: 'user',
      decidedByCommandId: 'cmd-2',
    });
    const quorum = { ...claim, voters: ['U0', 'U1'], stoodInFor: { U0: 'U9' } };
    const advanced = updated({
      ...stageOneResolved,
      change: { ...stageOneResolved.change, choiceId: 'allow_once' },
    })(claimed(quorum)(base)!)!;
    const alice = {
      sourceIndex: 0,
      via: 'click',
      userId: 'U1',
      voters: ['U0', 'U1'],
      stoodInFor: { U0: 'U9' },
      choiceId: 'allow_once',
      decision: 'approved',
    };
    expect(advanced.stageDecisions).toEqual([alice]);
    const grant = { grantId: 'g-1', grantedBy: 'U0ALICE' };
    const lastStage = {
      ...claim,
      sourceIndex: 1,
      commandId: 'cmd-2',
      userId: undefined,
      via: 'grant' as const,
      grant,
    };
    const byGrant = claimed(lastStage)(advanced)!;
    // The host may report the last stage resolved too: the resolution names that one itself.
    const lastReported = updated({
      ...stageOneResolved,
      change: { kind: 'stageResolved', requirementId: { approvalId: 'a1', sourceIndex: 1 } },
    })(byGrant)!;
    expect(lastReported.stageDecisions).toHaveLength(2);
    for (const before of [byGrant, lastReported]) {
      const closed = resolved(done, 'inc-1', new Date())(before)!;
      expect(closed.resolution).toMatchObject({ via: 'grant', grant });
      expect(closed.stageDecisions).toEqual([alice]);
    }
    // A stage the host says another choice (or decision) resolved was not decided as we asked.
    for (const change of [{ choiceId: 'abort' }, { decision: 'approvedPolicyAmendment' }]) {
      const other = { ...stageOneResolved, change: { ...stageOneResolved.change, ...change } };
      expect(updated(other)(claimed(claim)(base)!)?.stageDecisions).toBeUndefined();
    }
    // Nor is a stage resolved with no claim of ours on it.
    expect(updated(stageOneResolved)(base)?.stageDecisions).toBeUndefined();
  });

  it('shows a deferred card once, and leaves a shown one alone', () => {
    const deferred = { ...base, slack: { ...base.slack, deferred: true } };
    expect(cardRevealed(deferred)?.slack).toEqual(base.slack);
    expect(cardRevealed(base)).toBeUndefined();
  });
});
