import { z } from 'zod';
import type { FollowedSession, SessionMemory } from '../msp/events.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

const Stored = z.looseObject({ viewCursor: z.string().optional() });

/** The sessions each host follows, in one Redis hash per host (keys.sessions). */
export class RedisSessionMemory implements SessionMemory {
  constructor(private readonly redis: RedisClient) {}

  async recall(hostId: string): Promise<FollowedSession[]> {
    const all = await this.redis.hgetall(keys.sessions(hostId));
    return Object.entries(all).map(([sessionId, raw]) => {
      let stored: z.infer<typeof Stored> = {};
      try {
        stored = Stored.parse(JSON.parse(raw));
      } catch {
        // An entry we cannot read still names a session worth following.
      }
      return { sessionId, ...(stored.viewCursor ? { viewCursor: stored.viewCursor } : {}) };
    });
  }

  async remember(hostId: string, session: FollowedSession): Promise<void> {
    const value = JSON.stringify(session.viewCursor ? { viewCursor: session.viewCursor } : {});
    await this.redis.hset(keys.sessions(hostId), session.sessionId, value);
  }

  async forget(hostId: string, sessionId: string): Promise<void> {
    await this.redis.hdel(keys.sessions(hostId), sessionId);
  }
}
