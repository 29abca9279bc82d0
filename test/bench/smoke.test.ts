import { expect, it } from 'vitest';
import { GOAL } from '../../bench/lib/goals.js';
import { runQuickBench } from '../support/quickBench.js';

// Keeps bench/ from rotting: the whole harness, every scenario and both floors, at toy sizes.
// Figures from a run this small (and beside other tests) mean nothing, so only what must hold
// at any size is asserted: every card once and in order, and every figure present. The goals
// themselves are not: a quick run is far too small to meet them or miss them honestly.
//
// The bench gets a redis-server of its own (runQuickBench): its Redis figures come from INFO,
// which counts every database, and other test files flushing theirs meanwhile would turn them
// into noise.

it('npm run bench --quick runs every scenario and writes every figure', async () => {
  const r = await runQuickBench([]);
  for (const figure of [
    r.relay.p50Ratio,
    r.relay.p99Ratio,
    r.click.p50Ratio,
    r.throughput.perSecond,
    r.throughput.floorShare,
    r.redis.roundTripsPerApproval,
    r.redis.roundTripsPerClick,
    r.redis.roundTripsPerResolution,
    r.redis.backgroundRoundTripsPerSec,
    r.memory.growthMB,
  ]) {
    expect(Number.isFinite(figure)).toBe(true);
  }
  expect(r.throughput.perSecond).toBeGreaterThan(0);
  expect(r.burst).toMatchObject({ lost: 0, duplicated: 0, outOfOrder: 0, failedUpdates: 0, staleCards: 0 });
  expect(r.burst.rateLimited).toBeGreaterThan(0);
  expect(r.burst.withGrants).toMatchObject({
    lost: 0,
    duplicated: 0,
    outOfOrder: 0,
    failedUpdates: 0,
    staleCards: 0,
    cardsOfGranted: 0,
  });
  expect(r.burst.withGrants.granted).toBe(Math.ceil(r.burst.withGrants.approvals / 2));

  // The bot ran in production configuration (the run itself checks the cards name the approvers).
  expect(r.config).toEqual({
    approvers: 'usergroup',
    approverCount: expect.any(Number),
    grants: true,
    grantsStored: 1_000,
    masking: true,
  });

  // Interleaved rounds of floor and bot, each with its CPU per approval; the medians beside them.
  const t = r.throughput;
  expect(t.rounds).toHaveLength(3);
  for (const round of t.rounds) {
    for (const figure of [
      round.floorPerSecond,
      round.botPerSecond,
      round.cpuMsPerApproval.bot,
      round.cpuMsPerApproval.floor,
    ])
      expect(figure).toBeGreaterThan(0);
    expect(round.share).toBeCloseTo(round.botPerSecond / round.floorPerSecond, 1);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1];
  expect(t.perSecond).toBe(median(t.rounds.map((x: { botPerSecond: number }) => x.botPerSecond)));
  expect(t.floorShare).toBe(median(t.rounds.map((x: { share: number }) => x.share)));
  expect(t.cpuMsPerApproval.bot).toBeGreaterThan(0);
  expect(t.cpuMsPerApproval.floor).toBeGreaterThan(0);
  expect(t.cpuShare).toBeCloseTo(t.cpuMsPerApproval.floor / t.cpuMsPerApproval.bot, 1);

  // How cost grows: one row per pending count, every figure a positive number.
  expect(r.scale.map((row: { pending: number }) => row.pending)).toEqual([100, 300, 1_000]);
  for (const row of r.scale) {
    for (const figure of [row.relayP50Ms, row.rssMB, row.redisBytesPerPending])
      expect(figure).toBeGreaterThan(0);
  }
  expect(r.scaleCheck.relayP50Ratio).toBeCloseTo(r.scale[2].relayP50Ms / r.scale[0].relayP50Ms, 1);
  expect(r.scaleCheck.redisBytesPerPendingRatio).toBeCloseTo(
    r.scale[2].redisBytesPerPending / r.scale[0].redisBytesPerPending,
    1,
  );

  // The goals are this run's own figures, and `met` says whether all of them are within their goal.
  expect(r.goals).toMatchObject({
    throughputShare: t.floorShare,
    cpuShare: t.cpuShare,
    relayP50Ratio: r.relay.p50Ratio,
    clickP50Ratio: r.click.p50Ratio,
    rssGrowthMB: r.memory.growthMB,
    burstRatio: Math.round((r.burst.seconds / r.burst.idealSeconds) * 100) / 100,
    burstWithGrantsRatio:
      Math.round((r.burst.withGrants.seconds / r.burst.withGrants.idealSeconds) * 100) / 100,
  });
  expect(r.goals.youngGeneration).toMatch(/semi-space/);
  expect(r.goals.met).toBe(
    r.goals.throughputShare >= GOAL.throughputShare &&
      r.goals.cpuShare >= GOAL.cpuShare &&
      r.goals.relayP50Ratio <= GOAL.relayP50Ratio &&
      r.goals.clickP50Ratio <= GOAL.clickP50Ratio &&
      r.goals.rssGrowthMB <= GOAL.rssGrowthMB &&
      r.goals.burstRatio <= GOAL.burstRatio &&
      r.goals.burstWithGrantsRatio <= GOAL.burstRatio,
  );

  // The grant scenario's own checks are in grant.test.ts; here only that it ran in the full bench.
  expect(r.grant.runs).toHaveLength(3);
  expect(Number.isFinite(r.grant.p99Ms) && Number.isFinite(r.grant.p99Ratio)).toBe(true);
  // The replicas scenario's own checks are in replicas.test.ts.
  expect(r.replicas.three.replicas).toBe(3);
  expect(Number.isFinite(r.replicas.ratios.throughput) && Number.isFinite(r.replicas.takeoverMs)).toBe(true);
}, 180_000);
