// The grant store on a real Redis: matching reads one bucket in one round trip however many
// grants there are, a new press replacing the live grant of its key, expiry and revocation at
// once, exactly-once events under concurrent replicas (two store instances on two connections),
// listing by index.

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Grant, GrantStore } from '../../src/domain/grants/grant.js';
import { GRANT_LIST_LIMIT } from '../../src/domain/grants/listing.js';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { bucketOf } from '../../src/store/grantIds.js';
import { newRow, packRows } from '../../src/store/grantRows.js';
import { RedisGrantStore } from '../../src/store/grantStore.js';
import { keys } from '../../src/store/keys.js';
import type { RedisClient } from '../../src/store/redisConnection.js';
import { freshRedisDb } from '../support/bot.js';
import { botGrantInput, type GrantInput } from '../support/grantInput.js';
import { holdingRedis } from '../support/holdingRedis.js';
import { captureLogger } from '../support/logCapture.js';
import { startMonitor } from '../support/redisMonitor.js';
import { resendingRedis } from '../support/resendingRedis.js';
import { BACKENDS, openBackend, type StoreBackend } from '../support/storeBackends.js';
import { testRedisUrl } from '../support/testRedis.js';
import { until } from '../support/until.js';

const HOUR = 60 * 60 * 1000;
const MINUTE = 60 * 1000;
const T0 = Date.parse('2026-12-01T10:00:00.000Z');
/** The sweep removes a minute's grants once the minute is over: the first moment it does. */
const minuteOver = (endMs: number) => Math.floor(endMs / MINUTE) * MINUTE + MINUTE;
const tagOf = (grantId: string) => grantId.slice(0, 10);
/** The bucket of botGrant()'s grants. */
const S1 = { caller: 'session:s-1', tool: 'shell', sandboxMode: 'workspace-write', route: 'default' };

describe.each(BACKENDS)('the grant store on %s Redis', (kind) => {
  let db: number;
  let backend: StoreBackend;
  let redis: RedisClient;
  let redisB: RedisClient;
  let clock: number;
  const now = () => new Date(clock);
  const at = (ms: number) => new Date(ms);

  beforeAll(async () => {
    backend = await openBackend(kind, async () => {
      db = await freshRedisDb();
      return { url: testRedisUrl(db) };
    });
    redis = backend.connect();
    redisB = backend.connect();
  });
  beforeEach(async () => {
    await backend.flush();
    clock = T0;
  });
  afterAll(async () => {
    await backend.close();
  });

  function newStore(
    on: RedisClient = redis,
    extra: { auditMaxLen?: number; listedHostGrantMs?: number; sweepLimit?: number } = {},
  ) {
    const { logger, lines } = captureLogger();
    const store = new RedisGrantStore(on, {
      logger,
      auditMaxLen: extra.auditMaxLen ?? 10_000,
      now,
      ...extra,
    });
    return { store, lines };
  }

  /** `redis` whose first `command` fails, as in a blip (or a listing stream's shard failing over). */
  function failingOnce(command: string) {
    return failing(command, 1);
  }

  /**
   * `redis` whose first `times` calls of `command` fail (a shard down for a while); `pipeline`,
   * which sends nothing itself, throws.
   */
  function failing(command: string, times: number) {
    let failed = 0;
    return new Proxy(redis, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (prop !== command || failed >= times) return value.apply(target, args);
          failed += 1;
          const err = new Error(`simulated failure of ${command}`);
          if (command === 'pipeline') throw err;
          return Promise.reject(err);
        };
      },
    });
  }

  type Input = GrantInput;

  function botGrant(extra: Partial<Input> = {}): Input {
    return botGrantInput(extra);
  }

  function hostGrant(extra: Partial<Input> = {}): Input {
    const { ttlMs: _ttl, ...rest } = botGrant({
      holder: 'host',
      rulePreview: 'allow `npm test` in this workspace',
      scope: 'session',
      approvalId: 'a-host',
      ...extra,
    });
    return rest;
  }

  async function events(kind?: string) {
    const all = await readGrantAudit(redis);
    return kind ? all.filter((e) => e.kind === kind) : all;
  }

  /** The events that end a grant (all but `created` and `used`), as [kind, grantId]. */
  async function closingEvents() {
    return (await events()).flatMap((e) =>
      e.kind === 'created' || e.kind === 'used' ? [] : [[e.kind, e.grantId]],
    );
  }

  /**
   * A grant as releases before the compact layout stored it (their create and index): a hash per
   * grant, its bucket's field, and the four sorted sets.
   */
  async function storeAsHashes(input: Input, bucket: { tag: string; key: string }, grantId: string) {
    const { ttlMs, maxUses, ...data } = input;
    const cf = JSON.stringify(data.capabilities);
    const end = clock + ttlMs!;
    await redis.hset(keys.grant(bucket.tag, grantId), {
      d: JSON.stringify({ ...data, createdAt: now().toISOString() }),
      end,
      uses: 0,
      bk: bucket.key,
      cf,
      ...(maxUses === undefined ? {} : { left: maxUses, max: maxUses }),
    });
    await redis.hset(bucket.key, cf, grantId);
    await redis.zadd(keys.grantsExpiring(), end, grantId);
    for (const index of [
      keys.grantsAll(),
      keys.grantsByChannel(data.channel),
      keys.grantsByGranter(data.grantedBy),
    ])
      await redis.zadd(index, clock, grantId);
    return grantId;
  }

  describe('create, get, candidates', () => {
    it('stores a bot-held grant with canonical capabilities, and matches it in its bucket only', async () => {
      const { store, lines } = newStore();
      const grant = await store.create(botGrant({ capabilities: ['exec:b', 'exec:a', 'exec:b', 'exec:a'] }));
      expect(grant).toMatchObject({
        capabilities: ['exec:a', 'exec:b'],
        holder: 'bot',
        uses: 0,
        createdAt: at(T0).toISOString(),
        expiresAt: at(T0 + HOUR).toISOString(),
      });
      expect(grant.grantId).toMatch(/^[0-9a-f]{10}-[0-9a-f]{12}$/);
      expect(await store.get(grant.grantId)).toEqual(grant);
      expect(await store.candidates(S1, now())).toEqual([grant]);
      expect(await store.candidates({ ...S1, sandboxMode: 'danger-full-access' }, now())).toEqual([]);
      expect(await store.candidates({ ...S1, tool: 'apply_patch' }, now())).toEqual([]);
      expect(await store.candidates({ ...S1, caller: 'session:s-2' }, now())).toEqual([]);
      // The route is part of the key: another route's approval never reads this bucket.
      expect(await store.candidates({ ...S1, route: 'prod' }, now())).toEqual([]);
      expect(await store.candidates({ ...S1, route: '' }, now())).toEqual([]);
      expect(bucketOf({ ...S1, route: 'prod' }).key).not.toBe(bucketOf(S1).key);
      expect(await store.get('nope')).toBeUndefined();
      expect(await store.get('0123456789-000000000000')).toBeUndefined();

      const [created] = await events();
      expect(created).toMatchObject({ kind: 'created', grant, at: at(T0).toISOString() });
      expect(lines.find((l) => l.msg === 'grant created')).toMatchObject({
        level: 30,
        grantEvent: { kind: 'created', grant: { grantId: grant.grantId } },
      });
    });

    it('refuses a bot-held grant without a ttl', async () => {
      const { store } = newStore();
      await expect(store.create(botGrant({ ttlMs: undefined }))).rejects.toThrow(/ttlMs/);
      await expect(store.create(botGrant({ ttlMs: 0 }))).rejects.toThrow(/ttlMs/);
    });

    it('never returns host-held grants as candidates', async () => {
      const { store } = newStore();
      const host = await store.create(hostGrant());
      expect(host.expiresAt).toBeUndefined();
      expect(await store.candidates(S1, now())).toEqual([]);
      expect(await store.get(host.grantId)).toMatchObject({ holder: 'host', rulePreview: host.rulePreview });
    });

    it('puts no Redis TTL on grants, buckets or the expiry index (the sweep removes them); listings live as long as their grants', async () => {
      const { store } = newStore();
      const long = await store.create(botGrant({ ttlMs: 10 * HOUR }));
      await store.create(botGrant({ capabilities: ['exec:ls'], ttlMs: HOUR }));
      // Many keys with a TTL stall Redis's active expiry for every client: none per grant.
      expect(await redis.pttl(keys.grantTag(tagOf(long.grantId)))).toBe(-1);
      expect(await redis.pttl(keys.grantEnds(Math.floor((T0 + 10 * HOUR) / MINUTE)))).toBe(-1);
      expect(await redis.pttl(keys.grantEndMinutes())).toBe(-1);
      for (const key of [keys.grantsListedIn('C0DEPLOY'), keys.grantsListedBy('U0ALICE')])
        expect(await redis.pttl(key)).toBeGreaterThan(10 * HOUR);
    });
  });

  describe('grants stored by a release before the route was part of the key', () => {
    /** What that release's create and index wrote: the bucket a hash of (caller, tool, sandboxMode). */
    async function storeAsOlderRelease(input: Input): Promise<string> {
      const hash = createHash('sha256')
        .update(JSON.stringify([input.caller, input.tool, input.sandboxMode]))
        .digest('hex');
      const tag = hash.slice(0, 10);
      return storeAsHashes(input, { tag, key: keys.grantBucket(tag, hash) }, `${tag}-0123456789ab`);
    }

    it('answer nothing (fail closed), yet are listed, revocable and swept until they end', async () => {
      const { store } = newStore();
      const old = await storeAsOlderRelease(botGrant());
      const revocable = await storeAsOlderRelease(botGrant({ tool: 'apply_patch' }));
      expect(await store.candidates(S1, now())).toEqual([]);
      expect(await store.candidates({ ...S1, route: '' }, now())).toEqual([]);
      expect((await store.list({}, now())).map((g) => g.grantId).sort()).toEqual([old, revocable].sort());
      expect(await store.get(old)).toMatchObject({ grantId: old, route: 'default', grantedBy: 'U0ALICE' });

      // The same press now stores a grant of the new kind beside it, which does answer.
      const fresh = await store.create(botGrant({ approvalId: 'a-2' }));
      expect((await store.candidates(S1, now())).map((g) => g.grantId)).toEqual([fresh.grantId]);

      expect(await store.revoke(revocable, 'U0ALICE', now())).toBe(true);
      expect((await store.list({}, now())).map((g) => g.grantId).sort()).toEqual([old, fresh.grantId].sort());
      expect(await store.get(revocable)).toMatchObject({ revokedBy: 'U0ALICE' });
      await store.sweep(at(T0 + HOUR));
      expect(await store.get(old)).toBeUndefined();
      expect(await store.get(revocable)).toBeUndefined();
      expect(await events('expired')).toContainEqual(expect.objectContaining({ grantId: old }));
    });
  });

  describe('grants the previous release stored as hashes', () => {
    const storeInBucket = (input: Input, suffix: string) => {
      const bucket = bucketOf(input);
      return storeAsHashes(input, bucket, `${bucket.tag}-${suffix}`);
    };

    it('are matched, used, listed, revoked and swept until they end; a new press replaces them', async () => {
      const { store } = newStore();
      const old = await storeInBucket(botGrant({ maxUses: 3 }), '0123456789ab');
      const other = await storeInBucket(botGrant({ tool: 'apply_patch' }), '0123456789ac');
      const [found] = await store.candidates(S1, now());
      expect(found).toMatchObject({ grantId: old, usesLeft: 3, route: 'default' });
      expect(await store.reserveUse(found!, now())).toBe(2);
      await store.recordUse(found!, 'a-use', 0, now());
      expect(await store.get(old)).toMatchObject({ uses: 1, usesLeft: 2 });
      expect((await store.list({ grantedBy: 'U0ALICE' }, now())).map((g) => g.grantId).sort()).toEqual(
        [old, other].sort(),
      );

      // A press of the same key ends it in the new grant's place, in the same step.
      const fresh = await store.create(botGrant({ approvalId: 'a-2', grantedBy: 'U0BOB' }));
      expect((await store.candidates(S1, now())).map((g) => g.grantId)).toEqual([fresh.grantId]);
      expect(await store.get(old)).toMatchObject({ revokedBy: 'U0BOB', replacedBy: fresh.grantId });
      expect(await events('replaced')).toEqual([
        expect.objectContaining({ grantId: old, by: 'U0BOB', replacedBy: fresh.grantId }),
      ]);

      expect(await store.revoke(other, 'U0ALICE', now())).toBe(true);
      expect((await store.list({}, now())).map((g) => g.grantId)).toEqual([fresh.grantId]);
      // Swept at their end (the earlier layout's sweep), the new grant's minute not yet over.
      expect(await store.sweep(at(T0 + HOUR))).toBe(2);
      expect(await store.get(old)).toBeUndefined();
      expect(await store.get(other)).toBeUndefined();
      expect(await redis.exists(keys.grantsExpiring())).toBe(0);
      expect(await store.get(fresh.grantId)).toMatchObject({ grantedBy: 'U0BOB' });
    });

    it("of another host's session are left alone by a press on this host", async () => {
      const { store } = newStore();
      const old = await storeInBucket(botGrant({ hostId: 'other' }), '0123456789ab');
      const fresh = await store.create(botGrant({ approvalId: 'a-2', grantedBy: 'U0BOB' }));
      const found = await store.candidates(S1, now());
      expect(found.map((g) => g.grantId).sort()).toEqual([old, fresh.grantId].sort());
      expect(await closingEvents()).toEqual([]);
    });

    it('count one approval’s use once, however many replicas record it', async () => {
      const old = await storeInBucket(botGrant({ maxUses: 2 }), '0123456789ab');
      const a = newStore(redis).store;
      const b = newStore(redisB).store;
      const [found] = await a.candidates(S1, now());
      expect(await a.reserveUse(found!, now())).toBe(1);
      expect(await a.reserveUse(found!, now())).toBe(0);
      await Promise.all([a.recordUse(found!, 'a-u1', 0, now()), b.recordUse(found!, 'a-u1', 0, now())]);
      await a.recordUse(found!, 'a-u1', 0, now());
      expect(await a.get(old)).toMatchObject({ uses: 1 });
      expect((await events()).map((e) => e.kind)).toEqual(['used']);
      // The use still out comes back: the grant answers again.
      await a.returnUse(found!);
      expect(await a.candidates(S1, now())).toMatchObject([{ grantId: old, usesLeft: 1 }]);
    });

    it('are revoked while their last use is out, and that use given back does not revive them', async () => {
      const { store } = newStore();
      const old = await storeInBucket(botGrant({ maxUses: 1 }), '0123456789ab');
      const [found] = await store.candidates(S1, now());
      expect(await store.reserveUse(found!, now())).toBe(0);
      expect(await store.revoke(old, 'U0BOB', now())).toBe(true);
      await store.returnUse(found!);
      expect(await store.candidates(S1, now())).toEqual([]);
      expect(await store.reserveUse(found!, now())).toBeUndefined();
    });

    it('record `exhausted` once their last use is counted, not while a use that may come back is out', async () => {
      const { store } = newStore();
      const spent = await storeInBucket(botGrant({ maxUses: 2 }), '0123456789ab');
      const [found] = await store.candidates(S1, now());
      expect(await store.reserveUse(found!, now())).toBe(1);
      expect(await store.reserveUse(found!, now())).toBe(0);
      await store.recordUse(found!, 'a-u1', 0, now());
      // A use is still out: not spent for good. It comes back, and is taken and counted again.
      expect(await closingEvents()).toEqual([]);
      await store.returnUse(found!);
      expect(await store.reserveUse(found!, now())).toBe(0);
      await store.recordUse(found!, 'a-u3', 0, now());
      expect(await closingEvents()).toEqual([['exhausted', spent]]);
      await store.returnUse(found!);
      expect(await store.reserveUse(found!, now())).toBeUndefined();
    });

    it('end with one closing event when revoked or expired while their last use is out', async () => {
      const { store } = newStore();
      // Revoked with its last use out, that use confirmed after: `revoked` alone.
      const revoked = await storeInBucket(botGrant({ maxUses: 1, tool: 'apply_patch' }), '0123456789ac');
      const [other] = await store.candidates({ ...S1, tool: 'apply_patch' }, now());
      expect(await store.reserveUse(other!, now())).toBe(0);
      expect(await store.revoke(revoked, 'U0BOB', now())).toBe(true);
      await store.recordUse(other!, 'a-r', 0, now());
      // Expired with its last use out, never confirmed: `expired`.
      const expired = await storeInBucket(botGrant({ maxUses: 1, tool: 'read' }), '0123456789ad');
      const [third] = await store.candidates({ ...S1, tool: 'read' }, now());
      expect(await store.reserveUse(third!, now())).toBe(0);
      expect(await store.sweep(at(T0 + HOUR))).toBe(2);
      expect(await closingEvents()).toEqual([
        ['revoked', revoked],
        ['expired', expired],
      ]);
    });

    it('stay ended when a new press took their place while their last use was out: one live per key', async () => {
      const { store } = newStore();
      const old = await storeInBucket(botGrant({ maxUses: 1 }), '0123456789ab');
      const [found] = await store.candidates(S1, now());
      expect(await store.reserveUse(found!, now())).toBe(0);
      const fresh = await store.create(botGrant({ approvalId: 'a-2', grantedBy: 'U0BOB', ttlMs: MINUTE }));
      // The decision that took the old grant's last use did not go through.
      await store.returnUse(found!);
      expect((await store.candidates(S1, now())).map((g) => g.grantId)).toEqual([fresh.grantId]);
      expect(await store.reserveUse(found!, now())).toBeUndefined();
      expect(await store.get(old)).toMatchObject({ replacedBy: fresh.grantId });
    });
  });

  describe('granting the same key again', () => {
    it("replaces the live grant: the new one is the new granter's, the old one ends at once, both are recorded", async () => {
      const { store } = newStore();
      const first = await store.create(
        botGrant({
          capabilities: ['exec:a', 'exec:b'],
          ttlMs: 8 * HOUR,
          lasts: { kind: 'time', ms: 8 * HOUR },
        }),
      );
      clock = T0 + 10 * 60 * 1000;
      const again = await store.create(
        botGrant({
          capabilities: ['exec:b', 'exec:a', 'exec:a'],
          approvalId: 'a-2',
          grantedBy: 'U0BOB',
          channel: 'C0OTHER',
          lasts: { kind: 'time', ms: HOUR },
        }),
      );
      expect(again.grantId).not.toBe(first.grantId);
      // Bob's, with his scope: shorter than Alice's was.
      expect(again).toMatchObject({
        grantedBy: 'U0BOB',
        approvalId: 'a-2',
        channel: 'C0OTHER',
        lasts: { kind: 'time', ms: HOUR },
        expiresAt: at(clock + HOUR).toISOString(),
      });
      expect(Date.parse(again.expiresAt!)).toBeLessThan(Date.parse(first.expiresAt!));
      expect((await store.candidates(S1, now())).map((g) => g.grantId)).toEqual([again.grantId]);
      expect(await store.candidates(S1, at(clock + HOUR))).toEqual([]);
      // Alice's ended as if Bob revoked it, naming what took its place; it is listed nowhere.
      expect(await store.get(first.grantId)).toMatchObject({
        revokedBy: 'U0BOB',
        revokedAt: now().toISOString(),
        replacedBy: again.grantId,
      });
      expect((await store.list({}, now())).map((g) => g.grantId)).toEqual([again.grantId]);
      expect(await store.list({ grantedBy: 'U0ALICE' }, now())).toEqual([]);
      expect(await store.list({ channels: ['C0DEPLOY'] }, now())).toEqual([]);
      expect((await store.list({ grantedBy: 'U0BOB' }, now())).map((g) => g.grantId)).toEqual([
        again.grantId,
      ]);
      expect(await redis.zscore(keys.grantsByGranter('U0ALICE'), first.grantId)).toBeNull();
      expect(await store.revoke(first.grantId, 'U0ALICE', now())).toBe(false);

      expect(await events()).toEqual([
        expect.objectContaining({ kind: 'created', grant: first }),
        expect.objectContaining({
          kind: 'created',
          grant: again,
          replaces: { grantId: first.grantId, grantedBy: 'U0ALICE' },
        }),
        expect.objectContaining({
          kind: 'replaced',
          grantId: first.grantId,
          by: 'U0BOB',
          replacedBy: again.grantId,
          approvalId: 'a-2',
          at: now().toISOString(),
        }),
      ]);
    });

    it('one approval recorded again by the same person is one grant and one event', async () => {
      const { store } = newStore();
      const first = await store.create(botGrant({ ttlMs: 5 * HOUR }));
      clock = T0 + 1_000;
      const again = await store.create(botGrant({ ttlMs: HOUR }));
      expect(again).toEqual(first);
      expect(await events()).toHaveLength(1);
    });

    it('two replicas recording one press at once store one grant; two presses at once leave one live', async () => {
      const a = newStore(redis).store;
      const b = newStore(redisB).store;
      const [one, two] = await Promise.all([a.create(botGrant()), b.create(botGrant())]);
      expect(two.grantId).toBe(one.grantId);
      expect(await events()).toHaveLength(1);

      const presses = await Promise.all(
        ['U0BOB', 'U0CAROL', 'U0DAVE', 'U0ERIN'].map((grantedBy, i) =>
          (i % 2 ? a : b).create(botGrant({ grantedBy, approvalId: `a-${grantedBy}` })),
        ),
      );
      const live = await a.candidates(S1, now());
      expect(live).toHaveLength(1);
      expect(presses.map((g) => g.grantId)).toContain(live[0]!.grantId);
      expect((await a.list({}, now())).map((g) => g.grantId)).toEqual([live[0]!.grantId]);
      // Each press ended the one before it, whatever order they ran in: four in all.
      const replaced = await events('replaced');
      expect(replaced).toHaveLength(4);
      expect(new Set(replaced.map((e) => (e.kind === 'replaced' ? e.grantId : ''))).size).toBe(4);
    });

    it('stores a new grant once the identical one expired or was revoked', async () => {
      const { store } = newStore();
      const first = await store.create(botGrant());
      clock = T0 + HOUR;
      const second = await store.create(botGrant({ approvalId: 'a-2' }));
      expect(second.grantId).not.toBe(first.grantId);
      expect(await store.revoke(second.grantId, 'U0ALICE', now())).toBe(true);
      const third = await store.create(botGrant({ approvalId: 'a-3' }));
      expect(new Set([first.grantId, second.grantId, third.grantId]).size).toBe(3);
      const live = await store.candidates(S1, now());
      expect(live.map((g) => g.grantId)).toEqual([third.grantId]);
    });

    it("leaves another host's session grant alone: a session id is its host's own word", async () => {
      const { store } = newStore();
      const byUses = await store.create(botGrant({ maxUses: 1, lasts: { kind: 'uses', uses: 1 } }));
      // Its last use is out on a decision when a person on another host, whose session has the
      // same id, presses "don't ask again" for the same request.
      expect(await store.reserveUse(byUses, now())).toBe(0);
      const other = await store.create(botGrant({ hostId: 'other', approvalId: 'a-2', grantedBy: 'U0BOB' }));
      expect(await closingEvents()).toEqual([]);
      // The decision does not go through: the use comes back, though the other host's grant is live.
      await store.returnUse(byUses);
      const ids = async () => (await store.candidates(S1, now())).map((g) => g.grantId).sort();
      expect(await ids()).toEqual([byUses.grantId, other.grantId].sort());
      // Pressed again on this host, only this host's grant is replaced.
      const again = await store.create(botGrant({ approvalId: 'a-3' }));
      expect(await ids()).toEqual([again.grantId, other.grantId].sort());
      expect(await closingEvents()).toEqual([['replaced', byUses.grantId]]);
    });

    it("leaves the owner's grant made on another host alone: it answers only that host", async () => {
      const { store } = newStore();
      const owner = { caller: 'user:U0OWN' };
      const there = await store.create(botGrant({ ...owner, hostId: 'other' }));
      const here = await store.create(botGrant({ ...owner, approvalId: 'a-2', grantedBy: 'U0BOB' }));
      expect(await closingEvents()).toEqual([]);
      const ids = async () =>
        (await store.candidates({ ...S1, ...owner }, now())).map((g) => g.grantId).sort();
      expect(await ids()).toEqual([there.grantId, here.grantId].sort());
      // Pressed again on this host, only this host's grant is replaced.
      const again = await store.create(botGrant({ ...owner, approvalId: 'a-3' }));
      expect(await ids()).toEqual([again.grantId, there.grantId].sort());
      expect(await closingEvents()).toEqual([['replaced', here.grantId]]);
    });

    it('keeps one host-held grant per approval when two replicas record it at once', async () => {
      const a = newStore(redis).store;
      const b = newStore(redisB).store;
      const [one, two] = await Promise.all([a.create(hostGrant()), b.create(hostGrant())]);
      expect(one.grantId).toBe(two.grantId);
      expect(await a.create(hostGrant())).toMatchObject({ grantId: one.grantId });
      expect(await events('created')).toHaveLength(1);
      expect(await a.list({}, now())).toHaveLength(1);
      const other = await a.create(hostGrant({ approvalId: 'a-host-2' }));
      expect(other.grantId).not.toBe(one.grantId);
    });
  });

  describe('expiry', () => {
    it('stops matching and listing at once, before any sweep', async () => {
      const { store } = newStore();
      const grant = await store.create(botGrant({ ttlMs: 1_000 }));
      expect(await store.candidates(S1, at(T0 + 999))).toHaveLength(1);
      expect(await store.candidates(S1, at(T0 + 1_000))).toEqual([]);
      expect(await store.list({}, at(T0 + 1_000))).toEqual([]);
      expect(await store.revoke(grant.grantId, 'U0ALICE', at(T0 + 1_000))).toBe(false);
      expect(await store.get(grant.grantId)).toMatchObject({ grantId: grant.grantId });
    });

    it('is swept once: two replicas sweeping at once record one `expired` per grant', async () => {
      const a = newStore(redis).store;
      const b = newStore(redisB).store;
      const expiring: Grant[] = [];
      for (let i = 0; i < 60; i++)
        expiring.push(
          await a.create(
            botGrant({ caller: `session:s-${i % 7}`, capabilities: [`exec:${i}`], ttlMs: 1_000 }),
          ),
        );
      const live = await a.create(botGrant({ capabilities: ['exec:live'], ttlMs: HOUR }));
      const host = await a.create(hostGrant());

      // Not before the minute they ended in is over.
      expect(await a.sweep(at(minuteOver(T0 + 1_000) - 1))).toBe(0);
      const sweptAt = at(minuteOver(T0 + 1_000));
      const swept = await Promise.all([a.sweep(sweptAt), b.sweep(sweptAt)]);
      expect(swept[0] + swept[1]).toBe(60);
      const expired = await events('expired');
      expect(expired).toHaveLength(60);
      expect(new Set(expired.map((e) => (e.kind === 'expired' ? e.grantId : ''))).size).toBe(60);
      expect(expired[0]!.at).toBe(sweptAt.toISOString());

      for (const g of expiring) expect(await a.get(g.grantId)).toBeUndefined();
      // Their listing entries went with them: the streams hold the live grant's and the host's.
      expect(await redis.xlen(keys.grantsListedIn('C0DEPLOY'))).toBe(2);
      expect(await redis.xlen(keys.grantsListedBy('U0ALICE'))).toBe(2);
      // The minute is done with; the minutes of the two left remain.
      expect(await redis.exists(keys.grantEnds(Math.floor((T0 + 1_000) / MINUTE)))).toBe(0);
      expect(await redis.zcard(keys.grantEndMinutes())).toBe(2);
      expect((await a.candidates(S1, sweptAt)).map((g) => g.grantId)).toEqual([live.grantId]);
      expect((await a.list({}, sweptAt)).map((g) => g.grantId).sort()).toEqual(
        [live.grantId, host.grantId].sort(),
      );
      expect(await a.sweep(sweptAt)).toBe(0);
    });

    it('takes on at most sweepLimit due grants per call; the next call goes on from there', async () => {
      const { store } = newStore(redis, { sweepLimit: 4 });
      const expiring: Grant[] = [];
      for (let i = 0; i < 10; i++)
        expiring.push(await store.create(botGrant({ capabilities: [`exec:${i}`], ttlMs: 1_000 })));

      const sweptAt = at(minuteOver(T0 + 1_000));
      const left = async () =>
        (await Promise.all(expiring.map((g) => store.get(g.grantId)))).filter(Boolean).length;
      expect(await store.sweep(sweptAt)).toBe(4);
      expect(await left()).toBe(6);
      // Not yet deleted is not live: no match, no listing.
      expect(await store.candidates(S1, sweptAt)).toEqual([]);
      expect(await store.list({}, sweptAt)).toEqual([]);
      expect(await store.sweep(sweptAt)).toBe(4);
      expect(await store.sweep(sweptAt)).toBe(2);
      expect(await store.sweep(sweptAt)).toBe(0);
      expect(await left()).toBe(0);
      expect(await redis.exists(keys.grantTag(tagOf(expiring[0]!.grantId)))).toBe(0);
      expect(await events('expired')).toHaveLength(10);
    });

    it('records `expired` for every grant it deleted though unlisting one failed, and only once', async () => {
      const { store, lines } = newStore(failingOnce('xdel'));
      // Two grants of one bucket (one script call deletes both) and one of another.
      const expiring = [
        await store.create(botGrant({ capabilities: ['exec:a'], ttlMs: MINUTE })),
        await store.create(botGrant({ capabilities: ['exec:b'], ttlMs: MINUTE })),
        await store.create(botGrant({ caller: 'session:s-2', ttlMs: MINUTE })),
      ];
      const sweptAt = at(minuteOver(T0 + MINUTE));

      expect(await store.sweep(sweptAt)).toBe(3);
      expect(await store.sweep(sweptAt)).toBe(0);
      const expired = await closingEvents();
      expect(expired.sort()).toEqual(expiring.map((g) => ['expired', g.grantId]).sort());
      for (const g of expiring) expect(await store.get(g.grantId)).toBeUndefined();
      // The entry left behind names a grant that is gone: listings skip it.
      expect(await store.list({}, sweptAt)).toEqual([]);
      expect(lines.filter((l) => l.msg === 'ended grant left in its listings')).toHaveLength(1);
    });

    it('deletes a replaced grant at its own end without an `expired`; the grant that replaced it lives on', async () => {
      const { store } = newStore();
      const replaced = await store.create(botGrant({ ttlMs: 1_000 }));
      clock = T0 + 500;
      const successor = await store.create(botGrant({ approvalId: 'a-2', ttlMs: HOUR }));
      expect(await store.sweep(at(minuteOver(T0 + 1_000)))).toBe(1);
      expect(await store.get(replaced.grantId)).toBeUndefined();
      expect(await store.candidates(S1, at(minuteOver(T0 + 1_000)))).toEqual([
        expect.objectContaining({ grantId: successor.grantId }),
      ]);
      expect(await events('expired')).toEqual([]);
    });

    it('lists a host-held grant for listedHostGrantMs, then sweeps it', async () => {
      const { store } = newStore(redis, { listedHostGrantMs: 10_000 });
      const host = await store.create(hostGrant());
      expect((await store.list({}, at(T0 + 9_999))).map((g) => g.grantId)).toEqual([host.grantId]);
      expect(await store.list({}, at(T0 + 10_000))).toEqual([]);
      expect(await store.sweep(at(minuteOver(T0 + 10_000)))).toBe(1);
      expect(await store.get(host.grantId)).toBeUndefined();
    });
  });

  describe('the channels "all grants" reads', () => {
    const listedChannels = async () => (await redis.smembers(keys.grantChannels())).sort();

    it('forgets a channel once none of its grants is listed, and keeps the others', async () => {
      const { store } = newStore();
      await store.create(botGrant({ channel: 'C0SHORT', ttlMs: 1_000 }));
      const revoked = await store.create(
        botGrant({ channel: 'C0REVOKED', capabilities: ['exec:make'], ttlMs: HOUR }),
      );
      const kept = await store.create(
        botGrant({ channel: 'C0KEPT', capabilities: ['exec:ls'], ttlMs: HOUR }),
      );
      expect(await store.revoke(revoked.grantId, 'U0ALICE', at(T0 + 10))).toBe(true);
      expect(await listedChannels()).toEqual(['C0KEPT', 'C0REVOKED', 'C0SHORT']);

      const sweptAt = at(minuteOver(T0 + 1_000));
      expect(await store.sweep(sweptAt)).toBe(1);
      // The expired grant's channel at its sweep; the revoked one's, its stream empty since the
      // revocation, on the sweep's look through the set.
      expect(await listedChannels()).toEqual(['C0KEPT']);
      expect(await redis.hkeys(keys.grantChannelListings())).toEqual(['C0KEPT']);
      expect((await store.list({}, sweptAt)).map((g) => g.grantId)).toEqual([kept.grantId]);

      // A channel forgotten is listed again with its next grant.
      clock = sweptAt.getTime();
      const again = await store.create(botGrant({ channel: 'C0SHORT', approvalId: 'a-2', ttlMs: HOUR }));
      expect(await listedChannels()).toEqual(['C0KEPT', 'C0SHORT']);
      expect((await store.list({}, sweptAt)).map((g) => g.grantId).sort()).toEqual(
        [kept.grantId, again.grantId].sort(),
      );
    });

    it('forgets channels an earlier release left listed without grants', async () => {
      const { store } = newStore();
      await redis.sadd(keys.grantChannels(), 'C0OLD-1', 'C0OLD-2');
      await store.create(botGrant({ channel: 'C0KEPT' }));
      await store.sweep(at(T0 + MINUTE));
      expect(await listedChannels()).toEqual(['C0KEPT']);
    });

    it('keeps a channel a grant is listed in while the sweep is forgetting it', async () => {
      const ended = await newStore().store.create(botGrant({ channel: 'C0RACE', ttlMs: 1_000 }));
      const { client, release, called } = holdingRedis(redis, 'csGrantForgetChannel');
      const sweeper = newStore(client).store;
      const sweptAt = at(minuteOver(T0 + 1_000));
      const sweeping = sweeper.sweep(sweptAt);
      // The sweep found the channel's stream empty and is about to forget it.
      await until(() => called.has('csGrantForgetChannel'));
      expect(await sweeper.get(ended.grantId)).toBeUndefined();
      clock = sweptAt.getTime();
      const fresh = await newStore(redisB).store.create(
        botGrant({ channel: 'C0RACE', approvalId: 'a-2', ttlMs: HOUR }),
      );
      release();
      expect(await sweeping).toBe(1);
      expect(await listedChannels()).toEqual(['C0RACE']);
      expect((await sweeper.list({}, sweptAt)).map((g) => g.grantId)).toEqual([fresh.grantId]);
    });
  });

  describe('revoke', () => {
    it('revokes once however many replicas try at once, and stops matching everywhere', async () => {
      const a = newStore(redis).store;
      const b = newStore(redisB).store;
      const grant = await a.create(botGrant());
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).revoke(grant.grantId, `U0USER${i}`, now())),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const revoked = await events('revoked');
      expect(revoked).toHaveLength(1);
      const by = `U0USER${results.indexOf(true)}`;
      expect(revoked[0]).toMatchObject({ grantId: grant.grantId, by, at: now().toISOString() });
      expect(await b.candidates(S1, now())).toEqual([]);
      expect(await a.get(grant.grantId)).toMatchObject({ revokedAt: now().toISOString(), revokedBy: by });
      expect(await a.list({}, now())).toEqual([]);
      expect(await a.revoke(grant.grantId, 'U0ALICE', now())).toBe(false);
    });

    it('leaves a revoked grant to the sweep, which deletes it at its end without an `expired`', async () => {
      const { store } = newStore();
      const grant = await store.create(botGrant());
      expect(await store.revoke(grant.grantId, 'U0ALICE', now())).toBe(true);
      expect(await store.sweep(at(T0 + HOUR - 1))).toBe(0);
      expect(await store.get(grant.grantId)).toMatchObject({ revokedBy: 'U0ALICE' });
      expect(await store.sweep(at(minuteOver(T0 + HOUR) - 1))).toBe(0);
      expect(await store.sweep(at(minuteOver(T0 + HOUR)))).toBe(1);
      expect(await store.get(grant.grantId)).toBeUndefined();
      expect(await redis.exists(keys.grantEnds(Math.floor((T0 + HOUR) / MINUTE)))).toBe(0);
      expect((await events()).map((e) => e.kind)).toEqual(['created', 'revoked']);
    });

    it('answers false for unknown ids', async () => {
      const { store } = newStore();
      expect(await store.revoke('nope', 'U0ALICE', now())).toBe(false);
      expect(await store.revoke('0123456789-000000000000', 'U0ALICE', now())).toBe(false);
      expect(await events()).toEqual([]);
    });

    it('unlists a host-held grant', async () => {
      const { store } = newStore();
      const host = await store.create(hostGrant());
      expect(await store.revoke(host.grantId, 'U0BOB', now())).toBe(true);
      expect(await store.list({}, now())).toEqual([]);
      expect(await store.create(hostGrant())).toMatchObject({ grantId: host.grantId, revokedBy: 'U0BOB' });
      expect(await store.list({}, now())).toEqual([]);
    });
  });

  describe('recordUse', () => {
    it('counts every one of many concurrent uses and records each', async () => {
      const a = newStore(redis).store;
      const b = newStore(redisB).store;
      const grant = await a.create(botGrant());
      clock = T0 + 5_000;
      await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).recordUse(grant, `a-use-${i}`, i % 3, now())),
      );
      expect(await a.get(grant.grantId)).toMatchObject({ uses: 40, lastUsedAt: now().toISOString() });
      const [candidate] = await a.candidates(S1, now());
      expect(candidate).toMatchObject({ uses: 40, lastUsedAt: now().toISOString() });
      const used = await events('used');
      expect(used).toHaveLength(40);
      expect(used).toContainEqual(
        expect.objectContaining({ grantId: grant.grantId, approvalId: 'a-use-7', sourceIndex: 1 }),
      );
    });
  });

  describe('recordUse, one round trip', () => {
    it('sends the `used` entry while the count is still out', async () => {
      // The count's script is held until the entry has been sent: sent one after the other, the
      // entry would wait for the count, and `until` would give up.
      const { client, release, called } = holdingRedis(redis, 'csGrantCountBuffer');
      const grant = await newStore().store.create(botGrant());
      const store = newStore(client).store;
      const counting = store.recordUse(grant, 'a-9', 2, now());
      await until(() => called.has('csGrantUsedOnce'));
      release();
      await counting;
      expect(await store.get(grant.grantId)).toMatchObject({ uses: 1 });
      expect(await events('used')).toEqual([
        expect.objectContaining({ grantId: grant.grantId, approvalId: 'a-9', sourceIndex: 2 }),
      ]);
    });
  });

  describe('create, recorded', () => {
    it('records `created` before it lists the grant: it answers requests from the moment it is stored', async () => {
      const { client, release, called } = holdingRedis(redis, 'csGrantListed');
      const creating = newStore(client).store.create(botGrant());
      await until(() => called.has('csGrantListed'));
      expect(await events('created')).toHaveLength(1);
      release();
      const grant = await creating;
      expect((await newStore().store.list({ channels: ['C0DEPLOY'] }, now())).map((g) => g.grantId)).toEqual([
        grant.grantId,
      ]);
    });
  });

  describe('create, when a listing write fails', () => {
    it.each(['csGrantEndAt', 'pipeline', 'csGrantListed', 'csGrantChannelListed'])(
      'resolves with the grant stored though %s failed once: it is listed, and swept at its end',
      async (command) => {
        const { store } = newStore(failingOnce(command));
        const grant = await store.create(botGrant());
        expect((await store.candidates(S1, now())).map((g) => g.grantId)).toEqual([grant.grantId]);
        for (const filter of [{ channels: ['C0DEPLOY'] }, { grantedBy: 'U0ALICE' }, {}])
          expect((await store.list(filter, now())).map((g) => g.grantId)).toEqual([grant.grantId]);
        expect(await events('created')).toHaveLength(1);
        clock = minuteOver(T0 + HOUR);
        expect(await store.sweep(now())).toBe(1);
        expect(await closingEvents()).toEqual([['expired', grant.grantId]]);
        expect(await redis.exists(keys.grantTag(tagOf(grant.grantId)))).toBe(0);
      },
    );

    it('resolves with the grant stored though it could not be listed yet; listed once it answers', async () => {
      // Its listing streams unwritable while it is made.
      const down = newStore(failing('pipeline', 100));
      const grant = await down.store.create(botGrant());
      expect(down.lines.map((l) => l.msg)).toContain('grant stored and answering, not listed yet');
      expect(await down.store.list({ channels: ['C0DEPLOY'] }, now())).toEqual([]);
      // Whichever replica finds it answering (past the time its creator had to list it) lists it.
      clock += 2 * MINUTE;
      const { store } = newStore();
      expect((await store.candidates(S1, now())).map((g) => g.grantId)).toEqual([grant.grantId]);
      await until(async () => (await store.list({ channels: ['C0DEPLOY'] }, now())).length === 1);
      expect((await store.list({ grantedBy: 'U0ALICE' }, now())).map((g) => g.grantId)).toEqual([
        grant.grantId,
      ]);
      clock = minuteOver(T0 + HOUR);
      expect(await store.sweep(now())).toBe(1);
      expect(await closingEvents()).toEqual([['expired', grant.grantId]]);
    });

    it('rejects, storing nothing, when the end of the grant cannot be noted for the sweep', async () => {
      const { store } = newStore(failing('csGrantEndAt', 100));
      await expect(store.create(botGrant())).rejects.toThrow(/simulated failure/);
      expect(await store.candidates(S1, now())).toEqual([]);
      expect(await events()).toEqual([]);
    });
  });

  describe('a script whose reply was lost, sent again', () => {
    it('answers as its first run did: created, replaced, exhausted and revoked once each', async () => {
      const plain = newStore().store;
      const { store } = newStore(
        resendingRedis(redis, ['csGrantCreateBuffer', 'csGrantCountBuffer', 'csGrantEndBuffer']),
      );
      const old = await plain.create(botGrant());
      clock += 1000;
      const grant = await store.create(
        botGrant({ approvalId: 'a-2', grantedBy: 'U0BOB', maxUses: 1, lasts: { kind: 'uses', uses: 1 } }),
      );
      expect(await plain.get(old.grantId)).toMatchObject({ replacedBy: grant.grantId });
      expect((await store.list({}, now())).map((g) => g.grantId)).toEqual([grant.grantId]);
      expect(await store.reserveUse(grant, now())).toBe(0);
      await store.recordUse(grant, 'a-u1', 0, now());
      expect(await store.candidates(S1, now())).toEqual([]);
      const other = await plain.create(botGrant({ capabilities: ['exec:ls'], approvalId: 'a-3' }));
      expect(await store.revoke(other.grantId, 'U0CAROL', now())).toBe(true);
      expect(await store.list({}, now())).toEqual([]);
      expect(
        (await events()).map((e) => [e.kind, e.kind === 'created' ? e.grant.grantId : e.grantId]),
      ).toEqual([
        ['created', old.grantId],
        ['created', grant.grantId],
        ['replaced', old.grantId],
        ['used', grant.grantId],
        ['exhausted', grant.grantId],
        ['created', other.grantId],
        ['revoked', other.grantId],
      ]);
    });

    it('still counts nothing more for another replica recording the same stage', async () => {
      const a = newStore(resendingRedis(redis, ['csGrantCountBuffer'])).store;
      const b = newStore(redisB).store;
      const grant = await a.create(botGrant({ maxUses: 1, lasts: { kind: 'uses', uses: 1 } }));
      expect(await a.reserveUse(grant, now())).toBe(0);
      await a.recordUse(grant, 'a-u1', 0, now());
      await b.recordUse(grant, 'a-u1', 0, now());
      expect(await a.get(grant.grantId)).toMatchObject({ uses: 1 });
      expect((await events()).map((e) => e.kind)).toEqual(['created', 'used', 'exhausted']);
    });

    it('takes one use for a reserve run twice', async () => {
      const { store } = newStore(resendingRedis(redis, ['csGrantTakeUse']));
      const grant = await store.create(botGrant({ maxUses: 3, lasts: { kind: 'uses', uses: 3 } }));
      expect(await store.reserveUse(grant, now())).toBe(2);
      expect(await store.get(grant.grantId)).toMatchObject({ usesLeft: 2 });
      expect(await store.reserveUse(grant, now())).toBe(1);
      expect(await store.get(grant.grantId)).toMatchObject({ usesLeft: 1 });
    });

    it('gives one use back for a give-back run twice, with another use still out', async () => {
      const plain = newStore().store;
      const { store } = newStore(resendingRedis(redis, ['csGrantGiveUse']));
      const grant = await plain.create(botGrant({ maxUses: 3, lasts: { kind: 'uses', uses: 3 } }));
      expect(await plain.reserveUse(grant, now())).toBe(2);
      expect(await plain.reserveUse(grant, now())).toBe(1);
      await store.returnUse(grant);
      expect(await plain.get(grant.grantId)).toMatchObject({ usesLeft: 2 });
      // The other use's decision goes through: two uses are left to take, not three.
      await plain.recordUse(grant, 'a-u2', 0, now());
      expect(await plain.reserveUse(grant, now())).toBe(1);
      expect(await plain.reserveUse(grant, now())).toBe(0);
      expect(await plain.reserveUse(grant, now())).toBeUndefined();
    });
  });

  describe('list', () => {
    it('filters by channel and granter, newest first, live grants only', async () => {
      const { store } = newStore();
      const make = async (extra: Partial<Input>, holder: 'bot' | 'host' = 'bot') => {
        clock += 1_000;
        return store.create(holder === 'bot' ? botGrant(extra) : hostGrant(extra));
      };
      const a1 = await make({ channel: 'C1', grantedBy: 'U1', capabilities: ['exec:1'] });
      const b2 = await make({ channel: 'C2', grantedBy: 'U2', capabilities: ['exec:2'] });
      const h1 = await make({ channel: 'C1', grantedBy: 'U2', approvalId: 'a-h1' }, 'host');
      const c3 = await make({ channel: 'C3', grantedBy: 'U1', capabilities: ['exec:3'] });
      const revoked = await make({ channel: 'C1', grantedBy: 'U1', capabilities: ['exec:4'] });
      const short = await make({ channel: 'C2', grantedBy: 'U2', capabilities: ['exec:5'], ttlMs: 2_000 });
      await store.revoke(revoked.grantId, 'U1', now());
      clock += 2_000; // `short` has expired, unswept

      const ids = async (filter: Parameters<GrantStore['list']>[0]) =>
        (await store.list(filter, now())).map((g) => g.grantId);
      expect(await ids({})).toEqual([c3.grantId, h1.grantId, b2.grantId, a1.grantId]);
      expect(await ids({ channels: ['C1'] })).toEqual([h1.grantId, a1.grantId]);
      expect(await ids({ channels: ['C2', 'C1', 'C2'] })).toEqual([h1.grantId, b2.grantId, a1.grantId]);
      expect(await ids({ grantedBy: 'U1' })).toEqual([c3.grantId, a1.grantId]);
      expect(await ids({ grantedBy: 'U2', channels: ['C1'] })).toEqual([h1.grantId]);
      expect(await ids({ channels: [] })).toEqual([]);
      expect(await ids({ grantedBy: 'U9' })).toEqual([]);
      const [host] = await store.list({ channels: ['C1'], grantedBy: 'U2' }, now());
      expect(host).toMatchObject({
        holder: 'host',
        rulePreview: 'allow `npm test` in this workspace',
        scope: 'session',
      });
      expect(await store.get(short.grantId)).toMatchObject({ grantId: short.grantId }); // stored, not listed
    });

    it('returns at most the newest GRANT_LIST_LIMIT', async () => {
      const { store } = newStore();
      const made: string[] = [];
      for (let i = 0; i < GRANT_LIST_LIMIT + 20; i++) {
        clock += 1;
        made.push((await store.create(botGrant({ capabilities: [`exec:${i}`] }))).grantId);
      }
      const listed = await store.list({ channels: ['C0DEPLOY'] }, now());
      expect(listed.map((g) => g.grantId)).toEqual(made.slice(-GRANT_LIST_LIMIT).reverse());
    });

    it('drops listing entries of grants that are gone', async () => {
      const { store } = newStore();
      const gone = await store.create(botGrant({ caller: 'session:s-gone' }));
      const kept = await store.create(botGrant({ capabilities: ['exec:kept'] }));
      await redis.del(keys.grantTag(tagOf(gone.grantId))); // as if deleted without unlisting it
      const tagsListed = async (stream: string) =>
        (await redis.xrange(stream, '-', '+')).map(([, fields]) => fields[1]);
      expect(await tagsListed(keys.grantsListedIn('C0DEPLOY'))).toContain(tagOf(gone.grantId));
      expect((await store.list({ channels: ['C0DEPLOY'] }, now())).map((g) => g.grantId)).toEqual([
        kept.grantId,
      ]);
      expect(await tagsListed(keys.grantsListedIn('C0DEPLOY'))).toEqual([tagOf(kept.grantId)]);
      expect((await store.list({ grantedBy: 'U0ALICE' }, now())).map((g) => g.grantId)).toEqual([
        kept.grantId,
      ]);
      expect(await tagsListed(keys.grantsListedBy('U0ALICE'))).toEqual([tagOf(kept.grantId)]);
    });
  });

  // MONITOR shows one server's commands, and seeding writes across slots: one Redis only.
  describe.skipIf(kind === 'cluster')('candidates is one round trip', () => {
    /** What the store's connection sent while `run` ran, and what its scripts ran inside Redis. */
    async function commandsDuring(
      run: () => Promise<unknown>,
    ): Promise<{ sent: string[]; inScripts: string[] }> {
      const info = String(await redis.call('CLIENT', 'INFO'));
      const addr = /addr=(\S+)/.exec(info)![1]!;
      const monitor = await startMonitor(testRedisUrl(db));
      const seen: Array<{ args: string[]; source: string; database: string }> = [];
      monitor.on('monitor', (_time: string, args: string[], source: string, database: string) =>
        seen.push({ args, source, database }),
      );
      const marker = `end-${Math.random()}`;
      await run();
      await redis.echo(marker);
      await until(() => seen.some((s) => s.args[0]?.toLowerCase() === 'echo' && s.args[1] === marker));
      monitor.disconnect();
      const mine = seen.filter((s) => s.database === String(db));
      const endAt = mine.findIndex((s) => s.args[1] === marker);
      const during = mine.slice(0, endAt);
      return {
        sent: during.filter((s) => s.source === addr).map((s) => s.args[0]!.toLowerCase()),
        inScripts: during.filter((s) => s.source === 'lua').map((s) => s.args[0]!.toLowerCase()),
      };
    }

    /**
     * What create() leaves of a bot-held grant (its row in its tag's string), for `count` other
     * callers, written through pipelines: create() one by one would take seconds.
     */
    async function seedOthers(count: number): Promise<void> {
      // One pipeline over many grants' slots, which the store itself never sends.
      const seeder = backend.connect({ slotCheck: false });
      for (let i = 0; i < count; i += 5_000) {
        const pipe = seeder.pipeline();
        for (let n = i; n < Math.min(i + 5_000, count); n++) {
          const { ttlMs: _ttl, ...data } = botGrant({ caller: `session:other-${n}`, approvalId: `a-o-${n}` });
          const row = newRow({
            ...data,
            suffix: n.toString(16).padStart(12, '0'),
            createdMs: T0,
            endMs: T0 + HOUR,
          });
          pipe.set(keys.grantTag(bucketOf(data).tag), packRows([row]));
        }
        await pipe.exec();
      }
    }

    it('with one grant and with 20,000 grants of other callers stored', async () => {
      const { store } = newStore();
      const mine = await store.create(botGrant());
      await store.create(botGrant({ tool: 'apply_patch' })); // the same caller, another bucket
      const match = () => store.candidates(S1, now());
      await match(); // the script is now cached on this connection

      const small = await commandsDuring(match);
      expect(small).toEqual({ sent: ['get'], inScripts: [] });

      await seedOthers(20_000);
      expect(await redis.dbsize()).toBeGreaterThan(20_000);
      // The seeded grants are grants as the store reads them.
      const [other] = await store.candidates({ ...S1, caller: 'session:other-19999' }, now());
      expect(other).toMatchObject({
        caller: 'session:other-19999',
        uses: 0,
        expiresAt: at(T0 + HOUR).toISOString(),
      });
      expect(await store.get(other!.grantId)).toEqual(other);
      let found: Grant[] = [];
      const large = await commandsDuring(async () => {
        found = await match();
      });
      expect(found.map((g) => g.grantId)).toEqual([mine.grantId]);
      expect(large).toEqual(small);
    });

    it('counting a use is one script of three commands, and the `used` entry one of two', async () => {
      const { store } = newStore();
      const grant = await store.create(botGrant());
      await store.recordUse(grant, 'a-0', 0, now()); // the scripts are now cached on this connection

      // Each sets its mark (SET NX): the use is counted and recorded once per approval stage. The
      // count reads its row first, so that its mark keeps what it found (a resend answers so).
      const counted = await commandsDuring(() => store.recordUse(grant, 'a-9', 0, now()));
      expect(counted.sent).toEqual(['evalsha', 'evalsha']);
      expect(counted.inScripts).toEqual(['get', 'set', 'set', 'set', 'xadd']);
      expect(await store.get(grant.grantId)).toMatchObject({ uses: 2, lastUsedAt: now().toISOString() });
    });
  });

  describe('the grant audit stream', () => {
    it('is capped at about auditMaxLen, keeping the newest', async () => {
      const maxLen = 10;
      const { store } = newStore(redis, { auditMaxLen: maxLen });
      const grant = await store.create(botGrant());
      for (let i = 0; i < 500; i++) await store.recordUse(grant, `a-use-${i}`, 0, now());
      const [, nodeEntries] = (await redis.config('GET', 'stream-node-max-entries')) as [string, string];
      const length = await redis.xlen(keys.grantAudit);
      expect(length).toBeGreaterThanOrEqual(maxLen);
      expect(length).toBeLessThanOrEqual(maxLen + Number(nodeEntries));
      const all = await events();
      expect(all.at(-1)).toMatchObject({ kind: 'used', approvalId: 'a-use-499' });
    });

    it('never fails the operation it records, and logs what it could not write', async () => {
      const { store, lines } = newStore();
      await redis.set(keys.grantAudit, 'not a stream'); // every XADD now fails (WRONGTYPE)
      const grant = await store.create(botGrant());
      expect(await store.revoke(grant.grantId, 'U0ALICE', now())).toBe(true);
      const failures = lines.filter((l) => l.msg === 'grant audit entry not written');
      expect(failures).toHaveLength(2);
      expect(failures[1]).toMatchObject({
        level: 50,
        grantEvent: { kind: 'revoked', grantId: grant.grantId },
      });
      expect(lines.find((l) => l.msg === 'grant revoked')).toMatchObject({
        grantEvent: { kind: 'revoked', by: 'U0ALICE' },
      });
    });
  });

  describe('grants by uses', () => {
    const byUses = (uses: number, extra: Partial<Input> = {}) =>
      botGrant({ maxUses: uses, lasts: { kind: 'uses', uses }, ...extra });

    it('records its scope, and takes its uses one at a time until none is left', async () => {
      const { store } = newStore();
      const grant = await store.create(byUses(2));
      expect(grant).toMatchObject({ maxUses: 2, usesLeft: 2, lasts: { kind: 'uses', uses: 2 } });
      const [created] = await events('created');
      expect(created).toMatchObject({ grant: { maxUses: 2, usesLeft: 2, lasts: { kind: 'uses', uses: 2 } } });

      expect(await store.reserveUse(grant, now())).toBe(1);
      await store.recordUse(grant, 'a-u1', 0, now());
      expect(await store.candidates(S1, now())).toMatchObject([
        { grantId: grant.grantId, usesLeft: 1, maxUses: 2, uses: 1 },
      ]);
      expect(await store.list({}, now())).toMatchObject([{ grantId: grant.grantId, usesLeft: 1 }]);

      expect(await store.reserveUse(grant, now())).toBe(0);
      await store.recordUse(grant, 'a-u2', 0, now());
      expect(await store.reserveUse(grant, now())).toBeUndefined();
      // Spent: no longer matched, listed or revocable; its last use is followed by `exhausted`.
      expect(await store.candidates(S1, now())).toEqual([]);
      expect(await store.list({}, now())).toEqual([]);
      expect(await store.revoke(grant.grantId, 'U0ALICE', now())).toBe(false);
      expect((await events()).map((e) => e.kind)).toEqual(['created', 'used', 'used', 'exhausted']);
      expect(await redis.xlen(keys.grantsListedIn('C0DEPLOY'))).toBe(0);

      // Swept at its end without an `expired`: it was recorded as exhausted.
      clock = minuteOver(T0 + HOUR);
      expect(await store.sweep(now())).toBe(1);
      expect(await events('expired')).toEqual([]);
      expect(await redis.exists(keys.grantTag(tagOf(grant.grantId)))).toBe(0);
    });

    it('never gives the last use to two callers at once, on two connections', async () => {
      const a = newStore(redis).store;
      const b = newStore(redisB).store;
      const grant = await a.create(byUses(3));
      const taken = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).reserveUse(grant, now())),
      );
      expect(taken.filter((left) => left !== undefined).sort()).toEqual([0, 1, 2]);
      expect(taken.filter((left) => left === undefined)).toHaveLength(9);
    });

    it('gives a use back for a decision that did not go through, even its last one', async () => {
      const { store } = newStore();
      const grant = await store.create(byUses(1));
      expect(await store.reserveUse(grant, now())).toBe(0);
      expect(await store.candidates(S1, now())).toEqual([]);
      await store.returnUse(grant);
      expect(await store.candidates(S1, now())).toMatchObject([{ grantId: grant.grantId, usesLeft: 1 }]);
      expect(await store.reserveUse(grant, now())).toBe(0);
    });

    it('keeps a last use spent when a grant of the same key took its place meanwhile: one live per key', async () => {
      const { store, lines } = newStore();
      const grant = await store.create(byUses(1));
      expect(await store.reserveUse(grant, now())).toBe(0);
      const successor = await store.create(botGrant({ approvalId: 'a-2' }));
      await store.returnUse(grant);
      expect((await store.candidates(S1, now())).map((g) => g.grantId)).toEqual([successor.grantId]);
      expect(await store.get(grant.grantId)).toMatchObject({ usesLeft: 0 });
      expect(lines.map((l) => l.msg)).toContain('a reserved use could not be given back');
    });

    it('is replaced while its last use is out: that use given back after its successor ended does not revive it', async () => {
      const { store } = newStore();
      const grant = await store.create(byUses(1));
      // A request takes its last use; its decision waits (the host away).
      expect(await store.reserveUse(grant, now())).toBe(0);
      clock += 1000;
      const successor = await store.create(botGrant({ approvalId: 'a-2', grantedBy: 'U0BOB' }));
      expect(await store.get(grant.grantId)).toMatchObject({
        replacedBy: successor.grantId,
        revokedBy: 'U0BOB',
      });
      clock += 1000;
      expect(await store.revoke(successor.grantId, 'U0BOB', now())).toBe(true);
      // The decision does not go through: the use comes back, to a grant that answers nothing.
      await store.returnUse(grant);
      expect(await store.candidates(S1, now())).toEqual([]);
      expect(await store.reserveUse(grant, now())).toBeUndefined();
      expect(await store.list({}, now())).toEqual([]);
      const [, created] = await events('created');
      expect(created).toMatchObject({ replaces: { grantId: grant.grantId } });
      expect(await closingEvents()).toEqual([
        ['replaced', grant.grantId],
        ['revoked', successor.grantId],
      ]);
    });

    it('is spent once its last use is counted, though that use had been given back before the count', async () => {
      const { store } = newStore();
      const grant = await store.create(byUses(1));
      // A decision takes the last use and is thought not to have gone through: the use comes back.
      expect(await store.reserveUse(grant, now())).toBe(0);
      await store.returnUse(grant);
      // It had gone through after all: its replay counts the use, the grant's last.
      await store.recordUse(grant, 'a-u1', 0, now());
      expect(await store.candidates(S1, now())).toEqual([]);
      expect(await store.list({}, now())).toEqual([]);
      expect(await store.reserveUse(grant, now())).toBeUndefined();
      expect(await store.revoke(grant.grantId, 'U0BOB', now())).toBe(false);
      // Nothing was out to give back.
      await store.returnUse(grant);
      expect(await store.reserveUse(grant, now())).toBeUndefined();
      expect((await events()).map((e) => e.kind)).toEqual(['created', 'used', 'exhausted']);
    });

    it('counts one approval’s use once, however many replicas record it, and gives back the use still out', async () => {
      const a = newStore(redis).store;
      const b = newStore(redisB).store;
      const grant = await a.create(byUses(2));
      expect(await a.reserveUse(grant, now())).toBe(1);
      expect(await b.reserveUse(grant, now())).toBe(0);
      // The old owner's count lands after the new owner's replay counted the same use.
      await b.recordUse(grant, 'a-u1', 0, now());
      await Promise.all([a.recordUse(grant, 'a-u1', 0, now()), b.recordUse(grant, 'a-u1', 0, now())]);
      expect(await a.get(grant.grantId)).toMatchObject({ uses: 1, usesLeft: 0 });
      expect((await events()).map((e) => e.kind)).toEqual(['created', 'used']);
      // The other decision did not go through: its use comes back, and the grant answers again.
      await a.returnUse(grant);
      expect(await a.candidates(S1, now())).toMatchObject([{ grantId: grant.grantId, usesLeft: 1 }]);
      expect(await a.list({}, now())).toMatchObject([{ grantId: grant.grantId }]);
      // Another stage of the same approval is a use of its own; its last one spends the grant.
      expect(await a.reserveUse(grant, now())).toBe(0);
      await a.recordUse(grant, 'a-u1', 1, now());
      await b.recordUse(grant, 'a-u1', 1, now());
      expect(await a.get(grant.grantId)).toMatchObject({ uses: 2, usesLeft: 0 });
      expect((await events()).map((e) => e.kind)).toEqual(['created', 'used', 'used', 'exhausted']);
    });

    it('is listed again when a use comes back after another was counted as its last', async () => {
      const { store } = newStore();
      const grant = await store.create(byUses(2));
      expect(await store.reserveUse(grant, now())).toBe(1);
      expect(await store.reserveUse(grant, now())).toBe(0);
      await store.recordUse(grant, 'a-u1', 0, now());
      expect(await store.list({}, now())).toEqual([]);
      // The other decision did not go through: the grant answers again, so it is listed again,
      // where the people who may revoke it see it.
      await store.returnUse(grant);
      expect(await store.candidates(S1, now())).toMatchObject([{ grantId: grant.grantId, usesLeft: 1 }]);
      for (const filter of [{}, { channels: ['C0DEPLOY'] }, { grantedBy: 'U0ALICE' }])
        expect((await store.list(filter, now())).map((g) => g.grantId)).toEqual([grant.grantId]);
      // Its last use counted, it is spent and leaves the listings; swept at its end.
      expect(await store.reserveUse(grant, now())).toBe(0);
      await store.recordUse(grant, 'a-u2', 0, now());
      expect(await store.list({}, now())).toEqual([]);
      expect(await redis.xlen(keys.grantsListedIn('C0DEPLOY'))).toBe(0);
      clock = minuteOver(T0 + HOUR);
      expect(await store.sweep(now())).toBe(1);
      expect(await redis.exists(keys.grantTag(tagOf(grant.grantId)))).toBe(0);
    });

    it('records `exhausted` once its last use is counted, not while a use that may come back is out', async () => {
      const { store } = newStore();
      const grant = await store.create(byUses(2));
      expect(await store.reserveUse(grant, now())).toBe(1);
      expect(await store.reserveUse(grant, now())).toBe(0);
      await store.recordUse(grant, 'a-u1', 0, now());
      // Every use is taken, but one is still out on a decision: not spent for good yet.
      expect((await events()).map((e) => e.kind)).toEqual(['created', 'used']);
      // That decision did not go through: the use comes back and is taken and counted again.
      await store.returnUse(grant);
      expect(await store.reserveUse(grant, now())).toBe(0);
      await store.recordUse(grant, 'a-u3', 0, now());
      expect((await events()).map((e) => e.kind)).toEqual(['created', 'used', 'used', 'exhausted']);
      expect(await store.list({}, now())).toEqual([]);
      expect(await redis.xlen(keys.grantsListedIn('C0DEPLOY'))).toBe(0);
      // Nothing is out to give back once every use is counted: it stays spent.
      await store.returnUse(grant);
      expect(await store.reserveUse(grant, now())).toBeUndefined();
      clock = minuteOver(T0 + HOUR);
      expect(await store.sweep(now())).toBe(1);
      expect((await events()).map((e) => e.kind)).toEqual(['created', 'used', 'used', 'exhausted']);
    });

    it('ends with one closing event when it expires while its last use is out', async () => {
      const { store } = newStore();
      const swept = await store.create(byUses(1));
      const counted = await store.create(byUses(1, { capabilities: ['exec:ls'], approvalId: 'a-2' }));
      expect(await store.reserveUse(swept, now())).toBe(0);
      expect(await store.reserveUse(counted, now())).toBe(0);
      // Both end by time with their last use still out. One use is confirmed before the sweep,
      // the other after it: each grant gets exactly one closing event.
      await store.recordUse(counted, 'a-c', 0, at(T0 + HOUR));
      clock = minuteOver(T0 + HOUR);
      expect(await store.sweep(now())).toBe(2);
      await store.recordUse(swept, 'a-s', 0, now());
      expect(await closingEvents()).toEqual([
        ['exhausted', counted.grantId],
        ['expired', swept.grantId],
      ]);
    });

    it('records no `exhausted` after `revoked` when its last use out is confirmed', async () => {
      const { store } = newStore();
      const grant = await store.create(byUses(1));
      expect(await store.reserveUse(grant, now())).toBe(0);
      expect(await store.revoke(grant.grantId, 'U0BOB', now())).toBe(true);
      // The decision that took the use went through after all: it is counted, and the grant
      // has its closing event already.
      await store.recordUse(grant, 'a-r', 0, now());
      clock = minuteOver(T0 + HOUR);
      expect(await store.sweep(now())).toBe(1);
      expect(await closingEvents()).toEqual([['revoked', grant.grantId]]);
    });

    it('is revoked while its last use is out on a decision, and that use given back does not revive it', async () => {
      const { store } = newStore();
      const grant = await store.create(byUses(1));
      expect(await store.reserveUse(grant, now())).toBe(0);
      // Someone revokes it while the decision that took its last use is still under way.
      expect(await store.revoke(grant.grantId, 'U0BOB', now())).toBe(true);
      expect(await store.get(grant.grantId)).toMatchObject({ revokedBy: 'U0BOB' });
      // The decision did not go through: the use comes back, to a grant that answers nothing.
      await store.returnUse(grant);
      expect(await store.candidates(S1, now())).toEqual([]);
      expect(await store.reserveUse(grant, now())).toBeUndefined();
      expect(await store.list({}, now())).toEqual([]);
      expect(await events('revoked')).toEqual([
        expect.objectContaining({ grantId: grant.grantId, by: 'U0BOB' }),
      ]);
    });

    it('is revoked while a use is out even after another use was counted as its last', async () => {
      const { store } = newStore();
      const grant = await store.create(byUses(2));
      expect(await store.reserveUse(grant, now())).toBe(1);
      expect(await store.reserveUse(grant, now())).toBe(0);
      await store.recordUse(grant, 'a-u1', 0, now());
      expect(await store.revoke(grant.grantId, 'U0BOB', now())).toBe(true);
      await store.returnUse(grant);
      expect(await store.candidates(S1, now())).toEqual([]);
      expect(await store.reserveUse(grant, now())).toBeUndefined();
    });

    it('is not taken once expired or revoked', async () => {
      const { store } = newStore();
      const revoked = await store.create(byUses(5));
      expect(await store.revoke(revoked.grantId, 'U0ALICE', now())).toBe(true);
      expect(await store.reserveUse(revoked, now())).toBeUndefined();
      const ending = await store.create(byUses(5, { capabilities: ['exec:ls'] }));
      expect(await store.reserveUse(ending, at(T0 + HOUR))).toBeUndefined();
    });

    it('replaces a time-bound grant of the same request, and is replaced by one; recorded twice, it gives no use back', async () => {
      const { store } = newStore();
      const timed = await store.create(botGrant());
      const counted = await store.create(byUses(3, { approvalId: 'a-2', grantedBy: 'U0BOB' }));
      expect(counted.grantId).not.toBe(timed.grantId);
      expect(await store.get(timed.grantId)).toMatchObject({ replacedBy: counted.grantId });
      expect(await store.reserveUse(counted, now())).toBe(2);
      await store.recordUse(counted, 'a-u1', 0, now());
      // The same approval recorded twice (two replicas) gives no use back.
      expect((await store.create(byUses(3, { approvalId: 'a-2', grantedBy: 'U0BOB' }))).usesLeft).toBe(2);
      // Pressed again, it is a new grant of the uses pressed now, not the old one topped up.
      const again = await store.create(byUses(5, { approvalId: 'a-3' }));
      expect(again).toMatchObject({ maxUses: 5, usesLeft: 5, uses: 0, grantedBy: 'U0ALICE' });
      expect(again.grantId).not.toBe(counted.grantId);
      expect(await store.reserveUse(counted, now())).toBeUndefined();
      const timedAgain = await store.create(botGrant({ approvalId: 'a-4' }));
      const found = await store.candidates(S1, now());
      expect(found.map((g) => g.grantId)).toEqual([timedAgain.grantId]);
      expect(found[0]!.usesLeft).toBeUndefined();
    });

    it('refuses fewer than one use', async () => {
      const { store } = newStore();
      await expect(store.create(byUses(0))).rejects.toThrow(/at least one use/);
    });
  });
});
