// The Decider's flows against in-memory fakes of every port: the record keeper (claims and record
// changes), the record reader, the host and the replica that owns it. No Redis, no Slack, no
// process: what is asserted is what the Decider itself does with what each port says.

import pino from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { describe, expect, it } from 'vitest';
import type { Refused } from '../../../../src/domain/authorization.js';
import { ApprovalRecord, type Claim } from '../../../../src/domain/record.js';
import { HostGoneError, MspError, RequestTimeoutError } from '../../../../src/msp/errors.js';
import type { ApprovalHost } from '../../../../src/msp/events.js';
import type { DecideParams, DecideResult } from '../../../../src/msp/protocol.js';
import {
  Decider,
  type DeciderOptions,
  type DecisionKeeper,
  type DecisionOutcome,
  type DecisionRequest,
} from '../../../../src/relay/deciding/decider.js';
import { claimed } from '../../../../src/relay/records/decisionMutations.js';
import {
  type ClaimOutcome,
  FencedError,
  type Mutation,
  type WriteOptions,
} from '../../../../src/store/approvalStore.js';
import { FAKE_GITHUB_TOKEN } from '../../../support/fakeSecrets.js';
import { captureLogger } from '../../../support/logCapture.js';
import { sampleRecord } from '../../../support/sampleRecord.js';
import { until } from '../../../support/until.js';

const logger = pino({ level: 'silent' });
const NOW = new Date('2026-11-30T12:00:00Z');
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const CHOICES: ApprovalRecord['availableChoices'] = [
  { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
  { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
];

/** The record keeper and the reader over one in-memory table, versions counted as Redis does. */
class Records implements DecisionKeeper {
  readonly table = new Map<string, ApprovalRecord>();
  claims: Claim[] = [];
  /** Answers the next claim with this instead of storing it (another replica, a lost race). */
  nextClaim: ClaimOutcome | undefined;

  put(record: ApprovalRecord): ApprovalRecord {
    this.table.set(record.approvalId, record);
    return record;
  }

  async get(approvalId: string): Promise<ApprovalRecord | undefined> {
    return this.table.get(approvalId);
  }

  async claim(checked: ApprovalRecord, claim: Claim): Promise<ClaimOutcome> {
    this.claims.push(claim);
    const forced = this.nextClaim;
    this.nextClaim = undefined;
    if (forced) return forced;
    const stored = this.table.get(checked.approvalId);
    if (!stored) return { kind: 'gone' };
    if (stored.phase === 'deciding') return { kind: 'held', holder: stored.claim };
    if (stored.version !== checked.version) return { kind: 'stale' };
    const next = claimed(claim)(checked);
    if (!next) return { kind: 'stale' };
    return { kind: 'claimed', record: this.put({ ...next, version: stored.version + 1 }) };
  }

  /** The lease of the host ran out: a write that acts for it is refused, as the store refuses it. */
  leaseGone = false;

  async mutateAndSync(
    approvalId: string,
    mutation: Mutation,
    options?: WriteOptions,
  ): Promise<ApprovalRecord | undefined> {
    const stored = this.table.get(approvalId);
    if (options?.forHost && this.leaseGone && stored) throw new FencedError(stored.hostId);
    const next = stored && mutation(stored);
    return next ? this.put({ ...next, version: stored.version + 1 }) : stored;
  }
}

type Answer = DecideResult | Error;

/** A host that answers each decide with the next scripted answer (accepted, when none is left). */
class Host implements ApprovalHost {
  readonly hostId = 'default';
  readonly incarnation = 'inc-1';
  decided: DecideParams[] = [];
  refreshed: string[] = [];
  up = true;
  constructor(private readonly answers: Answer[] = []) {}
  isUp() {
    return this.up;
  }
  refreshSession(sessionId: string) {
    this.refreshed.push(sessionId);
  }
  refreshAll() {}
  async decide(params: DecideParams): Promise<DecideResult> {
    this.decided.push(params);
    const answer = this.answers.shift() ?? {
      commandId: params.commandId,
      status: 'accepted',
      terminal: false,
    };
    if (answer instanceof Error) throw answer;
    return answer;
  }
}

function hostError(kind: string, data: Record<string, unknown> = {}): MspError {
  return new MspError({ code: -32000, message: kind, data: { kind, ...data } });
}

function setup(
  options: Partial<DeciderOptions> & { answers?: Answer[]; record?: Partial<ApprovalRecord> } = {},
) {
  const records = new Records();
  const host = new Host(options.answers);
  const record = records.put(sampleRecord('a-1', { availableChoices: CHOICES, ...options.record }));
  const commandIds: string[] = [];
  const decider = new Decider({
    keeper: records,
    store: records,
    host: (hostId) => (hostId === host.hostId ? host : undefined),
    logger,
    newCommandId: () => {
      const id = uuidv7();
      commandIds.push(id);
      return id;
    },
    now: () => NOW,
    random: () => 0,
    unansweredBackoff: { initialMs: 1, maxMs: 1 },
    ...options,
  });
  return { records, host, record, decider, commandIds };
}

function click(record: ApprovalRecord, extra: Partial<DecisionRequest> = {}): DecisionRequest {
  return {
    record,
    sourceIndex: record.currentRequirementId.sourceIndex,
    choiceId: 'allow_once',
    by: { via: 'click', userId: 'U0ALICE' },
    warranted: true,
    ...extra,
  };
}

describe('Decider', () => {
  it('claims the stage, then sends the host the current requirement, the choice and a fresh UUIDv7 commandId', async () => {
    const { records, host, record, decider, commandIds } = setup();
    let sent = 0;
    const outcome = await decider.decide(click(record, { onSent: () => sent++ }));

    expect(outcome).toEqual({ kind: 'decided', terminal: false });
    expect(commandIds).toHaveLength(1);
    expect(commandIds[0]).toMatch(UUID_V7);
    expect(host.decided).toEqual([
      {
        sessionId: 's-1',
        approvalId: 'a-1',
        commandId: commandIds[0],
        requirementId: { approvalId: 'a-1', sourceIndex: 0 },
        choiceId: 'allow_once',
      },
    ]);
    expect(sent).toBe(1);
    // The claim was stored before the decide left, with who made it and the same commandId.
    const stored = records.table.get('a-1')!;
    expect(stored.phase).toBe('deciding');
    expect(stored.claim).toMatchObject({
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: commandIds[0],
      userId: 'U0ALICE',
      via: 'click',
      claimedAt: NOW.toISOString(),
    });
  });

  it('sends feedback only with a choice that accepts it', async () => {
    const { host, record, decider } = setup();
    await decider.decide(click(record, { choiceId: 'abort', feedback: 'not now' }));
    expect(host.decided[0]).toMatchObject({ choiceId: 'abort', feedback: 'not now' });

    const other = setup();
    await other.decider.decide(click(other.record, { feedback: 'ignored' }));
    expect(other.host.decided[0]).not.toHaveProperty('feedback');
    expect(other.records.table.get('a-1')!.claim?.feedback).toBeUndefined();
  });

  it('asks again with the same commandId while the host is up but leaves the decide unanswered', async () => {
    const timeout = () => new RequestTimeoutError('approval/decide', 10);
    const { records, host, record, decider, commandIds } = setup({ answers: [timeout(), timeout()] });
    let sent = 0;
    const outcome = await decider.decide(click(record, { onSent: () => sent++ }));

    expect(outcome).toEqual({ kind: 'decided', terminal: false });
    expect(commandIds).toHaveLength(1);
    expect(host.decided).toHaveLength(3);
    expect(host.decided.map((p) => p.commandId)).toEqual([commandIds[0], commandIds[0], commandIds[0]]);
    expect(sent).toBe(3);
    // The card says it is still being asked: the count of unanswered asks is on the claim.
    expect(records.table.get('a-1')!.claim?.unanswered).toBe(2);
  });

  it('keeps the claim when the host goes away mid-decide: it is replayed when the host is back', async () => {
    const { records, record, decider } = setup({ answers: [new HostGoneError()] });
    expect(await decider.decide(click(record))).toEqual({ kind: 'hostUnavailable' });
    expect(records.table.get('a-1')!.phase).toBe('deciding');
  });

  it('tells what a replay or a settle carried out, once the host accepted it, and waits for it on drain', async () => {
    const replayed: Array<[string, string]> = [];
    let finish = () => {};
    const { records, host, record, decider } = setup({
      replayed: (r, c) => {
        replayed.push([r.approvalId, c.commandId]);
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
    });
    const claim: Claim = {
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: 'cmd-grant',
      via: 'grant',
      grant: { grantId: 'g-1', grantedBy: 'U0ALICE' },
      claimedAt: NOW.toISOString(),
    };
    const deciding = records.put({ ...record, phase: 'deciding', claim, version: 2 });
    decider.replay(deciding);
    await until(() => replayed.length === 1);
    expect(replayed).toEqual([['a-1', 'cmd-grant']]);
    // drain() waits for what the replay's outcome set off.
    let drained = false;
    const draining = decider.drain().then(() => {
      drained = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(drained).toBe(false);
    finish();
    await draining;
    expect(host.decided.map((p) => p.commandId)).toEqual(['cmd-grant']);

    // Refused by the host: nothing is told. Settled with an ack (the host had applied it): it is.
    const other = setup({
      answers: [hostError('approvalChoiceInvalid')],
      replayed: async (r, c) => {
        replayed.push([r.approvalId, c.commandId]);
      },
    });
    const held = other.records.put({ ...other.record, phase: 'deciding', claim, version: 2 });
    other.decider.replay(held);
    await until(() => other.host.decided.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(replayed).toHaveLength(1);
    other.decider.settle(held);
    await until(() => replayed.length === 2);
  });

  it('tells what a replay or a settle the host did not take dropped; not one kept for the host', async () => {
    const claim: Claim = {
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: 'cmd-grant',
      via: 'grant',
      grant: { grantId: 'g-1', grantedBy: 'U0ALICE', usesLeft: 1 },
      claimedAt: NOW.toISOString(),
    };
    const told = async (answer: Answer | undefined, how: 'replay' | 'settle') => {
      const seen: string[] = [];
      const { records, record, decider } = setup({
        answers: answer ? [answer] : [],
        replayed: async () => {
          seen.push('replayed');
        },
        replayDropped: async (r, c) => {
          seen.push(`dropped ${r.approvalId} ${c.commandId}`);
        },
      });
      decider[how](records.put({ ...record, phase: 'deciding', claim, version: 2 }));
      await decider.drain();
      return seen;
    };
    // The host no longer asks, or someone else decided first: the claim is given back.
    expect(await told(hostError('approvalChoiceInvalid'), 'replay')).toEqual(['dropped a-1 cmd-grant']);
    expect(await told(hostError('approvalAlreadyResolved'), 'settle')).toEqual(['dropped a-1 cmd-grant']);
    // Kept for when the host is back, or taken: not dropped.
    expect(await told(new HostGoneError(), 'replay')).toEqual([]);
    expect(await told(undefined, 'replay')).toEqual(['replayed']);
  });

  it('a decision carried out again with its commandId is sent again, never claimed anew', async () => {
    const { records, host, record, decider, commandIds } = setup();
    const claim: Claim = {
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: 'cmd-earlier',
      via: 'click',
      userId: 'U0ALICE',
      claimedAt: NOW.toISOString(),
    };
    const claimedBefore = records.put({ ...record, phase: 'deciding', claim, version: 2 });
    const outcome = await decider.decide(click(claimedBefore, { commandId: 'cmd-earlier' }));

    expect(outcome).toEqual({ kind: 'decided', terminal: false });
    expect(records.claims).toEqual([]);
    expect(commandIds).toEqual([]);
    expect(host.decided.map((p) => p.commandId)).toEqual(['cmd-earlier']);
  });

  describe('a claim kept for a replay whose stage the host asked otherwise since', () => {
    /** Alice's "Allow once", claimed on the record as it asked then, kept for a replay. */
    const pressed = (records: Records, record: ApprovalRecord): ApprovalRecord => {
      const claim: Claim = {
        sourceIndex: 0,
        choiceId: 'allow_once',
        commandId: 'cmd-alice',
        via: 'click',
        userId: 'U0ALICE',
        claimedAt: NOW.toISOString(),
      };
      return records.put({ ...claimed(claim)(record)!, version: 2 });
    };

    it('is not sent when the same stage now asks another command: it is given back to people', async () => {
      const { records, host, record, decider } = setup();
      const deciding = pressed(records, record);
      // The host asks the same approval and stage again, about another file and as a protected write.
      const reasked = records.put({
        ...deciding,
        subject: { kind: 'fileAccess', path: '/srv/prod/.env', access: 'write' },
        protectedWrite: true,
        version: 3,
      });
      expect(reasked.phase).toBe('deciding');
      decider.replay(reasked);
      await decider.drain();
      expect(host.decided).toEqual([]);
      const after = records.table.get('a-1')!;
      expect(after.phase).toBe('pending');
      expect(after.claim).toBeUndefined();
    });

    it('is not sent when the stage no longer offers its choice, even on a claim that kept no question', async () => {
      const { records, host, record, decider } = setup();
      // Stored by an earlier release: what it was pressed on is not known (askedOtherwise is false).
      const { question: _q, decision: _d, ...kept } = pressed(records, record).claim!;
      const deciding = records.put({ ...record, phase: 'deciding', claim: kept, version: 2 });
      const reasked = records.put({ ...deciding, availableChoices: [CHOICES[1]!], version: 3 });
      // Finished as a forwarded decision would be by the new owner: never claimed anew, nor sent.
      const outcome = await decider.decide(click(reasked, { commandId: 'cmd-alice' }));
      expect(outcome).toEqual({ kind: 'stale' });
      expect(host.decided).toEqual([]);
      expect(records.claims).toEqual([]);
      expect(records.table.get('a-1')).toMatchObject({ phase: 'pending', claim: undefined });
    });

    it('is sent when the host asks the very same question again', async () => {
      const { records, host, record, decider } = setup();
      const deciding = pressed(records, record);
      decider.replay(records.put({ ...deciding, version: 3 }));
      await decider.drain();
      expect(host.decided.map((p) => p.commandId)).toEqual(['cmd-alice']);
    });
  });

  it('asks a host that left the decide unanswered again only while it asks what was pressed', async () => {
    const { records, host, record, decider } = setup({
      answers: [new RequestTimeoutError('approval/decide', 10)],
    });
    const asking = host.decide.bind(host);
    host.decide = (params) => {
      // While the first ask is out, the host asks the same stage about another file, as a
      // protected write: asked again, Alice's "Allow once" would answer that.
      const claimedNow = records.table.get('a-1')!;
      records.put({
        ...claimedNow,
        subject: { kind: 'fileAccess', path: '/srv/prod/.env', access: 'write' },
        protectedWrite: true,
        version: claimedNow.version + 1,
      });
      return asking(params);
    };
    expect(await decider.decide(click(record))).toEqual({ kind: 'stale' });
    expect(host.decided).toHaveLength(1);
    const after = records.table.get('a-1')!;
    expect(after.phase).toBe('pending');
    expect(after.claim).toBeUndefined();
  });

  it('asks a host that left the decide unanswered again only while it still holds the host', async () => {
    let holds = true;
    const { records, host, record, decider } = setup({
      answers: [new RequestTimeoutError('approval/decide', 10)],
      mayAct: () => holds,
    });
    const asking = host.decide.bind(host);
    host.decide = (params) => {
      // The lease runs out while the first ask is out: the new owner replays the claim.
      holds = false;
      return asking(params);
    };
    expect(await decider.decide(click(record))).toEqual({ kind: 'hostUnavailable' });
    expect(host.decided).toHaveLength(1);
    expect(records.table.get('a-1')!.phase).toBe('deciding');
  });

  it('sends a record created claimed by a grant on the read made with its create, and drops it when that read says no', async () => {
    const asked: string[] = [];
    const { records, host, record, decider } = setup({
      warrant: {
        check: async (checked) => {
          asked.push(checked.approvalId);
          return undefined;
        },
      },
    });
    const grant = { grantId: 'g-1', grantedBy: 'U0ALICE' };
    const claim: Claim = {
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: 'cmd-at-create',
      via: 'grant',
      grant,
      claimedAt: NOW.toISOString(),
    };
    const created = records.put({ ...record, phase: 'deciding', claim, version: 2 });
    const byGrant = (grantRead: Promise<boolean>): DecisionRequest => ({
      record: created,
      sourceIndex: 0,
      choiceId: 'allow_once',
      by: { via: 'grant', grant },
      warranted: true,
      commandId: 'cmd-at-create',
      grantRead,
    });

    // Revoked since its lookup, as the read with the create saw: nothing leaves, the stage is free.
    const outcome = await decider.decide(byGrant(Promise.resolve(false)));
    expect(outcome).toEqual({ kind: 'unwarranted', via: 'grant' });
    expect(host.decided).toEqual([]);
    expect(records.table.get('a-1')).toMatchObject({ phase: 'pending' });
    expect(records.table.get('a-1')?.claim).toBeUndefined();

    // Still answering: sent on that read, with no read of its own.
    records.put({ ...created, version: 4 });
    expect(await decider.decide(byGrant(Promise.resolve(true)))).toEqual({
      kind: 'decided',
      terminal: false,
    });
    expect(host.decided.map((p) => p.commandId)).toEqual(['cmd-at-create']);
    expect(asked).toEqual([]);
  });

  it('reads a decision’s grant with its claim, then before each ask again, and stops once it is revoked', async () => {
    let answers = true;
    const asked: string[] = [];
    const { host, record, decider } = setup({
      warrant: {
        check: async (_checked, ask) => {
          asked.push(ask.by.via);
          return answers ? undefined : { kind: 'unwarranted', via: 'grant' };
        },
      },
    });
    const grant = { grantId: 'g-1', grantedBy: 'U0ALICE' };
    const request: DecisionRequest = {
      record,
      sourceIndex: 0,
      choiceId: 'allow_once',
      by: { via: 'grant', grant },
      warranted: true,
    };
    host.decide = async (params) => {
      host.decided.push(params);
      // The grant is revoked while the host sits on its second ask.
      if (host.decided.length === 2) answers = false;
      throw new RequestTimeoutError('approval/decide', 10);
    };

    const outcome = await decider.decide(request);
    expect(outcome).toEqual({ kind: 'unwarranted', via: 'grant' });
    // One read with the claim, one before the second ask, one that stopped the third.
    expect(host.decided).toHaveLength(2);
    expect(asked).toEqual(['grant', 'grant', 'grant']);
  });

  it('refuses a record that is not decidable, with the reason, and claims and sends nothing', async () => {
    const resolved = setup({
      record: {
        phase: 'resolved',
        resolution: { decision: 'approved', resolvedBy: 'policy', decidedAt: '' },
      },
    });
    const outcome = await resolved.decider.decide(click(resolved.record));
    expect(outcome).toEqual({ kind: 'final', record: resolved.record });

    const reviewing = setup({ record: { phase: 'reviewing' } });
    expect(await reviewing.decider.decide(click(reviewing.record))).toEqual({ kind: 'underReview' });

    const movedOn = setup();
    expect(await movedOn.decider.decide(click(movedOn.record, { sourceIndex: 1 }))).toEqual({
      kind: 'stale',
    });

    for (const { records, host } of [resolved, reviewing, movedOn]) {
      expect(records.claims).toEqual([]);
      expect(host.decided).toEqual([]);
    }
  });

  it('says who holds a stage someone else claimed first', async () => {
    const { records, host, record, decider } = setup();
    const holder: Claim = {
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: 'cmd-bob',
      via: 'click',
      userId: 'U0BOB',
      claimedAt: NOW.toISOString(),
    };
    records.nextClaim = { kind: 'held', holder };
    expect(await decider.decide(click(record))).toEqual({ kind: 'alreadyBeingDecided', holder });
    expect(host.decided).toEqual([]);
  });

  it('hands a decision for a host another replica owns to that replica, and sends nothing itself', async () => {
    const forwarded: DecisionRequest[] = [];
    const { records, host, record, decider } = setup({
      mayAct: () => false,
      forward: async (request) => {
        forwarded.push(request);
        return { kind: 'forwarded' };
      },
    });
    const request = click(record);
    expect(decider.decidesHere('default')).toBe(false);
    expect(await decider.decide(request)).toEqual({ kind: 'forwarded' });
    expect(forwarded).toEqual([request]);
    expect(records.claims).toEqual([]);
    expect(host.decided).toEqual([]);
  });

  it('forwards, with the commandId it minted, when another replica took the host before the claim', async () => {
    const forwarded: DecisionRequest[] = [];
    const { records, host, record, decider, commandIds } = setup({
      mayAct: () => true,
      forward: async (request) => {
        forwarded.push(request);
        return { kind: 'forwarded' };
      },
    });
    records.nextClaim = { kind: 'fenced' };
    expect(decider.decidesHere('default')).toBe(true);
    expect(await decider.decide(click(record))).toEqual({ kind: 'forwarded' });
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]!.commandId).toBe(commandIds[0]);
    expect(host.decided).toEqual([]);
  });

  it('checks the warrant of a decision its caller did not check, and refuses it before any claim', async () => {
    const refused: Refused = { allowed: false, why: 'selfApproval', route: 'ops' };
    const asked: string[] = [];
    const { records, host, record, decider } = setup({
      warrant: {
        check: async (checked, ask) => {
          asked.push(`${checked.approvalId}:${ask.choiceId}:${ask.by.via}`);
          return { kind: 'notAuthorized', refused };
        },
      },
    });
    const outcome = await decider.decide(click(record, { warranted: false }));
    expect(outcome).toEqual({ kind: 'notAuthorized', refused });
    expect(asked).toEqual(['a-1:allow_once:click']);
    expect(records.claims).toEqual([]);
    expect(host.decided).toEqual([]);

    // The caller's own check holds for the very record it was made on: the warrant is not asked.
    asked.length = 0;
    expect(await decider.decide(click(record, { warranted: true }))).toEqual({
      kind: 'decided',
      terminal: false,
    });
    expect(asked).toEqual([]);
  });

  it('checks a record that changed before its claim again in full, the warrant included', async () => {
    const asked: number[] = [];
    const { records, host, record, decider } = setup({
      warrant: {
        check: async (checked) => {
          asked.push(checked.version);
          return undefined;
        },
      },
    });
    // Redis holds a newer version than the one checked: the claim is refused as stale, the record
    // read again and checked again.
    records.put({ ...record, version: 5 });
    const outcome = await decider.decide(click(record));
    expect(outcome).toEqual({ kind: 'decided', terminal: false });
    expect(asked).toEqual([5]);
    expect(records.claims).toHaveLength(2);
    expect(host.decided).toHaveLength(1);
  });

  it('resolves `changed` without claiming when the caller asked to check again itself', async () => {
    const { records, host, record, decider } = setup();
    records.put({ ...record, version: 5 });
    expect(await decider.decide(click(record, { onChange: 'return' }))).toEqual({ kind: 'changed' });
    expect(host.decided).toEqual([]);
  });

  it('records the winner the host names when someone decided first', async () => {
    const { records, record, decider } = setup({
      answers: [
        hostError('approvalAlreadyResolved', { resolution: { decision: 'abort', resolvedBy: 'policy' } }),
      ],
    });
    const outcome = await decider.decide(click(record));
    expect(outcome).toEqual({ kind: 'alreadyResolved', decision: 'abort', resolvedBy: 'policy' });
    expect(records.table.get('a-1')).toMatchObject({
      phase: 'resolved',
      resolution: { decision: 'abort', resolvedBy: 'policy' },
    });
  });

  it('takes a winner the host names in malformed data as no winner named, logged once', async () => {
    // Stored as the host sent it, { x: 1 } would make the record unreadable: the card stuck
    // "Being decided" and every click answered that the database is not answering.
    const { logger, lines } = captureLogger();
    const { records, record, decider } = setup({
      logger,
      answers: [
        hostError('approvalAlreadyResolved', { resolution: { decision: { x: 1 }, resolvedBy: ['y'] } }),
      ],
    });
    const outcome = await decider.decide(click(record));
    expect(outcome).toEqual({ kind: 'alreadyResolved', decision: 'unknown', resolvedBy: 'unknown' });
    const stored = records.table.get('a-1')!;
    expect(stored).toMatchObject({
      phase: 'resolved',
      resolution: { decision: 'unknown', resolvedBy: 'unknown' },
    });
    expect(() => ApprovalRecord.parse(JSON.parse(JSON.stringify(stored)))).not.toThrow();
    const malformed = lines.filter((l) => String(l.msg).includes('malformed'));
    expect(malformed).toHaveLength(1);
    expect(malformed[0]).toMatchObject({ level: 40 });
    expect(JSON.stringify(lines)).not.toContain('"x":1');
  });

  it('gives the stage back to people when the host refuses the choice, and re-reads the session', async () => {
    const { records, host, record, decider } = setup({ answers: [hostError('approvalChoiceInvalid')] });
    expect(await decider.decide(click(record))).toEqual({ kind: 'stale' });
    const stored = records.table.get('a-1')!;
    expect(stored.phase).toBe('pending');
    expect(stored.claim).toBeUndefined();
    expect(host.refreshed).toEqual(['s-1']);
  });

  it('stores nothing the host said once the lease of the host ran out: the new owner decides', async () => {
    // Frozen past its lease, this replica reads the host's answer before it notices; unfenced,
    // marking the card unavailable would drop whatever claim the new owner made meanwhile.
    for (const kind of ['approvalNotFound', 'sessionInUse', 'approvalChoiceInvalid', 'sandboxDenied']) {
      const { records, record, decider } = setup({ answers: [hostError(kind)] });
      const claimed = records.claim.bind(records);
      records.claim = async (checked, claim) => {
        const outcome = await claimed(checked, claim);
        records.leaseGone = true;
        return outcome;
      };
      const outcome = await decider.decide(click(record));
      expect(outcome).toMatchObject({ claimKept: true });
      expect(records.table.get('a-1')).toMatchObject({ phase: 'deciding', claim: expect.anything() });
    }
  });

  it('passes any other refusal of the host on by its kind, the stage given back', async () => {
    const { records, record, decider } = setup({ answers: [hostError('sandboxDenied')] });
    expect(await decider.decide(click(record))).toEqual({ kind: 'refused', errorKind: 'sandboxDenied' });
    expect(records.table.get('a-1')!.phase).toBe('pending');
  });

  it('masks and cuts a kind the host wrote: the person who clicked reads it', async () => {
    const kind = `denied ${FAKE_GITHUB_TOKEN} ${'A'.repeat(5000)}`;
    const { decider, record } = setup({ answers: [hostError(kind)] });
    const outcome = await decider.decide(click(record));
    expect(outcome.kind).toBe('refused');
    const { errorKind } = outcome as { errorKind: string };
    expect(errorKind).not.toContain(FAKE_GITHUB_TOKEN);
    expect(errorKind).toMatch(/^denied \[masked [a-z-]+\] A+…$/);
    expect(Array.from(errorKind).length).toBeLessThanOrEqual(61);
  });

  it('a decide the host left unanswered, cut short by a drain, is kept for its replay: never `stopping`', async () => {
    const { records, host, record, decider, commandIds } = setup({
      answers: [new RequestTimeoutError('approval/decide', 10)],
      // Asleep before asking again when the drain comes.
      unansweredBackoff: { initialMs: 60_000, maxMs: 60_000 },
    });
    const deciding = decider.decide(click(record));
    await until(() => records.table.get('a-1')!.claim?.unanswered === 1);
    await decider.drain();
    // The host may have applied it, and the stored claim is replayed with the same commandId by
    // the next start or owner: the person hears that it is kept, not that nothing was decided.
    expect(await deciding).toEqual({ kind: 'hostUnavailable', why: 'stopping' });
    const kept = records.table.get('a-1')!;
    expect(kept.phase).toBe('deciding');
    expect(kept.claim?.commandId).toBe(commandIds[0]);
    expect(host.decided).toHaveLength(1);
  });

  it('a decide still unanswered as the drain comes, then timed out, is kept too', async () => {
    const { records, host, record, decider } = setup();
    let timeOut = () => {};
    host.decide = async (params) => {
      host.decided.push(params);
      await new Promise<void>((resolve) => {
        timeOut = resolve;
      });
      throw new RequestTimeoutError('approval/decide', 10);
    };
    const deciding = decider.decide(click(record));
    await until(() => host.decided.length === 1);
    const draining = decider.drain();
    timeOut();
    await draining;
    expect(await deciding).toEqual({ kind: 'hostUnavailable', why: 'stopping' });
    expect(records.table.get('a-1')!.phase).toBe('deciding');
    expect(host.decided).toHaveLength(1);
  });

  it('takes no decision once draining', async () => {
    const { records, host, record, decider } = setup();
    await decider.drain();
    const outcome: DecisionOutcome = await decider.decide(click(record));
    expect(outcome).toEqual({ kind: 'stopping' });
    expect(records.claims).toEqual([]);
    expect(host.decided).toEqual([]);
  });
});

describe('Decider: settling a decision the host no longer lists', () => {
  const claim: Claim = {
    sourceIndex: 0,
    choiceId: 'allow_once',
    commandId: 'cmd-1',
    via: 'click',
    userId: 'U0ALICE',
    claimedAt: NOW.toISOString(),
  };

  /** settle() of a record deciding under `claim`, answered `answer`; what was stored and told. */
  async function settled(answer: Answer) {
    const told: string[] = [];
    const { records, host, record, decider } = setup({
      answers: [answer],
      replayed: async () => {
        told.push('replayed');
      },
      replayDropped: async () => {
        told.push('dropped');
      },
    });
    decider.settle(records.put({ ...record, phase: 'deciding', claim, version: 2 }));
    await decider.drain();
    return { stored: records.table.get('a-1')!, host, told };
  }

  it('records the decision as ours when the replay is answered with its terminal ack', async () => {
    const { stored, told } = await settled({
      commandId: 'cmd-1',
      approvalId: 'a-1',
      status: 'accepted',
      terminal: true,
    });
    expect(stored).toMatchObject({ phase: 'resolved', resolution: { slackUserId: 'U0ALICE' } });
    expect(told).toEqual(['replayed']);
  });

  it('closes the card when the ack says ours only passed a stage: something else closed it', async () => {
    // A stage-0 decide applied, its ack lost, then the approval closed (a recovery, a judge, the
    // turn's end) with that close missed: the replay gets the same stage-only ack, for good.
    const { stored, told } = await settled({
      commandId: 'cmd-1',
      approvalId: 'a-1',
      status: 'accepted',
      terminal: false,
    });
    expect(stored.phase).toBe('superseded');
    expect(stored.claim).toBeUndefined();
    expect(stored.supersededNote).toBe('The agent host no longer has this request pending.');
    // The host took the stage by this claim: counted once, as a first send's stage ack is.
    expect(told).toEqual(['replayed']);
  });

  it('closes the card on an ack that does not say whether it was terminal', async () => {
    const { stored } = await settled({ commandId: 'cmd-1', status: 'accepted' });
    expect(stored.phase).toBe('superseded');
  });

  it('keeps the claim when the settle is refused as sessionInUse: it says nothing of the first send', async () => {
    const { stored, told } = await settled(hostError('sessionInUse'));
    expect(stored).toMatchObject({
      phase: 'unavailable',
      unavailable: 'heldElsewhere',
      claim: { commandId: 'cmd-1' },
    });
    expect(told).toEqual([]);
  });

  it('closes the card when the host refuses the settle as not applied, and gives nothing back to people', async () => {
    // Given back, the card would offer buttons for a question the host no longer asks.
    for (const kind of ['sandboxDenied', 'approvalReviewerUnavailable']) {
      const { stored, host, told } = await settled(hostError(kind));
      expect(stored.phase).toBe('superseded');
      expect(host.refreshed).toEqual([]);
      expect(told).toEqual(['dropped']);
    }
  });
});

describe('Decider: a decision the host rejects as abandoned', () => {
  // Recovery settled an intake it found unsettled: the host's durable answer to its replay.
  const abandoned = () =>
    new MspError({
      code: -32030,
      message: 'command rejected',
      data: { kind: 'commandRejected', commandId: 'cmd-1', reason: 'abandoned', retryable: false },
    });
  const claim: Claim = {
    sourceIndex: 0,
    choiceId: 'allow_once',
    commandId: 'cmd-1',
    via: 'grant',
    grant: { grantId: 'g-1', grantedBy: 'U0ALICE', usesLeft: 1 },
    claimedAt: NOW.toISOString(),
  };

  function deciding(how: 'replay' | 'settle') {
    const told: string[] = [];
    const { records, host, record, decider } = setup({
      answers: [abandoned()],
      replayed: async () => {
        told.push('replayed');
      },
      replayDropped: async () => {
        told.push('dropped');
      },
    });
    decider[how](records.put({ ...record, phase: 'deciding', claim, version: 2 }));
    return { records, host, decider, told };
  }

  it('re-reads the session when a replay is rejected: the approval it named may be gone', async () => {
    const { records, host, decider, told } = deciding('replay');
    await decider.drain();
    expect(records.table.get('a-1')!.phase).toBe('pending');
    expect(host.refreshed).toEqual(['s-1']);
    expect(told).toEqual(['dropped']);
  });

  it('closes the card when a settle is rejected: the host no longer lists it, and ours did not close it', async () => {
    const { records, decider, told } = deciding('settle');
    await decider.drain();
    const stored = records.table.get('a-1')!;
    expect(stored.phase).toBe('superseded');
    expect(stored.claim).toBeUndefined();
    // Never applied: the use the grant took for it is given back.
    expect(told).toEqual(['dropped']);
  });
});
