import { afterEach, describe, expect, it } from 'vitest';
import { MAX_RECORD_CHARS } from '../../src/relay/hostEvents/intake/limits.js';
import { keys } from '../../src/store/keys.js';
import { approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('races, bad input and rate limits', () => {
  it('11. two users click at once: exactly one approval/decide, the other is told who has it', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'double-0001' });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard('double-0001', (m) => buttonsOf(m).length > 0);
    const allowOnce = buttonsOf(card)[0]!;
    const allowSession = buttonsOf(card)[1]!;

    // Alice double-clicks while Bob clicks a different choice: three requests in flight together.
    await Promise.all([
      world.pressButton(card.ts, allowOnce, 'U0ALICE'),
      world.pressButton(card.ts, allowOnce, 'U0ALICE'),
      world.pressButton(card.ts, allowSession, 'U0BOB'),
    ]);
    const decide = await world.host.waitForDecide();
    const winner = decide.frame.params.choiceId === 'allow_once' ? 'U0ALICE' : 'U0BOB';
    await world.waitForCard('double-0001', (m) => textOf(m).includes('Approved'));
    // Wait for the two refusals before counting, so a late second decide would be seen.
    await world.slack.waitForCount('chat.postEphemeral', 2);
    expect(world.host.decides()).toHaveLength(1);
    const refusals = world.slack.callsOf('chat.postEphemeral').map((c) => String(c.args.text));
    for (const text of refusals) expect(text).toMatch(/already (being decided|decided|being sent)/);
    expect(textOf(await world.card('double-0001'))).toContain(`<@${winner}>`);
  });

  it('12. malformed and oversized host frames are logged and skipped; the bot keeps working', async () => {
    world = await World.start();
    // Off the schema on purpose: the bot must skip what it cannot read.
    await world.host.raw('this is not json', { offSchema: 'not JSON' });
    await world.host.raw('{"jsonrpc":"2.0","method":"approval/requested","params":{"approvalId":42}}', {
      offSchema: 'approval params that do not parse',
    });
    await world.host.raw('[1,2,3]', { offSchema: 'not a JSON-RPC object' });
    await world.host.rawBytes(10 * 1024 * 1024 + 16);
    // Each one is named in the log, with what was wrong with it.
    const logged = (msg: string, field: [string, unknown]) =>
      world!.bot.waitForLog((l) => l.msg === msg && l.json?.[field[0]] === field[1], 10_000);
    await logged('skipping malformed frame: not JSON', ['frame', 'this is not json']);
    await logged('skipping approval frame that does not parse', ['method', 'approval/requested']);
    await logged('skipping malformed frame: not a JSON object', ['frame', '[1,2,3]']);
    await logged('skipping oversized frame from host', ['bytes', 10 * 1024 * 1024 + 16]);

    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'after-junk-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('after-junk-0001', (m) => buttonsOf(m).length > 0, 10_000);
    await world.press('after-junk-0001', 'Allow once');
    await world.waitForCard('after-junk-0001', (m) => textOf(m).includes('Approved'));
    // The connection lived through it all: no respawn was needed.
    expect(world.host.incarnations).toHaveLength(1);
  });

  it('a frame with a 100 KB id is malformed: logged short and skipped, no record; the next is posted', async () => {
    world = await World.start();
    // Ids are kept as sent, so they cannot be cut like text: without a bound, 64 stages each
    // naming a long approvalId made a record of megabytes, one per frame, until resolved.
    const longId = `0198f0ac-${'7'.repeat(100 * 1024)}`;
    const longApproval = shellApproval({
      approvalId: longId,
      sessionId: SESSION,
      stages: Array.from({ length: 64 }, (_, i) => ['echo', `${i}`]),
    });
    await world.host.notify('approval/requested', longApproval);
    // The same through approval/request, with a 100 KB choiceId: answered with an error, so the
    // host keeps the approval pending and asks again, rather than with a receipt for no card.
    const longChoice = shellApproval({
      approvalId: 'long-choice-0001',
      sessionId: SESSION,
      stages: [['ls']],
    });
    longChoice.availableChoices[0]!.choiceId = `allow_${'x'.repeat(100 * 1024)}`;
    await world.host.raw(
      JSON.stringify({ jsonrpc: '2.0', id: 9901, method: 'approval/request', params: longChoice }),
    );
    const refused = await world.host.waitForFrame(
      (f) => typeof f.frame !== 'string' && f.frame.id === 9901 && 'error' in f.frame,
      10_000,
    );
    expect(refused.frame).toMatchObject({ error: { code: -32602 } });
    const skipped = (method: string) =>
      world!.bot.waitForLog(
        (l) => l.msg === 'skipping approval frame that does not parse' && l.json?.method === method,
        10_000,
      );
    // One line each, which does not write the 100 KB back out.
    for (const line of [await skipped('approval/requested'), await skipped('approval/request')]) {
      expect(line.raw.length).toBeLessThan(2_000);
    }
    const logged = world.bot.logs.map((l) => l.raw).join('\n');
    expect(logged).not.toContain('7'.repeat(1_000));
    expect(logged).not.toContain('x'.repeat(1_000));

    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'after-long-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('after-long-0001', (m) => buttonsOf(m).length > 0, 10_000);
    expect(await world.redis.exists(keys.approval(longId), keys.approval('long-choice-0001'))).toBe(0);
    const stored = await world.redis.hget(keys.approval('after-long-0001'), 'd');
    expect(stored?.length).toBeLessThan(MAX_RECORD_CHARS);
    expect(world.slack.messagesIn(world.channel)).toHaveLength(1);
  });

  it('an approval whose reason is not a string still gets its card, which says the reason is not shown', async () => {
    world = await World.start();
    // The vendor's schema does not define `reason`, so this frame is valid against it: refusing it
    // (-32602) for a shape the bot guessed would leave the agent waiting with no card.
    const MARK = 'agent-text-never-logged';
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'odd-reason-0001' });
    const odd = { ...approval, reason: { text: MARK } } as unknown as typeof approval;
    await world.host.open(odd, { via: 'request' });
    const card = await world.waitForCard('odd-reason-0001', (m) => buttonsOf(m).length > 0, 10_000);
    expect(textOf(card)).toContain(
      'Not shown: the reason, which the host sent in a form the bot does not read',
    );
    const line = await world.bot.waitForLog(
      (l) =>
        l.msg === 'dropping a field of an approval frame that does not parse' && l.json?.field === 'reason',
      10_000,
    );
    expect(line.json).toMatchObject({ approvalId: 'odd-reason-0001', method: 'approval/request' });
    expect(world.bot.logs.map((l) => l.raw).join('\n')).not.toContain(MARK);
    await world.press('odd-reason-0001', 'Allow once');
    await world.waitForCard('odd-reason-0001', (m) => textOf(m).includes('Approved'));
  });

  it('a resolution whose amendment the bot cannot read still closes the card', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'odd-rule-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('odd-rule-0001', (m) => buttonsOf(m).length > 0, 10_000);
    // Refusing the frame for its amendment would leave the card open on an approval the host
    // resolved: the resolution is kept, without a rule the card cannot name.
    const ruleWithoutWords = { durability: 'session' } as { durability: string; rulePreview: string };
    await world.host.resolve({
      approvalId: 'odd-rule-0001',
      decision: 'approvedPolicyAmendment',
      resolvedBy: 'policy',
      amendment: ruleWithoutWords,
      offSchema: 'an amendment without its rulePreview: the resolution must not be lost for it',
    });
    const final = await world.waitForCard(
      'odd-rule-0001',
      (m) => buttonsOf(m).length === 0 && textOf(m).includes('Approved'),
      10_000,
    );
    expect(textOf(final)).toContain('policy');
    expect(textOf(final)).not.toContain('Rule saved');
    const line = await world.bot.waitForLog(
      (l) =>
        l.msg === 'dropping a field of an approval frame that does not parse' &&
        l.json?.field === 'amendment',
      10_000,
    );
    expect(line.json).toMatchObject({ approvalId: 'odd-rule-0001', method: 'approval/resolved' });
  });

  it('an update whose change reason is not a string still moves the card to the next stage', async () => {
    world = await World.start();
    const id = 'odd-change-0001';
    const approval = shellApproval({
      approvalId: id,
      sessionId: SESSION,
      stages: [
        ['npm', 'test'],
        ['git', 'push'],
      ],
    });
    const stageOf = (m: Parameters<typeof buttonsOf>[0]) =>
      buttonsOf(m).map((b) => (JSON.parse(b.value) as { s: number }).s);
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard(id, (m) => stageOf(m).length > 0 && stageOf(m).every((s) => s === 0), 10_000);
    // Stage 1 was allowed at the agent itself; the host says so with a reason that is a number.
    await world.host.update({
      approvalId: id,
      patch: {
        currentRequirementId: { approvalId: id, sourceIndex: 1 },
        availableChoices: approval.availableChoices.filter((c) => c.choiceId !== 'allow_local_prefix'),
        subject: {
          ...approval.subject,
          stages: approval.subject.stages!.map((stage, i) =>
            i === 0 ? { ...stage, resolution: { kind: 'allowOnce' } } : stage,
          ),
        },
      },
      change: {
        kind: 'stageResolved',
        requirementId: { approvalId: id, sourceIndex: 0 },
        choiceId: 'allow_once',
        decision: 'approved',
        reason: 42,
      },
      offSchema: 'a change reason that is not a string: the stage advance must not be lost for it',
    });
    await world.waitForCard(id, (m) => stageOf(m).length > 0 && stageOf(m).every((s) => s === 1), 10_000);
    const line = await world.bot.waitForLog(
      (l) =>
        l.msg === 'dropping a field of an approval frame that does not parse' &&
        l.json?.field === 'change.reason',
      10_000,
    );
    expect(line.json).toMatchObject({ approvalId: id, method: 'approval/updated' });
    await world.press(id, 'Allow once');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
    expect(decide.frame.params.requirementId).toEqual({ approvalId: id, sourceIndex: 1 });
    await world.waitForCard(id, (m) => textOf(m).includes('Approved'), 10_000);
  });

  it('13. a 429 on chat.postMessage is retried after its Retry-After and the card is posted once', async () => {
    world = await World.start();
    // Retry-After 2 s, then 1 s: each wait must follow its own 429, not one fixed pause.
    world.slack.rateLimit('chat.postMessage', { retryAfterSec: [2, 1] });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'limited-0001' });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard('limited-0001', (m) => buttonsOf(m).length > 0, 10_000);
    const posts = world.slack.requests.filter((r) => r.method === 'chat.postMessage');
    expect(posts.map((r) => r.outcome)).toEqual(['rateLimited', 'rateLimited', 'answered']);
    expect(world.slack.messagesIn(world.channel)).toHaveLength(1);
    const [first, second, third] = posts.map((r) => Number(r.hr) / 1e6);
    expect(second! - first!).toBeGreaterThanOrEqual(2_000);
    expect(third! - second!).toBeGreaterThanOrEqual(1_000);
    expect(second! - first! - (third! - second!)).toBeGreaterThan(500);
    await world.press('limited-0001', 'Allow once', 'U0ALICE', card);
    await world.waitForCard('limited-0001', (m) => textOf(m).includes('Approved'));
  });

  it('overloaded and backpressured decides are retried with the same commandId', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'busy-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('busy-0001', (m) => buttonsOf(m).length > 0);
    await world.host.failDecide({ code: -32001, message: 'overloaded', data: { kind: 'overloaded' } });
    await world.host.failDecide({
      code: -32031,
      message: 'queue full',
      data: { kind: 'backpressured', capacity: 8 },
    });

    await world.press('busy-0001', 'Allow once');
    await world.waitForCard('busy-0001', (m) => textOf(m).includes('Approved'), 10_000);
    const decides = world.host.decides();
    expect(decides).toHaveLength(3);
    expect(new Set(decides.map((d) => d.frame.params.commandId)).size).toBe(1);
  });

  it('sessionNotLoaded: the bot resumes the session, then replays the same decision', async () => {
    world = await World.start({
      sessions: [{ sessionId: 'cold-session', title: 'Cold', status: 'notLoaded' }],
      requireResume: true,
    });
    // /readyz answers once the host is up, before the bot has listed its sessions. Had that
    // listing come after the approval was opened, the bot would find the approval pending and
    // resume the session on its own, and no decide would ever meet sessionNotLoaded.
    await world.bot.waitForLog((l) => l.msg === 'session sync done', 10_000);
    const approval = approvalFromTranscript('approval-round-trip', {
      approvalId: 'cold-0001',
      sessionId: 'cold-session',
    });
    await world.host.open(approval, { via: 'requested' });
    await world.waitForCard('cold-0001', (m) => buttonsOf(m).length > 0);
    expect(world.host.framesOf('session/resume')).toHaveLength(0);

    await world.press('cold-0001', 'Allow once');
    const refused = await world.host.waitForDecide();
    const replayed = await world.host.waitForDecide((d) => d.index > refused.index, 10_000);
    expect(replayed.frame.params.commandId).toBe(refused.frame.params.commandId);
    await world.waitForCard('cold-0001', (m) => textOf(m).includes('Approved'), 10_000);
    expect(world.host.decides()).toHaveLength(2);
    const resume = world.host.framesOf('session/resume');
    expect(resume.map((f) => f.frame.params?.sessionId)).toEqual(['cold-session']);
    expect(resume[0]!.index).toBeGreaterThan(refused.index);
    expect(resume[0]!.index).toBeLessThan(replayed.index);
  });
});
