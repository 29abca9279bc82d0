// The COUNTERSIGN_CONFIG file (docs/configuration.md, "The configuration file", shows every key):
//
//   hosts:      optional; each host is supervised on its own. Without it MSP_HOST_COMMAND is the
//               one host, id "default".
//   routes:     first match wins. All listed match fields must match (AND); within a field any
//               pattern may match (OR). A route whose `workspaces` is set never matches an
//               approval whose workspaceRoot is unknown, and matches every one whose root names
//               no directory by its spelling (routing/workspaceRoot.ts); one whose
//               `sessionTitles` is set never matches a session without title or name.
//   admins:     Slack user IDs that may decide anywhere.
//
// Strict keys, one-line errors naming the place, read once at start-up.

import { readFileSync } from 'node:fs';
import { type Document, isPair, isScalar, isSeq, LineCounter, parseDocument, visit } from 'yaml';
import { z } from 'zod';
import type { ConfigFile } from '../domain/route.js';
import { isReservedRouteName } from '../routing/router.js';
import { ConfigError, shown } from './common.js';
import { got, mapping, userIds } from './file/fields.js';
import { cwdProblem, type HostDefaults, host, hostSpec } from './file/hosts.js';
import { unreachableQuorum } from './file/quorums.js';
import { risk } from './file/risks.js';
import { route } from './file/routes.js';

export type { HostDefaults };

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

/**
 * Checks what one key cannot check alone: unique names and host ids, routes that can match,
 * routes naming hosts that exist, quorums that can be reached.
 */
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
  const routeNames = new Set<string>();
  parsed.routes?.forEach((r, i) => {
    // Records and grants keep a route by its name: two of one name, or one taking a name
    // Countersign gives (the fallback's, an unnamed route's), would take another route's.
    if (r.name !== undefined && isReservedRouteName(r.name))
      fail(
        path,
        `routes[${i}].name ${shown(r.name)} is reserved: names in parentheses, unnamed-… and routes[…] are Countersign's own, choose another`,
      );
    if (r.name !== undefined && routeNames.has(r.name))
      fail(
        path,
        `routes[${i}].name ${shown(r.name)} is used by an earlier route: route names must be unique`,
      );
    if (r.name !== undefined) routeNames.add(r.name);
    // First match wins: a route below one without match is never looked at.
    const catchAll = parsed.routes?.findIndex((earlier) => earlier.match === undefined) ?? -1;
    if (catchAll >= 0 && catchAll < i)
      fail(
        path,
        `routes[${i}] can never match: routes[${catchAll}] catches everything (it has no match): give routes[${catchAll}] a match, or move it last`,
      );
    r.escalation?.forEach((s, j) => {
      if (s.target === 'oncall' && !r.oncall)
        fail(path, `routes[${i}].escalation[${j}].target is oncall, but routes[${i}] has no oncall: add one`);
    });
  });
  // Without `hosts` the file keeps today's meaning, where a route may name any host id.
  parsed.routes?.forEach((r, i) => {
    r.match?.hosts?.forEach((id, j) => {
      if (!parsed.hosts || ids.has(id)) return;
      fail(
        path,
        `routes[${i}].match.hosts[${j}] names host ${shown(id)}, which is not in hosts (${[...ids].join(', ')})`,
      );
    });
  });
  // Without `hosts`, the one host (MSP_HOST_COMMAND) has no owner.
  const quorum = unreachableQuorum(
    parsed.routes ?? [],
    parsed.risks ?? [],
    parsed.hosts ?? [],
    parsed.admins ?? [],
  );
  if (quorum) fail(path, quorum);
}

/** Where the first alias (`*name`) that names no earlier anchor is: `hosts[0].env.KEY (line 5, column 20)`. */
function unresolvedAlias(doc: Document, lines: LineCounter): string | undefined {
  let where: string | undefined;
  visit(doc, {
    Alias(_key, node, path) {
      if (node.resolve(doc)) return undefined;
      const keys = path.map((parent, i) => {
        const child = path[i + 1] ?? node;
        if (isSeq(parent)) return `[${parent.items.indexOf(child as never)}]`;
        if (!isPair(parent) || parent.value !== child) return '';
        const key = isScalar(parent.key) ? String(parent.key.value) : '?';
        return i > 2 ? `.${key}` : key;
      });
      const { line, col } = lines.linePos(node.range?.[0] ?? 0);
      where = `${keys.join('') || 'the file'} (line ${line}, column ${col})`;
      return visit.BREAK;
    },
  });
  return where;
}

/**
 * The document as plain values. Aliases are resolved only here, and the YAML library's error for
 * one that names no anchor quotes the alias itself: an unquoted value starting with "*" (a
 * password such as *Xk9q…) is read as one. So the message says where it is, never what it is.
 */
function plainValues(path: string, doc: Document, lines: LineCounter): unknown {
  try {
    return doc.toJS();
  } catch (err) {
    const where = unresolvedAlias(doc, lines);
    if (where) {
      fail(
        path,
        `invalid YAML: ${where} is an alias (a value starting with "*") that names no anchor set before it: quote the value if it is not meant as an alias`,
      );
    }
    fail(
      path,
      `invalid YAML: its aliases (values starting with "*") expand too far or cannot be resolved (${(err as Error).name}): quote each value that is not meant as an alias`,
    );
  }
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
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const yamlError = doc.errors[0];
  // The first line carries the reason and position; the rest is a multi-line excerpt of the file.
  if (yamlError) fail(path, `invalid YAML: ${yamlError.message.split('\n')[0]?.replace(/:$/, '')}`);

  // An empty file configures nothing, the same as having no file.
  const result = file.safeParse(plainValues(path, doc, lines) ?? {}, { reportInput: true });
  if (!result.success) {
    // A misspelt key also makes the real one look missing, so the typo is the better thing to report.
    const issue = result.error.issues.find((i) => i.code === 'unrecognized_keys') ?? result.error.issues[0];
    fail(path, issue ? describeIssue(issue) : 'is not valid');
  }
  crossCheck(path, result.data);
  // Each host's working directory exists: checked once here, not found out on every spawn. Shown
  // whole (a path, not a secret): shortened, its last part, often the typo, would be cut off.
  result.data.hosts?.forEach((entry, i) => {
    const problem = entry.cwd === undefined ? undefined : cwdProblem(entry.cwd);
    if (problem) {
      fail(
        path,
        `hosts[${i}].cwd ${JSON.stringify(entry.cwd)} ${problem}: create the directory or fix the path`,
      );
    }
  });
  return {
    ...(result.data.hosts ? { hosts: result.data.hosts.map((entry) => hostSpec(entry, defaults)) } : {}),
    routes: result.data.routes ?? [],
    admins: result.data.admins ?? [],
    risks: result.data.risks ?? [],
  };
}
