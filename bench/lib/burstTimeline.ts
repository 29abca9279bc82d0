import type { SlackRequest } from '../../test/support/fakeSlack.js';
import { msBetween, round } from './stats.js';

// Where a burst's time goes, channel by channel: every Web API request the fake Slack read during
// the burst, by channel, method and second, with whether it was refused with a 429. A channel
// posting at its limit shows `perSecond` posts in every second and no 429; anything else in its
// seconds (a notice, a lookup, a 429 and the wait after it) is where the pace went.

/** One second of one channel's calls, counted from the first approval written. */
export interface ChannelSecond {
  second: number;
  /** chat.postMessage answered (cards and any other message posted to the channel). */
  posts: number;
  /** Requests answered 429. */
  rateLimited: number;
  /** Every other answered request, by method (chat.update, conversations.history, ...). */
  other: Record<string, number>;
}

export interface BurstTimeline {
  /** channel → its seconds, from the first written approval to its last call. */
  channels: Record<string, ChannelSecond[]>;
  /** Requests made with no channel (App Home views, user lookups), by method. */
  offChannel: Record<string, number>;
  /** The first seconds of the first channel, call by call: `ms method outcome`. */
  trace: string[];
}

/** Each request's time in ms from `start`, method, channel and outcome. */
function entries(requests: readonly SlackRequest[], start: bigint) {
  return requests.map((r) => ({
    ms: msBetween(start, r.hr),
    method: r.method,
    channel: typeof r.args.channel === 'string' ? r.args.channel : undefined,
    outcome: r.outcome,
  }));
}

export function burstTimeline(
  requests: readonly SlackRequest[],
  start: bigint,
  channels: readonly string[],
  traceMs = 2_500,
): BurstTimeline {
  const all = entries(requests, start);
  const byChannel: Record<string, ChannelSecond[]> = {};
  for (const channel of channels) byChannel[channel] = [];
  const offChannel: Record<string, number> = {};
  for (const e of all) {
    const seconds = e.channel === undefined ? undefined : byChannel[e.channel];
    if (!seconds) {
      if (e.channel === undefined) offChannel[e.method] = (offChannel[e.method] ?? 0) + 1;
      continue;
    }
    const second = Math.max(0, Math.floor(e.ms / 1000));
    while (seconds.length <= second)
      seconds.push({ second: seconds.length, posts: 0, rateLimited: 0, other: {} });
    const bucket = seconds[second]!;
    if (e.outcome === 'rateLimited') bucket.rateLimited += 1;
    else if (e.method === 'chat.postMessage') bucket.posts += 1;
    else bucket.other[e.method] = (bucket.other[e.method] ?? 0) + 1;
  }
  const trace = all
    .filter((e) => e.channel === channels[0] && e.ms <= traceMs)
    .map((e) => `${round(e.ms, 0)} ${e.method}${e.outcome === 'answered' ? '' : ` ${e.outcome}`}`);
  return { channels: byChannel, offChannel, trace };
}

/** One line per channel: posts per second, with `+n` other calls and `!n` 429s where there were any. */
export function timelineLines(timeline: BurstTimeline): string[] {
  return Object.entries(timeline.channels).map(([channel, seconds]) => {
    const cells = seconds.map((s) => {
      const other = Object.values(s.other).reduce((a, b) => a + b, 0);
      return `${s.posts}${other ? `+${other}` : ''}${s.rateLimited ? `!${s.rateLimited}` : ''}`;
    });
    return `${channel}: ${cells.join(' ')}`;
  });
}
