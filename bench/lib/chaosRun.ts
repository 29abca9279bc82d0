import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { World } from '../../test/e2e/world.js';
import { APPROVALS_CHANNEL, type RunningBot } from '../../test/support/bot.js';
import { PrivateRedis } from '../../test/support/privateRedis.js';
import { type Audit, audit } from './audit.js';
import { readEdges } from './chaosEdges.js';
import { type Plan, planIndexOf, planOf, ROUTES, SESSIONS } from './chaosPlan.js';
import type { Fault } from './faults.js';
import { askBurst, HostPolicy } from './hostDriver.js';
import { HostWatch } from './hostWatch.js';
import { SlackUsers } from './slackUsers.js';

// One chaos run: a fresh world (the real bot, a private redis-server, the fake host and the fake
// Slack), a burst of approvals answered by simulated users and the host's policy, one fault in the
// middle of it, then a wait until things are quiet, and the audit of what the edges show.

export interface ChaosSizes {
  approvals: number;
  ratePerSec: number;
  /** How long a Slack storm lasts. */
  faultWindowMs: number;
  redisPauseMs: number;
  /** After the burst and the fault, how long the run may wait for every card to settle. */
  settleMs: number;
  /** A card still asking the same question this long after a press is pressed again. */
  againAfterMs: number;
  /** How long the slowest users take to press a card that asks them. */
  slowestPressMs: number;
  /** With no Slack request and no host frame for this long, the bot has nothing left to do. */
  quietMs: number;
  /** The host's policy settles its share this long after they were asked. */
  policyAfterMs: number;
  /** An approval pending less than this while the host was up may end without a card. */
  lostGraceMs: number;
}

export interface FaultRun {
  audit: Audit;
  seconds: number;
  /** Seconds from the end of the burst and fault until every card agreed with the host. */
  settleSeconds: number;
  settled: boolean;
  /** Where the findings were written, when there were any. */
  findingsFile?: string;
  /** What the run put the bot through, to show the fault happened. */
  activity: string;
}

export const CHANNELS = [...new Set([...Object.values(ROUTES), APPROVALS_CHANNEL])];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function writeRoutes(dir: string): string {
  const path = join(dir, 'routes.yml');
  const routes = Object.entries(ROUTES).map(
    ([tool, channel]) => `  - channel: ${channel}\n    match: { tools: [${tool}] }`,
  );
  writeFileSync(path, `routes:\n${routes.join('\n')}\n`);
  return path;
}

export async function runFault(
  fault: Fault,
  sizes: ChaosSizes,
  log: (line: string) => void,
): Promise<FaultRun> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'countersign-chaos-'));
  const redis = await PrivateRedis.start();
  const env = {
    LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'info',
    COUNTERSIGN_CONFIG: writeRoutes(dir),
    ...fault.env,
  };
  let world: World | undefined;
  try {
    world = await World.start({ sessions: SESSIONS.map((s) => ({ ...s })) }, env, { redisUrl: redis.url });
    const w = world;
    const bots: RunningBot[] = [w.bot];
    const plans = Array.from({ length: sizes.approvals }, (_, i) => planOf(i));
    const planAt = (i: number): Plan => plans[i] ?? planOf(i);
    const watch = new HostWatch(w.host);
    const users = new SlackUsers({
      slack: w.slack,
      botUrl: () => w.bot.url,
      channels: CHANNELS,
      plans: planAt,
      againAfterMs: sizes.againAfterMs,
      slowestPressMs: sizes.slowestPressMs,
    });
    const policy = new HostPolicy(w.host, watch, planAt, sizes.policyAfterMs);
    watch.start();
    users.start();
    policy.start();

    let injected: Promise<void> | undefined;
    await askBurst(w.host, watch, plans, sizes.ratePerSec, () => {
      log(`${fault.name}: injecting`);
      injected = fault.inject({
        world: w,
        redis,
        env,
        windowMs: sizes.faultWindowMs,
        redisPauseMs: sizes.redisPauseMs,
      });
      injected.catch(() => undefined);
    });
    await injected;
    if (!bots.includes(w.bot)) bots.push(w.bot);

    const edges = () =>
      readEdges({
        host: w.host,
        watch,
        slack: w.slack,
        channels: CHANNELS,
        clicks: users.clicks,
        lostGraceMs: sizes.lostGraceMs,
      });
    const quietFrom = Date.now();
    const settled = await settle(w, edges, planAt, sizes.quietMs, quietFrom + sizes.settleMs);
    const settleSeconds = (Date.now() - quietFrom) / 1000;
    await users.stop();
    policy.stop();
    watch.stop();
    const result = audit(edges());
    const findingsFile = result.details.length
      ? join(tmpdir(), `countersign-chaos-${fault.name}-${Date.now()}.log`)
      : undefined;
    if (findingsFile) writeFileSync(findingsFile, describeFindings(result, w, bots));
    return {
      audit: result,
      seconds: (Date.now() - started) / 1000,
      settleSeconds,
      settled,
      activity: activity(w, users, bots.length),
      ...(findingsFile ? { findingsFile } : {}),
    };
  } finally {
    await world?.close();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Waits until the run is quiet: every approval someone (or the host's policy) is meant to answer
 * is answered at the host, every card agrees with the host (no lost or stuck card), and neither
 * Slack nor the host has heard from the bot for a moment. Returns false at the deadline.
 */
async function settle(
  world: World,
  edges: () => ReturnType<typeof readEdges>,
  planAt: (i: number) => Plan,
  quietMs: number,
  deadline: number,
): Promise<boolean> {
  let lastActivity = Date.now();
  let seen = -1;
  while (Date.now() < deadline) {
    const activity = world.slack.requests.length + world.host.frames.length;
    if (activity !== seen) {
      seen = activity;
      lastActivity = Date.now();
    }
    const input = edges();
    const open = input.approvals.filter((a) => {
      const index = planIndexOf(a.approvalId);
      return a.outcome.kind === 'pending' && (index === undefined || planAt(index).fate !== 'nobody');
    });
    const { figures } = audit(input);
    if (
      open.length === 0 &&
      figures.lost === 0 &&
      figures.stuck === 0 &&
      Date.now() - lastActivity >= quietMs
    )
      return true;
    await sleep(200);
  }
  return false;
}

function activity(world: World, users: SlackUsers, botStarts: number): string {
  const slack = world.slack;
  const lost = slack.calls.filter((c) => c.lost).length;
  const reasked = Object.values(world.host.state().approvals).filter((a) => a.recoveredFrom).length;
  return [
    `${users.clicks.length} presses (${users.failedRequests} not answered by the bot)`,
    `${world.host.decides().length} decides`,
    `${world.host.incarnations.length} host processes, ${botStarts} bot processes, ${reasked} re-asked`,
    `Slack: ${slack.rateLimited.length} 429s, ${slack.httpFailed.length} 5xx before, ${lost} answers lost`,
  ].join('; ');
}

/** Each finding with what the host and the card said, and the bot's log lines about it. */
function describeFindings(result: Audit, world: World, bots: RunningBot[]): string {
  const state = world.host.state();
  const out: string[] = [];
  for (const finding of result.details) {
    out.push(`== ${finding.column} ${finding.approvalId}: ${finding.why}`);
    const rec = state.approvals[finding.approvalId];
    out.push(
      `host: ${JSON.stringify(rec ? { resolved: rec.resolved, supersededBy: rec.supersededBy, recoveredFrom: rec.recoveredFrom, current: rec.params.currentRequirementId } : null)}`,
    );
    for (const channel of CHANNELS) {
      for (const m of world.slack.messagesIn(channel)) {
        const meta = m.metadata as { event_payload?: { approval_id?: string } } | undefined;
        if (meta?.event_payload?.approval_id !== finding.approvalId) continue;
        out.push(
          `card ${channel}/${m.ts} versions: ${m.versions.map((v) => v.text.split(':')[0]).join(' → ')}`,
        );
      }
    }
    const decides = world.host.decides().filter((d) => d.frame.params.approvalId === finding.approvalId);
    for (const d of decides) out.push(`decide [inc ${d.incarnation}] ${JSON.stringify(d.frame.params)}`);
    bots.forEach((bot, i) => {
      for (const line of bot.logs)
        if (line.raw.includes(finding.approvalId)) out.push(`bot#${i + 1}: ${line.raw}`);
    });
    out.push('');
  }
  return `${out.join('\n')}\n`;
}
