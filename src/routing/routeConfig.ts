// The COUNTERSIGN_CONFIG file (DESIGN §8). Only `routes` is supported so far:
//
//   routes:              # first match wins
//     - name: payments   # optional, shown in logs
//       channel: C0PAYMENTS        # channel ID (C…/G…) or #name, same rule as SLACK_CHANNEL
//       match:                     # optional; a route without match (or with an empty one) catches everything
//         hosts: [ci]              # hostId, exact
//         tools: ["shell", "write_*"]          # glob on the tool name
//         workspaces: ["/srv/payments/**"]     # glob on the session's workspaceRoot
//
// All listed match fields must match (AND); within a field any pattern may match (OR). A route
// whose `workspaces` is set never matches an approval whose workspaceRoot is unknown.

import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { CHANNEL_ID, ConfigError, shown } from '../configCommon.js';

export interface RouteMatch {
  hosts?: string[];
  tools?: string[];
  workspaces?: string[];
}

export interface Route {
  name?: string;
  channel: string;
  /** Absent when the route catches everything (no `match`, or an empty one). */
  match?: RouteMatch;
}

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

const match = mapping({ hosts: patterns, tools: patterns, workspaces: patterns }, 'a mapping')
  .nullish()
  .transform((m): RouteMatch | undefined => {
    const fields = Object.entries(m ?? {}).filter(([, list]) => list !== undefined);
    return fields.length > 0 ? Object.fromEntries(fields) : undefined;
  });

const route = mapping({ name: nonEmpty.optional(), channel, match }, 'a mapping').transform(
  ({ name, channel, match }): Route => ({
    ...(name === undefined ? {} : { name }),
    channel,
    ...(match === undefined ? {} : { match }),
  }),
);

const file = mapping(
  { routes: z.array(route, { error: (iss) => `must be a list (got ${got(iss.input)})` }).optional() },
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
  if (issue.code === 'invalid_type' && issue.input === undefined) return `${at} is required`;
  return `${at || 'the file'} ${issue.message}`;
}

function fail(path: string, problem: string): never {
  throw new ConfigError('COUNTERSIGN_CONFIG', `COUNTERSIGN_CONFIG (${path}): ${problem}`);
}

/** Reads and checks the routes of a COUNTERSIGN_CONFIG file. Throws a one-line ConfigError. */
export function loadRouteConfig(path: string): Route[] {
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
  return result.data.routes ?? [];
}
