import { type DecisionEntry, decisionVia } from './audit.js';
import type { ResolvedRecord } from './decisionNotice.js';
import { commandOf, waitedFor } from './decisionStats.js';

/** The stream entry of a resolution: a Slack user's click, a grant, a timeout, or the host's own. */
export function decisionEntry(record: ResolvedRecord, slaMs: number | undefined): DecisionEntry {
  const { resolution } = record;
  const waitedMs = waitedFor(record);
  const steps = record.escalation?.fired.length ?? 0;
  const command = commandOf(record.subject);
  return {
    kind: 'decision',
    approvalId: record.approvalId,
    hostId: record.hostId,
    ...(record.route !== undefined ? { route: record.route } : {}),
    tool: record.tool,
    ...(resolution.slackUserId !== undefined ? { userId: resolution.slackUserId } : {}),
    ...(resolution.voters ? { voters: resolution.voters } : {}),
    ...(resolution.stoodInFor ? { stoodInFor: resolution.stoodInFor } : {}),
    ...(resolution.onBehalfOf ? { onBehalfOf: resolution.onBehalfOf } : {}),
    via: decisionVia(resolution),
    ...(resolution.grant ? { grantId: resolution.grant.grantId } : {}),
    resolvedBy: resolution.resolvedBy,
    choiceId: resolution.choiceId ?? '',
    decision: resolution.decision,
    ...(resolution.feedback !== undefined ? { feedback: resolution.feedback } : {}),
    // The voters name a quorum's votes: their times stay with the record (StageDecision.votes).
    ...(record.stageDecisions && record.stageDecisions.length > 0
      ? { stages: record.stageDecisions.map(({ votes: _votes, ...stage }) => stage) }
      : {}),
    ...(record.argsSha256 !== undefined ? { argsSha256: record.argsSha256 } : {}),
    ...(record.argsSha256Of !== undefined ? { argsSha256Of: record.argsSha256Of } : {}),
    ...(waitedMs !== undefined ? { waitedMs } : {}),
    ...(steps > 0 ? { steps } : {}),
    ...(slaMs !== undefined && waitedMs !== undefined ? { slaMs, slaBreached: waitedMs > slaMs } : {}),
    ...(command ? { command } : {}),
    at: resolution.decidedAt,
  };
}
