import type { Away } from '../domain/away.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/** How many people one delegate can stand in for at once: what a check reads stays bounded. */
export const MAX_STAND_INS = 20;

/**
 * Adds a person to a delegate's index unless the delegate already stands in for MAX_STAND_INS
 * others now: in one step, so that two people naming the same delegate at once cannot make it
 * one more than any check reads. Ended entries go on the way; the key lives as long as its last.
 * KEYS: the delegate's index. ARGV: now, until (ms), userId, the cap. Returns 1 if added.
 */
const STAND_IN = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local others = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then others = others - 1 end
if others >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], math.max(tonumber(ARGV[2]), tonumber(last[2])))
return 1
`;

function parsed(raw: string | null): Away | undefined {
  return raw ? (JSON.parse(raw) as Away) : undefined;
}

/** What setting an absence did: `full`, the delegate already stands in for MAX_STAND_INS others. */
export type AwaySet = { full: true } | { full: false; previous: Away | undefined };

/**
 * Who is away, in Redis, so that every replica sees a change at once: one key per person that
 * expires when their absence ends (so an expiry needs nobody to act), and per delegate the names
 * of those who chose them. Nothing is kept in memory.
 */
export class AwayStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Sets (or replaces) an absence, and says which it replaced, if any; nothing is set when the
   * delegate already stands in for MAX_STAND_INS others (`full`). The previous delegate, if
   * another, no longer stands in. The delegate's index is written first: should the process die
   * before the absence, the index names someone not away, which every read checks.
   */
  async set(away: Away): Promise<AwaySet> {
    const untilMs = Date.parse(away.until);
    if (away.delegate) {
      const added = await this.redis.eval(
        STAND_IN,
        1,
        keys.standIn(away.delegate),
        String(this.now()),
        String(untilMs),
        away.userId,
        String(MAX_STAND_INS),
      );
      if (added !== 1) return { full: true };
    }
    // The absence replaced is the one this write overwrote (SET … GET), not one read before it:
    // of two commands by one person on two replicas, the later write then takes the earlier's
    // delegate out of their index, whose entry was added before that write. A read first would
    // let both see none and leave the earlier delegate a place taken until the absence ends.
    const replaced = await this.redis.set(
      keys.away(away.userId),
      JSON.stringify(away),
      'PXAT',
      untilMs,
      'GET',
    );
    const was = parsed(replaced);
    if (was?.delegate && was.delegate !== away.delegate) {
      await this.redis.zrem(keys.standIn(was.delegate), away.userId);
    }
    return { full: false, previous: this.lasting(was) };
  }

  /** Ends an absence now; resolves with the one that was set, if any. */
  async clear(userId: string): Promise<Away | undefined> {
    // What was deleted (GETDEL), not what was read before: an absence written in between is
    // the one ended, and its delegate's entry is the one to take out.
    const was = parsed(await this.redis.getdel(keys.away(userId)));
    if (was?.delegate) await this.redis.zrem(keys.standIn(was.delegate), userId);
    return this.lasting(was);
  }

  /** An absence, unless it has ended. */
  private lasting(away: Away | undefined): Away | undefined {
    return away && Date.parse(away.until) > this.now() ? away : undefined;
  }

  /** The user's absence, while it lasts. */
  async get(userId: string): Promise<Away | undefined> {
    return this.lasting(parsed(await this.redis.get(keys.away(userId))));
  }

  /** Which of `userIds` are away now, each with their absence. One round trip. */
  async whoIsAway(userIds: readonly string[]): Promise<Map<string, Away>> {
    const found = new Map<string, Away>();
    if (userIds.length === 0) return found;
    const raws = await Promise.all(userIds.map((id) => this.redis.get(keys.away(id))));
    raws.forEach((raw, i) => {
      if (!raw) return;
      const away = JSON.parse(raw) as Away;
      if (Date.parse(away.until) > this.now()) found.set(userIds[i]!, away);
    });
    return found;
  }

  /**
   * Those who are away now and named `delegate` to stand in for them: each checked against their
   * own absence (the index is only a hint), at most MAX_STAND_INS.
   */
  async standingInFor(delegate: string): Promise<Away[]> {
    const names = await this.redis.zrangebyscore(
      keys.standIn(delegate),
      this.now(),
      '+inf',
      'LIMIT',
      0,
      MAX_STAND_INS,
    );
    const aways = await this.whoIsAway(names);
    return names.flatMap((name) => {
      const away = aways.get(name);
      return away?.delegate === delegate ? [away] : [];
    });
  }
}
