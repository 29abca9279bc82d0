import type { KnownBlock } from '@slack/types';
import { needsQuorum } from '../domain/decisionWords.js';
import { type ApprovalRecord, principalsFor, votersFor } from '../domain/record.js';
import { packSections } from './blocks.js';
import { clip, inlineCode } from './escape.js';
import { mentionUser } from './mentionUser.js';
import { clipProse } from './prose.js';

// What makes a card ask for more care than one click: the risk rules the request matched, and
// how far a quorum has come. Shown just above the buttons, where the decision is made.

/**
 * "⚠ Rewrites shared history (risk rule `force-push`)", one line per rule matched; a rule with
 * `confirm: type` says so, so that the modal an approving press opens is no surprise.
 */
export function riskLines(record: Pick<ApprovalRecord, 'risks'>): string[] {
  return (record.risks ?? []).map((risk) => {
    const confirm = risk.confirm === 'type' ? ': approving asks you to type its target' : '';
    return `:warning: *${clip(risk.warning, 150)}* (risk rule ${inlineCode(risk.name, 80)}${confirm})`;
  });
}

/**
 * "1 of 2 approvals: @alice" for each approving choice someone picked at the current stage; with
 * nobody yet, how many it takes. The voters are mentioned: they clicked, and a card edit pings no one.
 */
export function quorumLines(record: ApprovalRecord, quorum: number): string[] {
  if (quorum <= 1 || record.phase !== 'pending') return [];
  const stage = record.currentRequirementId.sourceIndex;
  const approving = record.availableChoices.filter((c) => needsQuorum(c.decision));
  const lines: string[] = [];
  for (const choice of approving) {
    const voters = votersFor(record, stage, choice.choiceId).map(mentionUser);
    if (voters.length === 0) continue;
    const which = approving.length > 1 ? ` for ${clipProse(choice.label || choice.choiceId, 75)}` : '';
    // A delegate's vote and the vote of the person away they stand in for count once.
    const counted = principalsFor(record, stage, choice.choiceId).size;
    lines.push(`*${counted} of ${quorum} approvals*${which}: ${voters.join(', ')}`);
  }
  if (lines.length === 0) {
    lines.push(`*Needs ${quorum} approvals:* ${quorum} different approvers must pick the same choice.`);
  }
  return lines;
}

/** The risk warnings and the quorum's progress, or nothing when neither applies. */
export function renderSafeguards(record: ApprovalRecord, quorum: number): KnownBlock[] {
  return packSections([...riskLines(record), ...quorumLines(record, quorum)]);
}
