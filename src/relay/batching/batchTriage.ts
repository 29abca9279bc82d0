import type { Logger } from 'pino';
import {
  BATCH_MAX_MEMBERS,
  type BatchMember,
  type BatchOutcome,
  type BatchShared,
  batchGroupOf,
  batchMemberOf,
  batchShapeOf,
  type SummaryView,
} from '../../domain/batchGroup.js';
import type { ApprovalRecord } from '../../domain/record.js';
import {
  type BatchGroups,
  channelOfGroup,
  type GroupState,
  type Joining,
  type JoinResult,
  MAX_MEMBERS_PER_CALL,
} from '../../store/batchGroups.js';
import { TrailingThrottle } from '../../util/trailingThrottle.js';
import type { RecordFollower } from '../records/recordFollowers.js';

/** Where summary cards live. slack/ implements it. */
export interface SummaryBoard {
  post(channel: string, view: SummaryView): Promise<string>;
  update(channel: string, ts: string, view: SummaryView): Promise<void>;
}

export interface BatchTriageOptions {
  groups: BatchGroups;
  board: SummaryBoard;
  /** The records of the members a summary lists, read when it is drawn (undefined: gone). */
  records: (approvalIds: readonly string[]) => Promise<Array<ApprovalRecord | undefined>>;
  /** The quorum a record needs now (Authorizer.quorum): above 1, it is decided on its own card. */
  quorum: (record: ApprovalRecord) => number;
  logger: Logger;
  /** A burst of changes becomes one draw after this long; draws of one summary this far apart. */
  redraw?: { settleMs: number; intervalMs: number };
  /** How long a group must hold two members before its summary is posted (default 500 ms). */
  postSettleMs?: number;
}

/** Approvals whose group this process remembers (see `placed`). */
const MAX_PLACED = 10_000;

/** One group's joins gathered in this turn. */
interface Gathered {
  shared: BatchShared;
  joins: Map<string, Joining>;
}

/**
 * Keeps each channel's groups of alike pending approvals (domain/batchGroup.ts) in Redis, and one
 * summary card per group of two or more: posted by whichever replica saw the second member join
 * (an atomic claim), redrawn as members join and leave, closed once the group is empty.
 *
 * Its cost per approval decides whether it may run on every card (docs/performance.md, "Batch
 * triage"). A card joins its group in the same socket write as the write that stores where the
 * card is (placing), one script per group for the whole turn. A member leaves when the summary is
 * next drawn (at most once a second per group): the leaves since are one call, and a draw reads
 * its members' records, so a member decided or moved on elsewhere leaves then too.
 */
export class BatchTriage implements RecordFollower {
  /**
   * The group this process last placed each approval in, or null (in none). An approval this
   * process has not placed (another replica or an earlier process did) is taken to be in the group
   * its question gives (batchShapeOf); a draw drops whatever no longer belongs.
   */
  private readonly placed = new Map<string, string | null>();
  private readonly redraws: TrailingThrottle;
  private gathered = new Map<string, Gathered>();
  private flushing = false;
  /** Summaries claimed here, waiting to be posted. */
  private readonly posting = new Set<NodeJS.Timeout>();
  /** groupId → approvals that left it since its summary was last drawn here. */
  private readonly leaving = new Map<string, Set<string>>();

  constructor(private readonly options: BatchTriageOptions) {
    this.redraws = new TrailingThrottle(
      (groupId) =>
        this.redraw(groupId).catch((err: unknown) => {
          this.options.logger.warn({ err, groupId }, 'could not redraw a batch summary');
        }),
      options.redraw ?? { settleMs: 150, intervalMs: 1_000 },
    );
  }

  /** A card was just posted: it joins its group in the write that stores where it is. */
  placing(record: ApprovalRecord): void {
    this.follow(record);
  }

  follow(record: ApprovalRecord): void {
    const { approvalId } = record;
    if (!record.slack.ts) {
      // A card not posted yet is in no group.
      if (!this.placed.has(approvalId)) this.remember(approvalId, null);
      return;
    }
    const known = this.placed.get(approvalId);
    // Being decided: it leaves once it is decided (its claim may yet be released), and a click
    // costs nothing here. The summary's buttons check each approval anyway.
    if (record.phase === 'deciding' && known !== null) return;
    const group = batchGroupOf(record, this.options.quorum(record));
    if (known !== undefined && known === (group?.groupId ?? null)) return;
    const was = known === undefined ? batchShapeOf(record)?.groupId : (known ?? undefined);
    if (was !== undefined && was !== group?.groupId) this.leave(was, approvalId);
    // One this process had not placed joins again, whether or not it is in already: it costs a
    // ZADD that adds nothing.
    if (group) this.join(group.groupId, group.shared, { approvalId, ts: record.slack.ts });
    this.remember(approvalId, group?.groupId ?? null);
  }

  /** Keeps what a batch decision did on its summary, and redraws it. */
  async noted(groupId: string, outcome: BatchOutcome): Promise<void> {
    await this.options.groups.note(groupId, JSON.stringify(outcome));
    this.redraws.request(groupId, true);
  }

  stop(): void {
    this.gathered.clear();
    this.redraws.stop();
    for (const timer of this.posting) clearTimeout(timer);
    this.posting.clear();
  }

  /** Leaves at the group's next draw, which is asked for now. */
  private leave(groupId: string, approvalId: string): void {
    const left = this.leaving.get(groupId) ?? new Set<string>();
    this.leaving.set(groupId, left);
    left.add(approvalId);
    this.redraws.request(groupId);
  }

  /** Gathers a join for the end of this turn. */
  private join(groupId: string, shared: BatchShared, member: Joining): void {
    const group = this.gathered.get(groupId) ?? { shared, joins: new Map<string, Joining>() };
    this.gathered.set(groupId, group);
    group.joins.set(member.approvalId, member);
    // A join after a leave in the same draw window: it is a member again.
    this.leaving.get(groupId)?.delete(member.approvalId);
    if (!this.flushing) {
      this.flushing = true;
      // After the synchronous stretch that placed the cards: the joins leave in the same socket
      // write as the writes that placed them (coalescedWrites.ts), one script per group.
      queueMicrotask(() => this.flush());
    }
  }

  private flush(): void {
    this.flushing = false;
    const gathered = this.gathered;
    this.gathered = new Map();
    for (const [groupId, { shared, joins }] of gathered) {
      const members = [...joins.values()];
      for (let at = 0; at < members.length; at += MAX_MEMBERS_PER_CALL) {
        const some = members.slice(at, at + MAX_MEMBERS_PER_CALL);
        this.options.groups.join(groupId, shared, some).then(
          (result) => this.joined(groupId, result),
          (err: unknown) => {
            // What Redis holds is not known now: the next change of each joins again.
            for (const m of some) this.placed.delete(m.approvalId);
            this.options.logger.warn({ err, groupId }, 'could not update a batch group');
          },
        );
      }
    }
  }

  private joined(groupId: string, result: JoinResult): void {
    if (result === 'post') {
      // Posted once the group has held for a moment: a card whose question changes as soon as it
      // is posted (the host updates it) joins and leaves, and must not post a summary each time.
      const timer = setTimeout(() => {
        this.posting.delete(timer);
        this.post(groupId).catch((err: unknown) => {
          this.options.logger.warn({ err, groupId }, 'could not post a batch summary');
        });
      }, this.options.postSettleMs ?? 500);
      timer.unref();
      this.posting.add(timer);
    } else if (result === 'refresh') this.redraws.request(groupId);
  }

  private remember(approvalId: string, groupId: string | null): void {
    this.placed.delete(approvalId);
    // Oldest out first: a Map iterates in insertion order.
    if (this.placed.size >= MAX_PLACED) this.placed.delete(this.placed.keys().next().value!);
    this.placed.set(approvalId, groupId);
  }

  /**
   * The group as Redis holds it, after the leaves gathered here, with its first members read from
   * their records; members that no longer belong (decided, moved on, gone) leave at once and it
   * is read again.
   */
  private async current(groupId: string): Promise<{ state: GroupState; members: BatchMember[] }> {
    const { groups, records, quorum } = this.options;
    let leaving = this.takeLeaving(groupId);
    for (;;) {
      let state: GroupState;
      try {
        state = await groups.draw(groupId, BATCH_MAX_MEMBERS, leaving);
      } catch (err) {
        // Not sent, or not known to be: they leave at the next draw.
        for (const id of leaving) this.leave(groupId, id);
        throw err;
      }
      const read = await records(state.memberIds);
      const members: BatchMember[] = [];
      const gone: string[] = [];
      state.memberIds.forEach((approvalId, i) => {
        const record = read[i];
        if (record && belongs(record, groupId, quorum(record))) members.push(batchMemberOf(record));
        else gone.push(approvalId);
      });
      if (gone.length === 0) return { state, members };
      leaving = gone;
    }
  }

  private takeLeaving(groupId: string): string[] {
    const left = this.leaving.get(groupId);
    if (!left) return [];
    this.leaving.delete(groupId);
    return [...left].slice(0, MAX_MEMBERS_PER_CALL);
  }

  /** This replica won the claim: post the summary, then catch up with what changed meanwhile. */
  private async post(groupId: string): Promise<void> {
    const channel = channelOfGroup(groupId);
    const { state, members } = await this.current(groupId);
    if (state.state !== 'posting' || !state.shared) return;
    // Fewer than two still ask alike: no summary; the claim goes, so a later join may post.
    if (members.length < 2) {
      await this.options.groups.unclaim(groupId);
      return;
    }
    const ts = await this.options.board.post(channel, viewOf(groupId, channel, state.shared, state, members));
    if (await this.options.groups.posted(groupId, ts)) await this.redraw(groupId, state.rev);
  }

  /**
   * Draws the summary from Redis; when a join or leave came in meanwhile (rev moved), asks for
   * another draw, so that whichever replica draws last draws what Redis holds last (at the
   * throttle's pace: in a burst, one draw a second, not one per join).
   */
  private async redraw(groupId: string, drawnRev?: number): Promise<void> {
    const channel = channelOfGroup(groupId);
    const { state, members } = await this.current(groupId);
    if (state.state === 'posting' || !state.ts || !state.shared) return;
    if (state.rev === drawnRev) return;
    const view = viewOf(groupId, channel, state.shared, state, members);
    await this.options.board.update(channel, state.ts, view);
    if ((await this.options.groups.rev(groupId)) !== state.rev) this.redraws.request(groupId);
  }
}

/** Whether a member's record still asks what its group asks (or is being decided there). */
function belongs(record: ApprovalRecord, groupId: string, quorum: number): boolean {
  // Joined just ahead of the write that says where its card is (placing): that write may not be
  // read back yet, and dropping it would empty and close a summary in the middle of a burst.
  if (!record.slack.ts) return record.phase === 'pending' || record.phase === 'deciding';
  if (record.phase === 'deciding') return batchShapeOf(record)?.groupId === groupId;
  return batchGroupOf(record, quorum)?.groupId === groupId;
}

function viewOf(
  groupId: string,
  channel: string,
  shared: BatchShared,
  state: GroupState,
  members: BatchMember[],
): SummaryView {
  return {
    ...(state.state === 'closed' ? { closed: true } : {}),
    groupId,
    channel,
    shared,
    members,
    total: state.total,
    ...(state.note ? { last: JSON.parse(state.note) as BatchOutcome } : {}),
  };
}
