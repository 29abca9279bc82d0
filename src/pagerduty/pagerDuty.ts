import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { cutAtCodePoint } from '../util/cutAtCodePoint.js';

// PagerDuty, outbound only: Events API v2 (trigger, resolve) and the REST on-calls API. Every
// call times out, 429 and 5xx are retried with backoff, and a failure is logged and counted by
// the caller; nothing here ever holds up the relay.

/** What Events API v2 allows of `payload.summary`. */
const MAX_SUMMARY_LENGTH = 1024;

export interface PagerDutyOptions {
  eventsUrl: string;
  apiUrl: string;
  apiToken?: string;
  logger: Logger;
  /** Per attempt. */
  timeoutMs?: number;
  /** Attempts in all, on 429, 5xx or no answer. */
  attempts?: number;
  baseDelayMs?: number;
  fetch?: typeof fetch;
}

export interface TriggerEvent {
  routingKey: string;
  dedupKey: string;
  summary: string;
  source: string;
  customDetails: Record<string, unknown>;
  links?: Array<{ href: string; text: string }>;
}

export interface OnCallPerson {
  id: string;
  name?: string;
  email?: string;
}

export class PagerDutyError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'PagerDutyError';
  }
}

export class PagerDuty {
  private readonly fetch: typeof fetch;
  /** Calls that failed for good, by kind: /metrics shows them. */
  readonly failures = { trigger: 0, resolve: 0, oncalls: 0 };

  constructor(private readonly options: PagerDutyOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /**
   * Sends a trigger, retrying as above. `signal` cuts it short (attempt and backoff alike): the
   * call then rejects with the signal's reason, not counted as a failure, and whether PagerDuty
   * took the event is not known.
   */
  async trigger(event: TriggerEvent, signal?: AbortSignal): Promise<void> {
    await this.counted(
      'trigger',
      () =>
        this.send(
          this.options.eventsUrl,
          'POST',
          {
            routing_key: event.routingKey,
            event_action: 'trigger',
            dedup_key: event.dedupKey,
            payload: {
              summary: cutAtCodePoint(event.summary, MAX_SUMMARY_LENGTH),
              source: event.source,
              severity: 'warning',
              custom_details: event.customDetails,
            },
            ...(event.links ? { links: event.links } : {}),
          },
          signal,
        ),
      signal,
    );
  }

  /** Sends a resolve, retrying as above; `signal` cuts it short as a trigger's does. */
  async resolve(routingKey: string, dedupKey: string, signal?: AbortSignal): Promise<void> {
    await this.counted(
      'resolve',
      () =>
        this.send(
          this.options.eventsUrl,
          'POST',
          { routing_key: routingKey, event_action: 'resolve', dedup_key: dedupKey },
          signal,
        ),
      signal,
    );
  }

  /** Who is on call at the first level of a schedule or escalation policy, now. */
  async onCall(source: { scheduleId?: string; escalationPolicyId?: string }): Promise<OnCallPerson[]> {
    return this.counted('oncalls', async () => {
      const url = new URL(
        'oncalls',
        this.options.apiUrl.endsWith('/') ? this.options.apiUrl : `${this.options.apiUrl}/`,
      );
      if (source.scheduleId) url.searchParams.append('schedule_ids[]', source.scheduleId);
      if (source.escalationPolicyId)
        url.searchParams.append('escalation_policy_ids[]', source.escalationPolicyId);
      url.searchParams.append('include[]', 'users');
      url.searchParams.set('earliest', 'true');
      const body = (await this.send(url.toString(), 'GET')) as {
        oncalls?: Array<{
          escalation_level?: number;
          user?: { id?: string; summary?: string; name?: string; email?: string };
        }>;
      };
      const oncalls = body.oncalls ?? [];
      const first = Math.min(...oncalls.map((o) => o.escalation_level ?? 1));
      return oncalls
        .filter((o) => (o.escalation_level ?? 1) === first && o.user?.id)
        .map((o) => ({
          id: o.user!.id!,
          ...(o.user?.name || o.user?.summary ? { name: o.user.name ?? o.user.summary } : {}),
          ...(o.user?.email ? { email: o.user.email } : {}),
        }));
    });
  }

  private async counted<T>(
    kind: keyof PagerDuty['failures'],
    call: () => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    try {
      return await call();
    } catch (err) {
      // A call its caller cut short did not fail: PagerDuty may well have taken it.
      if (!signal?.aborted) this.failures[kind] += 1;
      throw err;
    }
  }

  private async send(
    url: string,
    method: 'GET' | 'POST',
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const attempts = this.options.attempts ?? 4;
    const timeoutMs = this.options.timeoutMs ?? 5_000;
    const baseDelayMs = this.options.baseDelayMs ?? 250;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method === 'GET') {
      headers.accept = 'application/vnd.pagerduty+json;version=2';
      if (this.options.apiToken) headers.authorization = `Token token=${this.options.apiToken}`;
    }
    let last: PagerDutyError = new PagerDutyError('no attempt made');
    for (let attempt = 1; attempt <= attempts; attempt++) {
      signal?.throwIfAborted();
      let retryAfterMs: number | undefined;
      const timeout = AbortSignal.timeout(timeoutMs);
      try {
        const response = await this.fetch(url, {
          method,
          headers,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        });
        const text = await response.text();
        if (response.ok) return text ? JSON.parse(text) : {};
        last = new PagerDutyError(
          `PagerDuty answered ${response.status}: ${text.slice(0, 200)}`,
          response.status,
        );
        if (response.status !== 429 && response.status < 500) throw last;
        const after = Number(response.headers.get('retry-after'));
        if (Number.isFinite(after) && after > 0) retryAfterMs = Math.min(after * 1000, 30_000);
      } catch (err) {
        signal?.throwIfAborted();
        if (
          err instanceof PagerDutyError &&
          err.status !== undefined &&
          err.status !== 429 &&
          err.status < 500
        )
          throw err;
        if (!(err instanceof PagerDutyError)) {
          last = new PagerDutyError(
            `PagerDuty unreachable: ${err instanceof Error ? err.message : String(err)}`,
          );
        }
      }
      if (attempt < attempts) {
        const delay = retryAfterMs ?? baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2);
        this.options.logger.debug({ attempt, delay, err: last.message }, 'PagerDuty call failed; retrying');
        // An abort ends the wait at once; the next attempt's check throws its reason.
        await sleep(delay, undefined, signal ? { signal } : undefined).catch(() => undefined);
      }
    }
    signal?.throwIfAborted();
    throw last;
  }
}
