import { type DecisionEntry, decisionVia } from './audit.js';
import type { ResolvedRecord } from './decisionNotice.js';
import { commandOf, waitedFor } from './decisionStats.js';
import type { ApprovalRecord, Claim } from './record.js';

/** The stream entry of a resolution: a Slack user's click, a grant, a timeout, or the host's own. */
export function decisionEntry(record: ResolvedRecord, slaMs: number | undefined): DecisionEntry {
  const { resolution } = record;
  const waitedMs = waitedFor(record);
  const steps = record.escalation?.fired.length ?? 0;
  const command = commandOf(record.subject);
  return {
    ...entryHead(record),
    ...(resolution.slackUserId !== undefined ? { userId: resolution.slackUserId } : {}),
    ...people(resolution),
    via: decisionVia(resolution),
    ...(resolution.grant ? { grantId: resolution.grant.grantId } : {}),
    resolvedBy: resolution.resolvedBy,
    choiceId: resolution.choiceId ?? '',
    decision: resolution.decision,
    ...(resolution.feedback !== undefined ? { feedback: resolution.feedback } : {}),
    ...stagesAndArgs(record),
    ...(waitedMs !== undefined ? { waitedMs } : {}),
    ...(steps > 0 ? { steps } : {}),
    ...(slaMs !== undefined && waitedMs !== undefined ? { slaMs, slaBreached: waitedMs > slaMs } : {}),
    ...(command ? { command } : {}),
    at: resolution.decidedAt,
  };
}

/**
 * The stream entry of a decision whose host went away for good before saying whether it applied
 * it (an orphaned record's unsettledClaim): who pressed what, under which commandId, and that the
 * outcome is unknown. Written under the approval's decision mark, as a resolution's entry is: the
 * record is final, so no resolution's entry will follow it.
 */
export function unsettledEntry(record: ApprovalRecord & { unsettledClaim: Claim }): DecisionEntry {
  const claim = record.unsettledClaim;
  const command = commandOf(record.subject);
  return {
    ...entryHead(record),
    ...(claim.userId !== undefined ? { userId: claim.userId } : {}),
    ...people(claim),
    via: claim.via ?? 'click',
    ...(claim.grant ? { grantId: claim.grant.grantId } : {}),
    choiceId: claim.choiceId,
    decision: 'unknown',
    unsettled: 'hostLost',
    commandId: claim.commandId,
    ...(claim.feedback !== undefined ? { feedback: claim.feedback } : {}),
    ...stagesAndArgs(record),
    ...(command ? { command } : {}),
    // When the bot saw the host go: the host never said when, or whether, it decided.
    at: record.updatedAt,
  };
}

/** The approval an entry is of, as every decision entry starts. */
function entryHead(record: ApprovalRecord) {
  return {
    kind: 'decision' as const,
    approvalId: record.approvalId,
    hostId: record.hostId,
    ...(record.route !== undefined ? { route: record.route } : {}),
    tool: record.tool,
  };
}

/** A quorum's voters and who stood in for whom, when there are any. */
function people(by: Pick<Claim, 'voters' | 'stoodInFor' | 'onBehalfOf'>) {
  return {
    ...(by.voters ? { voters: by.voters } : {}),
    ...(by.stoodInFor ? { stoodInFor: by.stoodInFor } : {}),
    ...(by.onBehalfOf ? { onBehalfOf: by.onBehalfOf } : {}),
  };
}

/** The earlier stages' decisions and the arguments' hash, when there are any. */
function stagesAndArgs(record: ApprovalRecord) {
  return {
    // The voters name a quorum's votes: their times stay with the record (StageDecision.votes).
    ...(record.stageDecisions && record.stageDecisions.length > 0
      ? { stages: record.stageDecisions.map(({ votes: _votes, ...stage }) => stage) }
      : {}),
    ...(record.argsSha256 !== undefined ? { argsSha256: record.argsSha256 } : {}),
    ...(record.argsSha256Of !== undefined ? { argsSha256Of: record.argsSha256Of } : {}),
  };
}
