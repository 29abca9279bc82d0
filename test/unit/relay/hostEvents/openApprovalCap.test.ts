// The cap on a host's open approvals (openApprovalCap.ts) on its own: Redis's open set is a
// number the test sets, and what the cap reads, says and re-reads is recorded. The end-to-end
// case (cards, the channel line, two hosts) is test/e2e/openApprovalCap.test.ts.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import { OpenApprovalCap } from '../../../../src/relay/hostEvents/openApprovalCap.js';

const HOST = 'h1';
const CHANNEL = 'C0APPROVALS';

function harness(max = 10) {
  const state = {
    /** What SCARD of the host's open set answers. */
    open: 0,
    reads: 0,
    /** approvalIds that have a record. */
    recorded: new Set<string>(),
    known: new Set<string>(),
    epoch: 1 as number | undefined,
    rereads: [] as string[],
    told: [] as Array<{ hostId: string; channel: string; max: number; resumeBelow: number }>,
    failRead: false,
  };
  const cap = new OpenApprovalCap({
    max,
    countOpen: async () => {
      state.reads += 1;
      if (state.failRead) throw new Error('Redis away');
      return state.open;
    },
    exists: async (id) => state.recorded.has(id),
    knows: (id) => state.known.has(id),
    epochOf: () => state.epoch,
    reread: (hostId) => state.rereads.push(hostId),
    tell: async (hostId, channel, c) => {
      state.told.push({ hostId, channel, ...c });
    },
    logger: pino({ level: 'silent' }),
    recheck: { settleMs: 0, intervalMs: 0 },
  });
  /** Asks for `id` and, when let in, stores it as the bot would (Redis's count goes up). */
  const ask = async (id: string): Promise<boolean> => {
    const admitted = await cap.admit(HOST, id, CHANNEL);
    if (admitted && !state.recorded.has(id)) {
      state.recorded.add(id);
      state.open += 1;
    }
    cap.sent(HOST, id);
    return admitted;
  };
  const close = async (id: string) => {
    state.open -= 1;
    cap.follow({ approvalId: id, hostId: HOST, phase: 'resolved' } as ApprovalRecord);
    await new Promise((resolve) => setTimeout(resolve, 20));
  };
  return { cap, state, ask, close };
}

describe('OpenApprovalCap', () => {
  it('reads the open set once, then counts in memory until the estimate reaches the cap', async () => {
    const { state, ask } = harness(10);
    state.open = 4;
    for (let i = 0; i < 6; i++) expect(await ask(`a${i}`)).toBe(true);
    // One read at the first approval; the next five are counted without one.
    expect(state.reads).toBe(1);
    // The eleventh open one: the estimate is at the cap, so Redis is asked, and it says 10.
    expect(await ask('a6')).toBe(false);
    expect(state.reads).toBe(2);
  });

  it('a read at the cap that finds approvals closed meanwhile lets the next ones in', async () => {
    const { state, ask } = harness(3);
    for (const id of ['a', 'b', 'c']) expect(await ask(id)).toBe(true);
    state.open = 1; // two closed elsewhere, unseen
    expect(await ask('d')).toBe(true);
    expect(await ask('e')).toBe(true);
    expect(await ask('f')).toBe(false);
  });

  it('counts approvals let in but not yet sent to Redis on top of what a read finds', async () => {
    const { cap, state } = harness(3);
    // Three let in at once, none of their creates sent yet: Redis still counts 0.
    const admitted = await Promise.all(['a', 'b', 'c', 'd'].map((id) => cap.admit(HOST, id, CHANNEL)));
    expect(admitted).toEqual([true, true, true, false]);
    expect(state.open).toBe(0);
  });

  it('over the cap, holds back only new approvals, says so once, and lets a recorded one through', async () => {
    const { state, ask } = harness(3);
    state.open = 3;
    state.recorded.add('old');
    expect(await ask('new-1')).toBe(false);
    expect(await ask('new-2')).toBe(false);
    expect(await ask('old')).toBe(true);
    expect(state.told).toEqual([{ hostId: HOST, channel: CHANNEL, max: 3, resumeBelow: 2 }]);
  });

  it('lets the host in again once fewer than 90 % are open, reads it again, and says the next time anew', async () => {
    const { state, ask, close } = harness(10);
    state.open = 10;
    expect(await ask('x')).toBe(false);
    await close('c1');
    // 9 open: under the cap, not under 90 % of it (9).
    expect(state.rereads).toEqual([]);
    expect(await ask('y')).toBe(false);
    await close('c2');
    expect(state.rereads).toEqual([HOST]);
    expect(await ask('x')).toBe(true);
    expect(await ask('y')).toBe(true);
    expect(await ask('z')).toBe(false);
    expect(state.told).toHaveLength(2);
  });

  it('counts afresh under a new lease (a takeover, a lease lost and won back)', async () => {
    const { state, ask } = harness(5);
    expect(await ask('a')).toBe(true);
    expect(state.reads).toBe(1);
    state.epoch = 2;
    state.open = 5; // another replica opened more meanwhile
    expect(await ask('b')).toBe(false);
    expect(state.reads).toBe(2);
  });

  it('never holds back an approval the bot already has a record of, nor reads for it', async () => {
    const { cap, state } = harness(1);
    state.known.add('seen');
    expect(cap.admit(HOST, 'seen', CHANNEL)).toBe(true);
    expect(state.reads).toBe(0);
  });

  it('lets approvals in when the open set cannot be read, and reads again for the next one', async () => {
    const { state, ask } = harness(1);
    state.failRead = true;
    expect(await ask('a')).toBe(true);
    expect(await ask('b')).toBe(true);
    expect(state.reads).toBe(2);
  });
});
