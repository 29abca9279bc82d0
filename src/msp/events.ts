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
      /** Another client holds the session (session/resume said sessionInUse): no decide can work. */
      heldElsewhere?: boolean;
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
      /**
       * When the approval/listPending request went out, on this process's monotonic clock
       * (performance.now()): an approval asked after it may be missing from the listing.
       */
      listRequestedAt: number;
    }
  | {
      /** session/resume answered sessionInUse: another client holds the session's writer lease. */
      type: 'sessionHeldElsewhere';
      hostId: string;
      incarnation: string;
      sessionId: string;
    }
  | {
      type: 'sessionSeen';
      hostId: string;
      incarnation: string;
      sessionId: string;
      /** What people call the session: its title, name or first prompt, as the host gave it. */
      label?: string;
      /** The session's title, else its name: what routes match `sessionTitles` on. */
      title?: string;
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
  /** The host process running now, if one is (see HostEvent.incarnation). */
  readonly incarnation?: string | undefined;
  /**
   * Sends approval/decide. Retries overloaded/backpressured with the same commandId, and on
   * sessionNotLoaded resumes the session and replays. Throws MspError for every other error,
   * HostGoneError when the host is gone, RequestTimeoutError when it did not answer in time.
   */
  decide(params: DecideParams): Promise<DecideResult>;
  /** Whether a host process is up and past its handshake right now. */
  isUp(): boolean;
  /**
   * Asks the host again what is pending in a session (approval/listPending) and reports it as
   * usual (approvalOpened…, sessionReconciled). Never rejects.
   */
  refreshSession(sessionId: string): void;
  /** The same for every session the host has or had (after events were lost). */
  refreshAll(): void;
}

/** A session a host followed: enough to follow it again after a restart. */
export interface FollowedSession {
  sessionId: string;
  /** The last view cursor the host gave for it, to resume with only what came after. */
  viewCursor?: string;
}

/**
 * Where the sessions a host follows are remembered across restarts of the host and of the bot
 * (store/ implements it in Redis; msp/ knows only this).
 */
export interface SessionMemory {
  recall(hostId: string): Promise<FollowedSession[]>;
  remember(hostId: string, session: FollowedSession): Promise<void>;
  /** The host has no such session: nothing of it is followed any more. */
  forget(hostId: string, sessionId: string): Promise<void>;
}
