// Guarantees that a one-line break in src/ would otherwise slip past the suite: each is checked
// here against the built bot, at the edges a real deployment has (signed HTTP requests, the MSP
// host process, Redis).

import { afterEach, describe, expect, it } from 'vitest';
import type { ChoiceButtonValue } from '../../src/cards/ids.js';
import { BODY_LIMIT_BYTES } from '../../src/slack/choicePressRoute.js';
import { keys } from '../../src/store/keys.js';
import { freshRedisDb, SIGNING_SECRET } from '../support/bot.js';
import { type ApprovalChoice, approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import { openRawRequest, sendChunks, within } from '../support/rawRequest.js';
import {
  blockActionsPayload,
  interactionBody,
  postWithHeaders,
  signRequest,
} from '../support/slackRequests.js';
import { TcpProxy } from '../support/tcpProxy.js';
import { TEST_REDIS_URL } from '../support/testRedis.js';
import { until } from '../support/until.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

let world: World | undefined;
let proxy: TcpProxy | undefined;
afterEach(async () => {
  await world?.close();
  await proxy?.stop();
  world = undefined;
  proxy = undefined;
});

/** The value a choice button carries (cards/ids.ts): stage, choice and the approval it names. */
function buttonValue(button: { value: string }): ChoiceButtonValue {
  return JSON.parse(button.value) as ChoiceButtonValue;
}

/** A card whose buttons are all for stage `sourceIndex`. */
function onStage(sourceIndex: number) {
  return (m: Parameters<typeof buttonsOf>[0]) =>
    buttonsOf(m).length > 0 && buttonsOf(m).every((b) => buttonValue(b).s === sourceIndex);
}

async function storedRecord(approvalId: string): Promise<{ phase: string; claim?: unknown }> {
  const raw = await world!.redis.hget(keys.approval(approvalId), 'd');
  if (raw === null) throw new Error(`no record for ${approvalId}`);
  return JSON.parse(raw) as { phase: string; claim?: unknown };
}

/** A two-stage shell approval (`npm test && git push`) in the world's session. */
function twoStageShell(approvalId: string) {
  return shellApproval({
    approvalId,
    sessionId: SESSION,
    stages: [
      ['npm', 'test'],
      ['git', 'push'],
    ],
  });
}

/** The bot has listed and followed the host's sessions: nothing it does later comes from start-up. */
async function sessionsSynced(w: World): Promise<void> {
  await w.bot.waitForLog((l) => l.msg === 'session sync done', 10_000);
}

describe('Slack signatures in HTTP mode', () => {
  it('a forged, stale, tampered or unsigned click is answered 401 and claims, decides and tells nothing', async () => {
    world = await World.start();
    const id = 'forged-0001';
    await world.host.open(approvalFromTranscript('approval-round-trip', { approvalId: id }), { via: 'both' });
    const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
    const allowOnce = buttonsOf(card).find((b) => b.text === 'Allow once')!;
    const clickBy = (userId: string) =>
      interactionBody(
        blockActionsPayload({
          userId,
          channel: world!.channel,
          ts: card.ts,
          actionId: allowOnce.actionId,
          value: allowOnce.value,
          responseUrl: world!.slack.responseUrl(`r-${userId}`),
        }),
      );
    const body = clickBy('U0MALLORY');
    const signed = signRequest(SIGNING_SECRET, body);
    const { 'x-slack-signature': _signature, ...withoutSignature } = signed;
    const { 'x-slack-request-timestamp': _timestamp, ...withoutTimestamp } = signed;
    const forgeries: Record<string, Record<string, string>> = {
      'signed with another secret': signRequest('not-the-signing-secret', body),
      'signed six minutes ago': signRequest(SIGNING_SECRET, body, Math.floor(Date.now() / 1000) - 6 * 60),
      'carrying the signature of another body': signRequest(SIGNING_SECRET, clickBy('U0ALICE')),
      'without x-slack-signature': withoutSignature,
      'without x-slack-request-timestamp': withoutTimestamp,
    };
    for (const [how, headers] of Object.entries(forgeries)) {
      const response = await postWithHeaders(world.bot.url, body, headers);
      expect(response.status, how).toBe(401);
    }

    expect(await storedRecord(id)).toMatchObject({ phase: 'pending' });
    expect((await storedRecord(id)).claim).toBeUndefined();
    expect(await world.redis.exists(keys.claim(id, 0))).toBe(0);
    expect(world.host.decides()).toHaveLength(0);
    expect(world.slack.callsOf('chat.postEphemeral')).toHaveLength(0);

    // The same click signed as Slack signs it counts, once, for its own sender.
    await world.press(id, 'Allow once', 'U0ALICE', card);
    const final = await world.waitForCard(id, (m) => textOf(m).includes('Approved'));
    expect(textOf(final)).toContain('<@U0ALICE>');
    expect(textOf(final)).not.toContain('U0MALLORY');
    expect(world.host.decides()).toHaveLength(1);
    expect(world.slack.callsOf('chat.postEphemeral')).toHaveLength(0);
  });
});

describe('a request body past the limit (1 MB) in HTTP mode', () => {
  it('is answered 413 at once, declared or not, while the sender still sends; the connection is closed and clicks go on', async () => {
    world = await World.start();
    const id = 'huge-body-0001';
    await world.host.open(approvalFromTranscript('approval-round-trip', { approvalId: id }), { via: 'both' });
    const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
    // Headers that pass for Slack's until the body is read (a timestamp of now, a signature of
    // the right shape): a stranger can send them, and only the body can tell.
    const form = {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)),
      'x-slack-signature': `v0=${'0'.repeat(64)}`,
    };
    const events = `${world.bot.url}/slack/events`;

    // No declared length: the bytes read pass the limit, and the body never ends of itself.
    const endless = await openRawRequest(events, 'POST', { ...form, 'transfer-encoding': 'chunked' });
    const endlessBytes = BODY_LIMIT_BYTES + 256 * 1024 * 1024;
    const sending = sendChunks(endless, endlessBytes);
    // What is tested is that the bot answers before the body ends (`sent` below stays far under
    // what the sender would send), not how fast: with the whole suite on two cores, reading the
    // first 4 MB (Bolt's limit then) alone has taken over 5 s.
    expect(await within(endless.statusLine, 15_000, '413 to a body that goes on')).toBe(
      'HTTP/1.1 413 Payload Too Large',
    );
    await within(endless.closed, 15_000, 'the bot closing the connection');
    const sent = await sending;
    expect(sent).toBeGreaterThan(BODY_LIMIT_BYTES);
    expect(sent).toBeLessThan(endlessBytes);

    // A declared length past the limit: refused before a byte of the body is sent.
    const declared = await openRawRequest(events, 'POST', {
      ...form,
      'content-length': String(BODY_LIMIT_BYTES + 1),
    });
    expect(await within(declared.statusLine, 5_000, '413 to a declared length')).toBe(
      'HTTP/1.1 413 Payload Too Large',
    );
    await within(declared.closed, 5_000, 'the bot closing the connection');

    // The bot's log is read from its stdout: its second line may come a moment after the close.
    const tooLarge = () => world!.bot.logs.filter((l) => l.msg === 'request body too large');
    await until(() => tooLarge().length >= 2, 5_000).catch(() => undefined);
    const refusals = tooLarge();
    expect(refusals.map((l) => l.json)).toEqual([
      expect.objectContaining({ level: 40, limit: BODY_LIMIT_BYTES }),
      expect.objectContaining({ level: 40, limit: BODY_LIMIT_BYTES }),
    ]);
    expect(world.host.decides()).toHaveLength(0);
    await world.press(id, 'Allow once', 'U0ALICE', card);
    await world.waitForCard(id, (m) => textOf(m).includes('Approved'));
    expect(world.host.decides()).toHaveLength(1);
  }, 45_000);
});

describe('a button naming another approval than its message', () => {
  it('decides the approval the message is mapped to, never the one the button names', async () => {
    world = await World.start();
    await world.host.open(approvalFromTranscript('approval-round-trip', { approvalId: 'mine-0001' }), {
      via: 'both',
    });
    await world.host.open(approvalFromTranscript('approval-round-trip', { approvalId: 'other-0001' }), {
      via: 'both',
    });
    const mine = await world.waitForCard('mine-0001', (m) => buttonsOf(m).length > 0);
    const other = await world.waitForCard('other-0001', (m) => buttonsOf(m).length > 0);
    expect(mine.ts).not.toBe(other.ts);
    const allowOnce = buttonsOf(mine).find((b) => b.text === 'Allow once')!;
    const shown = buttonValue(allowOnce);
    expect(shown).toEqual({ s: 0, c: 'allow_once', a: 'mine-0001', d: expect.any(String) });

    // A click on my card whose button value says it belongs to the other approval.
    const named: ChoiceButtonValue = { ...shown, a: 'other-0001' };
    const relabelled = { ...allowOnce, value: JSON.stringify(named) };
    await world.pressButton(mine.ts, relabelled, 'U0ALICE');

    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({
      approvalId: 'mine-0001',
      requirementId: { approvalId: 'mine-0001', sourceIndex: 0 },
      choiceId: 'allow_once',
    });
    const final = await world.waitForCard('mine-0001', (m) => textOf(m).includes('Approved'));
    expect(textOf(final)).toContain('<@U0ALICE>');
    // The approval the button named is untouched.
    expect(world.host.decides()).toHaveLength(1);
    expect(await storedRecord('other-0001')).toMatchObject({ phase: 'pending' });
    expect(await world.redis.exists(keys.claim('other-0001', 0))).toBe(0);
    expect(buttonsOf(await world.card('other-0001'))).toHaveLength(buttonsOf(other).length);
  });
});

describe('a shell stage advanced by approval/updated alone', () => {
  it('shows stage 2’s buttons on the same card, and a click on them decides stage 2', async () => {
    world = await World.start();
    // msp-approvals.md §9: after a non-terminal decide the host MAY re-send approval/request;
    // this host does not, so approval/updated is all the bot has to go on.
    await world.host.stageAdvance('updatedOnly');
    // Otherwise the start-up session/resume may re-send the approval/request counted below.
    await sessionsSynced(world);
    const id = 'advance-0001';
    await world.host.open(twoStageShell(id), { via: 'both' });
    const first = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
    expect(buttonsOf(first).every((b) => buttonValue(b).s === 0)).toBe(true);

    await world.press(id, 'Allow once', 'U0ALICE', first);
    const stage0 = await world.host.waitForDecide();
    expect(stage0.frame.params.requirementId).toEqual({ approvalId: id, sourceIndex: 0 });

    const second = await world.waitForCard(id, onStage(1));
    expect(second.ts).toBe(first.ts);
    expect(buttonsOf(second).map((b) => b.text)).toEqual(['Allow once', 'Reject']);
    expect(buttonsOf(second).map((b) => buttonValue(b).s)).toEqual([1, 1]);

    await world.press(id, 'Allow once', 'U0BOB', second);
    const stage1 = await world.host.waitForDecide((d) => d.index > stage0.index);
    expect(stage1.frame.params.requirementId).toEqual({ approvalId: id, sourceIndex: 1 });
    expect(stage1.frame.params.choiceId).toBe('allow_once');
    await world.waitForCard(id, (m) => textOf(m).includes('Approved'));
    expect(world.host.decides()).toHaveLength(2);

    // The host asked once (one receipt from the bot): the second stage came by approval/updated only.
    const receipts = world.host.frames.filter(
      (f) => typeof f.frame === 'object' && 'result' in f.frame && JSON.stringify(f.frame.result) === '{}',
    );
    expect(receipts).toHaveLength(1);
  });
});

describe('the claim is a compare-and-set on the record version', () => {
  it('a click checked against stage 1 does not claim once the host moved to stage 2 before the claim', async () => {
    // The bot talks to Redis through a proxy that can hold Redis's replies back, so the host's
    // change can be made to land between the click's read and its claim.
    const target = new URL(TEST_REDIS_URL);
    proxy = await TcpProxy.start(Number(target.port || 6379), target.hostname);
    // The database World.start is about to pick (one per vitest worker).
    const db = await freshRedisDb();
    world = await World.start({}, { REDIS_URL: `redis://127.0.0.1:${proxy.port}/${db}` });
    expect(world.redisDb).toBe(db);
    await sessionsSynced(world);

    const id = 'race-0001';
    const approval = twoStageShell(id);
    await world.host.open(approval, { via: 'requested' });
    const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
    // The card is posted and stored: from here on only the host's update and the click read this
    // record.

    // The bot holds the record it posted in memory and would write the host's change from it,
    // without a read. Another replica writes the record meanwhile (as a standby's note on it
    // would), so the bot's compare-and-set from memory is refused and it reads the record first:
    // that read is the one held below.
    const stored = JSON.parse((await world.redis.hget(keys.approval(id), 'd'))!) as {
      version: number;
      updatedAt: string;
    };
    const elsewhere = { ...stored, version: stored.version + 1, updatedAt: new Date().toISOString() };
    await world.redis.hset(keys.approval(id), 'v', String(elsewhere.version), 'd', JSON.stringify(elsewhere));

    // 1. The host resolves stage 1 itself (say, at the terminal) and moves to stage 2. The bot
    //    reads the record (version N) to apply that; Redis's answer is held, so its write waits.
    const updateRead = proxy.holdRepliesAfter(`hget\r\n$${keys.approval(id).length}\r\n${keys.approval(id)}`);
    const stage2Choices: ApprovalChoice[] = [
      { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
      { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
    ];
    const subject = structuredClone(approval.subject);
    subject.stages![0]!.resolution = { kind: 'allowOnce' };
    await world.host.update({
      approvalId: id,
      patch: {
        subject,
        currentRequirementId: { approvalId: id, sourceIndex: 1 },
        availableChoices: stage2Choices,
      },
      change: {
        kind: 'stageResolved',
        requirementId: { approvalId: id, sourceIndex: 0 },
        choiceId: 'allow_once',
        decision: 'approved',
      },
    });
    await updateRead.fired;

    // 2. Alice clicks stage 1's "Allow once". Her click's read reaches Redis ahead of the
    //    update's write, so it too sees version N: stage 1, still open.
    const clickRead = proxy.sent(keys.message(world.channel, card.ts));
    const claimTried = proxy.sent(keys.claim(id, 0));
    const pressed = world.press(id, 'Allow once', 'U0ALICE', card);
    await clickRead;

    // 3. Redis answers: the update writes version N+1 (stage 2); then the click, checked against
    //    version N, tries to claim stage 1.
    updateRead.release();
    await pressed;
    await claimTried;
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/question changed/);

    // The claim lost: no stage-1 claim, no decide for the stage the host has left.
    expect(world.host.decides()).toHaveLength(0);
    expect(await world.redis.exists(keys.claim(id, 0))).toBe(0);
    const stage2 = await world.waitForCard(id, onStage(1));
    expect(buttonsOf(stage2).map((b) => buttonValue(b).s)).toEqual([1, 1]);
    expect(await storedRecord(id)).toMatchObject({ phase: 'pending' });

    // The question as it is now is still decidable.
    await world.press(id, 'Allow once', 'U0ALICE', stage2);
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params.requirementId).toEqual({ approvalId: id, sourceIndex: 1 });
    await world.waitForCard(id, (m) => textOf(m).includes('Approved'));
    expect(world.host.decides()).toHaveLength(1);
  });
});
