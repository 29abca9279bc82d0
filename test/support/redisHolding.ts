import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../../src/store/redisConnection.js';

/**
 * The keys of `redis`'s database that hold `secret` anywhere: in their name, or in a value,
 * field, member or stream entry, whatever their type. What a backup, MONITOR or a read-only user
 * would find of it; a test of a secret that must stay out of Redis expects none. On a cluster,
 * every master's keys.
 */
export async function keysHolding(redis: RedisClient, secret: string): Promise<string[]> {
  const holding: string[] = [];
  for (const node of redis instanceof Cluster ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const key of found) {
        const content = [key, ...(await contentOf(redis, key))];
        if (content.some((part) => part.includes(secret))) holding.push(key);
      }
    } while (cursor !== '0');
  }
  return holding.sort();
}

async function contentOf(redis: Redis | Cluster, key: string): Promise<string[]> {
  const type = await redis.type(key);
  switch (type) {
    case 'none':
      return [];
    case 'string':
      return [(await redis.get(key)) ?? ''];
    case 'hash':
      return Object.entries(await redis.hgetall(key)).flat();
    case 'zset':
      return redis.zrange(key, 0, -1);
    case 'set':
      return redis.smembers(key);
    case 'list':
      return redis.lrange(key, 0, -1);
    case 'stream':
      return (await redis.xrange(key, '-', '+')).flatMap(([id, fields]) => [id, ...fields]);
    default:
      throw new Error(`keysHolding: ${key} is a ${type}, which it cannot read`);
  }
}
