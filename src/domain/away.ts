import { isCalendarTime, zonedTimeOf } from '../util/calendar.js';
import { parseDuration } from '../util/duration.js';
import type { Person, Workspace } from './authorization.js';
import { isExternal } from './authorization.js';

// Someone away (`/countersign away until … [delegate @user]`): escalation passes them by and asks
// their delegate instead, and the delegate may decide what they could. Pure: what is stored, how
// `until` is read, and which delegates are refused; the store keeps it in Redis with its expiry.

/** The longest absence that may be set at once: a forgotten `away` must not last for ever. */
export const MAX_AWAY_MS = 30 * 86_400_000;

/** One person's absence as stored: it ends by itself at `until`. */
export interface Away {
  userId: string;
  /** ISO time at which the absence ends (the key expires then). */
  until: string;
  /** Who stands in for them, if anyone. */
  delegate?: string;
  /** ISO time it was set. */
  since: string;
}

/** What `/countersign away …` asked for, read from its words. */
export type AwayRequest = { ok: true; untilMs: number; delegate?: string } | { ok: false; why: AwayProblem };

/** Why an away request is refused: each has its sentence (renderAway.ts). */
export type AwayProblem =
  | { kind: 'usage' }
  | { kind: 'badUntil'; text: string }
  | { kind: 'untilPast' }
  | { kind: 'untilTooFar'; maxMs: number }
  | { kind: 'badDelegate'; text: string }
  | { kind: 'delegateSelf' }
  | { kind: 'delegateBot' }
  | { kind: 'delegateDeactivated' }
  | { kind: 'delegateStranger'; external: boolean }
  | { kind: 'delegateUnknown' }
  | { kind: 'delegateFull'; max: number }
  | { kind: 'youUnknown' }
  | { kind: 'youStranger' };

/**
 * A user as Slack escapes it in a command's text (`<@U123|name>`, should_escape in the manifest),
 * or a bare user id.
 */
const USER_REF = /^<@([UW][A-Z0-9]{2,40})(?:\|[^>]*)?>$|^([UW][A-Z0-9]{2,40})$/;

/** `YYYY-MM-DD`: the end of that day, UTC. A date-time needs its zone (zonedTimeOf). */
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** When an absence given as a duration (`3d`, `4h`) or a date (`2026-12-24`, ISO) ends, in ms. */
export function untilOf(text: string, nowMs: number): number | undefined {
  const duration = parseDuration(text);
  if (duration !== undefined) return duration > 0 ? nowMs + duration : undefined;
  const day = DAY.exec(text);
  if (day) {
    // Date.parse rolls 2026-02-30 over to 2 March: someone would be away until a day never typed.
    if (!isCalendarTime(day.slice(1))) return undefined;
    const start = Date.parse(`${text}T00:00:00Z`);
    return Number.isNaN(start) ? undefined : start + 86_400_000;
  }
  // A day the calendar does not have would otherwise be rolled over into one never typed.
  return zonedTimeOf(text);
}

/**
 * Reads `until <when> [delegate @user]` (the words after `away`). Checks what needs no lookup:
 * the time's form and bounds, the delegate's form, and that it is not the user themselves.
 */
export function parseAway(args: readonly string[], userId: string, nowMs: number): AwayRequest {
  const [untilWord, when, delegateWord, who, ...rest] = args;
  if (untilWord?.toLowerCase() !== 'until' || when === undefined || rest.length > 0)
    return { ok: false, why: { kind: 'usage' } };
  if (
    (delegateWord === undefined) !== (who === undefined) ||
    (delegateWord && delegateWord.toLowerCase() !== 'delegate')
  )
    return { ok: false, why: { kind: 'usage' } };
  const untilMs = untilOf(when, nowMs);
  if (untilMs === undefined) return { ok: false, why: { kind: 'badUntil', text: when } };
  if (untilMs <= nowMs) return { ok: false, why: { kind: 'untilPast' } };
  if (untilMs - nowMs > MAX_AWAY_MS) return { ok: false, why: { kind: 'untilTooFar', maxMs: MAX_AWAY_MS } };
  if (who === undefined) return { ok: true, untilMs };
  const match = USER_REF.exec(who);
  const delegate = match?.[1] ?? match?.[2];
  if (!delegate) return { ok: false, why: { kind: 'badDelegate', text: who } };
  if (delegate === userId) return { ok: false, why: { kind: 'delegateSelf' } };
  return { ok: true, untilMs, delegate };
}

/**
 * Why Slack's word on a would-be delegate refuses them: a bot, a deactivated account (whom the
 * Authorizer never lets stand in, so naming them would leave nobody in the user's place), or a
 * stranger (another team or enterprise, a guest), who may not stand in for a member of the team.
 * Undefined: they may.
 */
export function delegateRefusal(
  person: Person | undefined,
  workspace: Workspace | undefined,
): AwayProblem | undefined {
  if (!person || !workspace) return { kind: 'delegateUnknown' };
  if (person.bot) return { kind: 'delegateBot' };
  if (person.deactivated) return { kind: 'delegateDeactivated' };
  if (isExternal(person, workspace)) return { kind: 'delegateStranger', external: true };
  if (person.guest) return { kind: 'delegateStranger', external: false };
  return undefined;
}
