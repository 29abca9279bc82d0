// `hosts`: the MSP hosts to supervise, each on its own. Without the key MSP_HOST_COMMAND is the
// one host (config.ts).

import { statSync } from 'node:fs';
import { z } from 'zod';
import type { HostSpec } from '../../domain/route.js';
import { got, mapping, nonEmpty, USER_ID } from './fields.js';

const HOST_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const host = mapping(
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
        z
          .union([z.string(), z.number(), z.boolean()], {
            error: (iss) => `must be a string, number or boolean (got ${got(iss.input)})`,
          })
          // spawn() refuses it on every start; said here once, by name only (it may be a secret).
          .refine((value) => typeof value !== 'string' || !value.includes('\0'), {
            error: 'contains a NUL byte, which an environment variable cannot hold: remove it',
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

/** The defaults a host of the file takes from the environment. */
export interface HostDefaults {
  sandboxMode: string;
}

export function hostSpec(entry: HostEntry, defaults: HostDefaults): HostSpec {
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

/**
 * Why `cwd` cannot be a host's working directory, or undefined when it can. Checked at start-up:
 * spawn says only "spawn /bin/sh ENOENT" for a missing one, which reads as the command's fault,
 * and says it again on every start.
 */
export function cwdProblem(cwd: string): string | undefined {
  try {
    return statSync(cwd).isDirectory() ? undefined : 'is not a directory';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'does not exist';
    return code === 'ENOTDIR' ? 'is not a directory' : `cannot be looked at (${code ?? 'error'})`;
  }
}
