import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/** Channels of the set looked at per sweep besides those whose grants it removed. */
const SCAN_PAGE = 100;

/**
 * The set of channels with grants (keys.grantChannels), which "all grants" lists from: a channel
 * joins it as a grant is listed there and leaves it once its stream lists nothing. The set and the
 * counts share the `{grants}` slot, each channel's stream has its own, so no script reads both: a
 * listing adds its entry before it moves its channel's count, and forgetting a channel found empty
 * is refused if that count moved since it was read. A grant listed at that moment keeps its
 * channel, or lists it again after.
 */
export class GrantChannels {
  /** Where the next look through the whole set goes on (SSCAN): channels left by a failure or an earlier release. */
  private cursor = '0';

  constructor(private readonly redis: RedisClient) {}

  /** A grant was listed in the channel's stream: call once its entry is there. */
  async listed(channel: string): Promise<void> {
    await this.redis.csGrantChannelListed(keys.grantChannels(), keys.grantChannelListings(), channel);
  }

  /**
   * Forgets those of `ended` (channels whose grants the sweep just removed) and of the next page
   * of the set whose streams list nothing any more. Returns how many it forgot.
   */
  async forgetEmpty(ended: Iterable<string>): Promise<number> {
    const [next, page] = await this.redis.sscan(keys.grantChannels(), this.cursor, 'COUNT', SCAN_PAGE);
    this.cursor = next;
    const channels = [...new Set([...ended, ...page])];
    if (channels.length === 0) return 0;
    // The counts first: a grant listed after this read moves its channel's count.
    const counts = await this.redis.hmget(keys.grantChannelListings(), ...channels);
    const lengths = await Promise.all(channels.map((c) => this.redis.xlen(keys.grantsListedIn(c))));
    const forgotten = await Promise.all(
      channels.map((channel, i) =>
        lengths[i] === 0
          ? this.redis.csGrantForgetChannel(
              keys.grantChannels(),
              keys.grantChannelListings(),
              channel,
              counts[i] ?? '',
            )
          : 0,
      ),
    );
    return forgotten.reduce<number>((sum, n) => sum + n, 0);
  }
}
