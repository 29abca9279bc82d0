// `risks`: rules that mark an approval as risky, with a warning on its card and, optionally, a
// higher quorum or other approvers.

import { z } from 'zod';
import type { ProgramMatch, RiskRule } from '../../domain/route.js';
import { hostPattern } from '../../routing/hostNames.js';
import { approvers, globs, got, mapping, nonEmpty, quorum } from './fields.js';

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
    args: globs('risks.programs.args'),
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

export const risk = mapping(
  {
    name: nonEmpty.max(80, { error: 'must be at most 80 characters' }),
    match: mapping(
      {
        commands: globs('risks.commands'),
        paths: globs('risks.paths'),
        programs,
        targets: globs('risks.targets', hostPattern),
        tools: globs('risks.tools'),
      },
      'a mapping with commands, paths, programs, targets and/or tools',
    ).refine((m) => Object.values(m).some((value) => value !== undefined), {
      error: 'must list at least one of commands, paths, programs, targets and tools',
    }),
    warning: nonEmpty.max(150, { error: 'must be at most 150 characters' }),
    quorum,
    approvers: approvers('to let the route’s approvers decide'),
    // The only kind of confirmation there is; a word of its own so that others can follow.
    confirm: z
      .literal('type', {
        error: (iss) =>
          `must be type (approving then asks for the target to be typed), or left out (got ${got(iss.input)})`,
      })
      .optional(),
  },
  'a mapping with name, match and warning',
).transform(
  (r): RiskRule => ({
    name: r.name,
    match: Object.fromEntries(Object.entries(r.match).filter(([, v]) => v !== undefined)),
    warning: r.warning,
    ...(r.quorum === undefined ? {} : { quorum: r.quorum }),
    ...(r.approvers === undefined ? {} : { approvers: r.approvers }),
    ...(r.confirm === undefined ? {} : { confirm: r.confirm }),
  }),
);
