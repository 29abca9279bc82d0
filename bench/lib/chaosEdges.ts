import type { FakeHost, HostState } from '../../test/support/fakeHost.js';
import type { FakeSlack } from '../../test/support/fakeSlack.js';
import type { AppliedDecide, AuditInput, Click, HostApproval, HostOutcome, SentDecide } from './audit.js';
import { type CardView, cardView } from './cardView.js';
import type { HostWatch } from './hostWatch.js';

// What the chaos audit reads, taken from the edges of the bot only: the fake host's state file and
// the frames it read, the fake Slack's messages, and the simulated users' clicks. Redis is never
// read: a figure must hold for what people and the agent see.

type HostRecord = HostState['approvals'][string];

function outcomeOf(rec: HostRecord): HostOutcome {
  if (rec.resolved && rec.supersededBy) return { kind: 'closedByRecovery', reaskedAs: rec.supersededBy };
  if (rec.resolved)
    return { kind: 'resolved', decision: rec.resolved.decision, resolvedBy: rec.resolved.resolvedBy };
  return { kind: 'pending', sourceIndex: rec.params.currentRequirementId.sourceIndex };
}

/** The commands the host carried out, from its ledger (each keyed by its canonical params). */
function appliedDecides(state: HostState): AppliedDecide[] {
  const out: AppliedDecide[] = [];
  for (const [commandId, entry] of Object.entries(state.commands)) {
    const result = entry.result as { status?: string; terminal?: boolean } | undefined;
    if (result?.status !== 'accepted') continue;
    const params = JSON.parse(entry.key) as {
      approvalId: string;
      choiceId: string;
      requirementId: { sourceIndex: number };
    };
    out.push({
      commandId,
      approvalId: params.approvalId,
      sourceIndex: params.requirementId.sourceIndex,
      choiceId: params.choiceId,
      terminal: result.terminal === true,
    });
  }
  return out;
}

/** Every approval/decide the host read; one neither answered nor dead with its process is in flight. */
function sentDecides(host: FakeHost, state: HostState): SentDecide[] {
  return host.decides().map((f) => ({
    commandId: f.frame.params.commandId,
    approvalId: f.frame.params.approvalId,
    sourceIndex: f.frame.params.requirementId.sourceIndex,
    unanswered: !state.commands[f.frame.params.commandId] && f.incarnation === host.incarnation,
  }));
}

export function cardsIn(slack: FakeSlack, channels: readonly string[]): CardView[] {
  return channels
    .flatMap((channel) => slack.messagesIn(channel))
    .map(cardView)
    .filter((c): c is CardView => c !== undefined);
}

export interface Edges {
  host: FakeHost;
  watch: HostWatch;
  slack: FakeSlack;
  channels: readonly string[];
  clicks: Click[];
  lostGraceMs: number;
}

export function readEdges(edges: Edges): AuditInput {
  const state = edges.watch.poll();
  const approvals: HostApproval[] = Object.entries(state.approvals).map(([approvalId, rec]) => ({
    approvalId,
    outcome: outcomeOf(rec),
    exposureMs: edges.watch.exposureMs(approvalId),
  }));
  return {
    approvals,
    cards: cardsIn(edges.slack, edges.channels),
    decides: sentDecides(edges.host, state),
    applied: appliedDecides(state),
    clicks: edges.clicks,
    lostGraceMs: edges.lostGraceMs,
  };
}
