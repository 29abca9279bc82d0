import type { Logger } from 'pino';
import type { AuditEntry, AuditTrail } from '../../domain/audit.js';
import { questionDigest } from '../../domain/questionDigest.js';
import { type ApprovalRecord, isTerminal, principalsFor, type Vote, votersFor } from '../../domain/record.js';
import type { Refusal } from '../../domain/refusal.js';
import { byDeadline, LATE } from '../../util/byDeadline.js';
import { unvoted, voted } from '../records/cardMutations.js';
import type { RecordKeeper } from '../records/recordKeeper.js';
import type { Authorizer } from './authorizer.js';
import { type CastVote, type Click, deadlineOf } from './click.js';
import { claimKept, type DecisionOutcome } from './decision.js';
import { whyNotDecidable } from './decisionCheck.js';
import { refusalFor } from './refusals.js';

// A pick that needs a quorum is counted before anything is decided: the quorum path of a click.

export interface VoteCounting {
  keeper: Pick<RecordKeeper, 'mutateAndSync' | 'enqueue' | 'mutate'>;
  authorizer: Pick<Authorizer, 'ownerOf'>;
  audit?: AuditTrail;
  logger: Logger;
}

export type VoteResult =
  /**
   * This pick completed the quorum: `voters`, everyone who picked the choice, go on to decide;
   * `stoodInFor` names those who voted as someone's delegate (the card and audit say "for @X").
   */
  /**
   * `cast`: this pick's vote, when it was stored anew, to audit as a vote should the decision it
   * completed not go through (auditVoteCast).
   */
  | {
      complete: true;
      record: ApprovalRecord;
      voters: string[];
      stoodInFor?: Record<string, string>;
      cast?: CastVote;
    }
  /**
   * Nothing is decided now: `refusal` tells the person where it stands; with `approvalId`, the
   * card may show something no longer true (ClickHandler re-renders it).
   */
  | { complete: false; refusal: Refusal; approvalId?: string };

/**
 * Counts an approving pick toward the stage's quorum. Resolves with the record and everyone who
 * picked that choice once this pick completes the quorum; else with what the person is told of
 * where it stands. Several picks completing it together each go on to decide: the stage's claim
 * lets only one decision through.
 */
export async function countVote(
  click: Click,
  record: ApprovalRecord,
  quorum: number,
  counting: VoteCounting,
  /** The clicker may decide only as the delegate of this person, who is away. */
  onBehalfOf?: string,
): Promise<VoteResult> {
  const { keeper, authorizer } = counting;
  const owner = authorizer.ownerOf(record);
  if (owner === click.userId) return { complete: false, refusal: { code: 'ownerNoVote', quorum } };
  // Standing in for the owner gives no vote either: the owner's rights never count toward a quorum.
  if (onBehalfOf !== undefined && onBehalfOf === owner) {
    return { complete: false, refusal: { code: 'ownerNoVote', quorum, for: onBehalfOf } };
  }
  const vote: Vote = {
    sourceIndex: click.sourceIndex,
    choiceId: click.choiceId,
    userId: click.userId,
    ...(onBehalfOf ? { onBehalfOf } : {}),
    // The question as their button or modal showed it (checked against this record): counted
    // only while asked, even when the host asks another between the check and the vote.
    asked: click.askedAs ?? questionDigest(record),
    at: new Date().toISOString(),
  };
  const voting = keeper.mutateAndSync(record.approvalId, voted(vote));
  const stored = await byDeadline(voting, deadlineOf(click));
  if (stored === LATE) {
    // The person hears that nothing counted, so the vote must not count once Redis stores it.
    voting.catch(() => {});
    keeper.enqueue(record.approvalId, () => keeper.mutate(record.approvalId, unvoted(vote)));
    return { complete: false, refusal: { code: 'notRecorded' } };
  }
  if (!stored) return { complete: false, refusal: { code: 'unknownCard' } };
  const why = whyNotDecidable(stored, click);
  const voters = votersFor(stored, click.sourceIndex, click.choiceId);
  if (why || !voters.includes(click.userId)) {
    const refusal = why ? refusalFor(why, click.userId) : ({ code: 'questionChanged' } as const);
    return { complete: false, refusal, approvalId: record.approvalId };
  }
  // Counted by whose rights they stand for: a delegate's vote and the delegator's are one.
  const counted = principalsFor(stored, click.sourceIndex, click.choiceId).size;
  // A vote the stage already held (the same person pressing again) changed nothing: audited once,
  // so that pressing on and on cannot fill the audit stream and trim its decisions.
  const kept = stored.votes?.find((v) => v.userId === vote.userId && v.choiceId === vote.choiceId);
  const cast = kept?.at === vote.at ? { record: stored, vote, votes: counted, quorum } : undefined;
  // The vote that completes the quorum is audited with the decision, which names its voters.
  if (counted >= quorum) {
    const stoodInFor = standIns(stored, click);
    return { complete: true, record: stored, voters, stoodInFor, ...(cast ? { cast } : {}) };
  }
  if (cast) auditVoteCast(cast, counting);
  return { complete: false, refusal: { code: 'voteCounted', votes: counted, quorum } };
}

/**
 * Writes a vote that completed no quorum to the audit stream: one short of it, or one whose
 * decision did not go through (ClickHandler). `votes`: how many counted, as last counted.
 */
export function auditVoteCast(cast: CastVote, counting: Pick<VoteCounting, 'audit' | 'logger'>): void {
  void writeVote(cast, counting);
}

/** auditVoteCast's write: settles once Redis has answered it (a failure is logged, never rejected). */
function writeVote(
  { record, vote, votes, quorum }: CastVote,
  { audit, logger }: Pick<VoteCounting, 'audit' | 'logger'>,
): Promise<void> {
  const raisedBy = (record.risks ?? []).filter((risk) => (risk.quorum ?? 1) >= quorum).map((r) => r.name);
  const entry: AuditEntry = {
    kind: 'vote',
    approvalId: record.approvalId,
    hostId: record.hostId,
    ...(record.route ? { route: record.route } : {}),
    userId: vote.userId,
    ...(vote.onBehalfOf ? { onBehalfOf: vote.onBehalfOf } : {}),
    choiceId: vote.choiceId,
    sourceIndex: vote.sourceIndex,
    votes,
    quorum,
    ...(raisedBy.length > 0 ? { risks: raisedBy } : {}),
    at: vote.at,
  };
  return (audit?.append(entry) ?? Promise.resolve()).catch((err: unknown) => {
    logger.warn({ err, approvalId: record.approvalId }, 'could not append to the audit trail');
  });
}

/**
 * Whether the decision a vote completed, or another that names its voter, went through or may
 * yet: its claim stands (sent, handed on, or kept to send again). Otherwise no decision entry
 * will name the vote, and it is audited as one. A claim that stands and is closed later without
 * a decision that names the vote leaves it to auditVotesLeft.
 */
export function namesVoter(outcome: DecisionOutcome, userId: string): boolean {
  switch (outcome.kind) {
    case 'decided':
    case 'forwarded':
    case 'hostUnavailable':
      return true;
    case 'alreadyBeingDecided':
      return outcome.holder?.voters?.includes(userId) ?? false;
    case 'final':
      return outcome.record.resolution?.voters?.includes(userId) ?? false;
    default:
      return claimKept(outcome);
  }
}

/**
 * Whether the record a press was refused on, checked again after a change, names its voter in a
 * decision that went through or may yet (namesVoter): a co-voter's, claimed or resolved since
 * this press counted. Not a decision of an earlier stage alone (stageDecisions): only the entry
 * of a resolution names it, and a request superseded or withdrawn writes none.
 */
export function recordNamesVoter(record: ApprovalRecord | undefined, click: Click): boolean {
  const why = record && whyNotDecidable(record, click);
  return why ? namesVoter(why, click.userId) : false;
}

type LeftCounting = Pick<VoteCounting, 'audit' | 'logger'> & { quorum: (record: ApprovalRecord) => number };

/**
 * A change about to be stored lets go of a quorum's votes (RecordKeeper.onVotesLeft): those that
 * no decision entry will name are audited as votes, before the change is written. Settles once
 * they are (undefined when there are none); never rejects. A vote one short of the quorum was
 * audited as it was cast, and one that completed it may have been by its clicker: the audit trail
 * writes each vote once (RedisAuditTrail), so every replica, and every try of the same change,
 * that sees it go unnamed may ask.
 *
 * Before, not after: once the change is stored no record holds these votes any more, so a
 * process that died between the two would leave them in no entry, for good. Written first, a
 * death in between leaves them audited and the change to be made again (by a retry, or the
 * host's next owner), which finds them marked. Audited so, a vote is never claimed for a result
 * it did not have: the entry says only that it was cast and how many counted then, and the
 * change carries the host's word (or the decider's) that what the vote was for closed undecided:
 * withdrawn, superseded, refused, asked again. That stays true should this write lose its
 * compare-and-set: it is made again over what won, and no write can have won by deciding what the
 * host says closed undecided.
 */
export function auditVotesLeft(
  before: ApprovalRecord,
  after: ApprovalRecord,
  counting: LeftCounting,
): Promise<void> | undefined {
  const left = [...claimVotesLeft(before, after, counting), ...stageVotesLeft(before, after, counting)];
  if (left.length === 0) return undefined;
  return Promise.all(left.map((cast) => writeVote(cast, counting))).then(() => undefined);
}

/**
 * A decision's claim was closed: every vote the claim named unless the change closing it
 * resolved the approval with it, or kept it as its stage's decision (a later stage's resolution
 * names it in `stages`, or stageVotesLeft audits it): given back after the host refused it,
 * dropped as the request was withdrawn or superseded, or as the host asked the stage again.
 */
function claimVotesLeft(before: ApprovalRecord, after: ApprovalRecord, counting: LeftCounting): CastVote[] {
  const claim = before.claim;
  if (!claim?.voters || after.claim?.commandId === claim.commandId) return [];
  // A request closed with no decision entry names nobody in its stage decisions.
  const stage = closedUndecided(after)
    ? undefined
    : after.stageDecisions?.find((d) => d.sourceIndex === claim.sourceIndex && d.choiceId === claim.choiceId);
  const named = new Set([
    ...(after.phase === 'resolved' ? (after.resolution?.voters ?? []) : []),
    ...(stage?.voters ?? []),
    ...(after.claim?.voters ?? []),
  ]);
  const left = (before.votes ?? []).filter(
    (v) =>
      v.sourceIndex === claim.sourceIndex &&
      v.choiceId === claim.choiceId &&
      claim.voters!.includes(v.userId) &&
      !named.has(v.userId),
  );
  if (left.length === 0) return [];
  const votes = principalsFor(before, claim.sourceIndex, claim.choiceId).size;
  const quorum = counting.quorum(before);
  return left.map((vote) => ({ record: before, vote, votes, quorum }));
}

/**
 * The votes of a quorum that decided an earlier stage, kept with its decision (StageDecision.votes)
 * while the request is open, for the decision entry of its resolution to name in `stages`. A
 * change that closes it without one (withdrawn, superseded, orphaned), or that puts another
 * decision of that stage in its place, leaves them to be audited as votes, each counted as its
 * stage counted it. A resolution names those it keeps in `stages`, and those of the stage it
 * resolved (stagesBefore) in its voters: no vote entry for those. A stage decision stored before
 * its votes were kept (an earlier release's) has nothing to audit them by, and audits nothing.
 */
function stageVotesLeft(before: ApprovalRecord, after: ApprovalRecord, counting: LeftCounting): CastVote[] {
  // A closed record's votes were seen to by the change that closed it.
  if (isTerminal(before) || !before.stageDecisions?.some((d) => d.votes)) return [];
  const closed = closedUndecided(after);
  const kept = (v: Vote) =>
    !closed &&
    (after.stageDecisions ?? []).some(
      (d) => d.sourceIndex === v.sourceIndex && d.votes?.some((w) => w.userId === v.userId && w.at === v.at),
    );
  const namedByResolution = (v: Vote) =>
    after.phase === 'resolved' &&
    !after.stageDecisions?.some((d) => d.sourceIndex === v.sourceIndex) &&
    (after.resolution?.voters?.includes(v.userId) ?? false);
  let quorum: number | undefined;
  const cast: CastVote[] = [];
  for (const decided of before.stageDecisions) {
    const left = (decided.votes ?? []).filter((v) => !kept(v) && !namedByResolution(v));
    if (left.length === 0) continue;
    const votes = principalsFor(decided, decided.sourceIndex, decided.choiceId).size;
    quorum ??= counting.quorum(before);
    for (const vote of left) cast.push({ record: before, vote, votes, quorum });
  }
  return cast;
}

/** Closed without a decision entry: no decision entry will name anyone its record names. */
function closedUndecided(record: ApprovalRecord): boolean {
  return isTerminal(record) && record.phase !== 'resolved';
}

/** The vote as counted where its decision was claimed, when that recount is what stopped it. */
export function countedAt(cast: CastVote, outcome: DecisionOutcome): CastVote {
  return outcome.kind === 'quorumNotMet' ? { ...cast, votes: outcome.votes, quorum: outcome.quorum } : cast;
}

/** The voters of the pick's stage and choice who voted as a delegate, and for whom; undefined when none did. */
function standIns(record: ApprovalRecord, click: Click): Record<string, string> | undefined {
  const pairs = (record.votes ?? []).flatMap((v) =>
    v.onBehalfOf && v.sourceIndex === click.sourceIndex && v.choiceId === click.choiceId
      ? [[v.userId, v.onBehalfOf] as const]
      : [],
  );
  return pairs.length > 0 ? Object.fromEntries(pairs) : undefined;
}
