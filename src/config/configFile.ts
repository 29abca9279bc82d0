// The COUNTERSIGN_CONFIG file (DESIGN §8; README "Configuration file" shows every key):
//
//   hosts:      optional; each host is supervised on its own. Without it MSP_HOST_COMMAND is the
//               one host, id "default".
//   routes:     first match wins. All listed match fields must match (AND); within a field any
//               pattern may match (OR). A route whose `workspaces` is set never matches an
//               approval whose workspaceRoot is unknown; one whose `sessionTitles` is set never
//               matches a session without title or name.
//   admins:     Slack user IDs that may decide anywhere.
//
// Strict keys, one-line errors naming the place, read once at start-up.

import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { type GrantScope, MAX_GRANT_CHOICES, parseScope, scopeToken } from '../domain/grants/scope.js';
import type {
  Approvers,
  ConfigFile,
  EscalationStep,
  HostSpec,
  OncallSource,
  ProgramMatch,
  RiskRule,
  Route,
  RouteMatch,
} from '../domain/route.js';
import { parseDuration } from '../util/duration.js';
import { CHANNEL_ID, ConfigError, shown } from './common.js';

/** Names a YAML value in an error message without echoing structures. */
function got(value: unknown): string {
  if (value === undefined || value === null) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return typeof value === 'string' ? shown(value) : String(value);
}

/** A strict mapping: a misspelt key is an error rather than silently ignored. */
function mapping<T extends z.core.$ZodLooseShape>(shape: T, what: string) {
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

const nonEmpty = z.string({ error: (iss) => `must be a non-empty string (got ${got(iss.input)})` }).min(1, {
  error: 'must be a non-empty string',
});

// An empty list would match nothing, which is never what was meant: leaving the key out matches anything.
const patterns = z
  .array(nonEmpty, { error: (iss) => `must be a list (got ${got(iss.input)})` })
  .min(1, { error: 'must list at least one value (or leave the key out to match anything)' })
  .optional();

// CHANNEL_ID is read when a value is checked, not when this module loads: config.ts imports this
// module, so config.ts's own bindings may not be initialised yet at that point.
const notAChannel = (iss: { input?: unknown }) =>
  `must be a channel ID such as C0123456789 or #name (got ${got(iss.input)})`;
const channel = z
  .string({ error: notAChannel })
  .refine((value) => CHANNEL_ID.test(value), { error: notAChannel });

const USER_ID = /^[UW][A-Z0-9]{2,}$/;
const USERGROUP_ID = /^S[A-Z0-9]{2,}$/;
const HOST_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const SUBJECT_KIND = /^[A-Za-z][A-Za-z0-9_]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

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

const userIds = idList(USER_ID, 'Slack user ID such as U0123ABCD (not a name or @mention)');
const usergroupIds = idList(USERGROUP_ID, 'Slack user group ID such as S0123ABCD (not a @handle)');

/** `leftOut` says what leaving the key out means, so the error points at the real alternative. */
function approvers(leftOut: string) {
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
    hosts: patterns,
    tools: patterns,
    workspaces: patterns,
    sessionTitles: patterns,
    subjects: subjectKinds,
    protectedWrite: z.boolean({ error: (iss) => `must be true or false (got ${got(iss.input)})` }).optional(),
  },
  'a mapping',
)
  .nullish()
  .transform((m): RouteMatch | undefined => {
    const fields = Object.entries(m ?? {}).filter(([, value]) => value !== undefined);
    return fields.length > 0 ? (Object.fromEntries(fields) as RouteMatch) : undefined;
  });

const notADuration = (iss: { input?: unknown }) =>
  `must be a duration such as 30s, 15m, 8h or 7d (got ${got(iss.input)})`;
const duration = z.string({ error: notADuration }).transform((text, ctx) => {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({ code: 'custom', message: notADuration({ input: text }) });
    return z.NEVER;
  }
  return ms;
});

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

const grants = mapping(
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
    start: z
      .string({
        error: (iss) => `must be an ISO 8601 time such as 2026-11-30T09:00:00Z (got ${got(iss.input)})`,
      })
      .refine((text) => /^\d{4}-\d{2}-\d{2}T/.test(text) && !Number.isNaN(Date.parse(text)), {
        error: (iss) => `must be an ISO 8601 time such as 2026-11-30T09:00:00Z (got ${got(iss.input)})`,
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

const oncall = mapping(
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
        startMs: Date.parse(r.start),
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
    after: duration,
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
    }),
  );

const escalation = z
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

const notAQuorum = (iss: { input?: unknown }) =>
  `must be a whole number from 1 to 10 (got ${got(iss.input)})`;
const quorum = z
  .number({ error: notAQuorum })
  .int({ error: notAQuorum })
  .min(1, { error: notAQuorum })
  .max(10, { error: notAQuorum })
  .optional();

const trueOrFalse = z.boolean({ error: (iss) => `must be true or false (got ${got(iss.input)})` }).optional();

const route = mapping(
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
  }),
);

// A `programs` entry names a program as a rule compares it (programs.ts): a base name, one
// subcommand word, and flags as they are spelt on a command line, without a value.
const notAProgram = (iss: { input?: unknown }) =>
  `must be a program's name such as git, without a directory: argv[0]'s base name is compared (got ${got(iss.input)})`;
const notASubcommand = (iss: { input?: unknown }) =>
  `must be one word such as push, not an option (got ${got(iss.input)})`;
const notAFlag = (iss: { input?: unknown }) =>
  `must be an option such as -f or --force, without a value (got ${got(iss.input)})`;
const programEntry = mapping(
  {
    program: z.string({ error: notAProgram }).regex(/^[^/\s]+$/, { error: notAProgram }),
    subcommand: z
      .string({ error: notASubcommand })
      .regex(/^[^-\s]\S*$/, { error: notASubcommand })
      .optional(),
    flags: z
      .array(z.string({ error: notAFlag }).regex(/^--?[^-=\s][^=\s]*$/, { error: notAFlag }), {
        error: (iss) => `must be a list such as [--force, -f] (got ${got(iss.input)})`,
      })
      .min(1, { error: 'must list at least one flag (or leave the key out to match without one)' })
      .optional(),
    args: patterns,
  },
  'a mapping with program, and optionally subcommand, flags and args',
).transform(
  (p): ProgramMatch => ({
    program: p.program,
    ...(p.subcommand === undefined ? {} : { subcommand: p.subcommand }),
    ...(p.flags === undefined ? {} : { flags: p.flags }),
    ...(p.args === undefined ? {} : { args: p.args }),
  }),
);
const programs = z
  .array(programEntry, { error: (iss) => `must be a list (got ${got(iss.input)})` })
  .min(1, { error: 'must list at least one program (or leave the key out)' })
  .optional();

const risk = mapping(
  {
    name: nonEmpty.max(80, { error: 'must be at most 80 characters' }),
    match: mapping(
      { commands: patterns, paths: patterns, programs, targets: patterns, tools: patterns },
      'a mapping with commands, paths, programs, targets and/or tools',
    ).refine((m) => Object.values(m).some((value) => value !== undefined), {
      error: 'must list at least one of commands, paths, programs, targets and tools',
    }),
    warning: nonEmpty.max(150, { error: 'must be at most 150 characters' }),
    quorum,
    approvers: approvers('to let the route’s approvers decide'),
  },
  'a mapping with name, match and warning',
).transform(
  (r): RiskRule => ({
    name: r.name,
    match: Object.fromEntries(Object.entries(r.match).filter(([, v]) => v !== undefined)),
    warning: r.warning,
    ...(r.quorum === undefined ? {} : { quorum: r.quorum }),
    ...(r.approvers === undefined ? {} : { approvers: r.approvers }),
  }),
);

function validTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const host = mapping(
  {
    id: nonEmpty.regex(HOST_ID, {
      error: (iss) => `must be letters, digits, ".", "_" or "-" (at most 64, got ${got(iss.input)})`,
    }),
    command: nonEmpty,
    sandboxMode: nonEmpty.optional(),
    cwd: nonEmpty.optional(),
    env: z
      .record(
        z.string().regex(ENV_NAME),
        z.union([z.string(), z.number(), z.boolean()], {
          error: (iss) => `must be a string, number or boolean (got ${got(iss.input)})`,
        }),
        {
          error: (iss) =>
            iss.code === 'invalid_key'
              ? 'must be an environment variable name (letters, digits and _, not starting with a digit)'
              : `must be a mapping of variable names to values (got ${got(iss.input)})`,
        },
      )
      .optional(),
    owner: nonEmpty
      .regex(USER_ID, { error: (iss) => `must be a Slack user ID such as U0123ABCD (got ${got(iss.input)})` })
      .optional(),
  },
  'a mapping with id and command',
);
type HostEntry = z.infer<typeof host>;

const file = mapping(
  {
    hosts: z
      .array(host, { error: (iss) => `must be a list (got ${got(iss.input)})` })
      .min(1, { error: 'must list at least one host (or leave the key out and set MSP_HOST_COMMAND)' })
      .optional(),
    routes: z.array(route, { error: (iss) => `must be a list (got ${got(iss.input)})` }).optional(),
    admins: userIds,
    risks: z.array(risk, { error: (iss) => `must be a list (got ${got(iss.input)})` }).optional(),
  },
  'a mapping such as "routes: [...]"',
);

/** `routes[1].match.tools[0]`; empty for the top level. */
function pathText(path: readonly PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`))
    .join('');
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const at = pathText(issue.path);
  if (issue.code === 'unrecognized_keys') {
    return at ? `${at}: ${issue.message}` : `top-level ${issue.message}`;
  }
  // The path ends in the offending key itself, which reads better quoted after its mapping.
  if (issue.code === 'invalid_key') {
    const key = issue.path.at(-1);
    return `${pathText(issue.path.slice(0, -1))} key ${JSON.stringify(String(key))} ${issue.message}`;
  }
  if (issue.code === 'invalid_type' && issue.input === undefined) return `${at} is required`;
  return `${at || 'the file'} ${issue.message}`;
}

function fail(path: string, problem: string): never {
  throw new ConfigError('COUNTERSIGN_CONFIG', `COUNTERSIGN_CONFIG (${path}): ${problem}`);
}

/** The defaults a host of the file takes from the environment. */
export interface HostDefaults {
  sandboxMode: string;
}

function hostSpec(entry: HostEntry, defaults: HostDefaults): HostSpec {
  return {
    id: entry.id,
    command: entry.command,
    sandboxMode: entry.sandboxMode ?? defaults.sandboxMode,
    ...(entry.cwd === undefined ? {} : { cwd: entry.cwd }),
    ...(entry.env === undefined
      ? {}
      : { env: Object.fromEntries(Object.entries(entry.env).map(([k, v]) => [k, String(v)])) }),
    ...(entry.owner === undefined ? {} : { owner: entry.owner }),
  };
}

/** Checks what one key cannot check alone: unique host ids, routes naming hosts that exist. */
function crossCheck(path: string, parsed: z.infer<typeof file>): void {
  const riskNames = new Set<string>();
  parsed.risks?.forEach((r, i) => {
    // The audit stream and the card name a rule: two of one name could not be told apart.
    if (riskNames.has(r.name))
      fail(path, `risks[${i}].name ${shown(r.name)} is used by an earlier rule: names must be unique`);
    riskNames.add(r.name);
  });
  const ids = new Set<string>();
  parsed.hosts?.forEach((entry, i) => {
    if (ids.has(entry.id))
      fail(path, `hosts[${i}].id ${shown(entry.id)} is used by an earlier host: host ids must be unique`);
    ids.add(entry.id);
  });
  parsed.routes?.forEach((r, i) => {
    r.escalation?.forEach((s, j) => {
      if (s.target === 'oncall' && !r.oncall)
        fail(path, `routes[${i}].escalation[${j}].target is oncall, but routes[${i}] has no oncall: add one`);
    });
  });
  // Without `hosts` the file keeps today's meaning, where a route may name any host id.
  if (!parsed.hosts) return;
  parsed.routes?.forEach((r, i) => {
    r.match?.hosts?.forEach((id, j) => {
      if (!ids.has(id)) {
        fail(
          path,
          `routes[${i}].match.hosts[${j}] names host ${shown(id)}, which is not in hosts (${[...ids].join(', ')})`,
        );
      }
    });
  });
}

/** Reads and checks a COUNTERSIGN_CONFIG file. Throws a one-line ConfigError. */
export function loadConfigFile(path: string, defaults: HostDefaults): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    fail(
      path,
      `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}): fix the path or unset it`,
    );
  }
  const doc = parseDocument(text);
  const yamlError = doc.errors[0];
  // The first line carries the reason and position; the rest is a multi-line excerpt of the file.
  if (yamlError) fail(path, `invalid YAML: ${yamlError.message.split('\n')[0]?.replace(/:$/, '')}`);

  // An empty file configures nothing, the same as having no file.
  const result = file.safeParse(doc.toJS() ?? {}, { reportInput: true });
  if (!result.success) {
    // A misspelt key also makes the real one look missing, so the typo is the better thing to report.
    const issue = result.error.issues.find((i) => i.code === 'unrecognized_keys') ?? result.error.issues[0];
    fail(path, issue ? describeIssue(issue) : 'is not valid');
  }
  crossCheck(path, result.data);
  return {
    ...(result.data.hosts ? { hosts: result.data.hosts.map((entry) => hostSpec(entry, defaults)) } : {}),
    routes: result.data.routes ?? [],
    admins: result.data.admins ?? [],
    risks: result.data.risks ?? [],
  };
}
