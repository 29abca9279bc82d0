// What every section of the COUNTERSIGN_CONFIG file is built from: strict mappings, lists of
// patterns and IDs, durations, and the wording of their errors (configFile.ts puts the place in
// front). A value is named, never echoed as a structure.

import { z } from 'zod';
import type { Approvers } from '../../domain/route.js';
import { type GlobField, globOptions, isValidGlob } from '../../routing/globs.js';
import { parseDuration } from '../../util/duration.js';
import { MAX_TIMER, MAX_TIMER_WHY, shown } from '../common.js';

/** Names a YAML value in an error message without echoing structures. */
export function got(value: unknown): string {
  if (value === undefined || value === null) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return typeof value === 'string' ? shown(value) : String(value);
}

/** A strict mapping: a misspelt key is an error rather than silently ignored. */
export function mapping<T extends z.core.$ZodLooseShape>(shape: T, what: string) {
  return z.strictObject(shape, {
    error: (iss) => {
      if (iss.code !== 'unrecognized_keys') return `must be ${what} (got ${got(iss.input)})`;
      const keys = iss.keys.map((key) => JSON.stringify(key)).join(', ');
      const noun = iss.keys.length === 1 ? 'key' : 'keys';
      const verb = iss.keys.length === 1 ? 'is' : 'are';
      return `${noun} ${keys} ${verb} not supported (supported: ${Object.keys(shape).join(', ')})`;
    },
  });
}

export const nonEmpty = z
  .string({ error: (iss) => `must be a non-empty string (got ${got(iss.input)})` })
  .min(1, {
    error: 'must be a non-empty string',
  });

// An empty list would match nothing, which is never what was meant: leaving the key out matches anything.
function listOf<T extends z.ZodType<string>>(entry: T) {
  return z
    .array(entry, { error: (iss) => `must be a list (got ${got(iss.input)})` })
    .min(1, { error: 'must list at least one value (or leave the key out to match anything)' })
    .optional();
}

/** Values compared as they are (host ids). */
export const names = listOf(nonEmpty);

/**
 * Globs of `field`, each compiled as its matcher compiles it (globOptions, after `compiledAs`): picomatch turns
 * one it cannot compile into a pattern that matches nothing, which would fail open.
 */
export function globs(field: GlobField, compiledAs: (pattern: string) => string = (p) => p) {
  const options = globOptions(field);
  return listOf(
    nonEmpty.refine((pattern) => isValidGlob(compiledAs(pattern), options), {
      error: (iss) =>
        `is not a valid glob, so it would match nothing (got ${got(iss.input)}): close each {, ( and [, write ranges low to high ([a-z]), and end it without a lone \\`,
    }),
  );
}

export const USER_ID = /^[UW][A-Z0-9]{2,}$/;
export const USERGROUP_ID = /^S[A-Z0-9]{2,}$/;

function idList(pattern: RegExp, example: string) {
  const notAnId = (iss: { input?: unknown }) => `must be a ${example} (got ${got(iss.input)})`;
  return z
    .array(
      z.string({ error: notAnId }).refine((value) => pattern.test(value), { error: notAnId }),
      {
        error: (iss) => `must be a list (got ${got(iss.input)})`,
      },
    )
    .optional();
}

export const userIds = idList(USER_ID, 'Slack user ID such as U0123ABCD (not a name or @mention)');
export const usergroupIds = idList(USERGROUP_ID, 'Slack user group ID such as S0123ABCD (not a @handle)');

/** `leftOut` says what leaving the key out means, so the error points at the real alternative. */
export function approvers(leftOut: string) {
  return mapping({ users: userIds, usergroups: usergroupIds }, 'a mapping with users and/or usergroups')
    .optional()
    .superRefine((value, ctx) => {
      // An empty approvers list would let nobody decide: almost certainly a mistake, never silent.
      if (value && (value.users ?? []).length + (value.usergroups ?? []).length === 0) {
        ctx.addIssue({
          code: 'custom',
          message: `must name at least one user or user group (or leave the key out ${leftOut})`,
        });
      }
    })
    .transform((value): Approvers | undefined =>
      value ? { users: value.users ?? [], usergroups: value.usergroups ?? [] } : undefined,
    );
}

const notADuration = (iss: { input?: unknown }) =>
  `must be a duration such as 30s, 15m, 8h or 7d (got ${got(iss.input)})`;

/** A positive duration; with `timer`, one that becomes a timer, so at most MAX_TIMER. */
function durationField(timer: boolean) {
  return z.string({ error: notADuration }).transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms <= 0) {
      ctx.addIssue({ code: 'custom', message: notADuration({ input: text }) });
      return z.NEVER;
    }
    if (timer && ms > MAX_TIMER.ms) {
      ctx.addIssue({
        code: 'custom',
        message: `must be at most ${MAX_TIMER.text} (got ${got(text)}): ${MAX_TIMER_WHY}`,
      });
      return z.NEVER;
    }
    return ms;
  });
}

export const duration = durationField(false);
/** A duration a timer waits for (an escalation step's `after`). */
export const timerDuration = durationField(true);

const notAQuorum = (iss: { input?: unknown }) =>
  `must be a whole number from 1 to 10 (got ${got(iss.input)})`;
export const quorum = z
  .number({ error: notAQuorum })
  .int({ error: notAQuorum })
  .min(1, { error: notAQuorum })
  .max(10, { error: notAQuorum })
  .optional();

export const trueOrFalse = z
  .boolean({ error: (iss) => `must be true or false (got ${got(iss.input)})` })
  .optional();
