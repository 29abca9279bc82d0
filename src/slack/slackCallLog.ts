import type { Logger } from 'pino';
import type { SlackFailure } from './slackFailures.js';

/** What a log line says about the call: method plus where (channel, ts, approvalId). */
export type CallFields = { method: string; channel?: string; ts?: string; approvalId?: string };

/**
 * The one place Slack call failures are logged, each once: the first retry of a call at warn
 * (later ones at debug, so an outage does not flood the log), a call that landed after failing
 * at info, and a call given up on at error, or fatal when the token itself is refused.
 */
export class SlackCallLog {
  constructor(
    private readonly logger: Logger,
    /** Told when Slack refuses the token or its scopes: health reads it. */
    private readonly onFatal?: (error: string) => void,
  ) {}

  retrying(fields: CallFields, failure: SlackFailure, attempt: number, delayMs: number): void {
    const line = { ...fields, failure, attempt, delayMs };
    if (attempt === 1) this.logger.warn(line, 'slack call failed; trying again');
    else this.logger.debug(line, 'slack call failed again; trying again');
  }

  landed(fields: CallFields, attempts: number): void {
    if (attempts > 1) this.logger.info({ ...fields, attempts }, 'slack call landed after retries');
  }

  gaveUp(fields: CallFields, failure: SlackFailure, message = 'slack call failed'): void {
    if (failure.kind === 'fatal') {
      this.logger.fatal({ ...fields, error: failure.error }, 'slack refused the bot token or its scopes');
      this.onFatal?.(failure.error);
    } else if (failure.kind === 'notInChannel') {
      this.logger.error(
        { ...fields, error: failure.error },
        'the bot cannot use this channel: invite it with /invite @countersign, or check SLACK_CHANNEL',
      );
    } else {
      this.logger.error({ ...fields, failure }, message);
    }
  }
}
