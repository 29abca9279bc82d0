// The owner's side of a forwarded decision, against a decision stream kept in memory: what it
// carries out, what it drops, and what the asker believes.

import { describe, expect, it } from 'vitest';
import type { DecisionOutcome, DecisionRequest } from '../../../src/relay/deciding/decider.js';
import { DecisionForwarding } from '../../../src/replicas/decisionForwarding.js';
import { ReplicaSeal } from '../../../src/replicas/replicaSeal.js';
import type { DecisionStream, StreamEntry, TakeState } from '../../../src/store/decisionStream.js';
import type { RedisClient } from '../../../src/store/redisConnection.js';
import { captureLogger } from '../../support/logCapture.js';
import { sampleRecord } from '../../support/sampleRecord.js';
import { until } from '../../support/until.js';

const SECRET = 'the replicas share this secret, 32+ characters';

/** A decision stream of one host, in memory: what was appended, dropped and finished. */
class MemoryStream {
  pending: StreamEntry[] = [];
  dropped: string[] = [];
  finished: Array<{ entryId: string; commandId: string; outcome: string }> = [];
  replies = new Map<string, string>();
  /** Called as the owner takes an entry (the moment it starts carrying it out). */
  onTake: () => void = () => {};

  async ensureGroup() {}
  async claimPending(): Promise<StreamEntry[]> {
    const entries = this.pending;
    this.pending = [];
    return entries;
  }
  async read(): Promise<StreamEntry[]> {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return this.claimPending();
  }
  async append(_hostId: string, body: string, mac: string): Promise<string> {
    const id = `${this.pending.length + 1}-0`;
    this.pending.push({ id, body, mac });
    return id;
  }
  async take(_hostId: string, commandId: string): Promise<TakeState> {
    this.onTake();
    this.replies.set(commandId, 'taken');
    return 'taken';
  }
  async finish(_hostId: string, entryId: string, commandId: string, outcome: string): Promise<boolean> {
    this.finished.push({ entryId, commandId, outcome });
    this.replies.set(commandId, outcome);
    this.push(commandId, outcome);
    return true;
  }
  /** Outcomes on the reply lists, and the askers blocked on them. */
  lists = new Map<string, string>();
  private blocked = new Map<string, () => void>();
  /** How often an asker looked at a reply key. */
  polls = 0;
  push(commandId: string, outcome: string): void {
    this.lists.set(commandId, outcome);
    this.blocked.get(commandId)?.();
  }
  async awaitOutcome(
    _reader: unknown,
    _hostId: string,
    commandId: string,
    timeoutMs: number,
  ): Promise<string | undefined> {
    if (!this.lists.has(commandId))
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.blocked.set(commandId, () => {
          clearTimeout(timer);
          resolve();
        });
      });
    this.blocked.delete(commandId);
    const outcome = this.lists.get(commandId);
    this.lists.delete(commandId);
    return outcome;
  }
  async drop(_hostId: string, entryId: string): Promise<void> {
    this.dropped.push(entryId);
  }
  async outcome(_hostId: string, commandId: string): Promise<string | undefined> {
    this.polls += 1;
    const v = this.replies.get(commandId);
    return v?.startsWith('{') ? v : undefined;
  }
  async withdraw(): Promise<boolean> {
    return false;
  }
  async giveUp(_hostId: string, commandId: string): Promise<string | undefined> {
    this.lists.delete(commandId);
    const v = this.replies.get(commandId);
    return v?.startsWith('{') ? v : undefined;
  }
}

interface Owner {
  forwarding: DecisionForwarding;
  stream: MemoryStream;
  decided: DecisionRequest[];
  lines: Record<string, unknown>[];
  owns: { now: boolean };
}

function owner(options: { waitMs?: number; outcome?: DecisionOutcome } = {}): Owner {
  const stream = new MemoryStream();
  const decided: DecisionRequest[] = [];
  const owns = { now: true };
  const { logger, lines } = captureLogger('debug');
  const record = sampleRecord('fw-unit-1');
  const forwarding = new DecisionForwarding({
    stream: stream as unknown as DecisionStream,
    seal: new ReplicaSeal(SECRET),
    store: {
      get: async (approvalId: string) => (approvalId === record.approvalId ? record : undefined),
    },
    readerConnection: () => ({ disconnect: () => {} }) as unknown as RedisClient,
    replicaId: 'owner#1',
    newCommandId: () => `cmd-${decided.length}-${Math.random()}`,
    mayAct: () => owns.now,
    logger,
    waitMs: options.waitMs ?? 2_000,
    decide: async (request): Promise<DecisionOutcome> => {
      decided.push(request);
      return options.outcome ?? { kind: 'decided', terminal: true };
    },
  });
  return { forwarding, stream, decided, lines, owns };
}

const click = (): DecisionRequest => ({
  record: sampleRecord('fw-unit-1'),
  sourceIndex: 0,
  choiceId: 'allow_once',
  by: { via: 'click', userId: 'U0ALICE' },
  onChange: 'return',
  warranted: true,
  asker: { channel: 'C1', userId: 'U0ALICE' },
});

describe('DecisionForwarding', () => {
  it('an owner that has lost the host never calls the Decider: the entry stays for the next owner', async () => {
    const asker = owner({ waitMs: 300 });
    // The asker appends a sealed entry and waits for its outcome.
    const asking = asker.forwarding.forward(click());
    await until(() => asker.stream.pending.length === 1);
    const { stream, decided, owns, forwarding } = asker;
    // The host is lost at the moment its owner takes the entry up.
    stream.onTake = () => {
      owns.now = false;
    };
    await forwarding.serve('default');
    await until(() => stream.replies.size === 1);
    await forwarding.stop();
    expect(decided).toEqual([]);
    expect(stream.finished).toEqual([]);
    expect(stream.dropped).toEqual([]);
    owns.now = true;
    stream.onTake = () => {};
    await expect(asking).resolves.toEqual({ kind: 'forwarded' });
  });

  it('an entry its Decider would not take as the owner stopped stays pending for the next owner: nobody hears `stopping`', async () => {
    const asker = owner({ waitMs: 300, outcome: { kind: 'stopping' } });
    const asking = asker.forwarding.forward(click());
    await until(() => asker.stream.pending.length === 1);
    const { stream, decided, forwarding } = asker;
    await forwarding.serve('default');
    await until(() => decided.length === 1);
    await forwarding.stop();
    // Neither acknowledged nor removed: the next owner claims it and carries it out.
    expect(stream.finished).toEqual([]);
    expect(stream.dropped).toEqual([]);
    await expect(asking).resolves.toEqual({ kind: 'forwarded' });
  });

  it('carries a sealed click out through its own Decider, with onChange and never the asker’s check', async () => {
    const { forwarding, stream, decided } = owner();
    const asking = forwarding.forward(click());
    await forwarding.serve('default');
    await expect(asking).resolves.toEqual({ kind: 'decided', terminal: true });
    await forwarding.stop();
    expect(decided).toHaveLength(1);
    expect(decided[0]).toMatchObject({ by: { via: 'click', userId: 'U0ALICE' }, onChange: 'return' });
    // The owner checks who may decide itself, on the record it holds.
    expect(decided[0]!.warranted).toBeUndefined();
    expect(stream.finished).toHaveLength(1);
  });

  it('the asker hears the outcome as the owner pushes it, without polling the reply key', async () => {
    const { forwarding, stream } = owner();
    const asking = forwarding.forward(click());
    await until(() => stream.pending.length === 1);
    await forwarding.serve('default');
    await expect(asking).resolves.toEqual({ kind: 'decided', terminal: true });
    await forwarding.stop();
    expect(stream.polls).toBe(0);
  });

  it('an asker blocked on its reply list believes no outcome pushed there without a valid MAC', async () => {
    const { forwarding, stream, lines } = owner({ waitMs: 300 });
    const asking = forwarding.forward(click());
    await until(() => stream.pending.length === 1);
    const { commandId } = JSON.parse(stream.pending.pop()!.body) as { commandId: string };
    stream.push(commandId, JSON.stringify({ o: '{"kind":"decided","terminal":true}', m: 'AAAA' }));
    await expect(asking).resolves.toEqual({ kind: 'forwarded' });
    expect(
      lines.filter((l) => l.msg === 'outcome of a forwarded decision without a valid MAC; ignored'),
    ).toHaveLength(1);
    await forwarding.stop();
  });

  it('carries the text typed, and the question its modal showed, for the owner to check', async () => {
    const { forwarding, decided } = owner();
    const by = { via: 'click' as const, userId: 'U0ALICE', typed: 'main', askedAs: 'q-digest' };
    const asking = forwarding.forward({ ...click(), by });
    await forwarding.serve('default');
    await expect(asking).resolves.toEqual({ kind: 'decided', terminal: true });
    await forwarding.stop();
    expect(decided[0]).toMatchObject({ by });
  });

  it('carries a "don\'t ask again" press, for the owner to refuse to one deciding as a stand-in', async () => {
    const { forwarding, decided } = owner();
    const by = { via: 'click' as const, userId: 'U0ALICE', remember: true as const };
    const asking = forwarding.forward({ ...click(), by });
    await forwarding.serve('default');
    await expect(asking).resolves.toEqual({ kind: 'decided', terminal: true });
    await forwarding.stop();
    expect(decided[0]!.by).toEqual(by);
  });

  it.each([
    ['without a MAC', undefined],
    ['with a wrong MAC', new ReplicaSeal('another secret, also of 32+ characters').mac('decision', 'x')],
    ['sealed under another secret', 'other-secret'],
  ])('drops an entry %s and logs it, without its body; nothing is decided', async (_, mac) => {
    const { forwarding, stream, decided, lines } = owner();
    const body = JSON.stringify({
      approvalId: 'fw-unit-1',
      hostId: 'default',
      sourceIndex: 0,
      choiceId: 'allow_once',
      by: { via: 'click', userId: 'U0ALICE' },
      commandId: 'cmd-forged-0001',
      at: Date.now(),
    });
    const sealed =
      mac === 'other-secret'
        ? new ReplicaSeal('another secret, also of 32+ characters').mac('decision', body)
        : mac;
    stream.pending.push({ id: '7-0', body, ...(sealed !== undefined ? { mac: sealed } : {}) });
    await forwarding.serve('default');
    await until(() => stream.dropped.length === 1);
    await forwarding.stop();
    expect(stream.dropped).toEqual(['7-0']);
    expect(decided).toEqual([]);
    const warned = lines.filter((l) => l.msg === 'forwarded decision without a valid MAC; dropped');
    expect(warned).toEqual([
      expect.objectContaining({
        level: 40,
        hostId: 'default',
        entryId: '7-0',
        mac: sealed ? 'wrong' : 'missing',
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('cmd-forged-0001');
  });

  it('the asker believes no outcome its owner did not seal for this very decision', async () => {
    const { forwarding, stream, lines } = owner({ waitMs: 300 });
    // One decision carried out: its outcome, sealed by the owner, is in its reply key.
    await forwarding.serve('default');
    await expect(forwarding.forward(click())).resolves.toEqual({ kind: 'decided', terminal: true });
    await forwarding.stop();
    const first = stream.finished[0]!;
    // Someone with write access to Redis answers the next decision (which no owner reads): first
    // with that sealed outcome copied over, then with one that carries no valid MAC.
    for (const forged of [first.outcome, JSON.stringify({ o: JSON.parse(first.outcome).o, m: 'AAAA' })]) {
      const asking = forwarding.forward(click());
      await until(() => stream.pending.length === 1);
      const { commandId } = JSON.parse(stream.pending.pop()!.body) as { commandId: string };
      stream.replies.set(commandId, forged);
      await expect(asking).resolves.toEqual({ kind: 'forwarded' });
    }
    expect(
      lines.filter((l) => l.msg === 'outcome of a forwarded decision without a valid MAC; ignored'),
    ).toHaveLength(2);
  });
});
