import type { Resolution, StageDecision } from './record.js';

/**
 * How an approval came to be decided, a closed set the audit stream and the log's audit line
 * share: `click` (a person in Slack, a quorum included), `grant` (a remembered grant), `timeout`
 * (the escalation ladder's timeout), and when the host decided on its own, `policy`, `reviewer`
 * (its automated reviewer, resolvedBy `llmJudge`), `otherClient` (a person through another
 * client of the host, resolvedBy `user`), or `host` for any other resolvedBy the host names.
 */
export type DecisionVia = 'click' | 'grant' | 'timeout' | 'policy' | 'reviewer' | 'otherClient' | 'host';

export function decisionVia(resolution: Pick<Resolution, 'via' | 'slackUserId' | 'resolvedBy'>): DecisionVia {
  if (resolution.via === 'grant' || resolution.via === 'timeout') return resolution.via;
  if (resolution.via === 'click' || resolution.slackUserId !== undefined) return 'click';
  switch (resolution.resolvedBy) {
    case 'policy':
      return 'policy';
    case 'llmJudge':
      return 'reviewer';
    case 'user':
      return 'otherClient';
    default:
      return 'host';
  }
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
      /** Those voters who voted as someone's delegate: voter → the person away. */
      stoodInFor?: Record<string, string>;
      /** userId decided as the delegate of this Slack user, who was away. */
      onBehalfOf?: string;
      via: DecisionVia;
      /** Who the host says resolved it: user, policy, llmJudge, … */
      resolvedBy?: string;
      /** The remembered grant that decided, when `via` is grant. */
      grantId?: string;
      choiceId: string;
      /** The host's decision; `unknown` on an `unsettled` entry. */
      decision: string;
      /**
       * The decision was sent (its claim stored) and its host went away for good before saying
       * whether it applied it: `hostLost`, a host that keeps nothing stopped (the card is
       * orphaned). The entry names who pressed what (userId, voters, grantId, choiceId) and its
       * commandId; `decision` is `unknown`, and no resolvedBy.
       */
      unsettled?: 'hostLost';
      /** The decide's commandId, on an `unsettled` entry: the host's own records name it. */
      commandId?: string;
      feedback?: string;
      /** SHA-256 (hex) of the arguments as the host sent them; absent for older records. */
      argsSha256?: string;
      /** `masked` when masking hid a secret in them: argsSha256 is then of the masked arguments. */
      argsSha256Of?: 'masked';
      /**
       * Who decided the earlier stages of a multi-stage request through us (the fields above are
       * the last stage's), oldest first; absent when none did. Not decisions of their own: the
       * stats count the entry once.
       */
      stages?: Omit<StageDecision, 'votes'>[];
      /** From the card's clock start (its first card, a superseded one's included) to the decision. */
      waitedMs?: number;
      /** Escalation steps that fired before the decision, when any did. */
      steps?: number;
      /** The route's `sla` when it had one, and whether the decision came after it. */
      slaMs?: number;
      slaBreached?: boolean;
      /** "git push": a shell request's program and subcommand, nothing more of its command line. */
      command?: string;
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
      /** `type`: approving asks for the target to be typed first. */
      confirm?: 'type';
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
      /** userId voted as the delegate of this person, who is away: the vote counts as theirs. */
      onBehalfOf?: string;
      choiceId: string;
      sourceIndex: number;
      votes: number;
      quorum: number;
      /** The risk rules that raised the quorum above the route's, by name. */
      risks?: string[];
      at: string;
    };

/**
 * An entry as a log line may show it, when the stream did not take it: all of it, so the line can
 * stand in for the entry, but a reviewer's feedback, which is a person's free text (the log goes
 * to more places than the stream, and the decision line leaves it out too).
 */
export function loggableEntry(entry: AuditEntry): AuditEntry {
  if (entry.kind !== 'decision' || entry.feedback === undefined) return entry;
  const { feedback: _freeText, ...rest } = entry;
  return rest;
}

/** The audit stream's entry of a resolved approval. */
export type DecisionEntry = Extract<AuditEntry, { kind: 'decision' }>;

/** Where audit entries go (a capped Redis stream). Appending never blocks a decision. */
export interface AuditTrail {
  append(entry: AuditEntry): Promise<void>;
}

/** Where each approval's decision entry is written once, whoever writes it and however often. */
export interface DecisionTrail {
  /** True when this call wrote the entry, false when it was written before; rejects when Redis did not say. */
  appendDecision(entry: DecisionEntry): Promise<boolean>;
}
