import type { KnownBlock } from '@slack/types';
import type { ApprovalSubject } from '../msp/protocol.js';
import { section } from './blocks.js';
import type { CardBudget } from './budget.js';
import { clip, codeBlock, inlineCode } from './escape.js';
import { renderShell } from './renderShell.js';
import { toJson } from './toJson.js';

/** One-line facts go in the card's fact list; bigger things come back as their own blocks. */
export interface RenderedSubject {
  facts: string[];
  blocks: KnownBlock[];
}

const NOT_GIVEN = '_(not given)_';

function code(value: string | undefined, budget: CardBudget): string {
  return value === undefined ? NOT_GIVEN : inlineCode(value, budget.field);
}

/** protocol://host:port, as hosts themselves render a network subject. */
export function networkAddress(subject: ApprovalSubject): string | undefined {
  if (subject.host === undefined) return undefined;
  const scheme = subject.protocol ? `${subject.protocol}://` : '';
  const port = subject.port !== undefined ? `:${subject.port}` : '';
  return `${scheme}${subject.host}${port}`;
}

function origin(subject: ApprovalSubject, budget: CardBudget): string | undefined {
  if (!subject.origin) return undefined;
  const o = subject.origin as Record<string, unknown>;
  const parts = [clip(String(subject.origin.kind), 40)];
  if (typeof o.command === 'string') parts.push(inlineCode(o.command, budget.field));
  if (typeof o.url === 'string') parts.push(inlineCode(o.url, budget.field));
  return `*Origin:* ${parts.join(' ')}`;
}

/**
 * The subject by kind. `currentIndex` is the stage being decided (shell), if any. A kind we do
 * not know is shown as sent, with a note, and is never treated as safe.
 */
export function renderSubject(
  subject: ApprovalSubject,
  currentIndex: number | undefined,
  budget: CardBudget,
): RenderedSubject {
  const facts: string[] = [];
  const blocks: KnownBlock[] = [];
  switch (subject.kind) {
    case 'shell':
      if (subject.workspaceRoot) facts.push(`*Workspace:* ${code(subject.workspaceRoot, budget)}`);
      blocks.push(...renderShell(subject, currentIndex, budget));
      break;
    case 'fileAccess':
      facts.push(`*File:* ${code(subject.path, budget)}`);
      facts.push(`*Access:* ${subject.access === undefined ? NOT_GIVEN : clip(subject.access, 60)}`);
      break;
    case 'network': {
      facts.push(`*Connects to:* ${code(networkAddress(subject), budget)}`);
      const from = origin(subject, budget);
      if (from) facts.push(from);
      break;
    }
    case 'process':
      facts.push(`*Process:* ${code(subject.target, budget)}`);
      break;
    case 'unixSocket':
      facts.push(`*Unix socket:* ${code(subject.path ?? subject.target, budget)}`);
      if (subject.path !== undefined && subject.target !== undefined && subject.target !== subject.path) {
        facts.push(`*Target:* ${code(subject.target, budget)}`);
      }
      break;
    case 'tool':
      facts.push(`*Tool call:* ${code(subject.toolName, budget)}`);
      break;
    case 'computerUseTakeover':
      facts.push('*Computer use:* the agent wants to take over the screen');
      if (subject.holder !== undefined) {
        blocks.push(
          section(`*Current lock holder*\n${codeBlock(toJson(subject.holder, 2), budget.subjectJson)}`),
        );
      }
      break;
    default:
      facts.push(
        `*Kind:* ${inlineCode(subject.kind, 80)} — not a kind this bot knows. It is shown as the host sent it and is never approved automatically.`,
      );
      if (subject.toolName !== undefined) facts.push(`*Tool name:* ${code(subject.toolName, budget)}`);
      blocks.push(section(`*Subject as sent*\n${codeBlock(toJson(subject, 2), budget.subjectJson)}`));
      break;
  }
  return { facts, blocks };
}
