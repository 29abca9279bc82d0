// `routes[].oncall` and `routes[].escalation`: who is on call, and what happens to an approval
// nobody decides in time.

import { z } from 'zod';
import type { EscalationStep, OncallSource } from '../../domain/route.js';
import { isZonedDateTime, zonedTimeOf } from '../../util/calendar.js';
import { duration, got, mapping, nonEmpty, timerDuration, USER_ID, USERGROUP_ID } from './fields.js';

function validTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const userId = nonEmpty.regex(USER_ID, {
  error: (iss) => `must be a Slack user ID such as U0123ABCD (got ${got(iss.input)})`,
});
const usergroupId = nonEmpty.regex(USERGROUP_ID, {
  error: (iss) => `must be a Slack user group ID such as S0123ABCD (got ${got(iss.input)})`,
});

const rotation = mapping(
  {
    users: z
      .array(userId, { error: (iss) => `must be a list (got ${got(iss.input)})` })
      .min(1, { error: 'must list at least one user' }),
    // With its zone, and a day of the calendar: Date.parse would read a zone-less time in each
    // process's own TZ (replicas in different zones would disagree on who is on call) and roll
    // 2026-02-30 over to 2 March.
    start: z
      .string({
        error: (iss) => `must be an ISO 8601 time such as 2026-11-30T09:00:00Z (got ${got(iss.input)})`,
      })
      .superRefine((text, ctx) => {
        if (!isZonedDateTime(text)) {
          const zoneless = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/.test(text);
          ctx.addIssue({
            code: 'custom',
            message: zoneless
              ? `must name its zone (Z or an offset such as +01:00): without one each server would read it in its own (got ${got(text)})`
              : `must be an ISO 8601 time with its zone such as 2026-11-30T09:00:00Z (got ${got(text)})`,
          });
        } else if (zonedTimeOf(text) === undefined) {
          ctx.addIssue({
            code: 'custom',
            message: `names a day, time or offset that does not exist (got ${got(text)})`,
          });
        }
      }),
    every: duration,
    timezone: nonEmpty
      .refine(validTimeZone, {
        error: (iss) => `must be an IANA time zone such as Europe/Berlin or UTC (got ${got(iss.input)})`,
      })
      .optional(),
  },
  'a mapping with users, start, every and timezone',
);

export const oncall = mapping(
  {
    usergroup: usergroupId.optional(),
    rotation: rotation.optional(),
    pagerduty: mapping(
      { scheduleId: nonEmpty.optional(), escalationPolicyId: nonEmpty.optional() },
      'a mapping with scheduleId or escalationPolicyId',
    )
      .refine((pd) => (pd.scheduleId === undefined) !== (pd.escalationPolicyId === undefined), {
        error: 'must name exactly one of scheduleId and escalationPolicyId',
      })
      .optional(),
  },
  'a mapping with one of usergroup, rotation and pagerduty',
)
  .optional()
  .superRefine((value, ctx) => {
    if (!value) return;
    const given = [value.usergroup, value.rotation, value.pagerduty].filter((v) => v !== undefined).length;
    if (given !== 1)
      ctx.addIssue({ code: 'custom', message: 'must name exactly one of usergroup, rotation and pagerduty' });
  })
  .transform((value): OncallSource | undefined => {
    if (!value) return undefined;
    if (value.usergroup) return { kind: 'usergroup', usergroup: value.usergroup };
    if (value.rotation) {
      const r = value.rotation;
      return {
        kind: 'rotation',
        users: r.users,
        // Checked above to name its zone and a day of the calendar: every process reads the same instant.
        startMs: zonedTimeOf(r.start)!,
        everyMs: r.every,
        timezone: r.timezone ?? 'UTC',
      };
    }
    return {
      kind: 'pagerduty',
      ...(value.pagerduty?.scheduleId ? { scheduleId: value.pagerduty.scheduleId } : {}),
      ...(value.pagerduty?.escalationPolicyId
        ? { escalationPolicyId: value.pagerduty.escalationPolicyId }
        : {}),
    };
  });

const TARGET = /^(oncall|[UW][A-Z0-9]{2,}|S[A-Z0-9]{2,})$/;
const step = mapping(
  {
    // The escalator waits for the step with a timer; the rotation's `every` is only arithmetic.
    after: timerDuration,
    action: z.enum(['remind', 'mention', 'dm', 'page', 'timeout'], {
      error: (iss) => `must be remind, mention, dm, page or timeout (got ${got(iss.input)})`,
    }),
    target: z
      .string({ error: (iss) => `must be oncall, a user ID or a user group ID (got ${got(iss.input)})` })
      .regex(TARGET, {
        error: (iss) => `must be oncall, a user ID or a user group ID (got ${got(iss.input)})`,
      })
      .optional(),
    broadcast: z.boolean({ error: (iss) => `must be true or false (got ${got(iss.input)})` }).optional(),
    routingKey: nonEmpty.optional(),
    // A page reaches whoever PagerDuty has on call, and whoever reads the service's incidents,
    // none of them checked as a DM's reader is: the request's text goes only where a route says so.
    includeRequest: z.boolean({ error: (iss) => `must be true or false (got ${got(iss.input)})` }).optional(),
  },
  'a mapping with after and action',
)
  .superRefine((s, ctx) => {
    const needsTarget = s.action === 'mention' || s.action === 'dm';
    if (needsTarget && s.target === undefined)
      ctx.addIssue({
        code: 'custom',
        message: `needs a target (oncall, a user ID or a user group ID) for ${s.action}`,
      });
    if (!needsTarget && s.target !== undefined)
      ctx.addIssue({ code: 'custom', message: `target is only for mention and dm, not ${s.action}` });
    if (s.broadcast !== undefined && s.action !== 'mention')
      ctx.addIssue({ code: 'custom', message: 'broadcast is only for mention' });
    if (s.routingKey !== undefined && s.action !== 'page')
      ctx.addIssue({ code: 'custom', message: 'routingKey is only for page' });
    if (s.includeRequest !== undefined && s.action !== 'page')
      ctx.addIssue({ code: 'custom', message: 'includeRequest is only for page' });
    if (s.action === 'dm' && s.target !== undefined && s.target.startsWith('S'))
      ctx.addIssue({ code: 'custom', message: 'a dm goes to a person: target oncall or a user ID' });
  })
  .transform(
    (s): EscalationStep => ({
      afterMs: s.after,
      action: s.action,
      ...(s.target === undefined ? {} : { target: s.target }),
      ...(s.broadcast === undefined ? {} : { broadcast: s.broadcast }),
      ...(s.routingKey === undefined ? {} : { routingKey: s.routingKey }),
      ...(s.includeRequest === undefined ? {} : { includeRequest: s.includeRequest }),
    }),
  );

export const escalation = z
  .array(step, { error: (iss) => `must be a list (got ${got(iss.input)})` })
  .optional()
  .superRefine((steps, ctx) => {
    steps?.forEach((s, i) => {
      const before = steps[i - 1];
      if (before && s.afterMs < before.afterMs)
        ctx.addIssue({
          code: 'custom',
          path: [i, 'after'],
          message: 'comes before the step above it: list steps in order',
        });
      if (s.action === 'timeout' && i !== steps.length - 1)
        ctx.addIssue({
          code: 'custom',
          path: [i, 'action'],
          message: 'timeout ends the approval: it must be the last step',
        });
    });
  });
