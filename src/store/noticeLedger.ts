import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * Which notices of an approval were sent, shared by every replica and kept across restarts.
 * claim() is a SET NX: of all processes that see an approval resolved, one sends each notice.
 */
export class RedisNoticeLedger {
  constructor(
    private readonly redis: RedisClient,
    /** As long as the resolved record itself: a notice can only be due while the record is. */
    private readonly options: { ttlMs: number },
  ) {}

  /** True for the one caller that may send this notice; false once anyone has claimed it. */
  async claim(approvalId: string, kind: string): Promise<boolean> {
    const set = await this.redis.set(
      keys.notice(approvalId, kind),
      'sending',
      'PX',
      this.options.ttlMs,
      'NX',
    );
    return set === 'OK';
  }

  /** Records how the claimed notice ended: `sent`, or why it was not. */
  async settle(approvalId: string, kind: string, outcome: string): Promise<void> {
    await this.redis.set(keys.notice(approvalId, kind), outcome, 'KEEPTTL', 'XX');
  }

  /** What became of a notice: undefined (never claimed), `sending`, `sent`, or a failure. */
  async state(approvalId: string, kind: string): Promise<string | undefined> {
    return (await this.redis.get(keys.notice(approvalId, kind))) ?? undefined;
  }
}
