import { type BurstTimeline, burstTimeline } from '../lib/burstTimeline.js';
import { round, spanSeconds } from '../lib/stats.js';
import { CHANNELS, PostTracker, TEMPLATE, TOOLS, type World } from '../lib/world.js';

// A burst across channels under Slack's per-channel posting limit. Every card must arrive once, in
// the order the host asked within its channel, a limited channel must not hold the others back,
// and an update must never reach Slack before its card.

export interface BurstResult {
  approvals: number;
  channels: number;
  perChannelPerSecond: number;
  lost: number;
  duplicated: number;
  outOfOrder: number;
  /** chat.update calls Slack refused (one that overtook its post would be message_not_found). */
  failedUpdates: number;
  /** Updated or resolved cards whose final state is not the latest the host said. */
  staleCards: number;
  rateLimited: number;
  seconds: number;
  /** The time it must take when each channel posts at its own limit, independently. */
  idealSeconds: number;
  /** The time it would take if one 429 paused posting to every channel. */
  serialSeconds: number;
  /** Every call to the burst's channels, second by second (bench/lib/burstTimeline.ts). */
  timeline: BurstTimeline;
}

export async function burst(
  world: World,
  approvals: number,
  perChannelPerSecond: number,
): Promise<BurstResult> {
  const tracker = new PostTracker(world.slack);
  const limitedBefore = world.slack.rateLimited.length;
  const requestsBefore = world.slack.requests.length;
  world.slack.rateLimitPerChannel('chat.postMessage', perChannelPerSecond);
  const prefix = 'burst';
  await world.host.openBatch({
    prefix,
    count: approvals,
    ratePerSec: 0,
    tools: [...TOOLS],
    template: TEMPLATE as never,
  });
  // While the cards queue behind the limit, the host changes some (a new path) and closes others.
  const id = (i: number) => `${prefix}-${String(i).padStart(6, '0')}`;
  const updated = new Set<string>();
  const resolved = new Set<string>();
  for (let i = 0; i < approvals; i += 5) {
    await world.host.update({
      approvalId: id(i),
      patch: { subject: { ...TEMPLATE.subject, path: `/srv/repo/UPDATED-${i}.ts` } } as never,
      change: { kind: 'policyPersistence', status: 'succeeded' },
    });
    updated.add(id(i));
  }
  for (let i = 1; i < approvals; i += 10) {
    await world.host.resolve({ approvalId: id(i), decision: 'approved' });
    resolved.add(id(i));
  }
  const budgetMs = ((approvals / CHANNELS.length / perChannelPerSecond) * 2 + 30) * 1000;
  const posts = await tracker.waitForPosts(prefix, approvals, budgetMs).catch(() => tracker.postsOf(prefix));
  const written = await world.host.batchTimes(prefix);

  // Wait for the updates to land, then check every changed card shows its last state.
  const deadline = Date.now() + 15_000;
  let stale = Number.POSITIVE_INFINITY;
  while (Date.now() < deadline) {
    stale = 0;
    for (const post of posts) {
      const text = JSON.stringify(world.slack.message(post.channel, post.ts)?.blocks ?? []);
      const n = Number(post.approvalId.slice(prefix.length + 1));
      if (
        resolved.has(post.approvalId)
          ? !text.includes('Approved')
          : updated.has(post.approvalId) && !text.includes(`UPDATED-${n}.ts`)
      )
        stale += 1;
    }
    if (stale === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  tracker.postsOf(prefix); // takes in the updates that came after the last post
  let outOfOrder = 0;
  for (const channel of CHANNELS) {
    const inChannel = posts.filter((p) => p.channel === channel).sort((a, b) => a.index - b.index);
    for (let i = 1; i < inChannel.length; i++) {
      if (written.get(inChannel[i]!.approvalId)! < written.get(inChannel[i - 1]!.approvalId)!)
        outOfOrder += 1;
    }
  }
  world.slack.rateLimitPerChannel('chat.postMessage', Number.POSITIVE_INFINITY);
  const start = [...written.values()].sort((a, b) => (a < b ? -1 : 1))[0]!;
  const perChannel = approvals / CHANNELS.length;
  return {
    approvals,
    channels: CHANNELS.length,
    perChannelPerSecond,
    lost: approvals - new Set(posts.map((p) => p.approvalId)).size,
    duplicated: tracker.duplicates.length,
    outOfOrder,
    failedUpdates: tracker.failedUpdates.length,
    staleCards: stale,
    rateLimited: world.slack.rateLimited.length - limitedBefore,
    seconds: round(
      spanSeconds(
        written.values(),
        posts.map((p) => p.hr),
      ),
      1,
    ),
    idealSeconds: Math.ceil(perChannel / perChannelPerSecond) - 1,
    serialSeconds: Math.ceil(approvals / perChannelPerSecond) - 1,
    timeline: burstTimeline(world.slack.requests.slice(requestsBefore), start, CHANNELS),
  };
}
