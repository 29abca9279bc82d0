import type { KnownBlock } from '@slack/types';
import { asciiHost, networkAddress } from '../domain/networkAddress.js';
import type { ApprovalSubject } from '../msp/protocol.js';
import { toJson } from '../util/toJson.js';
import { section } from './blocks.js';
import type { CardBudget } from './budget.js';
import { codeBlock, codeBlockFits, inlineCode, inlineCodeFits } from './escape.js';
import { clipProse } from './prose.js';
import { renderShell } from './renderShell.js';

/** One-line facts go in the card's fact list; bigger things come back as their own blocks. */
export interface RenderedSubject {
  facts: string[];
  blocks: KnownBlock[];
  /** Something of the subject (command, stages, path, target) shows cut: "View full" shows it. */
  shortened: boolean;
}

const NOT_GIVEN = '_(not given)_';

function code(value: string | undefined, budget: CardBudget): string {
  return value === undefined ? NOT_GIVEN : inlineCode(value, budget.field);
}

function origin(subject: ApprovalSubject, budget: CardBudget): string | undefined {
  if (!subject.origin) return undefined;
  const o = subject.origin as Record<string, unknown>;
  const parts = [clipProse(String(subject.origin.kind), 40)];
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
  let shortened = false;
  // The texts the full view shows (domain/fullParts.ts), checked against the room they have here.
  const field = (value: string | undefined) => {
    if (value !== undefined && !inlineCodeFits(value, budget.field)) shortened = true;
  };
  const json = (value: string) => {
    if (!codeBlockFits(value, budget.subjectJson)) shortened = true;
  };
  switch (subject.kind) {
    case 'shell': {
      if (subject.workspaceRoot) facts.push(`*Workspace:* ${code(subject.workspaceRoot, budget)}`);
      field(subject.workspaceRoot);
      const shell = renderShell(subject, currentIndex, budget);
      blocks.push(...shell.blocks);
      shortened ||= shell.shortened;
      break;
    }
    case 'fileAccess':
      facts.push(`*File:* ${code(subject.path, budget)}`);
      field(subject.path);
      facts.push(`*Access:* ${subject.access === undefined ? NOT_GIVEN : clipProse(subject.access, 60)}`);
      break;
    case 'network': {
      const ascii = asciiHost(subject);
      const shownAscii = ascii === undefined ? '' : ` (${inlineCode(ascii, budget.field)})`;
      facts.push(`*Connects to:* ${code(networkAddress(subject), budget)}${shownAscii}`);
      field(networkAddress(subject));
      field(ascii);
      const from = origin(subject, budget);
      if (from) facts.push(from);
      break;
    }
    case 'process':
      facts.push(`*Process:* ${code(subject.target, budget)}`);
      field(subject.target);
      break;
    case 'unixSocket':
      facts.push(`*Unix socket:* ${code(subject.path ?? subject.target, budget)}`);
      field(subject.path);
      field(subject.target);
      if (subject.path !== undefined && subject.target !== undefined && subject.target !== subject.path) {
        facts.push(`*Target:* ${code(subject.target, budget)}`);
      }
      break;
    case 'tool':
      facts.push(`*Tool call:* ${code(subject.toolName, budget)}`);
      field(subject.toolName);
      break;
    case 'computerUseTakeover':
      facts.push('*Computer use:* the agent wants to take over the screen');
      if (subject.holder !== undefined) {
        const holder = toJson(subject.holder, 2);
        blocks.push(section(`*Current lock holder*\n${codeBlock(holder, budget.subjectJson)}`));
        json(holder);
      }
      break;
    default: {
      facts.push(
        `*Kind:* ${inlineCode(subject.kind, 80)} — not a kind this bot knows. It is shown as the host sent it and is never approved automatically.`,
      );
      if (subject.toolName !== undefined) facts.push(`*Tool name:* ${code(subject.toolName, budget)}`);
      const sent = toJson(subject, 2);
      blocks.push(section(`*Subject as sent*\n${codeBlock(sent, budget.subjectJson)}`));
      json(sent);
      break;
    }
  }
  return { facts, blocks, shortened };
}
