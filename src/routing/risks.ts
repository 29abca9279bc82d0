import picomatch from 'picomatch';
import type { RiskMark } from '../domain/record.js';
import type { Approvers, RiskRule } from '../domain/route.js';
import type { ApprovalSubject } from '../msp/protocol.js';
import { globOptions } from './globs.js';
import { hostForms, hostPattern } from './hostNames.js';
import { type Invocations, invocations } from './invocations.js';
import { programMatcher } from './programs.js';
import { pathMatcher } from './riskPaths.js';
import { shellCommands, UnreadableCommand } from './shellWords.js';

// Risk rules (COUNTERSIGN_CONFIG `risks`): requests that need more care than their route gives.
// They are matched on what the host sent, before intake masks or cuts anything, so a command too
// long for a card cannot hide its dangerous part past the cut. One request has many spellings (a
// host's case, a relative path, a program's path or wrapper): each field reads its value in every
// spelling a pattern may be written for, so that a rule that covers one spelling covers them all.
// Every field ignores case (globs.ts says why).

/** What a risk rule is matched on: the request as the host sent it. */
export interface RiskInput {
  tool: string;
  subject: ApprovalSubject;
  /** What relative paths are relative to: the subject's own, else the session's; often unknown. */
  workspaceRoot?: string;
}

/** A request's values as the rules read them, each worked out once, when a rule first asks. */
class RiskView {
  private commandTexts?: string[];
  private programRuns?: Invocations;
  private hostNames?: string[];

  constructor(readonly input: RiskInput) {}

  /** The commands of a shell subject: each stage's argv joined by spaces, else the whole command. */
  commands(): string[] {
    this.commandTexts ??= commandTextsOf(this.input.subject);
    return this.commandTexts;
  }

  invocations(): Invocations {
    this.programRuns ??= programRunsOf(this.input.subject);
    return this.programRuns;
  }

  path(): string | undefined {
    const { subject } = this.input;
    return subject.kind === 'fileAccess' || subject.kind === 'unixSocket' ? subject.path : undefined;
  }

  targets(): string[] {
    const { subject } = this.input;
    this.hostNames ??=
      subject.kind === 'network' && subject.host !== undefined ? hostForms(subject.host) : [];
    return this.hostNames;
  }
}

function commandTextsOf(subject: ApprovalSubject): string[] {
  if (subject.kind !== 'shell') return [];
  const stages = subject.stages?.map((stage) => stage.argv.join(' ')) ?? [];
  if (stages.length > 0) return stages;
  return subject.command === undefined ? [] : [subject.command];
}

/**
 * The programs a shell subject runs: the host's stages and its command as the shell splits it
 * (both, since a host's split is its own), and what each runs through a wrapper.
 */
function programRunsOf(subject: ApprovalSubject): Invocations {
  if (subject.kind !== 'shell') return { runs: [], tangled: false };
  let unreadable = false;
  let commands: string[][] = [];
  try {
    commands = subject.command === undefined ? [] : shellCommands(subject.command);
  } catch (error) {
    // Text that cannot be split could run anything: it is read as matching (see invocations.ts).
    if (!(error instanceof UnreadableCommand)) throw error;
    unreadable = true;
  }
  const stages = subject.stages ?? [];
  const each = [...stages.map((stage) => stage.argv), ...commands].map((argv) => invocations(argv));
  // A stage the host could not parse to its end (a substitution, …) may be one unsplit fragment
  // (`["$(printf git) push -f"]`): its words are not the program's argv.
  const unparsed = stages.some((stage) => stage.argvComplete !== true);
  return {
    runs: each.flatMap((read) => read.runs),
    tangled: unreadable || unparsed || each.some((read) => read.tangled),
  };
}

type Test = (view: RiskView) => boolean;

/** Any of `values` matches. */
function anyOf(values: (view: RiskView) => readonly string[], isMatch: (value: string) => boolean): Test {
  return (view) => values(view).some(isMatch);
}

/** Every listed field must match (as in routes); within a field, any value and any pattern. */
function compile(rule: RiskRule): Test {
  const { commands, paths, programs, targets, tools } = rule.match;
  const tests: Test[] = [];
  // A command is text, not a path: `*` crosses "/" (`git push --force*` matches any remote).
  if (commands) tests.push(anyOf((v) => v.commands(), picomatch(commands, globOptions('risks.commands'))));
  if (paths) {
    const matches = pathMatcher(paths);
    tests.push((v) => {
      const path = v.path();
      return path !== undefined && matches(path, v.input.workspaceRoot);
    });
  }
  if (programs) {
    const entries = programs.map(programMatcher);
    // A command line too tangled to read to the end could run anything: it matches.
    tests.push((v) => {
      const { runs, tangled } = v.invocations();
      return tangled || runs.some((run) => entries.some((matches) => matches(run)));
    });
  }
  if (targets)
    tests.push(anyOf((v) => v.targets(), picomatch(targets.map(hostPattern), globOptions('risks.targets'))));
  if (tools) tests.push(anyOf((v) => [v.input.tool], picomatch(tools, globOptions('risks.tools'))));
  return (view) => tests.length > 0 && tests.every((test) => test(view));
}

/** The configured risk rules, compiled once. */
export class RiskRules {
  private readonly rules: { rule: RiskRule; matches: Test }[];

  constructor(rules: readonly RiskRule[]) {
    this.rules = rules.map((rule) => ({ rule, matches: compile(rule) }));
  }

  get size(): number {
    return this.rules.length;
  }

  /** What every matching rule asks of this request, in the file's order; empty when none match. */
  marksFor(input: RiskInput): RiskMark[] {
    const marks: RiskMark[] = [];
    const view = new RiskView(input);
    for (const { rule, matches } of this.rules) {
      if (!matches(view)) continue;
      marks.push({
        name: rule.name,
        warning: rule.warning,
        ...(rule.quorum === undefined ? {} : { quorum: rule.quorum }),
        ...(rule.approvers === undefined ? {} : { approvers: rule.approvers }),
        ...(rule.confirm === undefined ? {} : { confirm: rule.confirm }),
      });
    }
    return marks;
  }

  /** Every user and user group the rules name as approvers (the card shows their names). */
  approvers(): { approvers: Approvers } {
    return {
      approvers: {
        users: this.rules.flatMap(({ rule }) => rule.approvers?.users ?? []),
        usergroups: this.rules.flatMap(({ rule }) => rule.approvers?.usergroups ?? []),
      },
    };
  }
}
