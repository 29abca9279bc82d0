import type { NoticeNames, ResolvedRecord } from '../domain/decisionNotice.js';
import { decisionTone } from '../domain/decisionWords.js';
import type { Resolution } from '../domain/record.js';
import { describeResolution } from './describeDecision.js';
import { inlineCode, truncate } from './escape.js';
import { clipProse } from './prose.js';
import { decidedBy, earlierStageLines } from './renderStatus.js';
import { slackDate } from './slackDate.js';

// Feedback is cut well inside Slack's 40,000-character text limit: a notice is a summary, the
// card holds the rest.
const MAX_FEEDBACK = 2_000;

function icon(decision: string): string {
  const tone = decisionTone(decision);
  return tone === 'approve' ? ':white_check_mark:' : tone === 'reject' ? ':no_entry:' : ':grey_question:';
}

/** The label of the button that decided, escaped, when a Slack user's click did. */
function choiceLabel(record: ResolvedRecord): string | undefined {
  const { choiceId } = record.resolution;
  const choice = choiceId ? record.availableChoices.find((c) => c.choiceId === choiceId) : undefined;
  return choice ? clipProse(choice.label, 75) : undefined;
}

function when(resolution: Resolution): string {
  return slackDate(resolution.decidedAt) ?? clipProse(resolution.decidedAt, 60);
}

function feedbackLine(resolution: Resolution, title: string): string[] {
  return resolution.feedback ? [`*${title}:* ${truncate(resolution.feedback, MAX_FEEDBACK)}`] : [];
}

/** The earlier stages' deciders, under a heading, when the command was decided stage by stage. */
function earlierStages(record: ResolvedRecord, names: NoticeNames): string[] {
  const lines = earlierStageLines(record, {
    ...(names.nameOf ? { nameOf: names.nameOf } : {}),
    grants: true,
  });
  return lines.length > 0 ? ['*Earlier stages:*', ...lines.map((line) => `• ${line}`)] : [];
}

/**
 * The audit line posted in a card's thread when its approval is resolved: who decided, with
 * which choice, the feedback, and when.
 */
export function renderThreadLine(record: ResolvedRecord, names: NoticeNames = {}): string {
  const { resolution } = record;
  const label = choiceLabel(record);
  const lines = [
    `${icon(resolution.decision)} *${describeResolution(resolution)}* by ${decidedBy(resolution, names.nameOf)}${label ? `, choosing *${label}*` : ''}, ${when(resolution)}`,
    ...earlierStages(record, names),
    ...feedbackLine(resolution, 'Feedback'),
  ];
  return lines.join('\n');
}

/** Slack's own permalinks only: anything else would be a link text we did not check. */
const PERMALINK = /^https:\/\/[^\s<>|]+$/;

/**
 * The DM to a host's owner when one of their agent's approvals is resolved. `permalink` is the
 * card's, from chat.getPermalink.
 */
export function renderRequesterDm(
  record: ResolvedRecord,
  hostId: string,
  permalink: string | undefined,
  names: NoticeNames = {},
): string {
  const { resolution } = record;
  const label = choiceLabel(record);
  const link = permalink && PERMALINK.test(permalink) ? `<${permalink}|Open the card>` : undefined;
  const lines = [
    `${icon(resolution.decision)} Your agent's request ${inlineCode(record.tool, 100)} on host ${inlineCode(hostId, 100)} was decided: *${describeResolution(resolution)}*`,
    `*Decided by:* ${decidedBy(resolution, names.nameOf)}${label ? ` (*${label}*)` : ''}`,
    ...earlierStages(record, names),
    ...feedbackLine(resolution, 'Reason'),
    `*When:* ${when(resolution)}`,
    ...(link ? [link] : []),
  ];
  return lines.join('\n');
}
