// Who is away, on real Redis: the cap on how many one delegate stands in for holds when an
// absence is set, so that whoever is told someone stands in for them is seen by every check.

import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Person } from '../../src/domain/authorization.js';
import { awayCommands } from '../../src/slack/awayCommand.js';
import { AwayStore, MAX_STAND_INS } from '../../src/store/awayStore.js';
import { useFreshRedis } from '../support/freshRedis.js';

const fresh = useFreshRedis();
/** The file's own database, emptied before each test. */
let redis: Redis;
beforeEach(() => {
  redis = fresh();
});

const MEMBER: Person = { teamId: 'T1', guest: false };

function commandsOn(store: AwayStore) {
  return awayCommands({
    store,
    authorizer: { whoIs: async () => ({ person: MEMBER, workspace: { teamId: 'T1' } }) },
    onChanged: () => undefined,
  });
}

/** `count` people, each away for a day with `delegate` standing in. */
async function nameDelegate(store: AwayStore, delegate: string, count: number): Promise<string[]> {
  const away = commandsOn(store);
  const users = Array.from({ length: count }, (_, i) => `U0AWAY${String(i).padStart(2, '0')}`);
  for (const userId of users) {
    const { text } = await away.away({ userId, args: ['until', '1d', 'delegate', `<@${delegate}>`] });
    expect(text, userId).toContain('is asked in your place');
  }
  return users;
}

describe('AwayStore and the stand-in cap', () => {
  it('a delegate’s place is taken in one step: of people naming a full delegate at once, none gets past the cap', async () => {
    let nowMs = Date.now();
    const store = new AwayStore(redis, () => nowMs);
    const since = new Date(nowMs).toISOString();
    const until = (ms: number) => new Date(nowMs + ms).toISOString();
    // Nineteen stand-ins now, one of them ending in 5 s.
    for (let i = 0; i < MAX_STAND_INS - 1; i++) {
      const ms = i === 0 ? 5_000 : 60_000;
      expect(
        await store.set({ userId: `U0ON${i}`, until: until(ms), delegate: 'U0BOB', since }),
      ).toMatchObject({
        full: false,
      });
    }
    // Five name Bob at once, each typing the command: exactly one gets the last place.
    const away = commandsOn(store);
    const racing = Array.from({ length: 5 }, (_, i) => `U0RACE${i}`);
    const answers = await Promise.all(
      racing.map((userId) => away.away({ userId, args: ['until', '1d', 'delegate', '<@U0BOB>'] })),
    );
    const placed = answers.map((a) => a.text.includes('is asked in your place'));
    expect(placed.filter(Boolean)).toHaveLength(1);
    for (const [i, answer] of answers.entries())
      if (!placed[i]) expect(answer.text).toContain(`already stands in for ${MAX_STAND_INS} people`);
    const winner = racing[placed.indexOf(true)]!;
    expect((await store.standingInFor('U0BOB')).map((a) => a.userId)).toContain(winner);
    // Those refused were not set away at all.
    for (const userId of racing.filter((u) => u !== winner)) expect(await store.get(userId)).toBeUndefined();
    // Once the first ends, there is room again.
    nowMs += 10_000;
    expect(
      await store.set({ userId: 'U0LATE', until: until(60_000), delegate: 'U0BOB', since }),
    ).toMatchObject({
      full: false,
    });
  });

  it(`refuses a delegate who already stands in for ${MAX_STAND_INS} people; those already among them may set their absence again`, async () => {
    const store = new AwayStore(redis);
    const away = commandsOn(store);
    const users = await nameDelegate(store, 'U0BOB', MAX_STAND_INS);
    expect((await store.standingInFor('U0BOB')).map((a) => a.userId).sort()).toEqual(users);

    const refused = await away.away({ userId: 'U0LATE', args: ['until', '1d', 'delegate', '<@U0BOB>'] });
    expect(refused.text).toContain(`already stands in for ${MAX_STAND_INS} people`);
    expect(refused.text).toContain('Nothing was changed');
    expect(await store.get('U0LATE')).toBeUndefined();
    expect(await redis.zscore('cs:standin:{U0BOB}', 'U0LATE')).toBeNull();

    // One of the twenty sets their absence again, longer: still one of them, so not refused.
    const again = await away.away({ userId: users[0]!, args: ['until', '2d', 'delegate', '<@U0BOB>'] });
    expect(again.text).toContain('is asked in your place');
    // One of them is back: there is room again.
    await away.back({ userId: users[1]! });
    const room = await away.away({ userId: 'U0LATE', args: ['until', '1d', 'delegate', '<@U0BOB>'] });
    expect(room.text).toContain('is asked in your place');
    expect((await store.standingInFor('U0BOB')).map((a) => a.userId)).toContain('U0LATE');
  });
});

/** `count` people, each away for a day naming `delegate`, written straight to the store. */
async function fill(store: AwayStore, delegate: string, count: number): Promise<void> {
  const until = new Date(Date.now() + 86_400_000).toISOString();
  const since = new Date().toISOString();
  for (let i = 0; i < count; i++)
    expect(await store.set({ userId: `U0${delegate}${i}`, until, delegate, since })).toMatchObject({
      full: false,
    });
}

describe('AwayStore when one person’s commands race on two replicas', () => {
  it('two `away` naming different delegates at once: the one not kept does not keep a place', async () => {
    const r1 = new AwayStore(redis);
    const other = redis.duplicate();
    const r2 = new AwayStore(other);
    try {
      // Both delegates one short of the cap, so whichever loses the race shows a place lost.
      await fill(r1, 'U0BOB', MAX_STAND_INS - 1);
      await fill(r1, 'U0CAT', MAX_STAND_INS - 1);
      const until = new Date(Date.now() + 86_400_000).toISOString();
      const since = new Date().toISOString();
      const answers = await Promise.all([
        r1.set({ userId: 'U0A', until, delegate: 'U0BOB', since }),
        r2.set({ userId: 'U0A', until, delegate: 'U0CAT', since }),
      ]);
      expect(answers.map((a) => a.full)).toEqual([false, false]);
      const kept = (await r1.get('U0A'))?.delegate;
      expect(['U0BOB', 'U0CAT']).toContain(kept);
      const dropped = kept === 'U0BOB' ? 'U0CAT' : 'U0BOB';
      expect((await r1.standingInFor(kept!)).map((a) => a.userId)).toContain('U0A');
      expect(await redis.zscore(`cs:standin:{${dropped}}`, 'U0A')).toBeNull();
      // The dropped delegate stands in for nineteen: a twentieth naming them is taken.
      expect(await r1.set({ userId: 'U0LATE', until, delegate: dropped, since })).toMatchObject({
        full: false,
      });
    } finally {
      await other.quit();
    }
  });

  it('`back` while `away` is written: no place is kept for an absence `back` ended', async () => {
    const r1 = new AwayStore(redis);
    // The second replica's commands after its first wait until the `away` has answered: a `back`
    // that reads the absence in one command and ends it in another sees none, then ends it.
    const other = redis.duplicate();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let sent = 0;
    const gated = new Proxy(other, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          if (sent++ > 0) await gate;
          return value.apply(target, args);
        };
      },
    });
    const r2 = new AwayStore(gated);
    try {
      await fill(r1, 'U0BOB', MAX_STAND_INS - 1);
      const until = new Date(Date.now() + 86_400_000).toISOString();
      const since = new Date().toISOString();
      const setting = r1.set({ userId: 'U0A', until, delegate: 'U0BOB', since });
      const clearing = r2.clear('U0A');
      expect(await setting).toMatchObject({ full: false });
      open();
      await clearing;
      // Whichever came last, every place taken in Bob's index is someone Bob stands in for now.
      const a = await r1.get('U0A');
      expect(await redis.zscore('cs:standin:{U0BOB}', 'U0A')).toBe(
        a?.delegate === 'U0BOB' ? String(Date.parse(until)) : null,
      );
      expect(await redis.zcard('cs:standin:{U0BOB}')).toBe((await r1.standingInFor('U0BOB')).length);
    } finally {
      await other.quit();
    }
  });
});
