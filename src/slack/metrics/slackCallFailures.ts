import type { Metrics } from '../../domain/metrics.js';
import type { CardCalls } from '../cardCalls.js';
import { classifySlackError } from '../slackFailures.js';

// Slack call failures for /metrics, by method: each failed attempt once, where it failed. The
// shared Web API client reports its calls (webClient.ts, onFailure); the two card calls, sent
// straight over the pool (cardCalls.ts), are watched here. Nothing else calls Slack.

/** Counts a failed call: a 429 as rate limited, anything else as a failure. */
export function slackFailureCounter(metrics: Pick<Metrics, 'slackFailed'>) {
  return (method: string, err: unknown): void => {
    metrics.slackFailed(method, classifySlackError(err).kind === 'rateLimited');
  };
}

/** The card calls, each failure counted before it is thrown on. */
export function watchedCardCalls(
  calls: CardCalls,
  onFailure: (method: string, err: unknown) => void,
): CardCalls {
  async function watched<T>(method: string, call: Promise<T>): Promise<T> {
    try {
      return await call;
    } catch (err) {
      onFailure(method, err);
      throw err;
    }
  }
  return {
    postMessage: (args) => watched('chat.postMessage', calls.postMessage(args)),
    update: (args) => watched('chat.update', calls.update(args)),
  };
}
