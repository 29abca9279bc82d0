// Every vote cast toward a quorum is in the audit stream once, read back as the export reads it:
// one short of the quorum, one whose decision did not go through, one whose decision was
// claimed and then closed without a decision entry (the request withdrawn, the stage asked
// again), and one that decided an earlier stage of a request then closed without a decision
// entry, also when the replica closing it dies at that write, on real Redis with the host and
// Slack replaced by recorders.

import type { Redis } from 'ioredis';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderCard } from '../../src/cards/renderCard.js';
import { decisionEntry } from '../../src/domain/decisionEntry.js';
import type { ResolvedRecord } from '../../src/domain/decisionNotice.js';
import { OPEN_RULES } from '../../src/domain/route.js';
import { HostGoneError } from '../../src/msp/errors.js';
import type { ApprovalHost, HostEvent } from '../../src/msp/events.js';
import {
  ApprovalRequestParams,
  ApprovalResolvedParams,
  ApprovalUpdatedParams,
  type DecideParams,
} from '../../src/msp/protocol.js';
import { ClickHandler } from '../../src/relay/deciding/clickHandler.js';
import { auditVotesLeft } from '../../src/relay/deciding/clickVotes.js';
import { Decider } from '../../src/relay/deciding/decider.js';
import { HostEventHandler } from '../../src/relay/hostEvents/hostEventHandler.js';
import type { CardChannel, RefusalNotifier } from '../../src/relay/ports.js';
import { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { ApprovalStore } from '../../src/store/approvalStore.js';
import { type ExportedAuditEntry, exportAudit } from '../../src/store/auditExport.js';
import { RedisAuditTrail } from '../../src/store/auditStream.js';
import { shellApproval } from '../support/fakeHost.js';
import { useFreshRedis } from '../support/freshRedis.js';
import { RecordingHost } from '../support/recordingHost.js';
import { testAuthorizer } from '../support/testAuthorizer.js';

const logger = pino({ level: 'silent' });
const fresh = useFreshRedis();

class Cards implements CardChannel, RefusalNotifier {
  posted = 0;
  async post(channel: string) {
    this.posted += 1;
    return { ts: `1700000000.${String(this.posted).padStart(6, '0')}`, channel };
  }
  async update() {}
  async refuse() {}
}

/** A host that takes decisions, or refuses each with `refusal` while it is set. */
class Host extends RecordingHost {
  refusal: Error | undefined;
  protected override async beforeAccepting(_params: DecideParams): Promise<void> {
    if (this.refusal) throw this.refusal;
  }
}

describe('votes toward a quorum in the audit stream', () => {
  let redis: Redis;
  let store: ApprovalStore;
  let keeper: RecordKeeper;
  let relay: HostEventHandler;
  let clicks: ClickHandler;
  let host: Host;
  /** Whether the host is connected: a decision for a host that is not waits, its claim kept. */
  let up: boolean;
  let commandIds = 0;
  /** Every replica's keeper: stopped after each test, so none writes once Redis is closed. */
  const keepers: RecordKeeper[] = [];

  const params = ApprovalRequestParams.parse(
    shellApproval({
      approvalId: 'a-vote',
      sessionId: 's1',
      stages: [
        ['npm', 'test'],
        ['git', 'push'],
      ],
    }),
  );
  const hostEvent = (e: HostEvent) => {
    relay.handleHostEvent(e);
    return relay.idle();
  };

  /**
   * Wires one replica: its own keeper, Decider, relay and click handler, on `redis` and the
   * shared store, or on a connection and a store of its own (`on`), one that can die alone.
   */
  function replica(on?: Redis) {
    const own = on ? new ApprovalStore(on, { resolvedTtlMs: 60_000 }) : store;
    const audit = new RedisAuditTrail(on ?? redis, { maxLen: 1000, logger });
    // Carol, Bob and Alice may decide; two of them must agree.
    const authorizer = testAuthorizer({
      rulesOf: () => ({
        ...OPEN_RULES,
        approvers: { users: ['U0ALICE', 'U0BOB', 'U0CAROL'], usergroups: [] },
        quorum: 2,
      }),
      logger,
    });
    const recordKeeper: RecordKeeper = new RecordKeeper({
      store: own,
      cards: new Cards(),
      render: (r, n) => renderCard(r, { now: n }),
      logger,
      onVotesLeft: (before, after) =>
        auditVotesLeft(before, after, { audit, logger, quorum: (r) => authorizer.quorum(r) }),
    });
    const decider = new Decider({
      keeper: recordKeeper,
      store: own,
      host: () => (up ? (host as ApprovalHost) : undefined),
      logger,
      newCommandId: () => `cmd-${++commandIds}`,
    });
    const handler = new HostEventHandler({
      keeper: recordKeeper,
      store: own,
      decider,
      host: () => host,
      logger,
      routeFor: () => ({ name: 'test', channel: 'C1' }),
      sandboxModeOf: () => 'default',
    });
    const clickHandler = new ClickHandler({
      store: own,
      decider,
      keeper: recordKeeper,
      notifier: new Cards(),
      authorizer,
      audit,
      logger,
    });
    keepers.push(recordKeeper);
    return { keeper: recordKeeper, relay: handler, clicks: clickHandler };
  }

  beforeEach(async () => {
    redis = fresh();
    store = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    host = new Host();
    up = true;
    ({ keeper, relay, clicks } = replica());
    await hostEvent({
      type: 'approvalOpened',
      hostId: 'default',
      incarnation: 'inc-1',
      via: 'request',
      params,
    });
  });

  afterEach(async () => {
    for (const k of keepers.splice(0)) {
      k.stop();
      await k.idle();
    }
  });

  const click = (userId: string) => ({
    channel: 'C1',
    ts: '1700000000.000001',
    userId,
    sourceIndex: 0,
    choiceId: 'allow_once',
    approvalHint: 'a-vote',
  });

  /** The agent gave up the request: the host closes it with no decision of ours. */
  const withdrawal: HostEvent = {
    type: 'approvalResolved',
    hostId: 'default',
    incarnation: 'inc-1',
    params: ApprovalResolvedParams.parse({
      sessionId: 's1',
      approvalId: 'a-vote',
      decision: 'abort',
      resolvedBy: 'user',
    }),
  };
  const withdrawn = () => hostEvent(withdrawal);

  /**
   * The withdrawal heard by a replica of its own connection that dies at its write closing the
   * request: `before` Redis gets it, or right `after` Redis answers it. Nothing it sends later
   * reaches Redis, as when the process is killed there.
   */
  async function withdrawnAtDyingReplica(when: 'before' | 'after'): Promise<void> {
    const conn = redis.duplicate();
    const dying = replica(conn);
    for (const name of ['csCas', 'csCasReleasing'] as const) {
      const write = conn[name].bind(conn) as (...args: unknown[]) => Promise<unknown>;
      (conn as unknown as Record<typeof name, unknown>)[name] = async (...args: unknown[]) => {
        if (when === 'before') conn.disconnect();
        const answer = await write(...args);
        conn.disconnect();
        return answer;
      };
    }
    dying.relay.handleHostEvent(withdrawal);
    await dying.relay.idle();
    await dying.keeper.idle();
  }

  /**
   * The host took the quorum's decision of the first stage and now asks the second
   * (approval/updated `stageResolved`): the votes leave the record, the stage's decision stays.
   */
  const firstStageResolved = () =>
    hostEvent({
      type: 'approvalUpdated',
      hostId: 'default',
      incarnation: 'inc-1',
      params: ApprovalUpdatedParams.parse({
        ...params,
        currentRequirementId: { approvalId: 'a-vote', sourceIndex: 1 },
        subject: {
          ...params.subject,
          stages: params.subject.stages?.map((stage, i) =>
            i === 0 ? { ...stage, resolution: { kind: 'allowOnce' } } : stage,
          ),
        },
        change: {
          kind: 'stageResolved',
          requirementId: { approvalId: 'a-vote', sourceIndex: 0 },
          choiceId: 'allow_once',
          decision: 'approved',
        },
      }),
    });

  /** The audit stream as `npm run audit:export` reads it: its vote and decision entries. */
  async function exported(): Promise<ExportedAuditEntry[]> {
    // Vote entries are written after the write that stored the vote, without holding up the click.
    await keeper.idle();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const lines: ExportedAuditEntry[] = [];
    await exportAudit(redis, (line) => void lines.push(line), { kinds: new Set(['vote', 'decision']) });
    return lines;
  }
  const votesOf = (lines: ExportedAuditEntry[]) =>
    lines.filter((line) => line.kind === 'vote').map((line) => line.userId);

  /**
   * The audit of a first stage Carol and Bob decided by quorum that then closed with no decision
   * entry: each vote once, Bob's, which completed the quorum, as he cast it and as the stage counted it.
   */
  async function expectBobAndCarolVotedUndecided(): Promise<void> {
    const lines = await exported();
    expect(lines.filter((line) => line.kind === 'decision')).toEqual([]);
    expect(votesOf(lines).sort()).toEqual(['U0BOB', 'U0CAROL']);
    expect(lines.find((line) => line.userId === 'U0BOB')).toMatchObject({
      choiceId: 'allow_once',
      sourceIndex: '0',
      votes: '2',
      quorum: '2',
    });
  }

  it('a vote one short of the quorum on a request then withdrawn is in the audit once', async () => {
    await clicks.click(click('U0CAROL'));
    await withdrawn();
    const lines = await exported();
    expect(lines).toEqual([
      expect.objectContaining({ kind: 'vote', userId: 'U0CAROL', votes: '1', quorum: '2', sourceIndex: '0' }),
    ]);
  });

  it('a quorum whose decision waits for its host and is then withdrawn: every vote is in the audit once', async () => {
    up = false;
    await clicks.click(click('U0CAROL'));
    await clicks.click(click('U0BOB'));
    // The decision is claimed and kept for the host's return: it names Carol and Bob.
    expect((await store.get('a-vote'))?.claim?.voters).toEqual(['U0CAROL', 'U0BOB']);
    await withdrawn();
    expect((await store.get('a-vote'))?.phase).toBe('superseded');
    await expectBobAndCarolVotedUndecided();
  });

  it('a quorum whose claimed decision is freed by a host that asks the stage again: every vote once, also after it is decided', async () => {
    up = false;
    await clicks.click(click('U0CAROL'));
    await clicks.click(click('U0BOB'));
    // The host restarts and asks the same stage again: the claim, and the votes, are gone.
    await hostEvent({
      type: 'approvalUpdated',
      hostId: 'default',
      incarnation: 'inc-2',
      params: ApprovalUpdatedParams.parse({ ...params, change: { kind: 'restartRecovered' } }),
    });
    const freed = await store.get('a-vote');
    expect(freed?.claim).toBeUndefined();
    expect(votesOf(await exported()).sort()).toEqual(['U0BOB', 'U0CAROL']);
    // Asked as before, the stage keeps its votes: Alice's completes the quorum again, and the
    // decision sent names all three. Carol's and Bob's votes are not written a second time.
    expect(freed?.votes?.map((vote) => vote.userId)).toEqual(['U0CAROL', 'U0BOB']);
    up = true;
    await clicks.click(click('U0ALICE'));
    expect(host.decided).toHaveLength(1);
    expect((await store.get('a-vote'))?.claim?.voters).toEqual(['U0CAROL', 'U0BOB', 'U0ALICE']);
    expect(votesOf(await exported()).sort()).toEqual(['U0BOB', 'U0CAROL']);
  });

  it('a quorum whose decision the host refuses: every vote is in the audit once', async () => {
    host.refusal = new Error('the host fell over');
    await clicks.click(click('U0CAROL'));
    await clicks.click(click('U0BOB'));
    expect((await store.get('a-vote'))?.claim).toBeUndefined();
    const lines = await exported();
    expect(votesOf(lines).sort()).toEqual(['U0BOB', 'U0CAROL']);
  });

  it('a quorum whose decision waits for its host is withdrawn at another replica: every vote once', async () => {
    up = false;
    await clicks.click(click('U0CAROL'));
    await clicks.click(click('U0BOB'));
    // The host's events reach another replica (a new owner after a restart), which closes it.
    const other = replica();
    relay = other.relay;
    await withdrawn();
    await other.keeper.idle();
    // The replica that closed the claim wrote the vote its decision named; Carol's, one short of
    // the quorum, was written where it was cast.
    const lines = await exported();
    expect(votesOf(lines).sort()).toEqual(['U0BOB', 'U0CAROL']);
  });

  it('a vote is audited once whichever replica, and however often, closes its claim', async () => {
    up = false;
    await clicks.click(click('U0CAROL'));
    await clicks.click(click('U0BOB'));
    const before = (await store.get('a-vote'))!;
    await withdrawn();
    const after = (await store.get('a-vote'))!;
    // Told again of the same close (a second replica, a retry): nothing more is written.
    const audit = new RedisAuditTrail(redis, { maxLen: 1000, logger });
    auditVotesLeft(before, after, { audit, logger, quorum: () => 2 });
    auditVotesLeft(before, after, { audit, logger, quorum: () => 2 });
    expect(votesOf(await exported()).sort()).toEqual(['U0BOB', 'U0CAROL']);
  });

  describe('a replica that dies at the write that closes a claim', () => {
    /** Carol's vote falls one short, Bob's completes the quorum: its claim is kept for the host. */
    async function claimKeptForTheHost() {
      up = false;
      await clicks.click(click('U0CAROL'));
      await clicks.click(click('U0BOB'));
      expect((await store.get('a-vote'))?.claim?.voters).toEqual(['U0CAROL', 'U0BOB']);
      expect(votesOf(await exported())).toEqual(['U0CAROL']);
    }

    it('right after Redis stored it: every vote the claim named is in the audit once', async () => {
      await claimKeptForTheHost();
      await withdrawnAtDyingReplica('after');
      expect((await store.get('a-vote'))?.phase).toBe('superseded');
      // The replica that owns the host now is told of the same withdrawal: nothing more is written.
      await withdrawn();
      await expectBobAndCarolVotedUndecided();
    });

    it('before Redis got it: the replica that closes it then writes no vote twice', async () => {
      await claimKeptForTheHost();
      await withdrawnAtDyingReplica('before');
      // Written ahead of the write that would have let go of them: the claim still names them.
      expect((await store.get('a-vote'))?.claim?.voters).toEqual(['U0CAROL', 'U0BOB']);
      expect(votesOf(await exported()).sort()).toEqual(['U0BOB', 'U0CAROL']);
      await withdrawn();
      expect((await store.get('a-vote'))?.phase).toBe('superseded');
      await expectBobAndCarolVotedUndecided();
    });
  });

  it('is not fooled by a host error that keeps the claim', async () => {
    host.refusal = new HostGoneError('default');
    await clicks.click(click('U0CAROL'));
    await clicks.click(click('U0BOB'));
    expect((await store.get('a-vote'))?.claim?.voters).toEqual(['U0CAROL', 'U0BOB']);
    // Kept for the host's return, the decision may yet name Bob: only Carol's vote so far.
    expect(votesOf(await exported())).toEqual(['U0CAROL']);
  });

  describe('a stage a quorum decided, on a request of several', () => {
    /** Carol's vote falls one short, Bob's completes the quorum and the host takes the first stage. */
    async function firstStageDecided() {
      await clicks.click(click('U0CAROL'));
      await clicks.click(click('U0BOB'));
      expect(host.decided).toHaveLength(1);
      await firstStageResolved();
      const record = (await store.get('a-vote'))!;
      expect(record.currentRequirementId.sourceIndex).toBe(1);
      expect(record.votes).toBeUndefined();
      expect(record.stageDecisions).toEqual([
        expect.objectContaining({ sourceIndex: 0, voters: ['U0CAROL', 'U0BOB'], choiceId: 'allow_once' }),
      ]);
      // Only Carol's so far: Bob's is left to the decision entry that names the stage.
      expect(votesOf(await exported())).toEqual(['U0CAROL']);
      return record;
    }

    it('withdrawn before its last stage: every vote of the stage is in the audit once', async () => {
      await firstStageDecided();
      await withdrawn();
      expect((await store.get('a-vote'))?.phase).toBe('superseded');
      await expectBobAndCarolVotedUndecided();
    });

    it('withdrawn with a vote of its last stage one short: each vote once, the replica and retries too', async () => {
      const decided = await firstStageDecided();
      await clicks.click({ ...click('U0ALICE'), sourceIndex: 1 });
      expect(votesOf(await exported()).sort()).toEqual(['U0ALICE', 'U0CAROL']);
      const before = (await store.get('a-vote'))!;
      expect(before.stageDecisions).toEqual(decided.stageDecisions);
      await withdrawn();
      const after = (await store.get('a-vote'))!;
      // Told again of the same close (a second replica, a retry): nothing more is written.
      const audit = new RedisAuditTrail(redis, { maxLen: 1000, logger });
      auditVotesLeft(before, after, { audit, logger, quorum: () => 2 });
      auditVotesLeft(before, after, { audit, logger, quorum: () => 2 });
      expect(votesOf(await exported()).sort()).toEqual(['U0ALICE', 'U0BOB', 'U0CAROL']);
    });

    it('withdrawn at a replica that dies right after Redis stored it: every vote of the stage once', async () => {
      await firstStageDecided();
      await withdrawnAtDyingReplica('after');
      expect((await store.get('a-vote'))?.phase).toBe('superseded');
      await withdrawn();
      await expectBobAndCarolVotedUndecided();
    });

    it('resolved by the host after it: the decision entry names the stage, and no vote is written twice', async () => {
      await firstStageDecided();
      // The host's policy decides the last stage: the decision entry's `stages` names Carol and Bob.
      await hostEvent({
        type: 'approvalResolved',
        hostId: 'default',
        incarnation: 'inc-1',
        params: ApprovalResolvedParams.parse({
          sessionId: 's1',
          approvalId: 'a-vote',
          decision: 'approved',
          resolvedBy: 'policy',
        }),
      });
      const record = (await store.get('a-vote')) as ResolvedRecord;
      expect(record.phase).toBe('resolved');
      expect(decisionEntry(record, undefined).stages).toEqual([
        {
          sourceIndex: 0,
          via: 'click',
          userId: 'U0BOB',
          voters: ['U0CAROL', 'U0BOB'],
          choiceId: 'allow_once',
          decision: 'approved',
        },
      ]);
      expect(votesOf(await exported())).toEqual(['U0CAROL']);
    });

    it('asked again by a host restart and claimed by a new quorum, then withdrawn: each vote once', async () => {
      await firstStageDecided();
      // The restarted host asks the first stage again: its decision stays kept, people vote anew.
      await hostEvent({
        type: 'approvalUpdated',
        hostId: 'default',
        incarnation: 'inc-2',
        params: ApprovalUpdatedParams.parse({ ...params, change: { kind: 'restartRecovered' } }),
      });
      up = false;
      await clicks.click(click('U0CAROL'));
      await clicks.click(click('U0BOB'));
      const claimed = (await store.get('a-vote'))!;
      expect(claimed.claim?.voters).toEqual(['U0CAROL', 'U0BOB']);
      expect(claimed.stageDecisions?.[0]?.voters).toEqual(['U0CAROL', 'U0BOB']);
      await withdrawn();
      expect((await store.get('a-vote'))?.phase).toBe('superseded');
      // Four votes cast: the first quorum's, and the second's, whose claim the stage's old
      // decision does not name once no decision entry will.
      const lines = await exported();
      expect(votesOf(lines).sort()).toEqual(['U0BOB', 'U0BOB', 'U0CAROL', 'U0CAROL']);
      expect(new Set(lines.map((line) => `${line.userId} ${line.at}`)).size).toBe(4);
    });

    it('withdrawn when its stage decision was kept by the previous release: nothing breaks', async () => {
      await firstStageDecided();
      // A record as the release before wrote it: the stage's decision names its voters only.
      await store.update('a-vote', (record) => ({
        ...record,
        stageDecisions: record.stageDecisions?.map(
          ({ sourceIndex, via, userId, voters, choiceId, decision }) => ({
            sourceIndex,
            via,
            ...(userId ? { userId } : {}),
            ...(voters ? { voters } : {}),
            choiceId,
            ...(decision ? { decision } : {}),
          }),
        ),
      }));
      expect((await store.get('a-vote'))?.stageDecisions).toEqual([
        {
          sourceIndex: 0,
          via: 'click',
          userId: 'U0BOB',
          voters: ['U0CAROL', 'U0BOB'],
          choiceId: 'allow_once',
          decision: 'approved',
        },
      ]);
      await withdrawn();
      expect((await store.get('a-vote'))?.phase).toBe('superseded');
      // Bob's vote is in no entry: that record kept nothing to write it from (docs/routing.md).
      expect(votesOf(await exported())).toEqual(['U0CAROL']);
    });
  });
});
