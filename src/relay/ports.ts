/** A rendered Slack message: the fallback text plus Block Kit blocks. */
export interface RenderedMessage {
  text: string;
  blocks: unknown[];
}

export interface PostOptions {
  /** The approval the card shows: the card carries it, so it can be found again. */
  approvalId: string;
  /**
   * Set when an earlier attempt to post this card may have posted it (a lost answer, a crash
   * mid-post): the channel looks for the card from then on before it posts.
   */
  postedSince?: Date;
  /**
   * Asked right before each attempt: false when this process may no longer act for the card's host
   * (another replica holds its lease now), and the post ends with HostLostError.
   */
  mayAct?: () => boolean;
}

/** A card call for a host this process no longer owns: its new owner brings the card up to date. */
export class HostLostError extends Error {
  constructor() {
    super('this replica lost the host; the card is left to its new owner');
    this.name = 'HostLostError';
  }
}

/** Where cards live. slack/ implements it; the relay never sees a Slack client. */
export interface CardChannel {
  /**
   * Resolves with the message's ts and the channel's ID (a `#name` comes back as its ID), whether
   * it was posted now or found posted by an earlier attempt: a card is never posted twice.
   * `render` is called when the card's turn to be posted comes: a card waiting behind a channel's
   * rate limit holds its record, not its rendered blocks.
   */
  post(
    channel: string,
    render: () => RenderedMessage,
    options: PostOptions,
  ): Promise<{ ts: string; channel: string }>;
  /**
   * Resolves once this render, or a newer one of the same message, has landed. Slack's passing
   * troubles (429, 5xx, timeouts) are waited out; rejects only when Slack refuses the update for
   * good, or the channel is stopped.
   */
  update(channel: string, ts: string, message: RenderedMessage, mayAct?: () => boolean): Promise<void>;
  /** Whether posts are waiting or under way in the channel: a card posted now would wait its turn. */
  busy?(channel: string): boolean;
}

/** Tells one person something only they see. */
export interface UserNotifier {
  ephemeral(channel: string, userId: string, text: string): Promise<void>;
}

/** One line of the audit trail: a decision made through Countersign, or a refused attempt. */
export type AuditEntry =
  | {
      kind: 'decision';
      approvalId: string;
      hostId: string;
      route?: string;
      tool: string;
      /** The Slack user who decided; absent when the bot or the host decided. */
      userId?: string;
      /** Every approver a quorum counted, userId (the last) among them. */
      voters?: string[];
      /** `host`: the host resolved it on its own (policy, its automated reviewer, another client). */
      via: 'click' | 'grant' | 'timeout' | 'host';
      /** Who the host says resolved it: user, policy, llmJudge, … */
      resolvedBy?: string;
      /** The remembered grant that decided, when `via` is grant. */
      grantId?: string;
      choiceId: string;
      decision: string;
      feedback?: string;
      at: string;
    }
  | {
      kind: 'refusal';
      approvalId?: string;
      hostId?: string;
      route?: string;
      userId: string;
      /** The grant a refused revocation named (`/countersign revoke` or a Revoke button). */
      grantId?: string;
      /**
       * What was attempted: a click, opening or submitting the reject modal, a command, pressing
       * a grant's Revoke button, opening a card's full text.
       */
      action: 'click' | 'modalOpen' | 'modalSubmit' | 'command' | 'revokeButton' | 'viewFull';
      /** Why it was refused (authorization: notApprover, selfApproval, routeGone, external, …). */
      reason: string;
      at: string;
    }
  /** A risk rule matched a request: what it changed (a warning, the quorum, the approvers, no grants). */
  | {
      kind: 'risk';
      approvalId: string;
      hostId: string;
      route?: string;
      tool: string;
      rule: string;
      warning: string;
      quorum?: number;
      approvers?: { users: string[]; usergroups: string[] };
      /** A matching request is never decided by a remembered grant, nor offers one. */
      grantsOff: true;
      at: string;
    }
  /** An approving pick counted toward a quorum that it did not complete. */
  | {
      kind: 'vote';
      approvalId: string;
      hostId: string;
      route?: string;
      userId: string;
      choiceId: string;
      sourceIndex: number;
      votes: number;
      quorum: number;
      /** The risk rules that raised the quorum above the route's, by name. */
      risks?: string[];
      at: string;
    };

/** Where audit entries go (a capped Redis stream). Appending never blocks a decision. */
export interface AuditTrail {
  append(entry: AuditEntry): Promise<void>;
}
