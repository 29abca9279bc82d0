// `routes`: which channel an approval's card goes to, and who may decide it there.

import { z } from 'zod';
import type { Route, RouteMatch } from '../../domain/route.js';
import { CHANNEL_ID } from '../common.js';
import { escalation, oncall } from './escalation.js';
import { approvers, duration, globs, got, mapping, names, nonEmpty, quorum, trueOrFalse } from './fields.js';
import { grants } from './grants.js';

// CHANNEL_ID is read when a value is checked, not when this module loads: config.ts imports this
// module, so config.ts's own bindings may not be initialised yet at that point.
const notAChannel = (iss: { input?: unknown }) =>
  `must be a channel ID such as C0123456789 or #name (got ${got(iss.input)})`;
const channel = z
  .string({ error: notAChannel })
  .refine((value) => CHANNEL_ID.test(value), { error: notAChannel });

const SUBJECT_KIND = /^[A-Za-z][A-Za-z0-9_]*$/;

const subjectKinds = z
  .array(
    z
      .string({
        error: (iss) => `must be a subject kind such as shell, fileAccess or network (got ${got(iss.input)})`,
      })
      .regex(SUBJECT_KIND, {
        error: (iss) => `must be a subject kind such as shell, fileAccess or network (got ${got(iss.input)})`,
      }),
    { error: (iss) => `must be a list (got ${got(iss.input)})` },
  )
  .min(1, { error: 'must list at least one value (or leave the key out to match anything)' })
  .optional();

const match = mapping(
  {
    hosts: names,
    tools: globs('routes.tools'),
    workspaces: globs('routes.workspaces'),
    sessionTitles: globs('routes.sessionTitles'),
    subjects: subjectKinds,
    protectedWrite: z.boolean({ error: (iss) => `must be true or false (got ${got(iss.input)})` }).optional(),
  },
  'a mapping',
)
  .nullish()
  // `match:` with nothing under it (its lines commented out, say) would catch every approval, as
  // an empty list would match none: never silent. Leaving the key out is how to match anything.
  .superRefine((m, ctx) => {
    if (m === null || (m !== undefined && Object.values(m).every((value) => value === undefined)))
      ctx.addIssue({
        code: 'custom',
        message:
          'is empty, which would match every approval: list what to match, or remove the key to match everything',
      });
  })
  .transform((m): RouteMatch | undefined => {
    const fields = Object.entries(m ?? {}).filter(([, value]) => value !== undefined);
    return fields.length > 0 ? (Object.fromEntries(fields) as RouteMatch) : undefined;
  });

export const route = mapping(
  {
    name: nonEmpty.optional(),
    channel,
    match,
    approvers: approvers('to let the members of the channel decide'),
    protectedWriteApprovers: approvers('to let the approvers decide protected writes too'),
    allowSelfApproval: trueOrFalse,
    allowExternal: trueOrFalse,
    allowGuests: trueOrFalse,
    rejectReason: z
      .enum(['required', 'optional'], {
        error: (iss) => `must be required or optional (got ${got(iss.input)})`,
      })
      .optional(),
    quickReasons: z
      .array(nonEmpty.max(150, { error: 'must be at most 150 characters (a Slack option label)' }), {
        error: (iss) => `must be a list (got ${got(iss.input)})`,
      })
      .max(10, { error: 'must list at most 10 reasons' })
      .optional(),
    quorum,
    grants,
    oncall,
    escalation,
    /** How long an approval may wait before it counts as late (card, /countersign stats). */
    sla: duration.optional(),
  },
  'a mapping',
).transform(
  (r): Route => ({
    ...(r.name === undefined ? {} : { name: r.name }),
    channel: r.channel,
    ...(r.match === undefined ? {} : { match: r.match }),
    ...(r.approvers === undefined ? {} : { approvers: r.approvers }),
    ...(r.protectedWriteApprovers === undefined
      ? {}
      : { protectedWriteApprovers: r.protectedWriteApprovers }),
    ...(r.allowSelfApproval === undefined ? {} : { allowSelfApproval: r.allowSelfApproval }),
    ...(r.allowExternal === undefined ? {} : { allowExternal: r.allowExternal }),
    ...(r.allowGuests === undefined ? {} : { allowGuests: r.allowGuests }),
    ...(r.rejectReason === undefined ? {} : { rejectReason: r.rejectReason }),
    ...(r.quickReasons === undefined ? {} : { quickReasons: r.quickReasons }),
    ...(r.quorum === undefined ? {} : { quorum: r.quorum }),
    ...(r.grants === undefined ? {} : { grants: r.grants }),
    ...(r.oncall === undefined ? {} : { oncall: r.oncall }),
    ...(r.escalation === undefined || r.escalation.length === 0 ? {} : { escalation: r.escalation }),
    ...(r.sla === undefined ? {} : { slaMs: r.sla }),
  }),
);
