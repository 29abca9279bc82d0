import { questionDigest } from '../../domain/questionDigest.js';
import type { ApprovalRecord, Vote } from '../../domain/record.js';
import { isTerminal } from '../../domain/record.js';
import type { Mutation } from '../../store/approvalStore.js';

// Pure mutations of what people do on a card: its post once no grant answers it, a "don't ask
// again" remembered on it, and the votes toward a quorum; undefined means "nothing changed".

/** No remembered grant answers the request (or it could not be used): the card is posted. */
export function cardRevealed(record: ApprovalRecord): ApprovalRecord | undefined {
  if (!record.slack.deferred) return undefined;
  const { deferred: _deferred, ...slack } = record.slack;
  return { ...record, slack };
}

/** A person's "don't ask again" was stored as a grant: the card's final state says so. */
export function rememberedAs(remembered: NonNullable<ApprovalRecord['remembered']>) {
  return (record: ApprovalRecord): ApprovalRecord | undefined =>
    record.remembered?.grantId === remembered.grantId ? undefined : { ...record, remembered };
}

/**
 * A person's approving pick toward the current stage's quorum: one per person and stage (a new
 * pick replaces theirs, and so does the same pick made for someone else as their delegate), none
 * once the stage is no longer open to people, nor once it asks something else than the person
 * saw (`vote.asked`).
 */
export function voted(vote: Vote) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (record.phase !== 'pending' || record.currentRequirementId.sourceIndex !== vote.sourceIndex)
      return undefined;
    if (!record.availableChoices.some((c) => c.choiceId === vote.choiceId)) return undefined;
    if (vote.asked !== undefined && vote.asked !== questionDigest(record)) return undefined;
    if (record.votes?.some((v) => sameVote(v, vote))) return undefined;
    const others = (record.votes ?? []).filter((v) => v.userId !== vote.userId);
    return { ...record, votes: [...others, vote] };
  };
}

/** Takes back a vote whose click was answered "not recorded" (Redis stored it too late). */
export function unvoted(vote: Vote) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (!record.votes?.some((v) => sameVote(v, vote) && v.at === vote.at)) return undefined;
    const votes = record.votes.filter((v) => !(sameVote(v, vote) && v.at === vote.at));
    return { ...record, votes: votes.length > 0 ? votes : undefined };
  };
}

/**
 * The same pick by the same person, for the same principal: a delegate whose stored vote stands
 * for someone now back (who votes themselves) presses again for another they stand in for, and
 * that must count, or the quorum stays one short though enough may decide.
 */
function sameVote(a: Vote, b: Vote): boolean {
  return (
    a.userId === b.userId &&
    a.choiceId === b.choiceId &&
    a.sourceIndex === b.sourceIndex &&
    a.onBehalfOf === b.onBehalfOf
  );
}

/**
 * Votes count for the stage, choices and question they were cast on, while the approval is open:
 * a stage advance, the stage asked again otherwise (another command, other risks), a resolution
 * or a supersede clears them (applied to every stored change).
 */
export function withCurrentVotes(record: ApprovalRecord): ApprovalRecord {
  const votes = record.votes;
  if (!votes) return record;
  const index = record.currentRequirementId.sourceIndex;
  let asked: string | undefined;
  const askedNow = () => {
    asked ??= questionDigest(record);
    return asked;
  };
  const kept = isTerminal(record)
    ? []
    : votes.filter(
        (v) =>
          v.sourceIndex === index &&
          record.availableChoices.some((c) => c.choiceId === v.choiceId) &&
          (v.asked === undefined || v.asked === askedNow()),
      );
  if (kept.length === votes.length) return record;
  return { ...record, votes: kept.length > 0 ? kept : undefined };
}

/** Every stored change leaves only the votes that still count (see withCurrentVotes). */
export function keepingCurrentVotes(mutation: Mutation): Mutation {
  return (record) => {
    const next = mutation(record);
    return next && withCurrentVotes(next);
  };
}
