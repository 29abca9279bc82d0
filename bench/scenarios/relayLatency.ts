import { msBetween, type Summary, spanSeconds, summarize } from '../lib/stats.js';
import { PostTracker, TEMPLATE, TOOLS, type World } from '../lib/world.js';

// From the host writing approval/requested to the fake Slack reading chat.postMessage, at a
// steady rate. Both clocks are process.hrtime: CLOCK_MONOTONIC, one clock for the whole machine.

export interface BatchRun {
  latency: Summary;
  /** First write to last post, in seconds. */
  seconds: number;
  perSecond: number;
}

/** Opens a batch in the host and waits until the fake Slack has every card. */
export async function runBatch(
  world: World,
  prefix: string,
  count: number,
  ratePerSec: number,
  tools: string[] = [TOOLS[0]!],
): Promise<BatchRun> {
  const tracker = new PostTracker(world.slack);
  await world.host.openBatch({ prefix, count, ratePerSec, tools, template: TEMPLATE as never });
  const budgetMs = (ratePerSec > 0 ? (count / ratePerSec) * 1000 : 0) + 60_000;
  const posts = await tracker.waitForPosts(prefix, count, budgetMs);
  const written = await world.host.batchTimes(prefix);
  const latencies = posts.map((p) => msBetween(written.get(p.approvalId)!, p.hr));
  const seconds = spanSeconds(
    written.values(),
    posts.map((p) => p.hr),
  );
  return { latency: summarize(latencies), seconds, perSecond: count / seconds };
}

export async function relayLatency(
  world: World,
  tag: string,
  opts: { count: number; ratePerSec: number; warmup: number },
): Promise<Summary> {
  // Warm the JIT and the connections first; only the second batch counts.
  await runBatch(world, `${tag}w`, opts.warmup, 200);
  return (await runBatch(world, tag, opts.count, opts.ratePerSec)).latency;
}
