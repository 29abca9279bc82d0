import type { Result } from 'ioredis';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

// Decisions taken at a replica that does not own the host travel to the owner through a Redis
// Stream per host, read with a consumer group: an entry left pending by an owner that died is
// claimed by the next one (XAUTOCLAIM). Beside each entry, one reply key (same hash tag, so every
// script here touches one slot) says how it stands between the asker and the owner:
//
//   absent       nobody has touched it yet
//   "withdrawn"  the asker gave up before the owner took it: the owner drops it
//   "taken"      the owner is carrying it out
//   "gaveUp"     the asker stopped waiting: the owner tells the person itself
//   {…}          the outcome (JSON)
//
// Each move is one script, so the asker and the owner never both believe they speak last.
// Entries and outcomes are sealed by DecisionForwarding (replicas/replicaSeal.ts): an entry's MAC
// is stored beside its body (field `m`); an outcome carries its own inside the JSON.
//
// The outcome is also pushed onto a reply list (same slot) while the asker waits, so that an
// asker blocked on it (BLPOP) hears it at once instead of polling the reply key. The list holds
// one element and is gone once popped; giving up deletes it, and it expires in any case.

const GROUP = 'owners';
/**
 * Long enough for an owner to die and the next to carry the entry out. An entry older than this
 * is no longer carried out: its reply key, which tells a replay from a new entry, may be gone.
 */
export const REPLY_TTL_MS = 60 * 60_000;
/** A reply list nobody popped (its asker died waiting) is gone after this. */
const REPLY_LIST_TTL_MS = 5 * 60_000;
/** Entries are deleted once carried out; this only bounds a stream nobody reads for long. */
const MAX_ENTRIES = 100_000;

/**
 * The owner takes an entry: returns what the reply key held before ("taken" when new). An asker
 * that gave up stays given up: FINISH_SCRIPT reads it there to know the owner must tell the person.
 */
const TAKE_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if v == 'withdrawn' or v == 'gaveUp' or (v and string.sub(v, 1, 1) == '{') then return v end
redis.call('SET', KEYS[1], 'taken', 'PX', ARGV[1])
return v or 'taken'
`;

/**
 * The owner's outcome; 0 when the asker had stopped waiting (the owner must tell the person).
 * While the asker waits, the outcome is pushed onto its reply list (KEYS[3]) too.
 */
const FINISH_SCRIPT = `
local v = redis.call('GET', KEYS[2])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
if v == 'gaveUp' then return 0 end
redis.call('RPUSH', KEYS[3], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[5])
return 1
`;

/** The asker withdraws an entry nobody took yet: 1 when withdrawn. */
const WITHDRAW_SCRIPT = `
if redis.call('GET', KEYS[1]) then return 0 end
redis.call('SET', KEYS[1], 'withdrawn', 'PX', ARGV[1])
return 1
`;

/**
 * The asker stops waiting: the outcome when it came meanwhile, else nil (the owner will tell).
 * Its reply list (KEYS[2]) goes either way: nobody will pop it.
 */
const GIVE_UP_SCRIPT = `
redis.call('DEL', KEYS[2])
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == '{' then return v end
redis.call('SET', KEYS[1], 'gaveUp', 'PX', ARGV[1])
return false
`;

export interface StreamEntry {
  id: string;
  /** The entry's payload, as appended (JSON, parsed by the reader). */
  body: string;
  /** The MAC appended beside it; absent on an entry written without one. */
  mac?: string;
}

export type TakeState = 'taken' | 'gaveUp' | 'withdrawn' | { outcome: string };

export class DecisionStream {
  constructor(private readonly redis: RedisClient) {
    redis.defineCommand('csStreamTake', { numberOfKeys: 1, lua: TAKE_SCRIPT });
    redis.defineCommand('csStreamFinish', { numberOfKeys: 3, lua: FINISH_SCRIPT });
    redis.defineCommand('csStreamWithdraw', { numberOfKeys: 1, lua: WITHDRAW_SCRIPT });
    redis.defineCommand('csStreamGiveUp', { numberOfKeys: 2, lua: GIVE_UP_SCRIPT });
  }

  /** Appends one decision for the host's owner, with its MAC; resolves once Redis stored it. */
  async append(hostId: string, body: string, mac: string): Promise<string> {
    const id = await this.redis.xadd(
      keys.decisions(hostId),
      'MAXLEN',
      '~',
      MAX_ENTRIES,
      '*',
      'd',
      body,
      'm',
      mac,
    );
    if (!id) throw new Error('XADD stored nothing');
    return id;
  }

  /** Creates the owners' group, reading from the stream's start so nothing added earlier is missed. */
  async ensureGroup(hostId: string): Promise<void> {
    try {
      await this.redis.xgroup('CREATE', keys.decisions(hostId), GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('BUSYGROUP'))) throw err;
    }
  }

  /**
   * New entries for `consumer`, waiting up to `blockMs` on `reader`: a connection of its own,
   * since a blocking read holds it.
   */
  async read(reader: RedisClient, hostId: string, consumer: string, blockMs: number): Promise<StreamEntry[]> {
    const reply = (await reader.xreadgroup(
      'GROUP',
      GROUP,
      consumer,
      'COUNT',
      64,
      'BLOCK',
      blockMs,
      'STREAMS',
      keys.decisions(hostId),
      '>',
    )) as Array<[string, Array<[string, string[]]>]> | null;
    return entriesOf(reply?.[0]?.[1] ?? []);
  }

  /**
   * Every entry still pending with an earlier owner (or an earlier process of this replica),
   * moved to `consumer`. Called by a new owner before it reads new entries, and as it serves,
   * for entries pending at least `minIdleMs`.
   */
  async claimPending(hostId: string, consumer: string, minIdleMs = 0): Promise<StreamEntry[]> {
    const out: StreamEntry[] = [];
    let cursor = '0-0';
    do {
      const [next, entries] = (await this.redis.xautoclaim(
        keys.decisions(hostId),
        GROUP,
        consumer,
        minIdleMs,
        cursor,
        'COUNT',
        100,
      )) as [string, Array<[string, string[]] | null>, ...unknown[]];
      out.push(...entriesOf(entries.filter((e): e is [string, string[]] => e !== null)));
      cursor = next;
    } while (cursor !== '0-0');
    return out;
  }

  async take(hostId: string, commandId: string): Promise<TakeState> {
    const v = await this.redis.csStreamTake(keys.decisionReply(hostId, commandId), String(REPLY_TTL_MS));
    if (v === 'taken' || v === 'gaveUp' || v === 'withdrawn') return v;
    return { outcome: v };
  }

  /** Stores the outcome and removes the entry; false when the asker no longer waits for it. */
  async finish(hostId: string, entryId: string, commandId: string, outcome: string): Promise<boolean> {
    const heard = await this.redis.csStreamFinish(
      keys.decisions(hostId),
      keys.decisionReply(hostId, commandId),
      keys.decisionReplyList(hostId, commandId),
      GROUP,
      entryId,
      outcome,
      String(REPLY_TTL_MS),
      String(REPLY_LIST_TTL_MS),
    );
    return heard === 1;
  }

  /** Removes an entry that needs nothing more (withdrawn, or carried out already). */
  async drop(hostId: string, entryId: string): Promise<void> {
    await this.redis
      .multi()
      .xack(keys.decisions(hostId), GROUP, entryId)
      .xdel(keys.decisions(hostId), entryId)
      .exec();
  }

  /** The outcome, once the owner stored it. */
  async outcome(hostId: string, commandId: string): Promise<string | undefined> {
    const v = await this.redis.get(keys.decisionReply(hostId, commandId));
    return v?.startsWith('{') ? v : undefined;
  }

  /**
   * The outcome as the owner pushes it, waiting up to `timeoutMs` on `reader` (a connection of
   * its own: a blocking read holds it); undefined when none came by then.
   */
  async awaitOutcome(
    reader: RedisClient,
    hostId: string,
    commandId: string,
    timeoutMs: number,
  ): Promise<string | undefined> {
    // BLPOP's timeout is in seconds (decimals since Redis 6); 0 would wait for ever.
    const seconds = Math.max(timeoutMs, 1) / 1000;
    const popped = await reader.blpop(keys.decisionReplyList(hostId, commandId), seconds);
    return popped?.[1];
  }

  async withdraw(hostId: string, commandId: string): Promise<boolean> {
    return (
      (await this.redis.csStreamWithdraw(keys.decisionReply(hostId, commandId), String(REPLY_TTL_MS))) === 1
    );
  }

  async giveUp(hostId: string, commandId: string): Promise<string | undefined> {
    const v = await this.redis.csStreamGiveUp(
      keys.decisionReply(hostId, commandId),
      keys.decisionReplyList(hostId, commandId),
      String(REPLY_TTL_MS),
    );
    return v ?? undefined;
  }
}

function entriesOf(raw: Array<[string, string[]]>): StreamEntry[] {
  return raw.flatMap(([id, fields]) => {
    const body = fieldOf(fields, 'd');
    const mac = fieldOf(fields, 'm');
    // An entry without a body is still returned (empty): the owner drops it, it is not left pending.
    return [{ id, body: body ?? '', ...(mac !== undefined ? { mac } : {}) }];
  });
}

/** A field's value in XREAD's flat [name, value, …] list (names at even places only). */
function fieldOf(fields: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    csStreamTake(replyKey: string, ttlMs: string): Result<string, Context>;
    csStreamFinish(
      streamKey: string,
      replyKey: string,
      replyListKey: string,
      group: string,
      entryId: string,
      outcome: string,
      ttlMs: string,
      listTtlMs: string,
    ): Result<number, Context>;
    csStreamWithdraw(replyKey: string, ttlMs: string): Result<number, Context>;
    csStreamGiveUp(replyKey: string, replyListKey: string, ttlMs: string): Result<string | null, Context>;
  }
}
