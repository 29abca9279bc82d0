// Reading one environment variable: unset when empty, checked against a schema, and the error
// naming the variable and how to fix it. Values that may be secret are never echoed.

import { z } from 'zod';
import { parseDuration } from '../../util/duration.js';
import { ConfigError, MAX_TIMER, MAX_TIMER_WHY, shown } from '../common.js';

/** Whether the text parses as a URL that names a host. */
export function hasHost(url: string): boolean {
  try {
    return new URL(url).hostname !== '';
  } catch {
    return false;
  }
}

const httpUrl = z.url({ protocol: /^https?$/ }).refine(hasHost, 'missing host');

const duration = z
  .string()
  .transform((s) => parseDuration(s))
  .pipe(z.number().int().positive());

/** Reads an env var; empty or whitespace-only counts as unset. */
export function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

export function required(env: NodeJS.ProcessEnv, name: string, fix: string): string {
  const value = read(env, name);
  if (value === undefined) throw new ConfigError(name, `${name} is required: ${fix}`);
  return value;
}

/**
 * Tokens and secrets are printable ASCII without spaces. Anything else (`…`, a space, `<your
 * token>`) is a placeholder pasted from the docs; sent as it is, it fails deep inside the HTTP
 * client and the bot retries for ever.
 */
const SECRET_TEXT = /^[\x21-\x7e]+$/;

export function secretVar(env: NodeJS.ProcessEnv, name: string, fix: string): string | undefined {
  const value = read(env, name);
  if (value !== undefined && !SECRET_TEXT.test(value)) {
    // Never echoed: it may be a real secret with a stray character.
    throw new ConfigError(
      name,
      `${name} still holds a placeholder (it contains "…", a space or another character a Slack or PagerDuty secret never has): ${fix}`,
    );
  }
  return value;
}

export function check<T>(name: string, value: string, schema: z.ZodType<T, string>, problem: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new ConfigError(name, `${name} ${problem}`);
  return result.data;
}

/**
 * A duration. One that becomes a timer (`timer`, the default) is at most MAX_TIMER; one that only
 * Redis keeps as a TTL (`redis`) may be longer, such as COUNTERSIGN_RESOLVED_TTL's default 30d.
 */
export function durationVar(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: string,
  kept: 'timer' | 'redis' = 'timer',
): number {
  const value = read(env, name) ?? fallback;
  const ms = check(
    name,
    value,
    duration,
    `must be a positive duration such as 30s, 15m, 8h or 7d (got ${shown(value)}): fix or unset it`,
  );
  if (kept === 'timer' && ms > MAX_TIMER.ms) {
    throw new ConfigError(
      name,
      `${name} must be at most ${MAX_TIMER.text} (got ${shown(value)}): ${MAX_TIMER_WHY}: fix or unset it`,
    );
  }
  return ms;
}

/** A positive whole number of `unit` (up to 9 digits). */
export function countVar(env: NodeJS.ProcessEnv, name: string, fallback: number, unit: string): number {
  const value = read(env, name) ?? String(fallback);
  return check(
    name,
    value,
    z
      .string()
      .regex(/^\d{1,9}$/)
      .transform(Number)
      .pipe(z.number().int().positive()),
    `must be a positive whole number of ${unit} (got ${shown(value)}): fix or unset it (default ${fallback})`,
  );
}

export function urlVar(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  // The value is not echoed: a URL can carry credentials.
  return check(
    name,
    read(env, name) ?? fallback,
    httpUrl,
    `must be an http(s) URL (default ${fallback}): fix or unset it`,
  );
}

/**
 * A base URL that paths or method names are added to: after a query or a fragment they would
 * land in it (or be dropped from it), so every call would ask the wrong address. `calls` says
 * what would go wrong, `what` names the base the user should write.
 */
export function baseUrlVar(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: string,
  wording: { calls: string; what: string },
): string {
  const url = urlVar(env, name, fallback);
  if (/[?#]/.test(url)) {
    // Not echoed, as urlVar does not: the URL may carry credentials.
    throw new ConfigError(
      name,
      `${name} has a query (?…) or a fragment (#…), which ${wording.calls}: write the ${wording.what} alone (default ${fallback}), or unset it`,
    );
  }
  return url;
}
