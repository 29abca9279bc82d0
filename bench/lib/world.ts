import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import {
  BOT_TOKEN,
  freePort,
  PRODUCTION_NODE_ARGS,
  PROJECT_ROOT,
  type RunningBot,
  SIGNING_SECRET,
  startBot,
} from '../../test/support/bot.js';
import { FakeHost } from '../../test/support/fakeHost.js';
import { FakeSlack, type SlackCall } from '../../test/support/fakeSlack.js';
import { testRedisUrl } from '../../test/support/testRedis.js';
import { type SeedSpec, seedOtherGrants, seedSpecFor } from './grantSeed.js';
import { MEASURED_CORE, pin, pinRedisOffMeasuredCore } from './system.js';

// One bench run's surroundings: the fake Slack, the fake MSP host's control side, real Redis, and
// a routes file that sends each bench tool to its own channel. The bot and the floors are started
// one at a time against it, each pinned to the measured core.
//
// The bot runs as a team would configure it: each route has approvers (a user group, whose
// members the fake Slack knows), grants are on (the default) with grants of other callers stored,
// and secrets are masked (src/relay/intake masks every string of every request: there is no
// switch to turn it off). The floors are left as they are: they do the least any relay must.

export const CHANNELS = ['C0BENCH0', 'C0BENCH1', 'C0BENCH2', 'C0BENCH3', 'C0BENCH4'] as const;
export const TOOLS = CHANNELS.map((_, i) => `bench_tool_${i}`);
/** The route of each bench tool: named, as a team names its routes (an unnamed one is named by a digest). */
export const ROUTES = TOOLS.map((_, i) => `bench-${i}`);
export const REDIS_DB = Number(process.env.BENCH_REDIS_DB ?? 15);
/** The user group every bench route names as its approvers. */
export const APPROVERS_GROUP = 'S0BENCH';
const APPROVERS_HANDLE = 'bench-approvers';
/** The bench's clicking user: a member of the approvers, so that a click is a decided click. */
export const BENCH_USER = 'U0BENCH';
/** A team's worth of approvers: membership is looked up in a list, not taken as the only member. */
const APPROVERS = [BENCH_USER, ...Array.from({ length: 11 }, (_, i) => `U0APPROVER${i}`)];
/** Grants of other callers stored in production configuration (the full bench's count). */
export const OTHER_GRANTS = 10_000;
const GRANT_SANDBOX = 'default';
const GRANT_TTL_MS = 8 * 3_600_000;

/** The configuration the bot is measured in, as results.json records it. */
export interface BenchConfig {
  approvers: 'usergroup';
  approverCount: number;
  grants: boolean;
  grantsStored: number;
  masking: boolean;
}

/** A subject and arguments like a real agent's write, so cards are of a realistic size. */
export const TEMPLATE = {
  rawArgs: JSON.stringify({
    path: '/srv/repo/src/payments/ledger.ts',
    content: 'export const x = 1;\n'.repeat(20),
  }),
  subject: {
    kind: 'fileAccess',
    toolName: 'write_file',
    path: '/srv/repo/src/payments/ledger.ts',
    access: 'write',
  },
  reason: 'The agent wants to change the ledger module.',
};

export const ONCE_CHOICE = 'allow_once';

/** The bench's approval, offering approved/once: what a grant answers with. */
export const GRANT_TEMPLATE = {
  ...TEMPLATE,
  availableChoices: [
    { choiceId: ONCE_CHOICE, label: 'Allow once', decision: 'approved', scope: 'once' },
    { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
  ],
};

export class World {
  readonly redis: Redis;
  private readonly dir: string;
  readonly routesPath: string;
  private unpinRedis: () => void = () => {};

  private constructor(
    readonly slack: FakeSlack,
    readonly host: FakeHost,
    /** Grants of other callers stored before the bot starts. */
    readonly otherGrants: number,
  ) {
    this.redis = new Redis(testRedisUrl(REDIS_DB));
    this.dir = mkdtempSync(join(tmpdir(), 'countersign-bench-'));
    this.routesPath = join(this.dir, 'routes.yml');
    const routes = TOOLS.map(
      (tool, i) =>
        `  - name: ${ROUTES[i]}\n    channel: ${CHANNELS[i]}\n    match: { tools: [${tool}] }\n    approvers: { usergroups: [${APPROVERS_GROUP}] }`,
    );
    writeFileSync(this.routesPath, `routes:\n${routes.join('\n')}\n`);
  }

  static async start(opts: { otherGrants?: number } = {}): Promise<World> {
    // Block Kit limits are checked by the test suite; here they would only slow the fake down.
    const slack = await FakeSlack.start({ expectedToken: BOT_TOKEN, checkLimits: false });
    slack.setUsergroup(APPROVERS_GROUP, APPROVERS, APPROVERS_HANDLE);
    const host = await FakeHost.start({ sessions: [{ sessionId: 's-bench', title: 'bench' }] });
    const world = new World(slack, host, opts.otherGrants ?? OTHER_GRANTS);
    world.unpinRedis = await pinRedisOffMeasuredCore(world.redis);
    return world;
  }

  get config(): BenchConfig {
    return {
      approvers: 'usergroup',
      approverCount: APPROVERS.length,
      grants: true,
      grantsStored: this.otherGrants,
      masking: true,
    };
  }

  /**
   * The real bot, as production runs it (HTTP mode, LOG_LEVEL info), pinned once it is ready, on
   * a database holding only `otherGrants` grants of other callers (the world's count by default).
   */
  async startBot(
    extraEnv: Record<string, string> = {},
    nodeArgs: string[] = [],
    opts: { otherGrants?: number } = {},
  ): Promise<RunningBot> {
    await this.resetDb(opts.otherGrants);
    return this.launchBot(extraEnv, nodeArgs);
  }

  /**
   * Throws unless the latest card names the approvers' group: the bot is measured in the
   * configuration results.json says, not one the routes file silently fell back from.
   */
  expectApproversOnCards(): void {
    const blocks = JSON.stringify(this.slack.cardPosts().at(-1)?.args.blocks ?? []);
    if (!new RegExp(`Approvers: [^"]*${APPROVERS_HANDLE}`).test(blocks))
      throw new Error(
        `the bench's cards do not name the approvers (${APPROVERS_HANDLE}): ${blocks.slice(0, 500)}`,
      );
  }

  /**
   * Empties the bench database and stores `otherGrants` grants of other callers, spread over the
   * bench tools: each approval's grant lookup then reads a bucket among thousands and finds none.
   */
  async resetDb(otherGrants = this.otherGrants): Promise<void> {
    await this.redis.flushdb();
    const perTool = Math.ceil(otherGrants / TOOLS.length);
    for (const [i, tool] of TOOLS.entries()) {
      const from = i * perTool;
      const to = Math.min(otherGrants, from + perTool);
      if (from < to) await seedOtherGrants(testRedisUrl(REDIS_DB), from, to, this.seedSpec(tool, ROUTES[i]!));
    }
  }

  private seedSpec(tool: string, route: string): SeedSpec {
    return seedSpecFor(tool, route, TEMPLATE.subject, GRANT_SANDBOX, GRANT_TTL_MS);
  }

  /**
   * One more bot beside those already running, as another replica: the database is kept, since
   * the replicas share it. Every replica goes to the measured core, so that one replica and three
   * are given the same CPU.
   */
  startReplica(replicaId: string, extraEnv: Record<string, string> = {}): Promise<RunningBot> {
    return this.launchBot({ COUNTERSIGN_REPLICA_ID: replicaId, ...extraEnv }, []);
  }

  private async launchBot(extraEnv: Record<string, string>, nodeArgs: string[]): Promise<RunningBot> {
    const bot = await startBot({
      host: this.host,
      slack: this.slack,
      redisDb: REDIS_DB,
      // Another build's entry (bench/ab.ts): the bench runs it in place of dist/main.js.
      ...(process.env.BENCH_BOT_ENTRY ? { entry: process.env.BENCH_BOT_ENTRY } : {}),
      nodeArgs: [...nodeArgs, ...(process.env.BOT_NODE_ARGS?.split(' ').filter(Boolean) ?? [])],
      env: {
        LOG_LEVEL: 'info',
        COUNTERSIGN_CONFIG: this.routesPath,
        // The host keeps its state in memory: a state file would be rewritten on every change.
        FAKE_HOST_STATE: '',
        // The scale scenario keeps 100,000 approvals of one host open, the throughput run
        // thousands: the cap on a host's open ones (2,000 by default) would hold them back.
        COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST: '1000000',
        ...extraEnv,
      },
    });
    await bot.waitReady();
    // The host was spawned before this, so it stays off the measured core.
    pin(bot.proc.pid!, String(MEASURED_CORE));
    return bot;
  }

  /** A floor: a minimal relay written plainly in bench/floors, run as its own process. */
  async startFloor(script: string, env: Record<string, string> = {}): Promise<Floor> {
    await this.redis.flushdb();
    const port = await freePort();
    // The bot's own Node flags, so that both run on the same runtime settings.
    const nodeArgs = [
      ...PRODUCTION_NODE_ARGS,
      ...(process.env.FLOOR_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    ];
    const proc = spawn(process.execPath, [...nodeArgs, join('bench', 'floors', script)], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        ...this.host.env,
        FAKE_HOST_STATE: '',
        HOST_COMMAND: this.host.command,
        REDIS_URL: testRedisUrl(REDIS_DB),
        SLACK_API_URL: this.slack.apiUrl,
        SLACK_BOT_TOKEN: BOT_TOKEN,
        SLACK_SIGNING_SECRET: SIGNING_SECRET,
        FLOOR_ROUTES: JSON.stringify(Object.fromEntries(TOOLS.map((t, i) => [t, CHANNELS[i]]))),
        PORT: String(port),
        ...env,
      },
    });
    await new Promise<void>((resolve, reject) => {
      let buf = '';
      proc.stdout!.on('data', (chunk: Buffer) => {
        buf += chunk.toString('utf8');
        if (buf.includes('ready\n')) resolve();
      });
      proc.once('exit', (code) => reject(new Error(`floor ${script} exited early (code ${code})`)));
    });
    pin(proc.pid!, String(MEASURED_CORE));
    return { proc, url: `http://127.0.0.1:${port}`, stop: () => stopChild(proc) };
  }

  async close(): Promise<void> {
    this.unpinRedis();
    await this.redis.quit();
    await this.slack.close();
    await this.host.close();
  }
}

export interface Floor {
  proc: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

async function stopChild(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

export interface Post {
  approvalId: string;
  channel: string;
  ts: string;
  hr: bigint;
  index: number;
}

const APPROVAL_ID = /\b([a-z]+\d*-\d{6})\b/;

/** The approval a card (or a floor's plain message) is for. */
/**
 * The approval a posted card is of: its metadata names it (every card of the bot's carries
 * `countersign_card`; a batch summary carries another type and is no approval's card); a post
 * without metadata (a floor's) by the id in its text.
 */
function approvalIdOf(call: SlackCall): string | undefined {
  const raw = call.args.metadata;
  if (raw !== undefined) {
    const metadata = (typeof raw === 'string' ? JSON.parse(raw) : raw) as {
      event_type?: string;
      event_payload?: { approval_id?: string };
    };
    return metadata.event_type === 'countersign_card' ? metadata.event_payload?.approval_id : undefined;
  }
  const text = typeof call.args.text === 'string' ? call.args.text : '';
  return APPROVAL_ID.exec(text)?.[1] ?? APPROVAL_ID.exec(JSON.stringify(call.args.blocks ?? ''))?.[1];
}

/** Follows the fake Slack's answered calls as they come in, without rescanning old ones. */
export class PostTracker {
  readonly posts = new Map<string, Post>();
  /** approvalIds posted more than once. */
  readonly duplicates: string[] = [];
  /** chat.update calls answered with an error (an update that overtook its post would be one). */
  readonly failedUpdates: SlackCall[] = [];
  private cursor: number;

  constructor(private readonly slack: FakeSlack) {
    this.cursor = slack.calls.length;
  }

  private scan(): void {
    const calls = this.slack.calls;
    for (; this.cursor < calls.length; this.cursor++) {
      const call = calls[this.cursor]!;
      if (call.method === 'chat.update' && call.response.ok !== true) this.failedUpdates.push(call);
      if (call.method !== 'chat.postMessage' || call.response.ok !== true) continue;
      const approvalId = approvalIdOf(call);
      if (!approvalId) continue;
      if (this.posts.has(approvalId)) this.duplicates.push(approvalId);
      else
        this.posts.set(approvalId, {
          approvalId,
          channel: String(call.response.channel),
          ts: String(call.response.ts),
          hr: call.hr,
          index: call.index,
        });
    }
  }

  /** Posts of one batch (approvalIds starting with `prefix-`). */
  postsOf(prefix: string): Post[] {
    this.scan();
    return [...this.posts.values()].filter((p) => p.approvalId.startsWith(`${prefix}-`));
  }

  async waitForPosts(prefix: string, count: number, timeoutMs: number): Promise<Post[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const posts = this.postsOf(prefix);
      if (posts.length >= count) return posts;
      if (Date.now() > deadline)
        throw new Error(`${prefix}: ${posts.length} of ${count} cards posted within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
