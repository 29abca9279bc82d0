import type {
  ApprovalRequestParams,
  ApprovalResolvedParams,
  ApprovalUpdatedParams,
  DecideParams,
  DecideResult,
} from './protocol.js';

/**
 * What the host supervisor tells the relay. `incarnation` names one spawned host process, so
 * the relay can tell an approval opened before a host restart from one opened after it.
 */
export type HostEvent =
  | {
      type: 'approvalOpened';
      hostId: string;
      incarnation: string;
      /** request | requested | listPending: all mean "this approval is pending and needs a person". */
      via: 'request' | 'requested' | 'listPending';
      params: ApprovalRequestParams;
    }
  | { type: 'approvalReviewing'; hostId: string; incarnation: string; params: ApprovalRequestParams }
  | { type: 'approvalUpdated'; hostId: string; incarnation: string; params: ApprovalUpdatedParams }
  | { type: 'approvalResolved'; hostId: string; incarnation: string; params: ApprovalResolvedParams }
  | {
      type: 'sessionReconciled';
      hostId: string;
      incarnation: string;
      sessionId: string;
      /** approvalIds the host reports pending for this session right now (approval/listPending). */
      pendingApprovalIds: string[];
    }
  | {
      type: 'sessionSeen';
      hostId: string;
      incarnation: string;
      sessionId: string;
      /** What people call the session: its title, name or first prompt, as the host gave it. */
      label?: string;
      /** The directory the session works in, which cards may be routed on. */
      workspaceRoot?: string;
    }
  | { type: 'hostUp'; hostId: string; incarnation: string; durable: boolean }
  | {
      type: 'hostDown';
      hostId: string;
      incarnation: string;
      durable: boolean;
      exitCode: number | null;
      signal: string | null;
    };

/** The narrow surface of a running host that the relay needs. */
export interface ApprovalHost {
  readonly hostId: string;
  /**
   * Sends approval/decide. Retries overloaded/backpressured with the same commandId, and on
   * sessionNotLoaded resumes the session and replays. Throws MspError for every other error.
   */
  decide(params: DecideParams): Promise<DecideResult>;
}
