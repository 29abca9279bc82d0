import type { Logger } from 'pino';
import type { SlackFailure } from './slackFailures.js';

/** What a log line says about the call: method plus where (channel, ts, approvalId). */
export type CallFields = {
  method: string;
  channel?: string;
  /** The ID a `#name` channel was posted to (channelIds.ts). */
  channelId?: string;
  ts?: string;
  approvalId?: string;
};

/**
 * What readiness learns from card calls: Slack refused the token or one of its scopes, and a
 * call landed since. A refused scope is mended without a restart (the app reinstalled, the same
 * token), so the next call that lands is what says Slack takes the bot's calls again.
 */
export interface SlackCallHealth {
  refused(error: string): void;
  landed(): void;
}

/** How often the "invite the bot" line is repeated at error for one channel. */
export const NOT_IN_CHANNEL_EVERY_MS = 60_000;

/**
 * The one place Slack call failures are logged, each once (docs/operations.md, "Slack calls in
 * the log"): every retry at debug, so a slow or flaky Slack does not flood the log; a call that
 * landed after failing at info; a call given up on at warn, once. Two failures only a person can
 * fix are louder and say what to do: a refused token or scope (fatal), and a channel the bot
 * cannot use (error).
 */
export class SlackCallLog {
  /** Channel → when its "invite the bot" line was last logged at error. */
  private readonly notInChannelSaid = new Map<string, number>();

  constructor(
    private readonly logger: Logger,
    /** Told when Slack refuses the token or its scopes, and when a call lands: health reads it. */
    private readonly health?: SlackCallHealth,
    private readonly nowMs: () => number = Date.now,
  ) {}

  retrying(fields: CallFields, failure: SlackFailure, attempt: number, delayMs: number): void {
    this.logger.debug({ ...fields, failure, attempt, delayMs }, 'slack call failed; trying again');
  }

  landed(fields: CallFields, attempts: number): void {
    this.health?.landed();
    if (attempts > 1) this.logger.info({ ...fields, attempts }, 'slack call landed after retries');
  }

  gaveUp(fields: CallFields, failure: SlackFailure, message = 'slack call failed'): void {
    if (failure.kind === 'fatal') {
      this.logger.fatal(
        { ...fields, error: failure.error, needed: failure.needed },
        'slack refused the bot token or its scopes',
      );
      this.health?.refused(failure.error);
    } else if (failure.kind === 'notInChannel') {
      // Every card of an uninvited channel is tried again about every 16 s: one line per channel
      // and minute says it, the rest go to debug, so the log does not fill with the same advice.
      const key = fields.channel ?? '';
      const last = this.notInChannelSaid.get(key);
      const now = this.nowMs();
      const fresh = last === undefined || now - last >= NOT_IN_CHANNEL_EVERY_MS;
      if (fresh) this.notInChannelSaid.set(key, now);
      this.logger[fresh ? 'error' : 'debug'](
        { ...fields, error: failure.error },
        'the bot cannot use this channel: invite it with /invite @countersign, or check SLACK_CHANNEL',
      );
    } else {
      this.logger.warn({ ...fields, failure }, message);
    }
  }
}
