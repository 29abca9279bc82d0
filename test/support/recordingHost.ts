import type { ApprovalHost } from '../../src/msp/events.js';
import type { DecideParams } from '../../src/msp/protocol.js';

/**
 * A host that is always up, accepts every decide and records it, and the sessions it was asked to
 * re-read. A test's own host extends it and says, in `beforeAccepting`, what happens first: a wait,
 * a refusal or no answer at all (a throw), and whether the acceptance is `terminal`.
 */
export class RecordingHost implements ApprovalHost {
  readonly hostId = 'default';
  decided: DecideParams[] = [];
  refreshed: string[] = [];
  /** Whether an accepted decide says the approval is resolved. */
  protected readonly terminal: boolean = false;
  isUp() {
    return true;
  }
  refreshSession(sessionId: string) {
    this.refreshed.push(sessionId);
  }
  refreshAll() {}
  /** Runs before a decide is accepted; a throw is the host's answer instead. */
  protected async beforeAccepting(_params: DecideParams): Promise<void> {}
  async decide(params: DecideParams) {
    await this.beforeAccepting(params);
    this.decided.push(params);
    return {
      commandId: params.commandId,
      approvalId: params.approvalId,
      status: 'accepted',
      terminal: this.terminal,
    };
  }
}
