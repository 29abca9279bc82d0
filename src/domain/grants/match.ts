import type { ApprovalChoice } from '../../msp/protocol.js';
import type { ApprovalRecord } from '../record.js';
import { type CapabilityRequest, covers, stageCapabilities } from './capabilities.js';
import type { CallerScope, Grant } from './grant.js';
import type { GrantScope } from './scope.js';

// Whether a remembered grant answers a request (docs/grants.md). Pure: the store only hands in the
// candidates of one (caller, tool, sandbox mode, route) bucket, and every rule is checked again here.

/** What a grant must cover for the bot to answer the current stage of an approval. */
export interface GrantQuestion {
  caller: string;
  tool: string;
  sandboxMode: string;
  /** The route that placed the record (`''` when it names none): only its grants may answer. */
  route: string;
  /** Canonical, never empty. */
  capabilities: string[];
  /** The offered choice the bot answers with: approved, once. */
  once: ApprovalChoice;
  sourceIndex: number;
  /** The host that asks: a session's grant answers only the host it was made on. */
  hostId: string;
  /**
   * The channel its card goes to: a grant answers only in the channel it was made in, where it
   * is listed and may be revoked (a route's channel edited since leaves it answering nothing).
   */
  channel: string;
}

type Askable = CapabilityRequest &
  Pick<ApprovalRecord, 'caller' | 'sandboxMode' | 'availableChoices' | 'hostId' | 'slack'> &
  Partial<Pick<ApprovalRecord, 'risks' | 'route'>>;

/**
 * The question a grant could answer, or undefined when none may: the request is not grantable
 * (an unknown kind, a protected write, computer-use data, masked or cut text, an unparsed
 * command, a risk rule matched), or the host offers no approved-once choice.
 */
export function grantQuestion(record: Askable): GrantQuestion | undefined {
  // A risk rule marks what people must look at every time.
  if (record.risks?.length) return undefined;
  const once = onceChoice(record.availableChoices);
  if (!once) return undefined;
  const { capabilities, notGrantable } = stageCapabilities(record);
  if (notGrantable || capabilities.length === 0) return undefined;
  return {
    caller: record.caller,
    tool: record.tool,
    sandboxMode: record.sandboxMode,
    route: record.route ?? '',
    capabilities,
    once,
    sourceIndex: record.currentRequirementId.sourceIndex,
    hostId: record.hostId,
    channel: record.slack.channel,
  };
}

/**
 * "Approve and don't ask again", offered by the bot beside the host's own choices when a grant
 * could answer the same request later. Pressing one of its scopes decides with `choiceId`, the
 * host's approved-once choice, and remembers `capabilities` for `caller` (for the session
 * itself when the scope is `session`) for as long as that scope says.
 */
export interface RememberOffer {
  choiceId: string;
  capabilities: string[];
  caller: string;
  /** The route's `grants.choices`, in order: never empty. */
  scopes: GrantScope[];
}

/** The offered choice that approves this one request and remembers nothing at the host. */
export function onceChoice(choices: readonly ApprovalChoice[]): ApprovalChoice | undefined {
  return choices.find((choice) => choice.decision === 'approved' && choice.scope === 'once');
}

/**
 * Does this grant answer the question, now? Every part must be equal; capabilities a subset. The
 * caller is the question's, or `sessionCaller` for a grant bound to the session by its scope. A
 * grant also needs the host it was made on: a session id is only the host's word (a host that
 * copies another's session id, or whose ids collide with it, reaches none of its grants), and an
 * owner's paths and workspaces are those of one host (`make deploy` in /srv/app on one of their
 * hosts says nothing of /srv/app on another). A host's grant names its host itself.
 */
function grantMatches(grant: Grant, question: GrantQuestion, now: Date, sessionCaller?: string): boolean {
  return (
    grant.holder === 'bot' &&
    grant.revokedAt === undefined &&
    grant.expiresAt !== undefined &&
    Date.parse(grant.expiresAt) > now.getTime() &&
    grant.usesLeft !== 0 &&
    (grant.caller === question.caller || (sessionCaller !== undefined && grant.caller === sessionCaller)) &&
    grant.tool === question.tool &&
    grant.sandboxMode === question.sandboxMode &&
    grant.route === question.route &&
    grant.channel === question.channel &&
    (grant.caller.startsWith('host:') || grant.hostId === question.hostId) &&
    covers(grant.capabilities, question.capabilities)
  );
}

/**
 * The grant that answers the question, if any: a time-bound one before one by uses (no use is
 * spent when time covers it), then the one that lasts longest, so the line says most.
 */
export function findGrant(
  grants: readonly Grant[],
  question: GrantQuestion,
  now: Date,
  sessionCaller?: string,
): Grant | undefined {
  let best: Grant | undefined;
  for (const grant of grants) {
    if (!grantMatches(grant, question, now, sessionCaller)) continue;
    if (!best || rank(grant) > rank(best)) best = grant;
  }
  return best;
}

function rank(grant: Grant): number {
  return (grant.usesLeft === undefined ? Number.MAX_SAFE_INTEGER / 2 : 0) + Date.parse(grant.expiresAt!);
}

/**
 * The other caller a route's grants may be bound to: `session:<id>` when the route offers the
 * `session` scope but binds its other grants to the owner or the host. Its bucket is read too.
 */
export function sessionCallerOf(
  record: Pick<ApprovalRecord, 'caller' | 'sessionId'>,
  scopes: readonly GrantScope[],
): string | undefined {
  const caller = `session:${record.sessionId}`;
  return caller !== record.caller && scopes.some((s) => s.kind === 'session') ? caller : undefined;
}

/**
 * Whom a grant is bound to on a route: the session (a subagent's approval is projected into its
 * parent session, so it is the parent's), the host's owner, or the host itself. Undefined when
 * the route asks for the owner of a host that has none (start-up refuses such a file).
 */
export function callerFor(
  scope: CallerScope,
  approval: { sessionId: string; hostId: string; owner?: string },
): string | undefined {
  switch (scope) {
    case 'session':
      return `session:${approval.sessionId}`;
    case 'owner':
      return approval.owner ? `user:${approval.owner}` : undefined;
    case 'host':
      return `host:${approval.hostId}`;
  }
}
