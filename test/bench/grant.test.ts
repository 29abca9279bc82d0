import { expect, it } from 'vitest';
import type { GrantResult } from '../../bench/scenarios/grantLatency.js';
import { runQuickBench } from '../support/quickBench.js';

// The grant scenario of npm run bench at toy sizes (`--quick --only grant`: 1, 1,000 and 10,000
// grants of other callers, and the relay floor it is quoted against). What must hold at any size is asserted: every approval answered by
// the grant with the offered once-choice and no card, the same Redis work whatever is stored,
// and every figure present. How fast is for the bench itself to say: here, beside other tests,
// a p99 of 30 samples is noise, so its growth ratio is only checked to be a sane number.

it('npm run bench --quick --only grant auto-decides every approval, with no card, at every count', async () => {
  // On a redis-server of its own: the Redis work per approval is read from INFO, which counts
  // every client of the server.
  const { grant } = await runQuickBench<{ grant: GrantResult }>(['--only', 'grant']);

  expect(grant.runs.map((run) => run.grants)).toEqual([1, 1_000, 10_000]);
  for (const run of grant.runs) {
    expect(run.approvals).toBeGreaterThan(0);
    expect(run).toMatchObject({
      n: run.approvals,
      autoDecidedOnce: run.approvals,
      otherDecides: 0,
      cards: 0,
    });
    for (const figure of [run.p50Ms, run.p99Ms, run.lookup.p99Ms]) expect(figure).toBeGreaterThan(0);
    // One bucket read per lookup: the Redis work per approval does not depend on what else is
    // stored (a scan would add thousands). Not exactly equal: the bot's timers (health pings,
    // batched bookkeeping) land in some windows and not others.
    const work = run.redisCommandsPerApproval / grant.runs[0]!.redisCommandsPerApproval;
    expect(work).toBeGreaterThan(0.8);
    expect(work).toBeLessThan(1.25);
    expect(run.redisRoundTripsPerApproval).toBeGreaterThan(0);
    // The bot's own timers read Redis at rest (the escalator looks at least once a second, the
    // health check pings): measured, and taken off the window as the redis section does.
    expect(run.backgroundRoundTripsPerSec).toBeGreaterThan(0);
    expect(run.redisRoundTripsPerApproval).toBeLessThanOrEqual(run.redisCommandsPerApproval);
    // Seeding grows Redis by what each grant stores: more than nothing, far less than a megabyte.
    if (run.grants > 1) expect(run.redisBytesPerGrant).toBeGreaterThan(0);
    expect(run.redisBytesPerGrant).toBeLessThan(2 ** 20);
    expect(Array.isArray(run.redisStalls.events) && Array.isArray(run.redisStalls.slowest)).toBe(true);
  }
  const top = grant.runs.at(-1)!;
  expect(grant).toMatchObject({
    grants: top.grants,
    p99Ms: top.p99Ms,
    p50Ms: top.p50Ms,
    redisBytesPerGrant: top.redisBytesPerGrant,
    commandsPerApproval: Math.max(...grant.runs.map((run) => run.redisCommandsPerApproval)),
    roundTripsPerApproval: Math.max(...grant.runs.map((run) => run.redisRoundTripsPerApproval)),
    pingP99Ms: grant.runs.map((run) => run.redisPing.p99Ms),
  });
  expect(grant.p99GrowthRatio).toBeCloseTo(top.p99Ms / grant.runs[0]!.p99Ms, 1);
  const { p99GrowthRatio, p50GrowthRatio, lookupP99GrowthRatio, p99Ratio } = grant;
  for (const growth of [p99GrowthRatio, p50GrowthRatio, lookupP99GrowthRatio, p99Ratio]) {
    expect(Number.isFinite(growth) && growth > 0 && growth < 100).toBe(true);
  }
}, 120_000);
