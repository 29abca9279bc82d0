import { type BurstTimeline, burstTimeline } from '../lib/burstTimeline.js';
import { benchGrantStore, SANDBOX, seedSpecFor, storeBenchGrant, TTL_MS } from '../lib/grantSeed.js';
import { round, spanSeconds } from '../lib/stats.js';
import { CHANNELS, GRANT_TEMPLATE, PostTracker, ROUTES, TEMPLATE, TOOLS, type World } from '../lib/world.js';

// A burst across channels under Slack's per-channel posting limit. Every card must arrive once, in
// the order the host asked within its channel, a limited channel must not hold the others back,
// and an update must never reach Slack before its card.
//
// With `grants`, a remembered grant answers every other request (those of the batch session; the
// rest come from another session): those get no card but a line in the same channels, which
// count against the same limit and must not slow the cards.

export interface BurstResult {
  approvals: number;
  /** Approvals a grant answered (no card, a line in the channel); the rest have cards. */
  granted: number;
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
  /** Lines posted to the burst's channels (a grant's, a resolution's in its card's thread), and how many were due. */
  lines: number;
  linesExpected: number;
  /** From the first approval written to the last line posted. */
  linesSeconds: number;
  /** Cards posted for approvals a grant answered (there must be none). */
  cardsOfGranted: number;
  /** The time it must take when each channel posts its cards at its own limit, independently. */
  idealSeconds: number;
  /** The time it would take if one 429 paused posting to every channel. */
  serialSeconds: number;
  /** Every call to the burst's channels, second by second (bench/lib/burstTimeline.ts). */
  timeline: BurstTimeline;
}

/** Another session than the batch's: no grant answers its requests. */
const UNGRANTED_SESSION = 's-burst-asks';

/** Stores, for every bench route, the grant that answers its tool's requests in the batch session. */
async function grantEveryRoute(world: World): Promise<void> {
  const store = benchGrantStore(world.redis);
  for (const [i, tool] of TOOLS.entries()) {
    await storeBenchGrant(
      store,
      seedSpecFor(tool, ROUTES[i]!, TEMPLATE.subject, SANDBOX, TTL_MS),
      CHANNELS[i]!,
    );
  }
}

export async function burst(
  world: World,
  approvals: number,
  perChannelPerSecond: number,
  opts: { grants?: boolean } = {},
): Promise<BurstResult> {
  const prefix = opts.grants ? 'burstg' : 'burst';
  if (opts.grants) await grantEveryRoute(world);
  const tracker = new PostTracker(world.slack);
  const limitedBefore = world.slack.rateLimited.length;
  const requestsBefore = world.slack.requests.length;
  world.slack.rateLimitPerChannel('chat.postMessage', perChannelPerSecond);
  // Round-robin over the sessions as over the tools: every channel gets both kinds in turn.
  await world.host.openBatch({
    prefix,
    count: approvals,
    ratePerSec: 0,
    tools: [...TOOLS],
    ...(opts.grants ? { sessions: ['s-bench', UNGRANTED_SESSION] } : {}),
    template: (opts.grants ? GRANT_TEMPLATE : TEMPLATE) as never,
  });
  const id = (i: number) => `${prefix}-${String(i).padStart(6, '0')}`;
  const isGranted = (i: number) => opts.grants === true && i % 2 === 0;
  const granted = new Set<string>();
  for (let i = 0; i < approvals; i++) if (isGranted(i)) granted.add(id(i));
  const cards = approvals - granted.size;
  // While the cards queue behind the limit, the host changes some (a new path) and closes others.
  const updated = new Set<string>();
  const resolved = new Set<string>();
  for (let i = 0; i < approvals; i += 5) {
    if (isGranted(i)) continue;
    await world.host.update({
      approvalId: id(i),
      patch: { subject: { ...TEMPLATE.subject, path: `/srv/repo/UPDATED-${i}.ts` } } as never,
      change: { kind: 'policyPersistence', status: 'succeeded' },
    });
    updated.add(id(i));
  }
  for (let i = 1; i < approvals; i += 10) {
    if (isGranted(i)) continue;
    await world.host.resolve({ approvalId: id(i), decision: 'approved' });
    resolved.add(id(i));
  }
  const budgetMs = ((approvals / CHANNELS.length / perChannelPerSecond) * 2 + 30) * 1000;
  const posts = await tracker.waitForPosts(prefix, cards, budgetMs).catch(() => tracker.postsOf(prefix));
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

  // The lines (a grant's in the channel, a resolution's in its card's thread) go once the cards
  // are out: every one is waited for, so the result says whether any was lost and when the last went.
  const linesExpected = granted.size + resolved.size;
  const linesPosted = () =>
    world.slack.requests
      .slice(requestsBefore)
      .filter(
        (r) =>
          r.method === 'chat.postMessage' &&
          r.outcome === 'answered' &&
          r.args.metadata === undefined &&
          (CHANNELS as readonly unknown[]).includes(r.args.channel),
      ).length;
  const linesDeadline = Date.now() + (linesExpected / CHANNELS.length / perChannelPerSecond + 15) * 1000;
  while (linesPosted() < linesExpected && Date.now() < linesDeadline)
    await new Promise((resolve) => setTimeout(resolve, 100));

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
  // The fullest channel's cards (approval i goes to channel i mod 5, as its tool does).
  const perChannel = Math.max(
    ...CHANNELS.map(
      (_, c) => [...Array(approvals).keys()].filter((i) => i % CHANNELS.length === c && !isGranted(i)).length,
    ),
  );
  const timeline = burstTimeline(world.slack.requests.slice(requestsBefore), start, CHANNELS);
  const posted = new Set(posts.map((p) => p.approvalId));
  return {
    approvals,
    granted: granted.size,
    channels: CHANNELS.length,
    perChannelPerSecond,
    lost: [...written.keys()].filter((a) => !granted.has(a) && !posted.has(a)).length,
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
    lines: Object.values(timeline.channels)
      .flat()
      .reduce((n, s) => n + s.lines, 0),
    linesExpected,
    linesSeconds: round(Math.max(0, ...Object.values(timeline.lastLineMs)) / 1000, 1),
    cardsOfGranted: [...posted].filter((a) => granted.has(a)).length,
    idealSeconds: Math.ceil(perChannel / perChannelPerSecond) - 1,
    serialSeconds: Math.ceil(cards / perChannelPerSecond) - 1,
    timeline,
  };
}
