import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/**
 * Links to cards. Once auth.test has given the workspace's address, a card's link is built from
 * it as Slack builds it (`<workspace>/archives/<channel>/p<ts without its dot>`), with no call:
 * a batch summary links up to 20 cards and is redrawn as they change, and each call would share
 * the workspace's budget with the cards (docs/performance.md, "Batch triage"). Until then, or
 * for an address that is not https, chat.getPermalink is asked. A message's link never changes, and
 * the lists that need them (App Home, /countersign pending) show the same cards again and again:
 * each is asked once per process, and the cache is bounded.
 */
export class Permalinks {
  private readonly known = new Map<string, string>();

  constructor(
    private readonly web: WebClient,
    private readonly logger: Logger,
    private readonly workspaceUrl: () => string | undefined = () => undefined,
    private readonly max = 2_000,
  ) {}

  /** The card's link, or undefined when Slack does not give one now (the list shows it unlinked). */
  async of(channel: string, ts: string): Promise<string | undefined> {
    const base = this.workspaceUrl();
    if (base?.startsWith('https://') && /^[A-Z0-9]+$/.test(channel) && /^\d+\.\d+$/.test(ts))
      return `${base.endsWith('/') ? base : `${base}/`}archives/${channel}/p${ts.replace('.', '')}`;
    const key = `${channel}/${ts}`;
    const cached = this.known.get(key);
    if (cached) return cached;
    try {
      const answer = await retrySlackCall(
        () => this.web.chat.getPermalink({ channel, message_ts: ts }),
        RETRY_POLICIES.interactive,
      );
      if (!answer.permalink) return undefined;
      // Oldest out first: a Map iterates in insertion order.
      if (this.known.size >= this.max) this.known.delete(this.known.keys().next().value!);
      this.known.set(key, answer.permalink);
      return answer.permalink;
    } catch (err) {
      this.logger.warn({ err, channel, ts }, 'could not get the link of a card');
      return undefined;
    }
  }
}
