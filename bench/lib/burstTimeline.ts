import type { SlackRequest } from '../../test/support/fakeSlack.js';
import { msBetween, round } from './stats.js';

// Where a burst's time goes, channel by channel: every Web API request the fake Slack read during
// the burst, by channel, method and second, with whether it was refused with a 429. A channel
// posting at its limit shows `perSecond` cards in every second and no 429; anything else in its
// seconds (a line, an update, a 429 and the wait after it) is where the pace went.

/** One second of one channel's calls, counted from the first approval written. */
export interface ChannelSecond {
  second: number;
  /** Cards posted (chat.postMessage carrying a card's metadata, not a summary's). */
  cards: number;
  /** Other messages posted to the channel: thread lines, grant lines. */
  lines: number;
  /** Batch summaries posted (`countersign_batch` metadata): neither a card nor a line that is due. */
  summaries: number;
  /** Requests answered 429. */
  rateLimited: number;
  /** Every other answered request, by method (chat.update, conversations.history, ...). */
  other: Record<string, number>;
}

export interface BurstTimeline {
  /** channel → its seconds, from the first written approval to its last call. */
  channels: Record<string, ChannelSecond[]>;
  /** channel → ms from the first written approval to its last card and to its last line. */
  lastCardMs: Record<string, number>;
  lastLineMs: Record<string, number>;
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
    // A card carries `countersign_card` metadata; a batch summary `countersign_batch` (paced as a
    // line, counted apart: the lines due are the grants' and the resolutions').
    kind: postKind((r.args.metadata as { event_type?: unknown } | undefined)?.event_type),
  }));
}

function postKind(eventType: unknown): 'card' | 'summary' | 'line' {
  if (eventType === 'countersign_card') return 'card';
  return eventType === 'countersign_batch' ? 'summary' : 'line';
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
  const lastCardMs: Record<string, number> = {};
  const lastLineMs: Record<string, number> = {};
  for (const e of all) {
    const seconds = e.channel === undefined ? undefined : byChannel[e.channel];
    if (!seconds) {
      if (e.channel === undefined) offChannel[e.method] = (offChannel[e.method] ?? 0) + 1;
      continue;
    }
    const second = Math.max(0, Math.floor(e.ms / 1000));
    while (seconds.length <= second)
      seconds.push({ second: seconds.length, cards: 0, lines: 0, summaries: 0, rateLimited: 0, other: {} });
    const bucket = seconds[second]!;
    const at = round(e.ms, 0);
    if (e.outcome === 'rateLimited') bucket.rateLimited += 1;
    else if (e.method !== 'chat.postMessage') bucket.other[e.method] = (bucket.other[e.method] ?? 0) + 1;
    else if (e.kind === 'card') {
      bucket.cards += 1;
      lastCardMs[e.channel!] = at;
    } else if (e.kind === 'summary') bucket.summaries += 1;
    else {
      bucket.lines += 1;
      lastLineMs[e.channel!] = at;
    }
  }
  const trace = all
    .filter((e) => e.channel === channels[0] && e.ms <= traceMs)
    .map((e) => {
      const what = e.method === 'chat.postMessage' ? e.kind : e.method;
      return `${round(e.ms, 0)} ${what}${e.outcome === 'answered' ? '' : ` ${e.outcome}`}`;
    });
  return { channels: byChannel, lastCardMs, lastLineMs, offChannel, trace };
}

/**
 * One line per channel: cards posted in each second, then `/n` lines posted, `~n` summaries,
 * `+n` other calls (updates) and `!n` 429s where there were any; and when its last card went.
 */
export function timelineLines(timeline: BurstTimeline): string[] {
  return Object.entries(timeline.channels).map(([channel, seconds]) => {
    const cells = seconds.map((s) => {
      const other = Object.values(s.other).reduce((a, b) => a + b, 0);
      return `${s.cards}${s.lines ? `/${s.lines}` : ''}${s.summaries ? `~${s.summaries}` : ''}${other ? `+${other}` : ''}${s.rateLimited ? `!${s.rateLimited}` : ''}`;
    });
    const last = timeline.lastCardMs[channel];
    return `${channel} (last card ${last === undefined ? '-' : `${(last / 1000).toFixed(2)} s`}): ${cells.join(' ')}`;
  });
}
