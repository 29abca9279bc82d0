// Every Redis key carries exactly one hash tag, so that on Redis Cluster the tag alone picks its
// slot; and the tests' slot check (test/support/slotCheck.ts), which the store integration tests
// rely on, does refuse what Cluster would.

import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { keys } from '../../../src/store/keys.js';
import { hashed, refuseCrossSlot } from '../../support/slotCheck.js';

/** Arguments for each key function: plain ids, as the bot passes them. A key added later is checked too. */
function sample(name: string, arity: number): unknown[] {
  return Array.from({ length: arity }, (_, i) => (name === 'claim' && i === 1 ? 3 : `${name}-arg${i}`));
}

const all = Object.entries(keys).map(([name, key]) => {
  const value =
    typeof key === 'function' ? (key as (...a: unknown[]) => string)(...sample(name, key.length)) : key;
  return [name, value] as const;
});

describe('keys', () => {
  it.each(all)('%s has exactly one hash tag: %s', (_name, key) => {
    expect(key.startsWith('cs:')).toBe(true);
    expect(key.match(/\{[^{}]+\}/g)).toHaveLength(1);
    expect(key.replace(/\{[^{}]+\}/, '')).not.toMatch(/[{}]/);
  });

  it('keeps what one script or pipeline touches under one tag', () => {
    const together = [
      // An approval's scripts: the record with its post lease, its claims, its notices.
      [keys.approval('a-1'), keys.postLease('a-1'), keys.claim('a-1', 0), keys.notice('a-1', 'dm')],
      // A host's open sets and its sessions, written together as an approval is created.
      [keys.openApprovals('h1'), keys.openInSession('h1', 's1'), keys.sessions('h1')],
      // A request's lineage and its pages left to resolve, moved there as it ends (one script).
      [keys.escalationLineage('l-1'), keys.escalationUnresolved('l-1')],
      // A user's decided list and the markers of what is in it (one script).
      [keys.recentDecisions('U1'), keys.recentDecisionNoted('U1', 'a-1')],
      // A grant's tag string and the earlier layout's grant and bucket of that tag (one script
      // ends an earlier grant as a new one takes its place).
      [
        keys.grantTag('0123456789'),
        keys.grant('0123456789', '0123456789-abc'),
        keys.grantBucket('0123456789', 'ffff'),
      ],
      // The minutes of ends (one script notes an end; one finishes a minute), and the grants'
      // shared keys.
      [
        keys.grantEnds(29_000_000),
        keys.grantEndMinutes(),
        keys.grantEndsRead(),
        keys.grantChannels(),
        keys.grantChannelListings(),
        keys.grantsAll(),
        keys.grantsExpiring(),
      ],
    ];
    for (const group of together) expect(new Set(group.map(hashed)).size).toBe(1);
    // Shared by every approval: each apart from the others, and from any approval's.
    const shared = [
      keys.unsyncedCards(),
      keys.audit,
      keys.escalationDue(),
      keys.homeViewers(),
      keys.grantsAll(),
    ];
    expect(new Set([...shared, keys.approval('a-1')].map(hashed)).size).toBe(shared.length + 1);
  });
});

describe('the tests’ slot check', () => {
  // Never connected: a refused command is refused before anything is sent.
  const client = () => refuseCrossSlot(new Redis({ lazyConnect: true, enableOfflineQueue: false }));

  it('reads the hash tag as Redis Cluster does', () => {
    expect(hashed('cs:approval:{a-1}')).toBe('a-1');
    expect(hashed('cs:{}:x')).toBe('cs:{}:x');
    expect(hashed('no-tag')).toBe('no-tag');
    expect(hashed('a{b}{c}')).toBe('b');
  });

  it('refuses a pipeline or transaction over two tags, and a script over two tags', async () => {
    const redis = client();
    await expect(
      redis.pipeline().get(keys.approval('a-1')).get(keys.openApprovals('h1')).exec(),
    ).rejects.toThrow(/cross-slot pipeline/);
    await expect(redis.multi().get(keys.audit).get(keys.unsyncedCards()).exec()).rejects.toThrow(
      /cross-slot multi/,
    );
    await expect(
      redis.eval('return 1', 2, keys.escalationDue(), keys.escalationLineage('l-1')),
    ).rejects.toThrow(/cross-slot command: .*cs:\{esc\}:due/);
    redis.disconnect();
  });
});
