// One end-to-end world: the real bot process in HTTP mode, a fake MSP host it spawns, a fake
// Slack Web API, and real Redis. Tests act as the host (through its control socket) and as
// Slack users (signed interaction requests), and look only at what crosses those edges.

import { Redis } from 'ioredis';
import { expect, onTestFailed } from 'vitest';
import { keys } from '../../src/store/keys.js';
import type { RedisClient } from '../../src/store/redisConnection.js';
import {
  APPROVALS_CHANNEL,
  freshRedisDb,
  type RunningBot,
  SIGNING_SECRET,
  startBot,
} from '../support/bot.js';
import { FakeHost, type FakeHostSeed } from '../support/fakeHost.js';
import { FakeSlack, type SlackMessage } from '../support/fakeSlack.js';
import type { RedisCluster } from '../support/redisCluster.js';
import { blockActionsPayload, postInteraction, viewSubmissionPayload } from '../support/slackRequests.js';
import { testRedisUrl } from '../support/testRedis.js';

export interface Button {
  actionId: string;
  value: string;
  text: string;
  style?: string;
  confirm?: unknown;
}

export const SESSION = '0198f0aa-1111-7000-8000-0000000000aa';

/**
 * Every button of a message, in order, but the bot's own "don't ask again" (rememberButtonOf)
 * and "View full" (viewFullButtonOf): on a card, exactly the host's offered choices.
 */
export function buttonsOf(message: Pick<SlackMessage, 'blocks'>): Button[] {
  return allButtonsOf(message).filter((b) => !isRemember(b) && b.actionId !== 'cs_view_full');
}

/** The card's "View full" button, when it has one (something on it was shortened). */
export function viewFullButtonOf(message: Pick<SlackMessage, 'blocks'>): Button | undefined {
  return allButtonsOf(message).find((b) => b.actionId === 'cs_view_full');
}

/** The card's first "Don't ask again" button (its first scope), when it offers one. */
export function rememberButtonOf(message: Pick<SlackMessage, 'blocks'>): Button | undefined {
  return rememberButtonsOf(message)[0];
}

/** The card's "Don't ask again" buttons, one per scope the route offers, in order. */
export function rememberButtonsOf(message: Pick<SlackMessage, 'blocks'>): Button[] {
  return allButtonsOf(message).filter(isRemember);
}

function isRemember(button: Button): boolean {
  return /^cs_remember(?:_\d+)?$/.test(button.actionId);
}

function allButtonsOf(message: Pick<SlackMessage, 'blocks'>): Button[] {
  const out: Button[] = [];
  for (const block of message.blocks as Array<{ type: string; elements?: Array<Record<string, unknown>> }>) {
    if (block.type !== 'actions') continue;
    for (const el of block.elements ?? []) {
      if (el.type !== 'button') continue;
      out.push({
        actionId: el.action_id as string,
        value: el.value as string,
        text: (el.text as { text: string }).text,
        style: el.style as string | undefined,
        confirm: el.confirm,
      });
    }
  }
  return out;
}

/** All text of a message (fallback text and every block), for content assertions. */
export function textOf(message: Pick<SlackMessage, 'text' | 'blocks'>): string {
  return `${message.text}\n${JSON.stringify(message.blocks)}`;
}

/** Presses `button` of the message at `at` as `userId`: a signed interaction posted to `botUrl`. */
export async function pressButtonAt(
  botUrl: string,
  slack: FakeSlack,
  at: { channel: string; ts: string },
  button: Button,
  userId: string,
): Promise<Response> {
  const response = await postInteraction(
    botUrl,
    SIGNING_SECRET,
    blockActionsPayload({
      userId,
      channel: at.channel,
      ts: at.ts,
      actionId: button.actionId,
      value: button.value,
      responseUrl: slack.responseUrl(`r-${userId}-${Date.now()}`),
    }),
  );
  expect(response.status).toBe(200);
  return response;
}

export interface WorldOptions {
  slack?: Parameters<typeof FakeSlack.start>[0];
  appToken?: string;
  /** A Redis other than the tests' one (no database): the bot's and the test's own client's. */
  redisUrl?: string;
  /** What the bot connects to instead, e.g. a TcpProxy in front of that Redis. */
  botRedisUrl?: string;
  /** Wait for the bot's start-up session listing before returning (default true). */
  waitForSync?: boolean;
  /** A fake host started by the test (its command named in a config file), instead of a new one. */
  host?: FakeHost;
  /**
   * A Redis Cluster instead (REDIS_CLUSTER_NODES), flushed first: it has database 0 only, so the
   * file that started it has it to itself.
   */
  cluster?: RedisCluster;
}

export class World {
  private constructor(
    readonly slack: FakeSlack,
    readonly host: FakeHost,
    readonly redis: RedisClient,
    readonly redisDb: number,
    public bot: RunningBot,
    private readonly botRedisUrl: string | undefined,
    /** What names the bot's Redis besides REDIS_URL, on every start. */
    private readonly redisEnv: Record<string, string>,
    /** The settings the test started the bot with: a restart keeps them (see restartBot). */
    private readonly startEnv: Record<string, string>,
  ) {}

  /** `env` may be worked out from the fake host, e.g. a config file that names its command. */
  static async start(
    seed: FakeHostSeed = {},
    env: Record<string, string> | ((host: FakeHost) => Record<string, string>) = {},
    options: WorldOptions = {},
  ): Promise<World> {
    const slack = await FakeSlack.start(options.slack);
    if (options.appToken) slack.expectedAppToken = options.appToken;
    const host =
      options.host ??
      (await FakeHost.start({
        sessions: [{ sessionId: SESSION, title: 'Bump the version' }],
        ...seed,
      }));
    const { cluster } = options;
    if (cluster) await cluster.flush();
    const redisDb = cluster ? 0 : await freshRedisDb(options.redisUrl);
    const botRedisUrl = options.botRedisUrl ?? options.redisUrl;
    const redisEnv: Record<string, string> = cluster
      ? { REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodesVar }
      : {};
    const startEnv = typeof env === 'function' ? env(host) : env;
    const bot = await startBot({
      host,
      slack,
      redisDb,
      env: { ...redisEnv, ...startEnv },
      ...(botRedisUrl ? { redisUrl: botRedisUrl } : {}),
    });
    await World.ready(bot, options.waitForSync ?? true);
    const redis = cluster
      ? cluster.client()
      : new Redis(options.redisUrl ? `${options.redisUrl}/${redisDb}` : testRedisUrl(redisDb));
    const world = new World(slack, host, redis, redisDb, bot, botRedisUrl, redisEnv, startEnv);
    World.reportOnFailure(world);
    return world;
  }

  /**
   * A failing scenario prints the bot's own account (its log, without the Web API client's
   * request chatter) and what Slack saw: a failure in CI is often not reproducible on a quiet
   * machine, and the assertion alone rarely says why the bot did what it did.
   */
  private static reportOnFailure(world: World): void {
    try {
      onTestFailed(() => {
        const own = world.bot.logs.filter((l) => l.json?.component !== 'slack-web-api').slice(-80);
        console.error(
          `bot log (last ${own.length} lines):\n${own.map((l) => l.raw).join('\n')}\n${world.slack.summary()}`,
        );
      });
    } catch {
      // Started outside a test (a beforeAll): there is no one test to report against.
    }
  }

  /**
   * Ready, and (unless told not to wait) done listing the host's sessions: an approval a test
   * opens after that is news to the bot, not part of its start-up listing.
   */
  private static async ready(bot: RunningBot, waitForSync: boolean): Promise<void> {
    await bot.waitReady(15_000);
    if (waitForSync) await bot.waitForLog((l) => l.msg === 'session sync done', 15_000);
  }

  readonly channel = APPROVALS_CHANNEL;

  /**
   * Starts the bot again (after a kill or stop) against the same host state, Slack and Redis, with
   * the settings it was started with: a restart that silently dropped them (its routes, grants,
   * escalation) would test another bot. `env` changes or adds settings for this start.
   */
  async restartBot(env: Record<string, string> = {}, options: { waitForSync?: boolean } = {}): Promise<void> {
    this.bot = await startBot({
      host: this.host,
      slack: this.slack,
      redisDb: this.redisDb,
      env: { ...this.redisEnv, ...this.startEnv, ...env },
      ...(this.botRedisUrl ? { redisUrl: this.botRedisUrl } : {}),
    });
    await World.ready(this.bot, options.waitForSync ?? true);
  }

  /** Where the bot says it posted an approval's card (its Redis record), once it has. */
  async postedAt(approvalId: string, timeoutMs = 5_000): Promise<{ channel: string; ts: string }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const raw = await this.redis.hget(keys.approval(approvalId), 'd');
      const slack = raw ? (JSON.parse(raw) as { slack?: { channel: string; ts?: string } }).slack : undefined;
      if (slack?.ts) return { channel: slack.channel, ts: slack.ts };
      if (Date.now() > deadline) {
        throw new Error(
          `no card for ${approvalId} within ${timeoutMs} ms\n${this.slack.summary()}\n${this.bot.tail(30)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** The Slack ts of an approval's card, once the bot has posted it. */
  async tsOf(approvalId: string, timeoutMs = 5_000): Promise<string> {
    return (await this.postedAt(approvalId, timeoutMs)).ts;
  }

  /** The current state of an approval's card, in whichever channel it was posted. */
  async card(approvalId: string): Promise<SlackMessage> {
    const { channel, ts } = await this.postedAt(approvalId);
    const message = this.slack.message(channel, ts);
    if (!message) throw new Error(`card ${channel}/${ts} of ${approvalId} is not in the fake Slack`);
    // A snapshot: the fake keeps updating its own copy, and tests keep old versions to click.
    return structuredClone(message);
  }

  /** Waits until the approval's card satisfies `predicate` (cards change asynchronously). */
  async waitForCard(
    approvalId: string,
    predicate: (m: SlackMessage) => boolean,
    timeoutMs = 5_000,
  ): Promise<SlackMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = await this.card(approvalId);
      if (predicate(message)) return message;
      if (Date.now() > deadline) {
        throw new Error(
          `card of ${approvalId} never matched; last text: ${message.text}\n${JSON.stringify(message.blocks).slice(0, 3000)}\n${this.bot.tail(20)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Presses the card's button whose label is `label`, as user `userId`, with a signed request. */
  async press(
    approvalId: string,
    label: string,
    userId = 'U0ALICE',
    message?: SlackMessage,
  ): Promise<Response> {
    const card = message ?? (await this.card(approvalId));
    const button = buttonsOf(card).find((b) => b.text === label);
    if (!button)
      throw new Error(
        `no button "${label}" on ${approvalId}: ${buttonsOf(card)
          .map((b) => b.text)
          .join(', ')}`,
      );
    return this.pressButton(card.ts, button, userId, card.channel);
  }

  async pressButton(ts: string, button: Button, userId: string, channel = this.channel): Promise<Response> {
    return pressButtonAt(this.bot.url, this.slack, { channel, ts }, button, userId);
  }

  /**
   * Submits the feedback modal that the bot opened for `userId`, or another with the same text
   * input: `view` names its callback (batch triage's "Reject all"), `since` the call index after
   * which it was opened.
   */
  async submitModal(
    userId: string,
    feedback: string,
    opts: { view?: string; since?: number } = {},
  ): Promise<void> {
    const opened = await this.slack.waitFor(
      'views.open',
      (c) => JSON.stringify(c.args).includes(opts.view ?? 'cs_feedback'),
      5_000,
      { since: opts.since ?? 0 },
    );
    const view = opened.args.view as { callback_id: string; private_metadata: string };
    const response = await postInteraction(
      this.bot.url,
      SIGNING_SECRET,
      viewSubmissionPayload({
        userId,
        callbackId: view.callback_id,
        privateMetadata: view.private_metadata,
        values: { cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value: feedback } } },
      }),
    );
    expect(response.status).toBe(200);
  }

  /** The audit stream as it is now, oldest first, each entry's fields as a mapping. */
  auditEntries(): Promise<Array<Record<string, string>>> {
    return this.streamEntries(keys.audit);
  }

  /** The refused attempts' stream (`cs:{audit}:refusals`) as it is now, oldest first. */
  refusalEntries(): Promise<Array<Record<string, string>>> {
    return this.streamEntries(keys.refusals);
  }

  private async streamEntries(key: string): Promise<Array<Record<string, string>>> {
    const entries = await this.redis.xrange(key, '-', '+');
    return entries.map(([, fields]) => {
      const entry: Record<string, string> = {};
      for (let i = 0; i < fields.length; i += 2) entry[fields[i]!] = fields[i + 1]!;
      return entry;
    });
  }

  /** The next ephemeral message to `userId`. */
  async ephemeralTo(userId: string, timeoutMs = 5_000): Promise<string> {
    const call = await this.slack.waitFor('chat.postEphemeral', (c) => c.args.user === userId, timeoutMs);
    return String(call.args.text);
  }

  async close(): Promise<void> {
    await this.bot.stop(5_000).catch(() => undefined);
    await Promise.all([this.host.close(), this.slack.close(), this.redis.quit()]);
  }
}
