// The GrantAnswerer's flows against in-memory fakes of every port: the grant store, the record
// reader, the keeper (which shows a card), the Decider, the line sender and the notice ledger. No
// Redis, no Slack, no process: what is asserted is what the answerer does with what they say.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { claimQuestion } from '../../../../src/domain/claimCredit.js';
import type { Grant, GrantBucketKey } from '../../../../src/domain/grants/grant.js';
import { type GrantQuestion, grantQuestion } from '../../../../src/domain/grants/match.js';
import type { ApprovalRecord, Claim } from '../../../../src/domain/record.js';
import type { RouteGrants } from '../../../../src/domain/route.js';
import type { DecisionOutcome, DecisionRequest } from '../../../../src/relay/deciding/decider.js';
import {
  GrantAnswerer,
  type GrantAnswererOptions,
  grantRef,
} from '../../../../src/relay/grants/grantAnswerer.js';
import { sampleGrant } from '../../../support/grantInput.js';
import { sampleRecord } from '../../../support/sampleRecord.js';

const logger = pino({ level: 'silent' });
const NOW = new Date('2026-11-30T12:00:00Z');

const GRANTS: RouteGrants = {
  enabled: true,
  ttlMs: 3_600_000,
  maxTtlMs: 86_400_000,
  caller: 'session',
  choices: [{ kind: 'time', ms: 3_600_000 }],
};

const CHOICES: ApprovalRecord['availableChoices'] = [
  { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
  { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once' },
];

/** A pending approval stored with its card deferred: one a grant may answer. */
function deferred(approvalId: string, overrides: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return sampleRecord(approvalId, {
    route: 'ops',
    availableChoices: CHOICES,
    slack: { channel: 'C1', deferred: true },
    ...overrides,
  });
}

/** A request as the relay builds it, before its record is created. */
function pending(approvalId: string, overrides: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return sampleRecord(approvalId, {
    route: 'ops',
    availableChoices: CHOICES,
    slack: { channel: 'C1' },
    ...overrides,
  });
}

/** A grant of an hour for sampleRecord()'s write on the route `ops`. */
function liveGrant(overrides: Partial<Grant> = {}): Grant {
  return sampleGrant({ route: 'ops', ...overrides });
}

/** Every port in memory. The Decider's claim is stored on the record, as the real one does. */
/** The claim of stage 0's "Allow once" by `grant`, as the Decider stores it. */
function grantClaim<G extends NonNullable<Claim['grant']>>(grant: G): Claim & { via: 'grant'; grant: G } {
  return { sourceIndex: 0, choiceId: 'allow_once', commandId: 'cmd-1', via: 'grant', grant, claimedAt: '' };
}

class World {
  readonly records = new Map<string, ApprovalRecord>();
  grants: Grant[] = [];
  decisions: DecisionRequest[] = [];
  outcome: DecisionOutcome = { kind: 'decided', terminal: false };
  revealed: string[] = [];
  lines: Array<{ approvalId: string; grantId: string; question: GrantQuestion }> = [];
  /** The uses the store keeps: one per approval stage. */
  used: Array<{ grantId: string; approvalId: string; sourceIndex: number }> = [];
  /** Every recordUse call, the same stage's again included. */
  counts: Array<{ grantId: string; approvalId: string; sourceIndex: number }> = [];
  returned: string[] = [];
  reserved: string[] = [];
  ledger = new Map<string, string | undefined>();
  failCandidates = false;
  /** Claims minted by claimFor. */
  claims = 0;
  clock = () => NOW;
  private readonly tracked: Promise<unknown>[] = [];

  answerer(grantsOf: (route: string | undefined) => RouteGrants | undefined = () => GRANTS) {
    const options: GrantAnswererOptions = {
      grants: {
        candidates: async (bucket: GrantBucketKey) => {
          if (this.failCandidates) throw new Error('Redis is down');
          return this.grants.filter(
            (g) =>
              g.caller === bucket.caller &&
              g.tool === bucket.tool &&
              g.sandboxMode === bucket.sandboxMode &&
              g.route === bucket.route,
          );
        },
        reserveUse: async (grant) => {
          this.reserved.push(grant.grantId);
          const stored = this.grants.find((g) => g.grantId === grant.grantId);
          if (!stored?.usesLeft) return undefined;
          stored.usesLeft -= 1;
          return stored.usesLeft;
        },
        returnUse: async (grant) => {
          this.returned.push(grant.grantId);
          const stored = this.grants.find((g) => g.grantId === grant.grantId);
          if (stored?.usesLeft !== undefined) stored.usesLeft += 1;
        },
        recordUse: async (grant, approvalId, sourceIndex) => {
          this.counts.push({ grantId: grant.grantId, approvalId, sourceIndex });
          // Once per approval stage, as the store counts it (GrantStore.recordUse).
          if (this.used.some((u) => u.approvalId === approvalId && u.sourceIndex === sourceIndex)) return;
          this.used.push({ grantId: grant.grantId, approvalId, sourceIndex });
        },
        get: async (grantId) => this.grants.find((g) => g.grantId === grantId),
      },
      store: { get: async (approvalId) => this.records.get(approvalId) },
      keeper: {
        reveal: async (approvalId) => {
          this.revealed.push(approvalId);
        },
        track: (task) => {
          this.tracked.push(task);
        },
      },
      decider: {
        grantStillAnswers: async () => true,
        claimFor: (_record, request, commandId = `cmd-claimed-${++this.claims}`) => ({
          sourceIndex: request.sourceIndex,
          ...(request.by.via === 'grant' ? { grant: request.by.grant } : {}),
          via: request.by.via,
          choiceId: request.choiceId,
          commandId,
          claimedAt: this.clock().toISOString(),
        }),
        decide: async (request) => {
          this.decisions.push(request);
          if (this.outcome.kind === 'decided' || this.outcome.kind === 'hostUnavailable') {
            const { record } = request;
            const claim = {
              sourceIndex: request.sourceIndex,
              choiceId: request.choiceId,
              commandId: `cmd-${this.decisions.length}`,
              via: 'grant' as const,
              claimedAt: NOW.toISOString(),
            };
            this.records.set(record.approvalId, { ...record, phase: 'deciding', claim });
          }
          return this.outcome;
        },
      },
      lines: {
        grantUsed: async (record, grant, question) => {
          this.lines.push({ approvalId: record.approvalId, grantId: grant.grantId, question });
        },
      },
      ledger: {
        claim: async (approvalId, kind) => {
          const key = `${approvalId}/${kind}`;
          if (this.ledger.has(key)) return false;
          this.ledger.set(key, undefined);
          return true;
        },
        settle: async (approvalId, kind, outcome) => {
          this.ledger.set(`${approvalId}/${kind}`, outcome);
        },
      },
      grantsOf,
      logger,
      now: () => this.clock(),
    };
    return new GrantAnswerer(options);
  }

  store(record: ApprovalRecord): ApprovalRecord {
    this.records.set(record.approvalId, record);
    return record;
  }

  /** Everything the answerer started has settled. */
  async settled(): Promise<void> {
    for (let seen = 0; seen < this.tracked.length; seen = this.tracked.length) {
      await Promise.all(this.tracked);
    }
  }
}

describe('GrantAnswerer', () => {
  it('decides a request a live grant answers with its once-choice, counts the use and leaves one line', async () => {
    const world = new World();
    const grant = liveGrant();
    world.grants = [grant];
    const record = world.store(deferred('a-1'));
    world.answerer().follow(record);
    await world.settled();

    expect(world.decisions).toEqual([
      {
        record,
        sourceIndex: 0,
        choiceId: 'allow_once',
        by: { via: 'grant', grant: grantRef(grant) },
        warranted: true,
      },
    ]);
    expect(world.used).toEqual([{ grantId: 'g-1', approvalId: 'a-1', sourceIndex: 0 }]);
    expect(world.lines).toHaveLength(1);
    expect(world.lines[0]).toMatchObject({ approvalId: 'a-1', grantId: 'g-1' });
    expect(world.ledger.get('a-1/grant-0')).toBe('sent');
    expect(world.revealed).toEqual([]);
  });

  it('answers a request once, however often it is looked at', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    const record = world.store(deferred('a-1'));
    const answerer = world.answerer();
    answerer.follow(record);
    answerer.follow(record);
    answerer.consider('a-1');
    await world.settled();

    expect(world.decisions).toHaveLength(1);
    expect(world.used).toHaveLength(1);
    expect(world.lines).toHaveLength(1);
    expect(world.revealed).toEqual([]);
  });

  it('spends a grant by uses once: its last use answers one request, the next gets its card', async () => {
    const world = new World();
    world.grants = [liveGrant({ usesLeft: 1, maxUses: 3 })];
    const first = world.store(deferred('a-1'));
    const second = world.store(deferred('a-2'));
    const answerer = world.answerer();
    answerer.follow(first);
    answerer.follow(second);
    await world.settled();

    expect(world.decisions.map((d) => d.record.approvalId)).toEqual(['a-1']);
    expect(world.decisions[0]!.by).toEqual({
      via: 'grant',
      grant: { grantId: 'g-1', grantedBy: 'U0ALICE', expiresAt: '2026-11-30T13:00:00Z', usesLeft: 0 },
    });
    expect(world.revealed).toEqual(['a-2']);
    expect(world.grants[0]!.usesLeft).toBe(0);
  });

  it('leaves a request with a risk mark to people: its card is shown', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    const record = world.store(deferred('a-1', { risks: [{ name: 'prod', warning: 'Production.' }] }));
    world.answerer().follow(record);
    await world.settled();

    expect(world.decisions).toEqual([]);
    expect(world.revealed).toEqual(['a-1']);
  });

  it('shows the card when no grant matches the request', async () => {
    const world = new World();
    world.grants = [
      liveGrant({ tool: 'bash' }),
      liveGrant({ grantId: 'g-2', capabilities: ['file-write:/srv/other.ts'] }),
      liveGrant({ grantId: 'g-3', expiresAt: '2026-11-30T11:59:00Z' }),
      liveGrant({ grantId: 'g-4', route: 'deploys' }),
    ];
    const record = world.store(deferred('a-1'));
    world.answerer().follow(record);
    await world.settled();

    expect(world.decisions).toEqual([]);
    expect(world.used).toEqual([]);
    expect(world.revealed).toEqual(['a-1']);
  });

  it('leaves a capability no grant may answer to people, whatever grants there are', async () => {
    const world = new World();
    world.grants = [liveGrant({ capabilities: ['file-write:srv/app.ts'] })];
    // A relative path: nothing a grant could be bound to.
    const record = world.store(
      deferred('a-1', { subject: { kind: 'fileAccess', path: 'srv/app.ts', access: 'write' } }),
    );
    world.answerer().follow(record);
    await world.settled();

    expect(world.decisions).toEqual([]);
    expect(world.revealed).toEqual(['a-1']);
  });

  it('shows the card on a route whose grants are off, or gone from the file', async () => {
    for (const settings of [{ ...GRANTS, enabled: false }, undefined]) {
      const world = new World();
      world.grants = [liveGrant()];
      const record = world.store(deferred('a-1'));
      world.answerer(() => settings).follow(record);
      await world.settled();
      expect(world.decisions).toEqual([]);
      expect(world.revealed).toEqual(['a-1']);
    }
  });

  it('gives back the use it took and shows the card when the grant could not decide', async () => {
    const world = new World();
    world.grants = [liveGrant({ usesLeft: 2, maxUses: 2 })];
    world.outcome = { kind: 'stale' };
    const record = world.store(deferred('a-1'));
    world.answerer().follow(record);
    await world.settled();

    expect(world.decisions).toHaveLength(1);
    expect(world.returned).toEqual(['g-1']);
    expect(world.grants[0]!.usesLeft).toBe(2);
    expect(world.used).toEqual([]);
    expect(world.lines).toEqual([]);
    expect(world.revealed).toEqual(['a-1']);
  });

  it('keeps the use and the card deferred while the host is away: the claim is replayed', async () => {
    const world = new World();
    world.grants = [liveGrant({ usesLeft: 2, maxUses: 2 })];
    world.outcome = { kind: 'hostUnavailable' };
    const record = world.store(deferred('a-1'));
    world.answerer().follow(record);
    await world.settled();

    expect(world.returned).toEqual([]);
    expect(world.grants[0]!.usesLeft).toBe(1);
    expect(world.revealed).toEqual([]);
  });

  it('keeps the use of a decision handed to a new owner that had not answered, and shows the card', async () => {
    // This replica lost the host as it decided: the owner now carries the decision out by this
    // grant, on the use taken here, whenever it gets to it. Given back, the grant would be spent
    // once more than its uses; the card is shown in case the owner does not decide.
    const world = new World();
    world.grants = [liveGrant({ usesLeft: 2, maxUses: 2 })];
    world.outcome = { kind: 'forwarded' };
    const record = world.store(deferred('a-1'));
    world.answerer().follow(record);
    await world.settled();

    expect(world.returned).toEqual([]);
    expect(world.grants[0]!.usesLeft).toBe(1);
    expect(world.revealed).toEqual(['a-1']);
  });

  it('counts the use and leaves the line of a replayed decision by grant, once', async () => {
    const world = new World();
    world.grants = [liveGrant({ usesLeft: 2, maxUses: 2 })];
    world.outcome = { kind: 'hostUnavailable' };
    const record = world.store(deferred('a-1'));
    const answerer = world.answerer();
    answerer.follow(record);
    await world.settled();
    // Sent while the host was away: nothing counted, nothing said in the channel.
    expect(world.used).toEqual([]);
    expect(world.lines).toEqual([]);

    // The host is back and the Decider carried the claim out again.
    const replayed = world.records.get('a-1')!;
    const claim = { ...replayed.claim!, grant: { grantId: 'g-1', grantedBy: 'U0ALICE' } };
    await answerer.replayed(replayed, claim);
    expect(world.used).toEqual([{ grantId: 'g-1', approvalId: 'a-1', sourceIndex: 0 }]);
    expect(world.lines.map((l) => [l.approvalId, l.grantId])).toEqual([['a-1', 'g-1']]);
    expect(world.ledger.get('a-1/grant-0')).toBe('sent');

    // Carried out again once more (another restart): the line's claim is taken, nothing is counted twice.
    await answerer.replayed(replayed, claim);
    expect(world.used).toHaveLength(1);
    expect(world.lines).toHaveLength(1);
  });

  it('records the use of a replayed decision whose grant was removed after the host took it, once', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    const answerer = world.answerer();
    const record = world.store(deferred('a-1'));
    // The host took the decision; the grant was revoked and swept before the replay learned so.
    world.grants = [];
    const claim = grantClaim({ grantId: 'g-1', grantedBy: 'U0ALICE' });
    await answerer.replayed(record, claim);
    expect(world.counts).toEqual([{ grantId: 'g-1', approvalId: 'a-1', sourceIndex: 0 }]);
    // No line for a grant nobody can read any more; a second replay neither counts nor posts.
    expect(world.lines).toEqual([]);
    expect(world.ledger.get('a-1/grant-0')).toBe('failed: the grant is gone');
    await answerer.replayed(record, claim);
    expect(world.counts).toHaveLength(1);
  });

  it('gives back, once, the use of a replayed decision by grant that the host did not take', async () => {
    const world = new World();
    world.grants = [liveGrant({ usesLeft: 1, maxUses: 2 })];
    const answerer = world.answerer();
    const record = world.store(deferred('a-1'));
    const claim = grantClaim({ grantId: 'g-1', grantedBy: 'U0ALICE', usesLeft: 1 });
    // Replayed twice before its claim's drop was stored: one use came out, one goes back.
    await answerer.replayDropped(record, claim);
    await answerer.replayDropped(record, claim);
    expect(world.returned).toEqual(['g-1']);
    expect(world.grants[0]!.usesLeft).toBe(2);
    // A time-bound grant took no use, and a person's decision none either.
    const { usesLeft: _none, ...timed } = claim.grant;
    await answerer.replayDropped(record, { ...claim, commandId: 'cmd-2', grant: timed });
    await answerer.replayDropped(record, { ...claim, commandId: 'cmd-3', via: 'click' });
    expect(world.returned).toEqual(['g-1']);
    expect(world.used).toEqual([]);
  });

  it('does not count again a decision it counted on its replay, when the first send’s decideBy comes after', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    const answerer = world.answerer();
    const record = world.store(deferred('a-1'));
    // The host asked again before the first send: the Decider's replay went through first.
    await answerer.replayed(record, grantClaim({ grantId: 'g-1', grantedBy: 'U0ALICE' }));
    answerer.follow(record);
    await world.settled();
    expect(world.decisions).toHaveLength(1);
    expect(world.used).toHaveLength(1);
    expect(world.lines).toHaveLength(1);
  });

  it('counts a use once when a new owner replays the decision and the old owner’s first send counts it late', async () => {
    // Two replicas, one Redis. A sent the decision and the host took it, but A's count and line
    // claim were stuck behind a partition; B took the host over, replayed the claim, counted and
    // posted; then A's writes landed. What the store keeps is one use, whoever counted first.
    const world = new World();
    world.grants = [liveGrant({ usesLeft: 2, maxUses: 2 })];
    const a = world.answerer();
    const b = world.answerer();
    const record = world.store(deferred('a-1'));
    const claim = grantClaim({ grantId: 'g-1', grantedBy: 'U0ALICE', usesLeft: 1 });
    await b.replayed(record, claim);
    a.follow(record);
    await world.settled();
    expect(world.decisions).toHaveLength(1);
    expect(world.used).toEqual([{ grantId: 'g-1', approvalId: 'a-1', sourceIndex: 0 }]);
    expect(world.lines).toHaveLength(1);
    // Both replicas counted it, under the one stage the store counts it for once.
    expect(world.counts).toEqual([
      { grantId: 'g-1', approvalId: 'a-1', sourceIndex: 0 },
      { grantId: 'g-1', approvalId: 'a-1', sourceIndex: 0 },
    ]);
  });

  it('leaves a replayed decision alone that is not a grant’s, or whose first send counted it', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    const answerer = world.answerer();
    const record = world.store(deferred('a-1'));
    const byClick = {
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: 'c',
      via: 'click' as const,
      claimedAt: '',
    };
    await answerer.replayed(record, byClick);
    // The first send's count and line rode one write with the line's claim.
    world.ledger.set('a-1/grant-0', 'sent');
    await answerer.replayed(record, {
      ...byClick,
      via: 'grant',
      grant: { grantId: 'g-1', grantedBy: 'U0ALICE' },
    });
    expect(world.used).toEqual([]);
    expect(world.lines).toEqual([]);
  });

  it('does not look at a card shown already, a request closed, or one being decided', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    const answerer = world.answerer();
    answerer.follow(world.store(deferred('a-1', { slack: { channel: 'C1' } })));
    answerer.follow(
      world.store(
        deferred('a-2', {
          phase: 'resolved',
          resolution: { decision: 'abort', resolvedBy: 'user', decidedAt: '' },
        }),
      ),
    );
    answerer.follow(
      world.store(
        deferred('a-3', {
          phase: 'deciding',
          claim: { sourceIndex: 0, choiceId: 'allow_once', commandId: 'c', via: 'click', claimedAt: '' },
        }),
      ),
    );
    await world.settled();

    expect(world.decisions).toEqual([]);
    expect(world.reserved).toEqual([]);
    expect(world.revealed).toEqual([]);
  });

  it('shows the card of a request under review: no grant could decide it now', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    world.answerer().follow(world.store(deferred('a-1', { phase: 'reviewing' })));
    await world.settled();
    expect(world.decisions).toEqual([]);
    expect(world.revealed).toEqual(['a-1']);
  });

  it('uses the grant the relay found before it created the record, matched again on the record', async () => {
    const world = new World();
    const grant = liveGrant({ grantId: 'g-found' });
    const answerer = world.answerer();
    answerer.expect('a-1', grant);
    answerer.follow(world.store(deferred('a-1')));
    // A grant found for a question that has moved on since is not used.
    answerer.expect('a-2', liveGrant({ grantId: 'g-old', capabilities: ['file-write:/srv/old.ts'] }));
    answerer.follow(world.store(deferred('a-2')));
    await world.settled();

    expect(world.decisions.map((d) => [d.record.approvalId, d.by])).toEqual([
      ['a-1', { via: 'grant', grant: grantRef(grant) }],
    ]);
    expect(world.revealed).toEqual(['a-2']);
  });

  it('expects a grant for a request like one a grant answered lately, and for no other', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    const answerer = world.answerer();
    const like = pending('a-2');
    expect(answerer.expectsGrant(like)).toBe(false);
    answerer.follow(world.store(deferred('a-1')));
    await world.settled();

    expect(answerer.expectsGrant(like)).toBe(true);
    expect(answerer.expectsGrant(pending('a-3', { tool: 'bash' }))).toBe(false);
    expect(answerer.expectsGrant(pending('a-4', { caller: 'session:s-2' }))).toBe(false);
    expect(answerer.expectsGrant(pending('a-5', { sandboxMode: 'read-only' }))).toBe(false);
    expect(answerer.expectsGrant(pending('a-6', { route: 'other' }))).toBe(false);
    const otherFile = { ...like.subject, path: '/srv/other.ts' } as ApprovalRecord['subject'];
    // Another file: a question a grant could answer, but not the one answered.
    expect(grantQuestion(pending('a-7', { subject: otherFile }))?.capabilities).toEqual([
      'file-write:/srv/other.ts',
    ]);
    expect(answerer.expectsGrant(pending('a-7', { subject: otherFile }))).toBe(false);
    // Five minutes on, the answer is forgotten.
    world.clock = () => new Date(NOW.getTime() + 5 * 60_000);
    expect(answerer.expectsGrant(like)).toBe(false);
  });

  it('claimAtCreate() gives the record to create claimed by the grant, with its card deferred', async () => {
    const world = new World();
    const grant = liveGrant({ usesLeft: 2, maxUses: 2 });
    world.grants = [grant];
    const answerer = world.answerer();
    const fresh = pending('a-1');
    const answer = await answerer.claimAtCreate(fresh);

    const claim = {
      sourceIndex: 0,
      grant: grantRef({ ...grant, usesLeft: 1 }),
      via: 'grant',
      choiceId: 'allow_once',
      // What the grant pressed, on what question: as a person's claim keeps them.
      decision: 'approved',
      scope: 'once',
      question: claimQuestion(fresh),
      commandId: 'cmd-claimed-1',
      claimedAt: NOW.toISOString(),
    };
    expect(answer?.record).toEqual({
      ...fresh,
      phase: 'deciding',
      claim,
      slack: { channel: 'C1', deferred: true },
    });
    // Its use is taken before the record exists: two requests never both spend the last one.
    expect(world.grants[0]!.usesLeft).toBe(1);
    expect(world.decisions).toEqual([]);

    answerer.decideClaimed(answer!);
    await world.settled();
    expect(world.decisions).toEqual([
      {
        record: answer!.record,
        sourceIndex: 0,
        choiceId: 'allow_once',
        by: { via: 'grant', grant: grantRef({ ...grant, usesLeft: 1 }) },
        warranted: true,
        commandId: 'cmd-claimed-1',
      },
    ]);
    expect(world.used).toEqual([{ grantId: 'g-1', approvalId: 'a-1', sourceIndex: 0 }]);
    expect(world.lines.map((l) => l.approvalId)).toEqual(['a-1']);
    expect(world.revealed).toEqual([]);
  });

  it('claimAtCreate() claims nothing when no grant answers, and forgets that one did', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    const answerer = world.answerer();
    answerer.follow(world.store(deferred('a-1')));
    await world.settled();
    expect(answerer.expectsGrant(pending('a-2'))).toBe(true);

    // Revoked since: the like request is asked of people, and the next is created as usual.
    world.grants = [];
    expect(await answerer.claimAtCreate(pending('a-2'))).toBeUndefined();
    expect(answerer.expectsGrant(pending('a-3'))).toBe(false);
    world.failCandidates = true;
    expect(await answerer.claimAtCreate(pending('a-3'))).toBeUndefined();
    expect(world.decisions.map((d) => d.record.approvalId)).toEqual(['a-1']);
  });

  it('gives the use back when a record claimed at its create existed already', async () => {
    const world = new World();
    world.grants = [liveGrant({ usesLeft: 2, maxUses: 2 })];
    const answerer = world.answerer();
    const answer = await answerer.claimAtCreate(pending('a-1'));
    expect(world.grants[0]!.usesLeft).toBe(1);
    await answerer.dropClaimed(answer!);
    expect(world.grants[0]!.usesLeft).toBe(2);
    expect(world.returned).toEqual(['g-1']);
    expect(world.decisions).toEqual([]);
  });

  it('find() names the grant that answers, and nothing when grants cannot be read', async () => {
    const world = new World();
    world.grants = [liveGrant()];
    const answerer = world.answerer();
    const record = deferred('a-1');
    expect((await answerer.find(record))?.grantId).toBe('g-1');
    world.failCandidates = true;
    expect(await answerer.find(record)).toBeUndefined();
  });
});
