import { parseDuration } from '../../util/duration.js';

// How long a bot-held grant lasts, as a person picks it on the card from the route's
// `grants.choices`: a while, the agent's session, or a number of uses.

export type GrantScope =
  /** Until `ms` from now. */
  | { kind: 'time'; ms: number }
  /** Bound to the session, whatever the route's caller; the bot cannot see a session end, so maxTtl. */
  | { kind: 'session' }
  /** The next `uses` matching requests, within the route's ttl. */
  | { kind: 'uses'; uses: number };

/** A route offers at most this many: one row of buttons, each still readable. */
export const MAX_GRANT_CHOICES = 5;

const USES = /^(\d+)\s*uses?$/;

/** `1h`, `session`, `10 uses` as a scope; a one-line reason when the text is none of these. */
export function parseScope(text: string): GrantScope | string {
  const trimmed = text.trim();
  if (trimmed === 'session') return { kind: 'session' };
  const uses = USES.exec(trimmed);
  if (uses) {
    const n = Number(uses[1]);
    return Number.isSafeInteger(n) && n >= 1
      ? { kind: 'uses', uses: n }
      : 'a count of uses must be at least 1';
  }
  const ms = parseDuration(trimmed);
  if (ms !== undefined && ms > 0) return { kind: 'time', ms };
  return 'must be a duration such as 1h or 8h, session, or a count such as 10 uses';
}

/**
 * The short token a card's button carries for a scope (`t3600000`, `s`, `u10`): what ClickHandler
 * compares with the route's choices as they stand when the button is pressed.
 */
export function scopeToken(scope: GrantScope): string {
  switch (scope.kind) {
    case 'time':
      return `t${scope.ms}`;
    case 'session':
      return 's';
    case 'uses':
      return `u${scope.uses}`;
  }
}

/** The scope among `offered` that `token` names, if the route still offers it. */
export function offeredScope(offered: readonly GrantScope[], token: string): GrantScope | undefined {
  return offered.find((scope) => scopeToken(scope) === token);
}

/**
 * What a route offers when its file and the environment say nothing: an hour, the grant TTL
 * (COUNTERSIGN_GRANT_TTL or the route's `ttl`, 8 h by default), and the session. Shortest first.
 */
export function defaultChoices(ttlMs: number, maxTtlMs: number): GrantScope[] {
  const times = [...new Set([3_600_000, ttlMs])].filter((ms) => ms <= maxTtlMs).sort((a, b) => a - b);
  return [...times.map((ms): GrantScope => ({ kind: 'time', ms })), { kind: 'session' }];
}

/** How long a grant of this scope is kept at most, on a route of this ttl and maxTtl. */
export function scopeTtlMs(scope: GrantScope, route: { ttlMs: number; maxTtlMs: number }): number {
  switch (scope.kind) {
    case 'time':
      return Math.min(scope.ms, route.maxTtlMs);
    case 'session':
      return route.maxTtlMs;
    case 'uses':
      return Math.min(route.ttlMs, route.maxTtlMs);
  }
}
