import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { renderCard } from '../../src/cards/renderCard.js';
import { refusalText } from '../../src/cards/renderUserMessages.js';
import type { AuditEntry } from '../../src/domain/audit.js';
import type { Away } from '../../src/domain/away.js';
import type { Grant, GrantStore } from '../../src/domain/grants/grant.js';
import type { RenderedMessage } from '../../src/domain/messages.js';
import { questionDigest } from '../../src/domain/questionDigest.js';
import type { Refusal } from '../../src/domain/refusal.js';
import { OPEN_RULES, type RouteRules } from '../../src/domain/route.js';
import type { HostEvent } from '../../src/msp/events.js';
import {
  ApprovalRequestParams,
  ApprovalResolvedParams,
  ApprovalUpdatedParams,
} from '../../src/msp/protocol.js';
import type { Authorizer } from '../../src/relay/deciding/authorizer.js';
import { ClickHandler } from '../../src/relay/deciding/clickHandler.js';
import { Decider, type DecisionOutcome, type DecisionRequest } from '../../src/relay/deciding/decider.js';
import { DecisionWarrant } from '../../src/relay/deciding/decisionWarrant.js';
import { refusalFor } from '../../src/relay/deciding/refusals.js';
import { GrantMaker } from '../../src/relay/grants/grantMaker.js';
import { HostEventHandler } from '../../src/relay/hostEvents/hostEventHandler.js';
import type { CardChannel, RefusalNotifier } from '../../src/relay/ports.js';
import { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { ApprovalStore } from '../../src/store/approvalStore.js';
import { shellApproval } from '../support/fakeHost.js';
import { RecordingHost as Host } from '../support/recordingHost.js';
import { BACKENDS, openBackend, type StoreBackend } from '../support/storeBackends.js';
import { testAuthorizer } from '../support/testAuthorizer.js';
import { testRedisUrl } from '../support/testRedis.js';

// The relay and click handler wired to real Redis, with the two outer edges (Slack and the host)
// replaced by recorders and the clock in the test's hands.

const logger = pino({ level: 'silent' });

/** Who may decide comes from the route's rules alone: no admins, owners or group members. */
function routeAuthorizer(rulesOf: () => RouteRules): Authorizer {
  return testAuthorizer({ rulesOf, logger });
}

class Cards implements CardChannel, RefusalNotifier {
  posted: Array<{ channel: string; ts: string; message: RenderedMessage }> = [];
  updated: RenderedMessage[] = [];
  notes: Array<{ userId: string; text: string }> = [];
  async post(channel: string, render: () => RenderedMessage) {
    const message = render();
    const ts = `1700000000.${String(this.posted.length + 1).padStart(6, '0')}`;
    this.posted.push({ channel, ts, message });
    return { ts, channel };
  }
  async update(_channel: string, _ts: string, message: RenderedMessage) {
    this.updated.push(message);
  }
  /** Worded as slack/ words it (SlackCardChannel.refuse), so the notes are the texts people read. */
  async refuse(_channel: string, userId: string, refusal: Refusal) {
    this.notes.push({ userId, text: refusalText(refusal) });
  }
}

/** An audit stream in memory: what was appended, and its vote entries. */
function memoryAudit() {
  const audited: AuditEntry[] = [];
  return {
    audited,
    audit: { append: async (entry: AuditEntry) => void audited.push(entry) },
    votes: () => audited.flatMap((entry) => (entry.kind === 'vote' ? [entry] : [])),
  };
}

describe.each(BACKENDS)('on %s Redis', (kind) => {
  let backend: StoreBackend;
  let store: ApprovalStore;
  const clock = new Date('2026-11-30T12:00:00Z');
  let cards: Cards;
  let host: Host;
  let relay: HostEventHandler;
  let keeper: RecordKeeper;
  let clicks: ClickHandler;
  let decider: Decider;
  let commandIds = 0;

  const params = ApprovalRequestParams.parse(
    shellApproval({
      approvalId: 'a-click',
      sessionId: 's1',
      stages: [
        ['npm', 'test'],
        ['git', 'push'],
      ],
    }),
  );

  function event(e: Omit<Extract<HostEvent, { type: 'approvalOpened' }>, 'hostId' | 'type'>): HostEvent {
    return { type: 'approvalOpened', hostId: 'default', ...e };
  }

  beforeAll(async () => {
    // A database no other file uses (replicas.test.ts has 13): both empty theirs, and run side by side.
    backend = await openBackend(kind, async () => ({ url: testRedisUrl(10) }));
    store = new ApprovalStore(backend.connect(), { resolvedTtlMs: 60_000 });
  });
  beforeEach(async () => {
    // The last test's keeper may still hold a batch of synced cards to strike off.
    if (keeper) {
      keeper.stop();
      await keeper.idle();
    }
    await backend.flush();
    cards = new Cards();
    host = new Host();
    const now = () => clock;
    keeper = new RecordKeeper({ store, cards, render: (r, n) => renderCard(r, { now: n }), logger, now });
    decider = new Decider({
      keeper,
      store,
      host: () => host,
      logger,
      now,
      newCommandId: () => `cmd-${++commandIds}`,
    });
    relay = new HostEventHandler({
      keeper,
      store,
      decider,
      host: () => host,
      logger,
      routeFor: () => ({ name: 'test', channel: 'C1' }),
      sandboxModeOf: () => 'default',
      now,
    });
    // Anyone may decide here: who may is test/e2e/authorization.test.ts's subject.
    const authorizer = routeAuthorizer(() => OPEN_RULES);
    clicks = new ClickHandler({ store, decider, keeper, notifier: cards, authorizer, logger });
    relay.handleHostEvent(event({ incarnation: 'inc-1', via: 'request', params }));
    await relay.idle();
  });
  afterAll(async () => {
    // Nothing of this backend's may still be writing when its clients quit.
    await relay.idle();
    keeper.stop();
    await keeper.idle();
    await backend.close();
  });

  /**
   * A Decider at a replica that does not own the host: it hands every decision on, to `forwarded`.
   * The owner answers within the asker's wait with `answers`, one each, in turn; then not at all.
   * Or `answers` is the owner, carrying each decision out as it is handed over.
   */
  const standbyDecider = (
    forwarded: DecisionRequest[],
    answers: DecisionOutcome[] | ((request: DecisionRequest) => Promise<DecisionOutcome>) = [],
  ) =>
    new Decider({
      keeper,
      store,
      host: () => host,
      logger,
      newCommandId: () => `cmd-${++commandIds}`,
      mayAct: () => false,
      forward: async (request) => {
        forwarded.push(request);
        if (typeof answers === 'function') return answers(request);
        return answers.shift() ?? { kind: 'forwarded' };
      },
    });

  /** Where "don't ask again" is kept: the grants it stores go to `created`. */
  const rememberingInto = (created: unknown[]) =>
    new GrantMaker({
      grants: {
        create: async (grant: Omit<Grant, 'grantId' | 'uses' | 'createdAt'>) => {
          created.push(grant);
          return { ...grant, grantId: `g-${created.length}`, uses: 0, createdAt: clock.toISOString() };
        },
      } as unknown as GrantStore,
      keeper,
      record: (approvalId) => store.get(approvalId),
      grantsOf: () => ({
        enabled: true,
        ttlMs: 3_600_000,
        maxTtlMs: 86_400_000,
        caller: 'session',
        choices: [{ kind: 'time', ms: 3_600_000 }],
      }),
      logger,
    });
  /** The scopeToken of rememberingInto's one choice, an hour: what its cards' buttons name. */
  const AN_HOUR = 't3600000';

  const click = (userId: string, sourceIndex: number) => ({
    channel: 'C1',
    ts: cards.posted[0]!.ts,
    userId,
    sourceIndex,
    choiceId: 'allow_once',
  });

  describe('ClickHandler against real Redis', () => {
    it('a user the route does not list is refused before anything is claimed: told why, audited, nothing decided', async () => {
      const audited: AuditEntry[] = [];
      const strict = new ClickHandler({
        store,
        decider,
        keeper,
        notifier: cards,
        authorizer: routeAuthorizer(() => ({
          ...OPEN_RULES,
          approvers: { users: ['U0ALICE'], usergroups: [] },
        })),
        audit: { append: async (entry) => void audited.push(entry) },
        logger,
      });
      await strict.click(click('U0EVE', 0));
      expect(host.decided).toHaveLength(0);
      expect(cards.notes.at(-1)).toEqual({ userId: 'U0EVE', text: 'Only <@U0ALICE> can decide on test.' });
      expect(audited).toEqual([
        expect.objectContaining({
          kind: 'refusal',
          approvalId: 'a-click',
          hostId: 'default',
          route: 'test',
          userId: 'U0EVE',
          action: 'click',
          reason: 'notApprover',
        }),
      ]);
      // Nothing was claimed: the approver decides next.
      await strict.click(click('U0ALICE', 0));
      expect(host.decided).toHaveLength(1);
      expect(audited).toHaveLength(1);
    });

    it('a pick that takes a reason the route requires, sent without one, is refused: told why, nothing claimed', async () => {
      const required = new ClickHandler({
        store,
        decider,
        keeper,
        notifier: cards,
        authorizer: routeAuthorizer(() => ({ ...OPEN_RULES, rejectReason: 'required' })),
        logger,
      });
      // A press that opened no reason modal (sent without its trigger_id), or a submit without one.
      for (const from of ['button', 'modal'] as const) {
        await required.click({ ...click('U0ALICE', 0), choiceId: 'abort', from, feedback: ' ' });
      }
      expect(host.decided).toHaveLength(0);
      expect((await store.get('a-click'))?.claim).toBeUndefined();
      const told = refusalText({ code: 'reasonRequired', route: 'test', quickReasons: false });
      expect(cards.notes).toEqual([
        { userId: 'U0ALICE', text: told },
        { userId: 'U0ALICE', text: told },
      ]);
      // With its reason, the same rejection is sent.
      await required.click({ ...click('U0ALICE', 0), choiceId: 'abort', feedback: 'Use a PR' });
      expect(host.decided).toEqual([expect.objectContaining({ choiceId: 'abort', feedback: 'Use a PR' })]);
    });

    it('an approval that changes between the check and the claim is checked again in full, who may decide included', async () => {
      let rules: RouteRules = OPEN_RULES;
      const changing = new ClickHandler({
        store,
        decider,
        keeper,
        notifier: cards,
        authorizer: routeAuthorizer(() => rules),
        logger,
      });
      const checked = await changing.check(click('U0BOB', 0));
      expect(checked.ok).toBe(true);
      // Then the route is narrowed to Alice, and the approval changes before Bob's claim is stored.
      rules = { ...OPEN_RULES, approvers: { users: ['U0ALICE'], usergroups: [] } };
      await store.update('a-click', (r) => ({ ...r, reason: 'asked again with more detail' }));
      await changing.click(click('U0BOB', 0), checked);
      expect(host.decided).toHaveLength(0);
      expect(cards.notes.at(-1)).toEqual({ userId: 'U0BOB', text: 'Only <@U0ALICE> can decide on test.' });
      expect((await store.get('a-click'))?.claim).toBeUndefined();

      // Unchanged since its check, a click goes through.
      const alice = await changing.check(click('U0ALICE', 0));
      await changing.click(click('U0ALICE', 0), alice);
      expect(host.decided).toHaveLength(1);
    });

    it('a click on an approval that changes before every claim gives up after five checks: told, nothing claimed', async () => {
      const decide = decider.decide.bind(decider);
      let changes = 0;
      // Whatever the click checked, the approval has moved on by the time its claim is tried.
      const decideSpy = vi.spyOn(decider, 'decide').mockImplementation(async (request) => {
        changes += 1;
        await store.update('a-click', (r) => ({ ...r, reason: `asked again (${changes})` }));
        return decide(request);
      });
      try {
        await clicks.click(click('U1', 0));
      } finally {
        decideSpy.mockRestore();
      }
      expect(changes).toBe(5);
      expect(host.decided).toHaveLength(0);
      expect(cards.notes.at(-1)?.text).toMatch(/question changed/);
      expect((await store.get('a-click'))?.claim).toBeUndefined();
      // Once it holds still, the same click decides.
      await clicks.click(click('U1', 0));
      expect(host.decided).toHaveLength(1);
    });

    it.each([
      ['answered late', 'answered'],
      ['whose answer is lost', 'lost'],
    ] as const)(
      'a claim Redis stores after its deadline, %s, is released: the card never shows it, the next click decides',
      async (_, then) => {
        const claimWith = store.claimWith.bind(store);
        let answer!: () => void;
        const held = new Promise<void>((resolve) => {
          answer = resolve;
        });
        // Redis stores the claim at once; its answer reaches the bot only after the deadline, or never.
        const claimSpy = vi.spyOn(store, 'claimWith').mockImplementation(async (...args) => {
          const outcome = await claimWith(...args);
          await held;
          if (then === 'lost') throw new Error('Connection is closed.');
          return outcome;
        });
        const record = (await store.get('a-click'))!;
        try {
          const outcome = await decider.decide({
            record,
            sourceIndex: 0,
            choiceId: 'allow_once',
            by: { via: 'click', userId: 'U1' },
            recordBy: Date.now() + 50,
          });
          expect(outcome).toEqual({ kind: 'notRecorded' });
          expect((await store.get('a-click'))?.claim?.userId).toBe('U1');
          answer();
          await keeper.idle();
        } finally {
          claimSpy.mockRestore();
        }
        expect(host.decided).toHaveLength(0);
        expect((await store.get('a-click'))?.claim).toBeUndefined();
        // Whatever the card was redrawn as, it never named U1 as deciding.
        expect(JSON.stringify(cards.updated)).not.toContain('U1');
        await clicks.click(click('U2', 0));
        expect(host.decided).toEqual([expect.objectContaining({ approvalId: 'a-click' })]);
      },
    );

    it('a host restart that re-asks the same stage under the same id frees the old claim', async () => {
      await clicks.click(click('U1', 0));
      expect(host.decided).toHaveLength(1);
      await clicks.click(click('U2', 0));
      expect(cards.notes.at(-1)?.text).toMatch(/already being decided by <@U1>/);

      // The host restarts and recovers the approval under the same id, at the same stage: the
      // earlier answer was evidence, not authority, so the question is open again.
      relay.handleHostEvent({
        type: 'approvalUpdated',
        hostId: 'default',
        incarnation: 'inc-2',
        params: ApprovalUpdatedParams.parse({ ...params, change: { kind: 'restartRecovered' } }),
      });
      await relay.idle();

      await clicks.click(click('U2', 0));
      expect(host.decided).toHaveLength(2);
      expect(host.decided[1]).toMatchObject({ requirementId: { sourceIndex: 0 } });
      expect(host.decided[1]!.commandId).not.toBe(host.decided[0]!.commandId);
    });

    it('a click checked against stage 1 never decides stage 2 after the stage moved', async () => {
      const moved = { ...params, currentRequirementId: { approvalId: 'a-click', sourceIndex: 1 } };
      // The stage moves between the button being rendered and the click arriving.
      relay.handleHostEvent(event({ incarnation: 'inc-1', via: 'request', params: moved }));
      await relay.idle();
      await clicks.click(click('U1', 0));
      expect(host.decided).toHaveLength(0);
      expect(cards.notes.at(-1)?.text).toMatch(/question changed/);
    });

    it('a click on a card this process posted is checked without reading Redis, then decided', async () => {
      const getForMessage = vi.spyOn(store, 'getForMessage');
      const get = vi.spyOn(store, 'get');
      try {
        const checked = await clicks.check({ ...click('U1', 0), approvalHint: 'a-click' });
        expect(checked).toMatchObject({ ok: true, record: { approvalId: 'a-click', version: 2 } });
        expect(getForMessage).not.toHaveBeenCalled();
        expect(get).not.toHaveBeenCalled();
        await clicks.click({ ...click('U1', 0), approvalHint: 'a-click' }, checked);
        expect(host.decided).toEqual([expect.objectContaining({ approvalId: 'a-click' })]);
      } finally {
        getForMessage.mockRestore();
        get.mockRestore();
      }
    });

    it('a click on a host another replica owns is checked against what Redis holds, then handed on', async () => {
      const forwarded: DecisionRequest[] = [];
      const elsewhere = standbyDecider(forwarded);
      const handing = new ClickHandler({
        store,
        decider: elsewhere,
        keeper,
        notifier: cards,
        authorizer: routeAuthorizer(() => OPEN_RULES),
        logger,
      });
      const getForMessage = vi.spyOn(store, 'getForMessage');
      try {
        await handing.click({ ...click('U1', 0), approvalHint: 'a-click' });
        expect(getForMessage).toHaveBeenCalledTimes(1);
        expect(forwarded.map((request) => request.record.approvalId)).toEqual(['a-click']);
        expect(host.decided).toHaveLength(0);
      } finally {
        getForMessage.mockRestore();
      }
    });

    it('a modal submit handed on names the question its modal showed, for the owner to hold it to', async () => {
      const forwarded: DecisionRequest[] = [];
      const handing = new ClickHandler({
        store,
        decider: standbyDecider(forwarded),
        keeper,
        notifier: cards,
        authorizer: routeAuthorizer(() => OPEN_RULES),
        logger,
      });
      const askedAs = questionDigest((await store.get('a-click'))!);
      await handing.click({ ...click('U1', 0), approvalHint: 'a-click', from: 'modal', askedAs });
      expect(forwarded.map((request) => request.by)).toEqual([{ via: 'click', userId: 'U1', askedAs }]);
    });

    it('a button naming its approval is read in one step, and checked against the message', async () => {
      await clicks.click({ ...click('U1', 0), approvalHint: 'a-click' });
      expect(host.decided).toHaveLength(1);
      expect(host.decided[0]).toMatchObject({ approvalId: 'a-click' });
    });

    it("a button naming another approval than its message decides the message's own", async () => {
      const other = {
        ...params,
        approvalId: 'a-other',
        currentRequirementId: { approvalId: 'a-other', sourceIndex: 0 },
      };
      relay.handleHostEvent(event({ incarnation: 'inc-1', via: 'request', params: other }));
      await relay.idle();
      await clicks.click({ ...click('U1', 0), approvalHint: 'a-other' });
      expect(host.decided.map((d) => d.approvalId)).toEqual(['a-click']);
    });

    it('a button naming an approval on a message that maps to none is refused', async () => {
      await clicks.click({ ...click('U1', 0), ts: '1700000000.999999', approvalHint: 'a-click' });
      expect(host.decided).toHaveLength(0);
      expect(cards.notes.at(-1)?.text).toMatch(/no approval behind this message/);
    });
  });

  describe('who may decide, where the decision is claimed', () => {
    /** Only Alice (and Bob, when named) may decide; `quorum` approving picks are needed. */
    const strict = (users = ['U0ALICE'], quorum = 1) =>
      routeAuthorizer(() => ({ ...OPEN_RULES, approvers: { users, usergroups: [] }, quorum }));
    /** A Decider that checks again what its caller did not (as the host's owner does). */
    const checkingDecider = (authorizer: Authorizer) => {
      const warrant = new DecisionWarrant({
        authorizer,
        grants: { get: async () => undefined },
        grantsOf: () => undefined,
        ladderOf: () => [],
      });
      const checker = new Decider({
        keeper,
        store,
        host: () => host,
        logger,
        newCommandId: () => `cmd-${++commandIds}`,
        warrant,
      });
      return { checker, warrant };
    };
    /** Clicks taken at the replica that owns the host, deciding through `decider`. */
    const ownerClicks = (authorizer: Authorizer, decider: Decider) =>
      new ClickHandler({ store, decider, keeper, notifier: cards, authorizer, logger });
    const byClick = (userId: string, voters?: string[]) => ({
      via: 'click' as const,
      userId,
      ...(voters ? { voters } : {}),
    });
    /** `userId` is away until tomorrow, naming `delegate` to stand in. */
    const awayFor = (userId: string, delegate: string): Away => ({
      userId,
      delegate,
      until: new Date(Date.now() + 86_400_000).toISOString(),
      since: clock.toISOString(),
    });

    it("an outsider's click at a replica that does not own the host is refused there: told why, audited, nothing handed on", async () => {
      const forwarded: DecisionRequest[] = [];
      const elsewhere = standbyDecider(forwarded);
      const audited: AuditEntry[] = [];
      const standby = new ClickHandler({
        store,
        decider: elsewhere,
        keeper,
        notifier: cards,
        authorizer: strict(),
        audit: { append: async (entry) => void audited.push(entry) },
        logger,
      });
      await standby.click({ ...click('U0EVE', 0), approvalHint: 'a-click' });
      expect(forwarded).toEqual([]);
      expect(host.decided).toHaveLength(0);
      expect(cards.notes).toEqual([{ userId: 'U0EVE', text: 'Only <@U0ALICE> can decide on test.' }]);
      expect(audited).toEqual([
        expect.objectContaining({ kind: 'refusal', userId: 'U0EVE', reason: 'notApprover' }),
      ]);
      // The approver's click at the same replica is handed on.
      await standby.click({ ...click('U0ALICE', 0), approvalHint: 'a-click' });
      expect(forwarded.map((r) => r.by)).toEqual([byClick('U0ALICE')]);
    });

    it('a click its caller did not check (a forwarded one) is checked on the record claimed: refused, nothing claimed', async () => {
      const { checker } = checkingDecider(strict());
      const record = (await store.get('a-click'))!;
      const outcome = await checker.decide({
        record,
        sourceIndex: 0,
        choiceId: 'allow_once',
        by: byClick('U0EVE'),
        onChange: 'return',
      });
      expect(outcome).toEqual({
        kind: 'notAuthorized',
        refused: expect.objectContaining({ allowed: false, why: 'notApprover', route: 'test' }),
      });
      expect(host.decided).toHaveLength(0);
      expect((await store.get('a-click'))?.claim).toBeUndefined();
    });

    it('a record that changed after its caller checked it is checked again in full before its claim', async () => {
      const { checker } = checkingDecider(strict());
      const checked = (await store.get('a-click'))!;
      await store.update('a-click', (r) => ({ ...r, reason: 'asked again with more detail' }));
      const outcome = await checker.decide({
        record: checked,
        sourceIndex: 0,
        choiceId: 'allow_once',
        by: byClick('U0EVE'),
        warranted: true,
      });
      expect(outcome).toMatchObject({ kind: 'notAuthorized', refused: { why: 'notApprover' } });
      expect(host.decided).toHaveLength(0);
    });

    it('a decision on the question its person saw (a modal, a batch summary) is claimed only while it is asked', async () => {
      const { checker } = checkingDecider(strict());
      const seen = (await store.get('a-click'))!;
      // The host asks the same stage again, of another command, before the owner claims.
      await store.update('a-click', (r) => ({
        ...r,
        subject: { ...r.subject, command: 'git push --force origin main' },
      }));
      const now = (await store.get('a-click'))!;
      const forwarded = (askedAs: string) =>
        checker.decide({
          record: now,
          sourceIndex: 0,
          choiceId: 'allow_once',
          by: { ...byClick('U0ALICE'), askedAs },
          onChange: 'return',
        });
      expect(await forwarded(questionDigest(seen))).toEqual({ kind: 'askedOtherwise' });
      expect(host.decided).toHaveLength(0);
      expect((await store.get('a-click'))?.claim).toBeUndefined();
      expect(refusalFor({ kind: 'askedOtherwise' }, 'U0ALICE')).toEqual({ code: 'questionChanged' });
      // The question as it is now, seen, is decided.
      expect(await forwarded(questionDigest(now))).toEqual({ kind: 'decided', terminal: false });
    });

    it('the very record its caller checked is claimed without a second check', async () => {
      const { checker, warrant } = checkingDecider(strict());
      const check = vi.spyOn(warrant, 'check');
      const record = (await store.get('a-click'))!;
      const outcome = await checker.decide({
        record,
        sourceIndex: 0,
        choiceId: 'allow_once',
        by: byClick('U0ALICE'),
        warranted: true,
      });
      expect(outcome).toEqual({ kind: 'decided', terminal: false });
      expect(check).not.toHaveBeenCalled();
    });

    it('a pick that completes a quorum at the owner is counted again where it is claimed: a voter who may no longer decide does not count', async () => {
      let users = ['U0ALICE', 'U0BOB', 'U0CAROL'];
      const authorizer = routeAuthorizer(() => ({
        ...OPEN_RULES,
        approvers: { users, usergroups: [] },
        quorum: 2,
      }));
      const { checker } = checkingDecider(authorizer);
      const owner = ownerClicks(authorizer, checker);
      await owner.click(click('U0CAROL', 0));
      expect(cards.notes.at(-1)).toEqual({
        userId: 'U0CAROL',
        text: refusalText({ code: 'voteCounted', votes: 1, quorum: 2 }),
      });
      // Carol is no longer among the approvers: her vote, cast while she was, no longer counts.
      users = ['U0ALICE', 'U0BOB'];
      await owner.click(click('U0BOB', 0));
      expect(host.decided).toHaveLength(0);
      expect(cards.notes.at(-1)).toEqual({
        userId: 'U0BOB',
        text: refusalText({ code: 'quorumNotMet', votes: 1, quorum: 2 }),
      });
      expect((await store.get('a-click'))?.claim).toBeUndefined();
      // Alice's pick is the second that counts, and the decision names only those whose votes count.
      const checks = vi.spyOn(authorizer, 'check');
      await owner.click(click('U0ALICE', 0));
      expect(host.decided).toHaveLength(1);
      // Alice checked at her click and once where it is claimed, her vote not a third time.
      expect(checks.mock.calls.filter(([userId]) => userId === 'U0ALICE')).toHaveLength(2);
      expect((await store.get('a-click'))?.claim?.voters).toEqual(['U0BOB', 'U0ALICE']);
    });

    it('a vote that reached the count but decided nothing is audited as a vote; one that decided is not', async () => {
      let users = ['U0ALICE', 'U0BOB', 'U0CAROL'];
      const authorizer = routeAuthorizer(() => ({
        ...OPEN_RULES,
        approvers: { users, usergroups: [] },
        quorum: 2,
      }));
      const audited: AuditEntry[] = [];
      const { checker } = checkingDecider(authorizer);
      const owner = new ClickHandler({
        store,
        decider: checker,
        keeper,
        notifier: cards,
        authorizer,
        audit: { append: async (entry) => void audited.push(entry) },
        logger,
      });
      await owner.click(click('U0CAROL', 0));
      users = ['U0ALICE', 'U0BOB'];
      // Bob's vote reaches two, but Carol's no longer counts where it is claimed: nothing is decided.
      await owner.click(click('U0BOB', 0));
      expect(host.decided).toHaveLength(0);
      const votes = () => audited.filter((entry) => entry.kind === 'vote');
      expect(votes()).toEqual([
        expect.objectContaining({ userId: 'U0CAROL', votes: 1, quorum: 2 }),
        expect.objectContaining({ userId: 'U0BOB', choiceId: 'allow_once', votes: 1, quorum: 2 }),
      ]);
      // Alice's vote completes the quorum: the decision names her, no vote entry does.
      await owner.click(click('U0ALICE', 0));
      expect(host.decided).toHaveLength(1);
      expect(votes().map((entry) => entry.kind === 'vote' && entry.userId)).toEqual(['U0CAROL', 'U0BOB']);
    });

    it('a vote whose decision was handed on and failed after its asker stopped waiting is audited as a vote', async () => {
      const authorizer = strict(['U0ALICE', 'U0BOB'], 2);
      const { audit, votes } = memoryAudit();
      const forwarded: DecisionRequest[] = [];
      const standby = new ClickHandler({
        store,
        decider: standbyDecider(forwarded),
        keeper,
        notifier: cards,
        authorizer,
        audit,
        logger,
      });
      await standby.click(click('U0ALICE', 0));
      // Bob's vote completes the quorum; the owner has not answered within the asker's wait.
      await standby.click(click('U0BOB', 0));
      expect(forwarded.map((request) => request.by)).toEqual([byClick('U0BOB', ['U0ALICE', 'U0BOB'])]);
      expect(votes().map((entry) => entry.userId)).toEqual(['U0ALICE']);
      // The owner answers the person itself, the asker as it travelled (JSON in the stream): the
      // recount where it was claimed found one vote too few, and nothing was decided.
      const asker = JSON.parse(JSON.stringify(forwarded[0]!.asker));
      // The vote travels with what its entry names of the approval, not the whole record.
      expect(Object.keys(asker.vote.record).sort()).toEqual(['approvalId', 'hostId', 'route']);
      const owner = new ClickHandler({ store, decider, keeper, notifier: cards, authorizer, audit, logger });
      owner.answerLate(asker, 'a-click', { kind: 'quorumNotMet', votes: 1, quorum: 2 });
      await owner.drain();
      expect(votes()).toEqual([
        expect.objectContaining({ userId: 'U0ALICE', votes: 1, quorum: 2 }),
        expect.objectContaining({
          kind: 'vote',
          approvalId: 'a-click',
          hostId: 'default',
          route: 'test',
          userId: 'U0BOB',
          choiceId: 'allow_once',
          sourceIndex: 0,
          votes: 1,
          quorum: 2,
        }),
      ]);
      expect(cards.notes.at(-1)).toEqual({
        userId: 'U0BOB',
        text: refusalText({ code: 'quorumNotMet', votes: 1, quorum: 2 }),
      });
      // Carried out late, the decision names Bob: no vote entry does.
      const again = new ClickHandler({ store, decider, keeper, notifier: cards, authorizer, audit, logger });
      again.answerLate(asker, 'a-click', { kind: 'decided', terminal: false });
      await again.drain();
      expect(votes().map((entry) => entry.userId)).toEqual(['U0ALICE', 'U0BOB']);
    });

    it('a vote handed on again after the owner found its approval changed is audited once when the second try fails late', async () => {
      const authorizer = strict(['U0ALICE', 'U0BOB'], 2);
      const { audit, votes } = memoryAudit();
      const forwarded: DecisionRequest[] = [];
      // The owner answers the first try at once: the approval changed between the check and its
      // claim. The second, after the asker checked and counted again, it answers too late.
      const standby = new ClickHandler({
        store,
        decider: standbyDecider(forwarded, [{ kind: 'changed' }]),
        keeper,
        notifier: cards,
        authorizer,
        audit,
        logger,
      });
      await standby.click(click('U0ALICE', 0));
      await standby.click(click('U0BOB', 0));
      const byBob = byClick('U0BOB', ['U0ALICE', 'U0BOB']);
      expect(forwarded.map((request) => request.by)).toEqual([byBob, byBob]);
      expect(votes().map((entry) => entry.userId)).toEqual(['U0ALICE']);
      // Counted again, Bob's vote was not stored anew; the second try still carries it.
      const asker = JSON.parse(JSON.stringify(forwarded[1]!.asker));
      const owner = new ClickHandler({ store, decider, keeper, notifier: cards, authorizer, audit, logger });
      owner.answerLate(asker, 'a-click', { kind: 'quorumNotMet', votes: 1, quorum: 2 });
      await owner.drain();
      await standby.drain();
      expect(votes()).toEqual([
        expect.objectContaining({ userId: 'U0ALICE', votes: 1, quorum: 2 }),
        expect.objectContaining({
          userId: 'U0BOB',
          choiceId: 'allow_once',
          sourceIndex: 0,
          votes: 1,
          quorum: 2,
        }),
      ]);
      // Bob's vote is the one stored at his press, audited with the time it was cast.
      const stored = (await store.get('a-click'))?.votes?.find((vote) => vote.userId === 'U0BOB');
      expect(votes()[1]?.at).toBe(stored?.at);
    });

    it.each([
      ['resolved the approval', true],
      ['claimed the stage, the host not answering yet,', false],
    ])("a vote whose co-voter's decision %s first is named by it: no vote entry", async (_, resolves) => {
      const authorizer = strict(['U0ALICE', 'U0BOB', 'U0CAROL'], 2);
      const { audit, votes } = memoryAudit();
      const { checker } = checkingDecider(authorizer);
      const owner = new ClickHandler({
        store,
        decider: checker,
        keeper,
        notifier: cards,
        authorizer,
        audit,
        logger,
      });
      // The last stage is asked: a decision on it resolves the approval.
      const last = { ...params, currentRequirementId: { approvalId: 'a-click', sourceIndex: 1 } };
      relay.handleHostEvent(event({ incarnation: 'inc-1', via: 'request', params: last }));
      await relay.idle();
      await owner.click(click('U0CAROL', 1));
      const resolvedBy = async () => {
        const { availableChoices } = (await store.get('a-click'))!;
        const decision = availableChoices.find((choice) => choice.choiceId === 'allow_once')!.decision;
        const resolved = { sessionId: 's1', approvalId: 'a-click', decision, resolvedBy: 'user' };
        relay.handleHostEvent({
          type: 'approvalResolved',
          hostId: 'default',
          incarnation: 'inc-1',
          params: ApprovalResolvedParams.parse({
            ...resolved,
            decidedByCommandId: host.decided[0]!.commandId,
          }),
        });
        await relay.idle();
      };
      // Unless it resolves, Alice's decision waits for the host's answer until Bob is done.
      let answer = () => {};
      if (!resolves) {
        const answered = new Promise<void>((resolve) => {
          answer = resolve;
        });
        const hostDecide = host.decide.bind(host);
        vi.spyOn(host, 'decide').mockImplementationOnce(async (sent) => {
          await answered;
          return hostDecide(sent);
        });
      }
      // Alice presses between Bob's count and his claim: her vote changes the approval under his
      // claim (he checks again), and completes the quorum too. Her decision, which names Bob, is
      // claimed before he checks.
      const decide = checker.decide.bind(checker);
      let aliceCounted = () => {};
      const aliceDeciding = new Promise<void>((resolve) => {
        aliceCounted = resolve;
      });
      let bobDone = () => {};
      const bobClaimed = new Promise<void>((resolve) => {
        bobDone = resolve;
      });
      let bobFirst: DecisionOutcome | undefined;
      vi.spyOn(checker, 'decide')
        .mockImplementationOnce(async (request) => {
          const alice = owner.click(click('U0ALICE', 1));
          await aliceDeciding;
          bobFirst = await decide(request);
          bobDone();
          if (resolves) {
            await alice;
            await resolvedBy();
          } else {
            await vi.waitFor(async () => expect((await store.get('a-click'))?.claim?.userId).toBe('U0ALICE'));
          }
          return bobFirst;
        })
        .mockImplementationOnce(async (request) => {
          aliceCounted();
          await bobClaimed;
          return decide(request);
        });
      await owner.click(click('U0BOB', 1));
      answer();
      await owner.drain();
      expect(bobFirst).toEqual({ kind: 'changed' });
      const record = await store.get('a-click');
      expect(resolves ? record?.resolution?.voters : record?.claim?.voters).toEqual([
        'U0CAROL',
        'U0BOB',
        'U0ALICE',
      ]);
      expect(host.decided).toHaveLength(1);
      // Alice's decision names Bob; only Carol's vote, one short, is a vote entry.
      expect(votes().map((entry) => entry.userId)).toEqual(['U0CAROL']);
    });

    it('a pick checked on a question the host then asks otherwise is neither counted toward the quorum nor decided', async () => {
      const authorizer = strict(['U0ALICE', 'U0BOB'], 2);
      const { checker } = checkingDecider(authorizer);
      const owner = ownerClicks(authorizer, checker);
      await owner.click(click('U0ALICE', 0));
      const checked = await owner.check(click('U0BOB', 0));
      expect(checked.ok).toBe(true);
      // The host asks the same stage again, of another command, between Bob's check and his vote.
      await store.update('a-click', (r) => ({
        ...r,
        subject: { ...r.subject, command: 'git push --force origin prod' },
      }));
      await owner.click(click('U0BOB', 0), checked);
      expect(host.decided).toHaveLength(0);
      expect(cards.notes.at(-1)).toEqual({ userId: 'U0BOB', text: refusalText({ code: 'questionChanged' }) });
      expect((await store.get('a-click'))?.votes?.map((v) => v.userId)).toEqual(['U0ALICE']);
    });

    it('a press is held to the question its button showed: one the host asked otherwise since is neither counted nor decided', async () => {
      const { checker } = checkingDecider(strict(['U0ALICE', 'U0BOB'], 2));
      const owner = ownerClicks(strict(['U0ALICE', 'U0BOB'], 2), checker);
      const shown = questionDigest((await store.get('a-click'))!);
      // The host asks the same stage again, of another command, after the card was drawn.
      await store.update('a-click', (r) => ({
        ...r,
        subject: { ...r.subject, command: 'rm -rf /srv/prod' },
      }));
      const updates = cards.updated.length;
      await owner.click({ ...click('U0ALICE', 0), approvalHint: 'a-click', askedAs: shown });
      expect(cards.notes.at(-1)).toEqual({
        userId: 'U0ALICE',
        text: refusalText({ code: 'questionChanged' }),
      });
      // A button of a card drawn before buttons named their question cannot say what it showed.
      await owner.click({ ...click('U0BOB', 0), approvalHint: 'a-click', namesNoQuestion: true });
      expect(cards.notes.at(-1)).toEqual({
        userId: 'U0BOB',
        text: refusalText({ code: 'questionChanged', why: 'unnamed' }),
      });
      expect(host.decided).toHaveLength(0);
      expect((await store.get('a-click'))?.votes).toBeUndefined();
      // Each refused press brings the card up to date, so the next one names the question asked now.
      await keeper.idle();
      expect(cards.updated.length).toBeGreaterThanOrEqual(updates + 2);
      const asked = questionDigest((await store.get('a-click'))!);
      await owner.click({ ...click('U0ALICE', 0), approvalHint: 'a-click', askedAs: asked });
      expect(cards.notes.at(-1)?.text).toContain('Your approval is counted: 1 of 2');
      expect((await store.get('a-click'))?.votes).toEqual([
        expect.objectContaining({ userId: 'U0ALICE', asked }),
      ]);
    });

    it('a forwarded click is held to whom its person stands in for now: the decision says so, and outlasts nothing', async () => {
      const until = new Date(Date.now() + 86_400_000).toISOString();
      const authorizer = testAuthorizer({
        rulesOf: () => ({ ...OPEN_RULES, approvers: { users: ['U0ALICE'], usergroups: [] } }),
        // Alice went away, naming Carol, after the replica that took Carol's click checked it.
        standIns: {
          U0CAROL: [{ userId: 'U0ALICE', delegate: 'U0CAROL', until, since: clock.toISOString() }],
        },
        logger,
      });
      const { checker } = checkingDecider(authorizer);
      const record = (await store.get('a-click'))!;
      const forwarded = (choiceId: string) =>
        checker.decide({ record, sourceIndex: 0, choiceId, by: byClick('U0CAROL'), onChange: 'return' });
      expect(await forwarded('allow_local_prefix')).toEqual({ kind: 'standInOnce', for: 'U0ALICE' });
      expect(refusalFor({ kind: 'standInOnce', for: 'U0ALICE' }, 'U0CAROL')).toEqual({
        code: 'standInOnce',
        for: 'U0ALICE',
      });
      expect((await store.get('a-click'))?.claim).toBeUndefined();
      expect(await forwarded('allow_once')).toEqual({ kind: 'decided', terminal: false });
      expect((await store.get('a-click'))?.claim).toMatchObject({ userId: 'U0CAROL', onBehalfOf: 'U0ALICE' });
    });

    /**
     * Carol decides as a member of the approvers' group until `standInNow()`: then she has left it,
     * and stands in for Alice, who is away.
     */
    const carolsRightTurnsIntoAStandIns = () => {
      let members = ['U0CAROL'];
      let standIns: Record<string, Away[]> = {};
      const authorizer = testAuthorizer({
        rulesOf: () => ({ ...OPEN_RULES, approvers: { users: ['U0ALICE'], usergroups: ['S0APPROVERS'] } }),
        groups: async () => new Set(members),
        standIns: async (delegate) => standIns[delegate] ?? [],
        logger,
      });
      const standInNow = () => {
        members = [];
        standIns = { U0CAROL: [awayFor('U0ALICE', 'U0CAROL')] };
      };
      const ownRightAgain = () => {
        members = ['U0CAROL'];
        standIns = {};
      };
      return { authorizer, standInNow, ownRightAgain };
    };

    it("a \"don't ask again\" handed on while its presser's own right turns into a stand-in's is refused where it is claimed: no grant, and told why", async () => {
      const { authorizer, standInNow, ownRightAgain } = carolsRightTurnsIntoAStandIns();
      const { checker } = checkingDecider(authorizer);
      // Carol's standing changes after the standby checked her press, before the owner claims it.
      const meanwhile = [standInNow];
      // The owner carries the press out as the stream hands it over: `by` as it travelled, on the
      // record it holds, with nothing the standby checked taken on trust (DecisionForwarding).
      const owner = async (request: DecisionRequest) => {
        meanwhile.shift()?.();
        return checker.decide({
          record: (await store.get('a-click'))!,
          sourceIndex: request.sourceIndex,
          choiceId: request.choiceId,
          by: JSON.parse(JSON.stringify(request.by)),
          commandId: `cmd-${++commandIds}`,
          ...(request.onChange ? { onChange: request.onChange } : {}),
        });
      };
      const created: unknown[] = [];
      const forwarded: DecisionRequest[] = [];
      const standby = new ClickHandler({
        store,
        decider: standbyDecider(forwarded, owner),
        keeper,
        notifier: cards,
        authorizer,
        remembering: rememberingInto(created),
        logger,
      });
      const press = { ...click('U0CAROL', 0), remember: true, rememberScope: AN_HOUR };
      await standby.click(press);
      // Checked at the standby, Carol pressed in her own right: the press was handed on.
      expect(forwarded).toHaveLength(1);
      expect(host.decided).toHaveLength(0);
      expect((await store.get('a-click'))?.claim).toBeUndefined();
      expect(created).toEqual([]);
      expect(cards.notes).toEqual([
        { userId: 'U0CAROL', text: refusalText({ code: 'standInOnce', for: 'U0ALICE' }) },
      ]);
      // In her own right again, her press is remembered.
      ownRightAgain();
      await standby.click(press);
      expect(host.decided).toHaveLength(1);
      expect(created).toEqual([expect.objectContaining({ grantedBy: 'U0CAROL', approvalId: 'a-click' })]);
    });

    it('a "don\'t ask again" at the owner is held at its claim to whom its presser stands in for then: no grant, and told why', async () => {
      const { authorizer, standInNow } = carolsRightTurnsIntoAStandIns();
      const { checker } = checkingDecider(authorizer);
      const created: unknown[] = [];
      const owner = new ClickHandler({
        store,
        decider: checker,
        keeper,
        notifier: cards,
        authorizer,
        remembering: rememberingInto(created),
        logger,
      });
      const press = { ...click('U0CAROL', 0), remember: true, rememberScope: AN_HOUR };
      const checked = await owner.check(press);
      expect(checked.ok).toBe(true);
      // Her standing changes between her check and the claim, the record staying as it was.
      standInNow();
      await owner.click(press, checked);
      expect(host.decided).toHaveLength(0);
      expect(created).toEqual([]);
      expect(cards.notes).toEqual([
        { userId: 'U0CAROL', text: refusalText({ code: 'standInOnce', for: 'U0ALICE' }) },
      ]);
    });

    it('a voter who stands in now counts at the claim only for what ends with the request', async () => {
      let users = ['U0ALICE', 'U0BOB', 'U0DAVE'];
      let standIns: Record<string, Away[]> = {};
      const authorizer = testAuthorizer({
        rulesOf: () => ({ ...OPEN_RULES, approvers: { users, usergroups: [] }, quorum: 2 }),
        standIns: async (delegate) => standIns[delegate] ?? [],
        logger,
      });
      const { checker } = checkingDecider(authorizer);
      const owner = ownerClicks(authorizer, checker);
      // Dave, an approver, picks what outlasts the request, as himself.
      await owner.click({ ...click('U0DAVE', 0), choiceId: 'allow_local_prefix' });
      // Dave is no approver now, but stands in for Alice, who is away.
      users = ['U0ALICE', 'U0BOB'];
      standIns = { U0DAVE: [awayFor('U0ALICE', 'U0DAVE')] };
      await owner.click({ ...click('U0BOB', 0), choiceId: 'allow_local_prefix' });
      // A stand-in's vote never carries what would outlast the request: Bob's alone is too few.
      expect(host.decided).toHaveLength(0);
      expect((await store.get('a-click'))?.claim).toBeUndefined();
      expect(cards.notes.at(-1)).toEqual({
        userId: 'U0BOB',
        text: refusalText({ code: 'quorumNotMet', votes: 1, quorum: 2 }),
      });
    });

    it('a voter who stands in now is named at the claim as standing in, whatever they voted as', async () => {
      let users = ['U0ALICE', 'U0BOB', 'U0DAVE'];
      let standIns: Record<string, Away[]> = {};
      const authorizer = testAuthorizer({
        rulesOf: () => ({ ...OPEN_RULES, approvers: { users, usergroups: [] }, quorum: 2 }),
        standIns: async (delegate) => standIns[delegate] ?? [],
        logger,
      });
      const { checker } = checkingDecider(authorizer);
      const owner = ownerClicks(authorizer, checker);
      await owner.click(click('U0DAVE', 0));
      users = ['U0ALICE', 'U0BOB'];
      standIns = { U0DAVE: [awayFor('U0ALICE', 'U0DAVE')] };
      await owner.click(click('U0BOB', 0));
      expect(host.decided).toHaveLength(1);
      const claim = (await store.get('a-click'))?.claim;
      expect(claim?.voters).toEqual(['U0DAVE', 'U0BOB']);
      expect(claim?.stoodInFor).toEqual({ U0DAVE: 'U0ALICE' });
    });

    it('a quorum is counted again where it is claimed: only votes of people who may decide count', async () => {
      const { checker } = checkingDecider(strict(['U0ALICE', 'U0BOB'], 2));
      const vote = (userId: string) => ({
        sourceIndex: 0,
        choiceId: 'allow_once',
        userId,
        at: clock.toISOString(),
      });
      await store.update('a-click', (r) => ({ ...r, votes: [vote('U0MALLORY'), vote('U0ALICE')] }));
      const outcome = await checker.decide({
        record: (await store.get('a-click'))!,
        sourceIndex: 0,
        choiceId: 'allow_once',
        by: byClick('U0ALICE', ['U0MALLORY', 'U0ALICE']),
      });
      expect(outcome).toEqual({ kind: 'quorumNotMet', votes: 1, quorum: 2 });
      expect(host.decided).toHaveLength(0);
      await store.update('a-click', (r) => ({ ...r, votes: [...(r.votes ?? []), vote('U0BOB')] }));
      const second = await checker.decide({
        record: (await store.get('a-click'))!,
        sourceIndex: 0,
        choiceId: 'allow_once',
        by: byClick('U0BOB', ['U0ALICE', 'U0BOB']),
      });
      expect(second).toEqual({ kind: 'decided', terminal: false });
    });
  });

  describe('a "don\'t ask again" answered late', () => {
    /** The owner of the host, answering a press another replica took and stopped waiting on. */
    function lateOwner(): { owner: ClickHandler; created: unknown[] } {
      const created: unknown[] = [];
      const owner = new ClickHandler({
        store,
        decider,
        keeper,
        notifier: cards,
        authorizer: routeAuthorizer(() => OPEN_RULES),
        remembering: rememberingInto(created),
        logger,
      });
      return { owner, created };
    }

    it('remembers nothing when the approval moved on from the stage pressed, and says why', async () => {
      const { owner, created } = lateOwner();
      // "Don't ask again" was pressed on stage 0 (npm test) at another replica, which stopped
      // waiting; by the time this owner answers, the host has moved on to stage 1 (git push).
      const moved = { ...params, currentRequirementId: { approvalId: 'a-click', sourceIndex: 1 } };
      relay.handleHostEvent(event({ incarnation: 'inc-1', via: 'request', params: moved }));
      await relay.idle();
      const asker = { channel: 'C1', userId: 'U1', sourceIndex: 0, remember: true, rememberScope: AN_HOUR };
      owner.answerLate(asker, 'a-click', { kind: 'decided', terminal: false });
      await owner.drain();
      expect(created).toEqual([]);
      expect(cards.notes.at(-1)).toEqual({
        userId: 'U1',
        text: expect.stringContaining('the request had moved on to another step'),
      });
      expect((await store.get('a-click'))?.remembered).toBeUndefined();

      // Pressed on the stage being decided, as it is asked now, the same late answer remembers it.
      const askedAs = questionDigest((await store.get('a-click'))!);
      owner.answerLate({ ...asker, sourceIndex: 1, askedAs }, 'a-click', {
        kind: 'decided',
        terminal: false,
      });
      await owner.drain();
      expect(created).toEqual([expect.objectContaining({ grantedBy: 'U1', approvalId: 'a-click' })]);
    });

    it('remembers nothing when the host asked the stage pressed otherwise meanwhile, and says why', async () => {
      const { owner, created } = lateOwner();
      // "Don't ask again" was pressed on stage 0 as `npm test`; while the owner waited on the host
      // for the decide, the host asked the same stage again, of another command.
      const shown = questionDigest((await store.get('a-click'))!);
      await store.update('a-click', (r) => ({ ...r, subject: { ...r.subject, command: 'rm -rf /home' } }));
      const asker = { channel: 'C1', userId: 'U1', sourceIndex: 0, remember: true, rememberScope: AN_HOUR };
      owner.answerLate({ ...asker, askedAs: shown }, 'a-click', { kind: 'decided', terminal: false });
      await owner.drain();
      expect(created).toEqual([]);
      expect(cards.notes.at(-1)).toEqual({
        userId: 'U1',
        text: refusalText({ code: 'grantNotStored', why: 'askedOtherwise' }),
      });
      expect(cards.notes.at(-1)?.text).toContain('asking something else on that step');
      // A press that names no question (an asker of an earlier release) cannot say what it saw.
      owner.answerLate(asker, 'a-click', { kind: 'decided', terminal: false });
      await owner.drain();
      expect(created).toEqual([]);
      expect((await store.get('a-click'))?.remembered).toBeUndefined();
      // As asked now, it is remembered: what the person saw is what the grant covers.
      const now = questionDigest((await store.get('a-click'))!);
      owner.answerLate({ ...asker, askedAs: now }, 'a-click', { kind: 'decided', terminal: false });
      await owner.drain();
      expect(created).toEqual([expect.objectContaining({ grantedBy: 'U1', approvalId: 'a-click' })]);
    });

    it('remembers nothing of a press that names no scope (an asker of an earlier release), and says so', async () => {
      const { owner, created } = lateOwner();
      const askedAs = questionDigest((await store.get('a-click'))!);
      const asker = { channel: 'C1', userId: 'U1', sourceIndex: 0, remember: true, askedAs };
      owner.answerLate(asker, 'a-click', { kind: 'decided', terminal: false });
      await owner.drain();
      // Not the route's ttl, nor any other default: only a scope the route offers is remembered.
      expect(created).toEqual([]);
      expect(cards.notes.at(-1)).toEqual({ userId: 'U1', text: refusalText({ code: 'grantNotStored' }) });
      expect((await store.get('a-click'))?.remembered).toBeUndefined();
      // Naming the route's scope, the same late answer remembers it.
      owner.answerLate({ ...asker, rememberScope: AN_HOUR }, 'a-click', { kind: 'decided', terminal: false });
      await owner.drain();
      expect(created).toEqual([
        expect.objectContaining({ grantedBy: 'U1', lasts: { kind: 'time', ms: 3_600_000 } }),
      ]);
    });
  });

  describe('Relay reconcile against real Redis', () => {
    it("reading one session's listing touches only that session's open approvals", async () => {
      // Three sessions with three open approvals each (plus the one from beforeEach in s1).
      for (const sessionId of ['s1', 's2', 's3']) {
        for (let i = 0; i < 3; i++) {
          const approvalId = `${sessionId}-a${i}`;
          const p = ApprovalRequestParams.parse(
            shellApproval({ approvalId, sessionId, stages: [['npm', 'test']] }),
          );
          relay.handleHostEvent(event({ incarnation: 'inc-1', via: 'request', params: p }));
        }
      }
      await relay.idle();
      const read: string[] = [];
      const get = store.get.bind(store);
      store.get = async (approvalId: string) => {
        read.push(approvalId);
        return get(approvalId);
      };
      try {
        // A new host process lists s2: one of its approvals is gone.
        relay.handleHostEvent({
          type: 'sessionReconciled',
          hostId: 'default',
          incarnation: 'inc-2',
          sessionId: 's2',
          pendingApprovalIds: ['s2-a0', 's2-a1'],
          listRequestedAt: performance.now(),
        });
        await relay.idle();
      } finally {
        store.get = get;
      }
      expect(read.sort()).toEqual(['s2-a0', 's2-a1', 's2-a2']);
      expect((await store.get('s2-a2'))?.phase).toBe('superseded');
      expect((await store.get('s1-a2'))?.phase).toBe('pending');
    });
  });
});
