import { keys } from './keys.js';
import { createRedisClient, type RedisClient } from './redisConnection.js';
import { redisRefusal } from './redisRefusals.js';
import type { RedisTarget } from './redisTarget.js';

/**
 * Checks that Redis lets the bot do what its work needs: run a script that writes and deletes a
 * key of its own (the store's updates are scripts on keys `cs:*`). A password that works for a
 * user without those permissions fails here, with NOPERM, before any work starts. Rejects with
 * Redis's error.
 */
export async function checkRedisAccess(redis: RedisClient): Promise<void> {
  await redis.eval(
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000) return redis.call('DEL', KEYS[1])",
    1,
    keys.accessCheck(),
    String(process.pid),
  );
}

/** The same Redis, reached with no user and no password. */
function withoutPassword(target: RedisTarget): RedisTarget {
  switch (target.kind) {
    case 'single': {
      const url = new URL(target.url);
      url.username = '';
      url.password = '';
      return { kind: 'single', url: url.href };
    }
    case 'sentinel': {
      // The sentinels' own password is kept: it is the master that is asked.
      const { username: _username, password: _password, ...rest } = target;
      return rest;
    }
    case 'cluster':
      return { kind: 'cluster', nodes: target.nodes };
  }
}

/**
 * Whether Redis lets a client that gives no password do what the bot does (checkRedisAccess): a
 * password given to a Redis that asks for none is accepted, and ioredis only warns. 'open' when
 * it does, 'closed' when Redis refuses (NOAUTH, NOPERM, WRONGPASS), undefined when the probe
 * could not tell (Redis away, too slow): one connection of its own, tried once.
 */
export async function answersWithoutPassword(
  target: RedisTarget,
  withinMs: number,
): Promise<'open' | 'closed' | undefined> {
  const probe = createRedisClient(withoutPassword(target), {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // A refusal may come on the error event alone: a Cluster's command fails with "None of
  // startup nodes is available", the NOAUTH that explains it on the event.
  let refusedOnEvent = false;
  probe.on('error', (err: unknown) => {
    if (redisRefusal(err) !== undefined) refusedOnEvent = true;
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    const answered = checkRedisAccess(probe).then(
      () => 'open' as const,
      (err: unknown) => (redisRefusal(err) !== undefined || refusedOnEvent ? ('closed' as const) : undefined),
    );
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), withinMs);
    });
    return await Promise.race([answered, late]);
  } finally {
    clearTimeout(timer);
    probe.disconnect();
  }
}
