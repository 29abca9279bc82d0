// `routes[].grants`: whether a route offers standing grants, for how long, to whom, and which
// scopes its card offers.

import { z } from 'zod';
import { type GrantScope, MAX_GRANT_CHOICES, parseScope, scopeToken } from '../../domain/grants/scope.js';
import type { Route } from '../../domain/route.js';
import { duration, got, mapping } from './fields.js';

const notAScope = (iss: { input?: unknown }) =>
  `must be a duration such as 1h or 8h, session, or a count such as 10 uses (got ${got(iss.input)})`;
const scope = z.string({ error: notAScope }).transform((text, ctx): GrantScope => {
  const parsed = parseScope(text);
  if (typeof parsed === 'string') {
    ctx.addIssue({ code: 'custom', message: `${parsed} (got ${got(text)})` });
    return z.NEVER;
  }
  return parsed;
});
const choices = z
  .array(scope, { error: (iss) => `must be a list such as [1h, 8h, session] (got ${got(iss.input)})` })
  .min(1, { error: 'must list at least one scope (or set enabled: false to offer none)' })
  .max(MAX_GRANT_CHOICES, { error: `must list at most ${MAX_GRANT_CHOICES} scopes` })
  .superRefine((list, ctx) => {
    const tokens = list.map(scopeToken);
    if (new Set(tokens).size !== tokens.length) {
      ctx.addIssue({ code: 'custom', message: 'lists the same scope twice' });
    }
  })
  .optional();

export const grants = mapping(
  {
    enabled: z.boolean({ error: (iss) => `must be true or false (got ${got(iss.input)})` }).optional(),
    ttl: duration.optional(),
    maxTtl: duration.optional(),
    caller: z
      .enum(['session', 'owner', 'host'], {
        error: (iss) => `must be session, owner or host (got ${got(iss.input)})`,
      })
      .optional(),
    choices,
  },
  'a mapping with enabled, ttl, maxTtl, caller and/or choices',
)
  .optional()
  .superRefine((value, ctx) => {
    if (value?.ttl !== undefined && value.maxTtl !== undefined && value.ttl > value.maxTtl) {
      ctx.addIssue({ code: 'custom', message: 'ttl is longer than maxTtl: shorten ttl or raise maxTtl' });
    }
    const maxTtl = value?.maxTtl;
    (value?.choices ?? []).forEach((choice, i) => {
      if (maxTtl !== undefined && choice.kind === 'time' && choice.ms > maxTtl) {
        ctx.addIssue({
          code: 'custom',
          path: ['choices', i],
          message: 'is longer than maxTtl: shorten it or raise maxTtl',
        });
      }
    });
  })
  .transform((value): Route['grants'] => {
    if (!value) return undefined;
    const { ttl, maxTtl, ...rest } = value;
    const fields = {
      ...rest,
      ...(ttl === undefined ? {} : { ttlMs: ttl }),
      ...(maxTtl === undefined ? {} : { maxTtlMs: maxTtl }),
    };
    return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
  });
