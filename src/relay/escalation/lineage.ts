import type { ApprovalRecord } from '../../domain/record.js';

/** The request a record asks: the same for a superseded approval and the one a restarted host asks again. */
export function lineageOf(
  record: Pick<ApprovalRecord, 'hostId' | 'sessionId' | 'toolCallId' | 'itemId' | 'approvalId'>,
): string {
  const call = record.toolCallId ?? record.itemId;
  return call ? `${record.hostId}:${record.sessionId}:${call}` : `${record.hostId}:${record.approvalId}`;
}
