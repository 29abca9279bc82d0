import type { KnownBlock } from '@slack/types';
import { decisionTone } from '../domain/decisionWords.js';
import type { RememberOffer } from '../domain/grants/match.js';
import { cardFacts, type RenderedMessage } from '../domain/messages.js';
import type { ApprovalRecord } from '../domain/record.js';
import type { EscalationStep } from '../domain/route.js';
import { prettyArgs } from '../util/toJson.js';
import { divider, header, packSections, section } from './blocks.js';
import { BUDGET_LEVELS, type CardBudget } from './budget.js';
import { clip, codeBlock, codeBlockFits, inlineCode } from './escape.js';
import { countBlockText, MAX_CARD_FALLBACK_TEXT, MAX_HEADER_TEXT, MAX_TOTAL_BLOCK_TEXT } from './limits.js';
import { truncateProse } from './prose.js';
import { renderApprovers, type ShownApproverNames } from './renderApprovers.js';
import { MAX_SHOWN_CHOICES, renderChoices } from './renderChoices.js';
import { renderCuaFacts } from './renderCuaFacts.js';
import { escalationLine } from './renderEscalation.js';
import { intakeCut, viewFullBlock } from './renderFullView.js';
import { renderBadges, renderSessionContext } from './renderMeta.js';
import { renderSafeguards } from './renderSafeguards.js';
import { slaLine } from './renderSla.js';
import { renderStatus } from './renderStatus.js';
import { renderSubject } from './renderSubject.js';
import { subjectSummary } from './subjectSummary.js';

// A card is a pure function of the record: the Slack message is re-rendered from it on every
// change, never patched. Everything the agent or host wrote is escaped on the way in.

function headline(record: ApprovalRecord): string {
  switch (record.phase) {
    case 'reviewing':
      return 'Under automated review';
    case 'pending':
      return 'Approval needed';
    case 'deciding':
      return 'Being decided';
    case 'unavailable':
      return 'Cannot be decided from Slack now';
    case 'resolved': {
      const decision = record.resolution?.decision;
      if (decision === undefined) return 'Resolved';
      if (decision === 'timedOut' || record.resolution?.via === 'timeout') return 'Timed out';
      const tone = decisionTone(decision);
      return tone === 'approve' ? 'Approved' : tone === 'reject' ? 'Rejected' : 'Decided';
    }
    case 'superseded':
      return 'Superseded';
    case 'orphaned':
      return 'Orphaned';
    default:
      return 'Approval';
  }
}

function fallbackText(record: ApprovalRecord): string {
  const what = subjectSummary(record);
  const raw = `${headline(record)}: ${record.tool}${what ? ` — ${what}` : ''}`;
  return truncateProse(raw.replace(/\s+/g, ' '), MAX_CARD_FALLBACK_TEXT);
}

function renderReasons(record: ApprovalRecord, budget: CardBudget): KnownBlock[] {
  const lines: string[] = [];
  if (record.reason) lines.push(`*Reason:* ${truncateProse(record.reason, budget.reason)}`);
  if (record.reviewerReason)
    lines.push(`*Reviewer's reason:* ${truncateProse(record.reviewerReason, budget.reason)}`);
  return packSections(lines);
}

/** The stage a decision would target, while one can still be made. */
function currentIndex(record: ApprovalRecord): number | undefined {
  const open =
    record.phase === 'pending' ||
    record.phase === 'deciding' ||
    record.phase === 'reviewing' ||
    record.phase === 'unavailable';
  return open ? record.currentRequirementId.sourceIndex : undefined;
}

/** What a card shows besides its record. */
export interface CardOptions {
  now: Date;
  /** Who may decide, by name; left out, the card names no approvers. */
  approvers?: ShownApproverNames;
  /** Name the host on the card: the bot runs more than one. */
  showHost?: boolean;
  /** Offer "don't ask again" beside the host's choices (see RememberOffer). */
  remember?: RememberOffer;
  /** The route's escalation ladder: the card says what fired and what comes next. */
  escalation?: readonly EscalationStep[];
  /** Distinct approvers an approving choice needs (the route's, raised by risk rules); 1 when absent. */
  quorum?: number;
  /** The route's `sla` (ms): the card says when it is due, then whether it was kept. */
  slaMs?: number;
}

interface Prepared {
  record: ApprovalRecord;
  remember: RememberOffer | undefined;
  approvers: ShownApproverNames | undefined;
  /** rawArgs pretty-printed once: build() runs per level, and rawArgs may be hundreds of KB. */
  args: string;
  now: Date;
  showHost: boolean;
  escalation: readonly EscalationStep[];
  quorum: number;
  slaMs: number | undefined;
}

function build(
  { record, args, now, approvers, showHost, remember, escalation, quorum, slaMs }: Prepared,
  budget: CardBudget,
  maxChoices: number,
): RenderedMessage {
  const subject = renderSubject(record.subject, currentIndex(record), budget);
  const facts = [`*Tool:* ${inlineCode(record.tool, budget.field)}`];
  if (record.title) facts.push(`*Title:* ${truncateProse(record.title, budget.title)}`);
  facts.push(...subject.facts);

  const blocks: KnownBlock[] = [
    header(clip(`${headline(record)}: ${record.tool}`, MAX_HEADER_TEXT)),
    ...packSections(facts),
    ...subject.blocks,
  ];
  if (record.cuaCardFacts) blocks.push(...renderCuaFacts(record.cuaCardFacts, budget));
  if (args !== '') {
    blocks.push(section(`*Arguments*\n${codeBlock(args, budget.rawArgs)}`));
  }
  // Whatever was shortened, here or at intake, can be read whole (and decided) in a modal.
  if (subject.shortened || intakeCut(record) || (args !== '' && !codeBlockFits(args, budget.rawArgs))) {
    blocks.push(viewFullBlock(record));
  }
  blocks.push(...renderReasons(record, budget));
  blocks.push(...renderBadges(record, budget));
  blocks.push(...renderSessionContext(record, now, budget, showHost));
  // Only while someone may still decide: on a final card it would read as a pending question.
  if (currentIndex(record) !== undefined) blocks.push(...renderApprovers(approvers, budget));
  const ladder = escalationLine(record.escalation, escalation, now, currentIndex(record) !== undefined);
  if (ladder) blocks.push(section(ladder));
  const sla = slaLine(record, slaMs, now, currentIndex(record) !== undefined);
  if (sla) blocks.push(section(sla));
  blocks.push(divider());
  blocks.push(...renderStatus(record, budget));
  blocks.push(...renderSafeguards(record, quorum));
  if (record.phase === 'pending') blocks.push(...renderChoices(record, budget, maxChoices, remember));
  return { text: fallbackText(record), blocks, facts: cardFacts(record) };
}

/**
 * The Slack card for an approval in its current phase. Sizes are chosen so the message keeps
 * every Block Kit limit whatever the host sends: the first budget level whose card fits wins,
 * and as a last resort fewer buttons are shown (the rest named in a note).
 */
export function renderCard(record: ApprovalRecord, opts: CardOptions): RenderedMessage {
  const prepared: Prepared = {
    record,
    args: prettyArgs(record.rawArgs),
    now: opts.now,
    showHost: opts.showHost ?? false,
    approvers: opts.approvers,
    remember: opts.remember,
    escalation: opts.escalation ?? [],
    quorum: opts.quorum ?? 1,
    slaMs: opts.slaMs,
  };
  let card: RenderedMessage | undefined;
  for (const budget of BUDGET_LEVELS) {
    card = build(prepared, budget, MAX_SHOWN_CHOICES);
    if (countBlockText(card.blocks) <= MAX_TOTAL_BLOCK_TEXT) return card;
  }
  const least = BUDGET_LEVELS[BUDGET_LEVELS.length - 1]!;
  for (const maxChoices of [50, 25, 10, 0]) {
    card = build(prepared, least, maxChoices);
    if (countBlockText(card.blocks) <= MAX_TOTAL_BLOCK_TEXT) return card;
  }
  return card!;
}
