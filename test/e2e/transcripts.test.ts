import { afterEach, describe, expect, it } from 'vitest';
import { approvalFromTranscript } from '../support/fakeHost.js';
import { transcriptLines } from '../support/transcripts.js';
import { buttonsOf, textOf, World } from './world.js';

// The upstream project's recorded host↔client exchanges, used as test vectors: server frames are
// replayed to the bot byte for byte, and what the bot sends is compared with the recorded client.

type Frame = { id?: unknown; method?: string; params?: Record<string, unknown> };

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('recorded MSP transcripts', () => {
  for (const name of [
    'tolerance-unknown-item-kind',
    'tolerance-unknown-state-method',
    'tolerance-unknown-stream-kind',
  ]) {
    it(`${name}: the bot tolerates every server notification and keeps deciding`, async () => {
      world = await World.start();
      const notifications = transcriptLines(name).filter((l) => {
        const frame = JSON.parse(l.raw) as Frame;
        return l.dir === 'server' && frame.method !== undefined && frame.id === undefined;
      });
      expect(notifications.length).toBeGreaterThan(3);
      for (const line of notifications) await world.host.raw(line.raw);

      const approval = approvalFromTranscript('approval-round-trip', { approvalId: `after-${name}` });
      await world.host.open(approval, { via: 'both' });
      await world.waitForCard(`after-${name}`, (m) => buttonsOf(m).length > 0);
      await world.press(`after-${name}`, 'Allow once');
      await world.waitForCard(`after-${name}`, (m) => textOf(m).includes('Approved'));
      expect(world.host.incarnations).toHaveLength(1);
      expect(world.bot.logs.filter((l) => (l.level ?? 0) >= 50).map((l) => l.raw)).toEqual([]);
    });
  }

  it('approval-deny-round-trip: the bot’s receipt and decide match the recorded client frames', async () => {
    world = await World.start();
    const lines = transcriptLines('approval-deny-round-trip');
    const recordedDecide = lines
      .filter((l) => l.dir === 'client')
      .map((l) => JSON.parse(l.raw) as Frame)
      .find((f) => f.method === 'approval/decide')!;
    const approval = approvalFromTranscript('approval-deny-round-trip');
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);

    await world.press(approval.approvalId, 'Reject', 'U0ALICE');
    await world.submitModal('U0ALICE', recordedDecide.params!.feedback as string);
    const decide = await world.host.waitForDecide();
    // Ids are minted per client (the transcript's manifest normalizes them); all else is equal.
    const { commandId: ours, ...rest } = decide.frame.params;
    const { commandId: theirs, ...recorded } = recordedDecide.params as Record<string, unknown>;
    expect(rest).toEqual(recorded);
    expect(ours).not.toBe(theirs);
    expect(decide.frame.jsonrpc).toBe('2.0');

    // The recorded receipt: an empty result for the host's approval/request.
    const receipt = lines
      .map((l) => JSON.parse(l.raw) as Frame & { result?: unknown })
      .find((f, i) => lines[i]!.dir === 'client' && f.result !== undefined);
    expect(receipt?.result).toEqual({});
    const ours1 = world.host.frames.find((f) => typeof f.frame === 'object' && 'result' in f.frame);
    expect(ours1 && typeof ours1.frame === 'object' && ours1.frame.result).toEqual({});

    await world.waitForCard(approval.approvalId, (m) => textOf(m).includes('Rejected'));
  });
});
