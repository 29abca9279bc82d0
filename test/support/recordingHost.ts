import type { ApprovalHost } from '../../src/msp/events.js';
import type { DecideParams } from '../../src/msp/protocol.js';

/** A host that is always up, accepts every decide and records it, and the sessions it was asked to re-read. */
export class RecordingHost implements ApprovalHost {
  readonly hostId = 'default';
  decided: DecideParams[] = [];
  refreshed: string[] = [];
  isUp() {
    return true;
  }
  refreshSession(sessionId: string) {
    this.refreshed.push(sessionId);
  }
  refreshAll() {}
  async decide(params: DecideParams) {
    this.decided.push(params);
    return {
      commandId: params.commandId,
      approvalId: params.approvalId,
      status: 'accepted',
      terminal: false,
    };
  }
}
