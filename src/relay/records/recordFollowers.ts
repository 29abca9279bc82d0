import type { ApprovalRecord, CardPlace } from '../../domain/record.js';

/** A part that follows the records' stored changes. */
export interface RecordFollower {
  follow(record: ApprovalRecord): void;
  /**
   * A card was just posted, and the write that says where goes to Redis in this same stretch: a
   * follower that acts on new cards (batch triage) learns of it before that write is read back.
   * `record` is the record as it was before (no place yet) and `place` where its card is: what
   * will be stored is the two together, and follow() is told of it after. Not joined into one
   * object here: that copy would be made for every card (docs/performance.md, "Batch triage").
   */
  placing?(record: ApprovalRecord, place: CardPlace): void;
}

// The RecordKeeper tells its followers of every stored change (its onChange), but most of them
// are built after it and on top of it (they take the keeper). They add themselves here once built,
// and are told in the order they were added.
export class RecordFollowers {
  private readonly followers: RecordFollower[] = [];

  add(follower: RecordFollower): void {
    this.followers.push(follower);
  }

  /** RecordKeeper's onChange: each follower in turn. */
  notify(record: ApprovalRecord): void {
    for (const follower of this.followers) follower.follow(record);
  }

  /** RecordKeeper's onPlacing: each follower that asks to be told. */
  placing(record: ApprovalRecord, place: CardPlace): void {
    for (const follower of this.followers) follower.placing?.(record, place);
  }
}
