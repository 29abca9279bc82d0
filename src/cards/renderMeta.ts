import type { KnownBlock } from '@slack/types';
import type { ApprovalRecord } from '../domain/record.js';
import { context } from './blocks.js';
import type { CardBudget } from './budget.js';
import { inlineCode } from './escape.js';
import { intakeNotes } from './intakeNotes.js';
import { truncateProse } from './prose.js';
import { slackAge } from './slackDate.js';

/** Badges for facts a reviewer should weigh before clicking. */
export function renderBadges(record: ApprovalRecord, budget: CardBudget): KnownBlock[] {
  const badges: string[] = [];
  if (record.protectedWrite) badges.push(':lock: *Protected write*');
  if (record.judgeEscalated) badges.push(':scales: *Escalated by the automated judge*');
  if (record.subagentOrigin) {
    const id = record.subagentOrigin.subagentId;
    badges.push(`:robot_face: *From a subagent*${id ? ` ${inlineCode(id, budget.field)}` : ''}`);
  }
  badges.push(...intakeNotes(record.intake));
  return badges.length > 0 ? [context(badges)] : [];
}

/**
 * Which session asked (and on which host, when the bot runs several), how long ago, and the
 * approval id operators search logs by.
 */
export function renderSessionContext(
  record: ApprovalRecord,
  now: Date,
  budget: CardBudget,
  showHost = false,
): KnownBlock[] {
  const session = record.sessionTitle || record.sessionId;
  const elements = [`Session: ${truncateProse(session, budget.field)}`];
  if (showHost) elements.push(`Host: ${inlineCode(record.hostId, budget.field)}`);
  const age = slackAge(record.openedAt, now);
  if (age) elements.push(`Opened ${age}`);
  elements.push(`Approval ${inlineCode(record.approvalId, 80)}`);
  return [context(elements)];
}
