import picomatch from 'picomatch';
import type { ApprovalSubject } from '../msp/protocol.js';
import type { RiskMark } from '../store/record.js';
import { hostForms, hostPattern } from './hostNames.js';
import { pathMatcher } from './riskPaths.js';
import type { Approvers, RiskRule } from './route.js';

// Risk rules (COUNTERSIGN_CONFIG `risks`): requests that need more care than their route gives.
// They are matched on what the host sent, before intake masks or cuts anything, so a command too
// long for a card cannot hide its dangerous part past the cut.

/** What a risk rule is matched on: the request as the host sent it. */
export interface RiskInput {
  tool: string;
  subject: ApprovalSubject;
  /** What relative paths are relative to: the subject's own, else the session's; often unknown. */
  workspaceRoot?: string;
}

type Test = (input: RiskInput) => boolean;

/** The commands of a shell subject: each stage's argv joined by spaces, else the whole command. */
function commandsOf(subject: ApprovalSubject): string[] {
  if (subject.kind !== 'shell') return [];
  const stages = subject.stages?.map((stage) => stage.argv.join(' ')) ?? [];
  if (stages.length > 0) return stages;
  return subject.command === undefined ? [] : [subject.command];
}

function pathOf(subject: ApprovalSubject): string | undefined {
  return subject.kind === 'fileAccess' || subject.kind === 'unixSocket' ? subject.path : undefined;
}

function targetsOf(subject: ApprovalSubject): string[] {
  return subject.kind === 'network' && subject.host !== undefined ? hostForms(subject.host) : [];
}

/** Any of `values` matches any of `patterns`. */
function anyOf(values: (input: RiskInput) => string[], isMatch: (value: string) => boolean): Test {
  return (input) => values(input).some(isMatch);
}

/** Every listed field must match (as in routes); within a field, any value and any pattern. */
function compile(rule: RiskRule): Test {
  const { commands, paths, targets, tools } = rule.match;
  const tests: Test[] = [];
  // A command is text, not a path: `*` crosses "/" (`git push --force*` matches any remote).
  if (commands)
    tests.push(anyOf((i) => commandsOf(i.subject), picomatch(commands, { bash: true, dot: true })));
  if (paths) {
    const matches = pathMatcher(paths);
    tests.push((i) => {
      const path = pathOf(i.subject);
      return path !== undefined && matches(path, i.workspaceRoot);
    });
  }
  if (targets)
    tests.push(anyOf((i) => targetsOf(i.subject), picomatch(targets.map(hostPattern), { dot: true })));
  if (tools) tests.push(anyOf((i) => [i.tool], picomatch(tools, { dot: true })));
  return (input) => tests.length > 0 && tests.every((test) => test(input));
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
    for (const { rule, matches } of this.rules) {
      if (!matches(input)) continue;
      marks.push({
        name: rule.name,
        warning: rule.warning,
        ...(rule.quorum === undefined ? {} : { quorum: rule.quorum }),
        ...(rule.approvers === undefined ? {} : { approvers: rule.approvers }),
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
