import { afterEach, describe, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { approvalFromTranscript, type HostFrame, type RpcFrame, shellApproval } from '../support/fakeHost.js';
import { answer, exchange, type FallbackLine, line, lines, startReplay } from '../support/replay.js';
import { buttonsOf, textOf, World } from './world.js';

// The vendor's recorded exchanges replayed to the real bot (test/support/replay-host.mjs serves
// the host side from the recorded frames). What the bot sends is compared with the recorded
// client frames, except what each client mints (JSON-RPC ids, commandIds: the manifests'
// `normalize`), and what it shows is read off its cards. Requests a transcript does not record
// (session/list, approval/listPending, a second resume) are answered from the transcript's own
// data; each test says which.

const SNAPSHOT = 'snapshot-suffix-pending-approval';
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

type Params = Record<string, unknown>;

/** The recorded pending approval of snapshot-suffix-pending-approval (session …aa). */
const snapshotApproval = () => line(SNAPSHOT, 6).frame.params as Params & { approvalId: string };
const snapshotSession = () => line(SNAPSHOT, 5).frame.result!.session!;

function listed(session: Params): FallbackLine[] {
  return [{ result: { sessions: [session], nextCursor: null } }];
}

function pending(approvals: Params[], userInputs: Params[] = []): FallbackLine[] {
  return [{ result: { approvals, userInputs } }];
}

/** A resume result without history, pointing at `approvals` (the replay's off-script resume). */
function resumed(session: Params, viewCursor: string, approvals: Params[]): FallbackLine {
  return {
    result: {
      session,
      viewCursor,
      history: { mode: 'none', noneReason: 'excluded', items: null, snapshot: null },
      pendingRequests: approvals.map((a) => ({
        kind: 'approval',
        approvalId: a.approvalId,
        viewCursor: a.viewCursor,
      })),
    },
  };
}

/** A decide ack for a decide the transcript does not record. */
const ACCEPTED: FallbackLine = {
  result: { status: 'accepted', terminal: true },
  echo: ['commandId', 'approvalId'],
};

function params(frame: HostFrame): Params {
  return (frame.frame as RpcFrame).params ?? {};
}

function answerTo(world: World, id: number, incarnation = 1): Promise<HostFrame> {
  return world.host.waitForFrame(
    (f) =>
      f.incarnation === incarnation &&
      typeof f.frame !== 'string' &&
      f.frame.method === undefined &&
      f.frame.id === id,
  );
}

function cardPostsOf(world: World, approvalId: string): number {
  return world.slack.cardPosts().filter((c) => JSON.stringify(c.args).includes(approvalId)).length;
}

function errorLogs(world: World): string[] {
  return world.bot.logs.filter((l) => (l.level ?? 0) >= 50).map((l) => l.raw);
}

describe('replayed MSP transcripts', () => {
  it('snapshot-suffix-pending-approval: one card from the resume snapshot, decided with the recorded requirementId', async () => {
    const approval = snapshotApproval();
    const { host, env } = await startReplay([
      {
        initialize: line(SNAPSHOT, 2).raw,
        steps: [exchange(SNAPSHOT, 4), exchange(SNAPSHOT, 8)],
        fallback: {
          'session/list': listed(snapshotSession()),
          'approval/listPending': pending([approval]),
        },
      },
    ]);
    world = await World.start({}, env, { host });
    const card = await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
    expect(buttonsOf(card).map((b) => b.text)).toEqual(['Allow once', 'Allow for this session', 'Reject']);

    // The resume: the recorded client asked for a snapshot; the bot asks for no items at all
    // (the metadata-only load of the vendor's userinput-*-round-trip transcripts). Nothing else
    // differs but the commandId it mints.
    const [resume, ...more] = world.host.framesOf('session/resume');
    expect(more).toEqual([]);
    const { commandId, ...ours } = params(resume!);
    const { commandId: recordedCommandId, history, ...recorded } = line(SNAPSHOT, 4).frame.params!;
    expect(history).toBe('snapshot');
    expect(ours).toEqual({ ...recorded, excludeItems: true });
    expect(commandId).toMatch(UUID_V7);
    expect(commandId).not.toBe(recordedCommandId);

    // The receipt for the re-issued approval/request is the recorded one, id and all.
    expect((await answerTo(world, 17)).frame).toEqual(line(SNAPSHOT, 7).frame);

    await world.press(approval.approvalId, 'Allow for this session');
    const decide = await world.host.waitForDecide();
    const { commandId: decideCommandId, ...decided } = decide.frame.params;
    const { commandId: recordedDecideId, ...recordedDecide } = line(SNAPSHOT, 8).frame.params!;
    expect(decided).toEqual(recordedDecide);
    expect(decided.requirementId).toEqual(approval.currentRequirementId);
    expect(decideCommandId).toMatch(UUID_V7);
    expect(decideCommandId).not.toBe(recordedDecideId);

    await world.waitForCard(approval.approvalId, (m) => textOf(m).includes('Approved'));
    expect(cardPostsOf(world, approval.approvalId)).toBe(1);
    expect(world.host.decides()).toHaveLength(1);
    expect(errorLogs(world)).toEqual([]);
  });

  for (const [name, kind] of [
    ['cursor-truncated', 'viewTruncated'],
    ['cursor-never-existed', 'notFound'],
  ] as const) {
    it(`${name}: the refused cursor is followed by one fresh resume, and the card stays one and true`, async () => {
      const approval = snapshotApproval();
      const session = snapshotSession();
      const recordedResume = line(name, 4).frame.params as Params & { cursor: string };
      const common = {
        'session/list': listed(session),
        'approval/listPending': pending([approval]),
      };
      const { host, env } = await startReplay([
        // The first host process hands out the cursor the transcript's client resumes from.
        {
          initialize: line(name, 2).raw,
          fallback: { ...common, 'session/resume': [resumed(session, recordedResume.cursor, [approval])] },
        },
        // After a crash, the next one replays the transcript: that cursor is refused. The fresh
        // resume that follows is answered as snapshot-suffix-pending-approval's host does (its
        // result and the re-issued approval/request), and so is the decide.
        {
          initialize: line(name, 2).raw,
          steps: [exchange(name, 4), exchange(SNAPSHOT, 8)],
          fallback: {
            ...common,
            'session/resume': [{ result: line(SNAPSHOT, 5).frame.result! }, line(SNAPSHOT, 6).raw],
          },
        },
      ]);
      world = await World.start({}, env, { host });
      await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);

      await world.host.crash();
      await world.host.waitForIncarnation(2);
      await answerTo(world, 17, 2);
      const [withCursor, fresh, ...more] = world.host
        .framesOf('session/resume')
        .filter((f) => f.incarnation === 2);
      expect(more).toEqual([]);

      // The resume with the cursor is the recorded one but for the commandId.
      const { commandId: first, ...sent } = params(withCursor!);
      const { commandId: recordedCommandId, ...recorded } = recordedResume;
      expect(sent).toEqual(recorded);
      expect(first).not.toBe(recordedCommandId);
      // The host answered it with the recorded error; the bot resumes afresh: no cursor, and a
      // commandId of its own (a new command, not a replay of the refused one).
      const { commandId: second, ...again } = params(fresh!);
      expect(again).toEqual({ sessionId: recorded.sessionId, excludeItems: true });
      expect(second).toMatch(UUID_V7);
      expect(second).not.toBe(first);
      // The bot logs this before it sends the fresh resume, but its log reaches the test through
      // another pipe than the host's frames: on a loaded machine it may come a moment later.
      await world.bot.waitForLog(
        (l) => l.msg === 'resuming from the last cursor refused; resuming afresh' && l.json?.kind === kind,
        5_000,
      );

      // Still one card, still open, and its button still decides the approval.
      const card = await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length === 3);
      await world.press(approval.approvalId, 'Allow for this session', 'U0ALICE', card);
      const decide = await world.host.waitForDecide();
      expect(decide.frame.params.requirementId).toEqual(approval.currentRequirementId);
      await world.waitForCard(approval.approvalId, (m) => textOf(m).includes('Approved'));
      expect(cardPostsOf(world, approval.approvalId)).toBe(1);
      expect(world.host.decides()).toHaveLength(1);
      expect(errorLogs(world)).toEqual([]);
    });
  }

  it('cursor-retained: the suffix of item events after a retained cursor is tolerated', async () => {
    const name = 'cursor-retained';
    const session = snapshotSession();
    const recordedResume = line(name, 4).frame.params as Params & { cursor: string };
    const { host, env } = await startReplay([
      {
        initialize: line(name, 2).raw,
        fallback: {
          'session/list': listed(session),
          'approval/listPending': pending([]),
          'session/resume': [resumed(session, recordedResume.cursor, [])],
        },
      },
      {
        initialize: line(name, 2).raw,
        steps: [exchange(name, 4), exchange(SNAPSHOT, 8)],
        fallback: { 'session/list': listed(session), 'approval/listPending': pending([]) },
      },
    ]);
    world = await World.start({}, env, { host });
    await world.host.crash();
    await world.host.waitForIncarnation(2);
    const resume = await world.host.waitForMethod('session/resume', (f) => f.incarnation === 2);
    const { commandId, ...sent } = params(resume);
    const { commandId: recordedCommandId, ...recorded } = recordedResume;
    expect(sent).toEqual(recorded);
    expect(commandId).not.toBe(recordedCommandId);

    // The bot keeps the head the host answered with (the suffix came after it).
    const head = line(name, 5).frame.result!.viewCursor;
    await expect
      .poll(async () => world!.redis.hget(keys.sessions('default'), recordedResume.sessionId as string))
      .toBe(JSON.stringify({ viewCursor: head }));

    // After the suffix (item/delta, item/completed, turn/completed), an approval still works.
    const approval = snapshotApproval();
    await answer(world.host, 'approval/listPending', pending([approval]));
    await world.host.raw(line(SNAPSHOT, 6).raw);
    await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
    await world.press(approval.approvalId, 'Allow for this session');
    await world.host.waitForDecide();
    await world.waitForCard(approval.approvalId, (m) => textOf(m).includes('Approved'));
    expect(world.host.framesOf('session/resume').filter((f) => f.incarnation === 2)).toHaveLength(1);
    expect(
      world.bot.logs.filter((l) => (l.level ?? 0) >= 40 && /item\/|turn\//.test(l.raw)).map((l) => l.raw),
    ).toEqual([]);
    expect(errorLogs(world)).toEqual([]);
  });

  for (const name of ['gap-recovery-splice-fill', 'gap-recovery-reanchor']) {
    it(`${name}: after the recorded view/gap the bot reads what is pending again and the card is true`, async () => {
      const recorded = lines(name);
      const subscribed = recorded.findIndex((l) => l.frame.method === 'view/subscribe');
      const nextClient = recorded.findIndex((l, i) => i > subscribed && l.dir === 'client');
      // What the host delivers after the subscription: items, the view/gap, more items.
      const deliveries = recorded.slice(subscribed + 2, nextClient);
      const gap = deliveries.find((l) => l.frame.method === 'view/gap')!.frame.params as Params;
      const sessionId = gap.sessionId as string;

      // A two-stage shell approval in the transcript's session, pending at stage 1.
      const approvalId = `gap-${name}`;
      const stage1 = shellApproval({
        approvalId,
        sessionId,
        stages: [
          ['npm', 'test'],
          ['git', 'push'],
        ],
      });
      const session = { ...snapshotSession(), sessionId };
      const head = recorded[subscribed + 1]!.frame.result!.viewCursor as string;
      const { host, env } = await startReplay([
        {
          initialize: line(name, 2).raw,
          fallback: {
            'session/list': listed(session),
            'approval/listPending': pending([stage1]),
            'session/resume': [resumed(session, head, [stage1])],
            'approval/decide': [ACCEPTED],
          },
        },
      ]);
      world = await World.start({}, env, { host });
      const card = await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
      expect(buttonsOf(card).every((b) => JSON.parse(b.value).s === 0)).toBe(true);

      // Meanwhile someone at the agent's own terminal allows stage 1: the approval/updated that
      // says so is one of the events the gap lost (it is not protected, msp-approvals.md §4.4).
      const stage2 = structuredClone(stage1);
      stage2.subject.stages![0]!.resolution = { kind: 'allowOnce' };
      stage2.currentRequirementId = { approvalId, sourceIndex: 1 };
      stage2.availableChoices = stage2.availableChoices.filter((c) => c.scope === 'once');
      await answer(world.host, 'approval/listPending', pending([stage2]));
      const before = world.host.frames.length;
      for (const delivery of deliveries) await world.host.raw(delivery.raw);

      // The bot reads the session's pending approvals again, and the card follows.
      const relisted = await world.host.waitForMethod(
        'approval/listPending',
        (f) => f.index >= before && params(f).sessionId === sessionId,
      );
      expect(params(relisted)).toEqual({ sessionId });
      const moved = await world.waitForCard(
        approvalId,
        (m) => buttonsOf(m).length > 0 && buttonsOf(m).every((b) => JSON.parse(b.value).s === 1),
      );
      expect(buttonsOf(moved).map((b) => b.text)).toEqual(['Allow once', 'Reject']);
      // It recovers with listPending, not with view/page (docs/reliability.md says why).
      expect(world.host.framesOf('view/page')).toEqual([]);

      await world.press(approvalId, 'Allow once', 'U0ALICE', moved);
      const decide = await world.host.waitForDecide();
      expect(decide.frame.params.requirementId).toEqual({ approvalId, sourceIndex: 1 });
      expect(world.host.decides()).toHaveLength(1);
      expect(cardPostsOf(world, approvalId)).toBe(1);
      expect(errorLogs(world)).toEqual([]);
    });
  }

  it('snapshot-suffix-pending-userinput: the re-issued userInput/request is refused as a client without a handler does, and approvals still work', async () => {
    const name = 'snapshot-suffix-pending-userinput';
    const request = line(name, 6).frame;
    const session = line(name, 5).frame.result!.session!;
    const sessionId = session.sessionId as string;
    const { host, env } = await startReplay([
      {
        initialize: line(name, 2).raw,
        steps: [exchange(name, 4)],
        fallback: {
          'session/list': listed(session),
          'approval/listPending': pending([], [request.params!]),
          'approval/decide': [ACCEPTED],
        },
      },
    ]);
    world = await World.start({}, env, { host });

    // The bot declared userInputDialogs: false and cannot show the prompt. It answers as the
    // vendor's SDK answers a request it has no handler for (-32601 methodNotFound), so the prompt
    // stays pending for a client that can (msp-approvals.md §5.1), where the recorded client,
    // which could show it, sent the receipt {}.
    const refusal = await answerTo(world, request.id as number);
    expect(line(name, 7).frame).toEqual({ jsonrpc: '2.0', id: request.id, result: {} });
    expect(refusal.frame).toEqual({
      jsonrpc: '2.0',
      id: request.id,
      error: {
        code: -32601,
        message: 'method not found: userInput/request',
        data: { kind: 'methodNotFound', retryable: false },
      },
    });
    expect(
      world.host.frames.filter(
        (f) => typeof f.frame !== 'string' && f.frame.method?.startsWith('userInput/'),
      ),
    ).toEqual([]);

    // The bot goes on: an approval in the same session gets its card and its decide.
    const approval = approvalFromTranscript('approval-round-trip', {
      approvalId: 'after-userinput',
      sessionId,
    });
    await answer(world.host, 'approval/listPending', pending([approval], [request.params!]));
    await world.host.raw(
      JSON.stringify({ jsonrpc: '2.0', id: 19, method: 'approval/request', params: approval }),
    );
    expect((await answerTo(world, 19)).frame).toEqual({ jsonrpc: '2.0', id: 19, result: {} });
    await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
    await world.press(approval.approvalId, 'Allow once');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({
      sessionId,
      approvalId: approval.approvalId,
      requirementId: approval.currentRequirementId,
      choiceId: 'allow_once',
    });
    await world.host.raw(
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'approval/resolved',
        params: {
          sessionId,
          approvalId: approval.approvalId,
          itemId: approval.itemId,
          turnId: approval.turnId,
          decision: 'approved',
          policyResult: 'allow',
          resolvedBy: 'user',
          decidedByCommandId: decide.frame.params.commandId,
          stageEvidence: [],
          sourceRange: approval.sourceRange,
          viewCursor: `v:${sessionId}:503`,
        },
      }),
    );
    await world.waitForCard(approval.approvalId, (m) => textOf(m).includes('Approved'));
    expect(errorLogs(world)).toEqual([]);
  });
});
