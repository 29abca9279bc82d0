// Every Redis key the bot uses comes from here, and each carries exactly one hash tag `{…}`: on
// Redis Cluster the tag alone picks the key's slot, and a script or pipeline may only touch keys of
// one slot. Keys of one approval share `{approvalId}`, a host's open sets and sessions `{hostId}`,
// a grant and its bucket the bucket's tag, a Slack user's lists `{userId}`; the few keys every
// approval or grant shares (the unsynced cards, the audit streams, the escalation schedule, the
// grant indexes) each have a tag of their own, so no round trip has to span two of them.

const PREFIX = 'cs';

/** What every batch key of a channel starts with: the channel is the tag. */
function batchChannel(channel: string): string {
  return `${PREFIX}:batch:{${channel}}`;
}

/**
 * A batch group's key: the group id is `<channel>:<digest>`. batchGroups.ts's join script builds
 * the same from batchChannel, `:<digest>:` and the part: change both together.
 */
function batchKey(groupId: string, part: string): string {
  const at = groupId.lastIndexOf(':');
  return `${batchChannel(groupId.slice(0, at))}:${groupId.slice(at + 1)}:${part}`;
}

export const keys = {
  /**
   * Hash: `v` = version, `d` = record JSON, `f` = fence; `xs`/`xa` = the full text of a subject or
   * arguments intake cut (fullText.ts), only for such requests.
   */
  approval: (approvalId: string) => `${PREFIX}:approval:{${approvalId}}`,
  /** Who is deciding one stage (requirement sourceIndex) of an approval, with its commandId. */
  claim: (approvalId: string, sourceIndex: number) => `${PREFIX}:claim:{${approvalId}}:${sourceIndex}`,
  /** Held while one worker posts the card, so a card is never posted twice. */
  postLease: (approvalId: string) => `${PREFIX}:post:{${approvalId}}`,
  /** Slack message (channel, ts) → approvalId. */
  message: (channel: string, ts: string) => `${PREFIX}:msg:{${channel}:${ts}}`,
  /** Set of approvalIds not yet final, per host: what orphaning a dead host's cards looks at. */
  openApprovals: (hostId: string) => `${PREFIX}:open:{${hostId}}`,
  /** The same per session: what reconciling one session looks at. */
  openInSession: (hostId: string, sessionId: string) => `${PREFIX}:open:{${hostId}}:s:${sessionId}`,
  /**
   * Hash: sessionId → JSON of what a respawned host needs to follow it again (last view cursor).
   * Every session an approval came from is here, until the host says it has no such session.
   */
  sessions: (hostId: string) => `${PREFIX}:sessions:{${hostId}}`,
  /**
   * Sorted set: approvalIds whose card may not show their record yet (score: when the record was
   * written). A process that dies with a card update in flight leaves its mark here, and the next
   * start brings that card up to date.
   */
  unsyncedCards: () => `${PREFIX}:{cards}:unsynced`,
  /** The batch summaries posted and not yet closed, by group id: what the triage's sweep redraws. */
  batchOpen: () => `${PREFIX}:{batch}:open`,
  /** Held, with a TTL, by the one process that sweeps the open summaries this period. */
  batchSweep: () => `${PREFIX}:{batch}:sweep`,
  /**
   * `<replicaId> <token>`, with a TTL: which replica owns the host (runs its process and acts for
   * it) and with which fencing token. Taken only when absent (hostLeases.ts).
   */
  hostLease: (hostId: string) => `${PREFIX}:lease:{${hostId}}`,
  /** The host's fencing counter: each new lease gets the next value, so tokens only ever grow. */
  hostFence: (hostId: string) => `${PREFIX}:fence:{${hostId}}`,
  /** Stream of decisions taken at a replica that does not own the host, for its owner to carry out. */
  decisions: (hostId: string) => `${PREFIX}:decisions:{${hostId}}`,
  /** How one forwarded decision stands between its asker and the owner (decisionStream.ts). */
  decisionReply: (hostId: string, commandId: string) => `${PREFIX}:decisions:{${hostId}}:reply:${commandId}`,
  /** The outcome pushed for an asker blocked on it (BLPOP): the reply key's slot, gone once read. */
  decisionReplyList: (hostId: string, commandId: string) =>
    `${PREFIX}:decisions:{${hostId}}:replied:${commandId}`,
  /** Sorted set of live replicas, scored by when each stops counting (ms): what a fair share is of. */
  replicas: () => `${PREFIX}:{replicas}`,
  /** Held by the one replica bringing a card left behind up to date (recoverCards), briefly. */
  cardSync: (approvalId: string) => `${PREFIX}:cardsync:{${approvalId}}`,
  /** Written and deleted in one script at start-up: does Redis let the bot work (redisAccess.ts)? */
  accessCheck: () => `${PREFIX}:{access-check}`,
  /** Stream of audit entries (decisions, risk rules, votes), capped with XADD MAXLEN ~. */
  audit: `${PREFIX}:{audit}`,
  /**
   * Stream of refused attempts, capped on its own: anyone may be refused as often as they click,
   * so refusals never share a cap with the decisions they would push out.
   */
  refusals: `${PREFIX}:{audit}:refusals`,
  /**
   * Bumped with every decision entry (same tag as the stream, same script): a cached stats summary
   * made at another generation is stale (decisionStatsReader.ts).
   */
  statsGeneration: `${PREFIX}:{audit}:stats:gen`,
  /**
   * Set when an approval's decision entry is written, in the stream's slot: the entry is written
   * once per approval, by whichever write sets this first (auditStream.ts).
   */
  decisionAudited: (approvalId: string) => `${PREFIX}:{audit}:decided:${approvalId}`,
  /**
   * Set when a vote's entry is written, in the stream's slot: one vote (its voter and the time it
   * was cast) is written once, by whichever replica, cast or closing its claim, writes it first.
   */
  voteAudited: (approvalId: string, userId: string, at: string) =>
    `${PREFIX}:{audit}:voted:${approvalId}:${userId}:${at}`,
  /** JSON of the last stats summary of one window (ms), with the generation it was made at. */
  statsCache: (windowMs: number) => `${PREFIX}:{audit}:stats:${windowMs}`,
  /** How many times one Slack user was refused in the current minute: a counter with a TTL. */
  refusalCount: (userId: string) => `${PREFIX}:refused:{${userId}}`,
  /** Whether one notice (thread line, requester DM, stream entry) of an approval was sent. */
  notice: (approvalId: string, kind: string) => `${PREFIX}:notice:{${approvalId}}:${kind}`,
  /** JSON array of a Slack user group's members, for a short while: every replica reads the same. */
  usergroup: (usergroupId: string) => `${PREFIX}:usergroup:{${usergroupId}}`,
  /** JSON of a Slack user's team, enterprise and guest status (users.info), for a short while. */
  person: (userId: string) => `${PREFIX}:person:{${userId}}`,
  /** JSON array of a Slack channel's members (conversations.members), for at most five minutes. */
  channelMembers: (channel: string) => `${PREFIX}:members:{${channel}}`,
  /** List, newest first: JSON of the last approvals a Slack user decided (App Home). */
  recentDecisions: (userId: string) => `${PREFIX}:decided:{${userId}}`,
  /**
   * Set once an approval is in its decider's list, so it is listed once however often its final
   * record is stored. Same hash tag as the list: one script writes both.
   */
  recentDecisionNoted: (userId: string, approvalId: string) => `${PREFIX}:decided:{${userId}}:${approvalId}`,
  /**
   * Sorted set of escalation steps waiting to fire, scored by when they are due (ms). A member is
   * the JSON of [approvalId, step, lineage], or of ["resolve", approvalId, lineage] for the
   * PagerDuty resolves of an ended request, due when its resolver's lease runs out; taking one out
   * (ZREM) is what claims it.
   */
  escalationDue: () => `${PREFIX}:{esc}:due`,
  /**
   * The token of the last claim that took this member (see escalationDue) out of the schedule,
   * for a few minutes: a claim sent again after a dropped connection lost its reply finds the
   * member gone, and this says it was its own. Same hash tag as the schedule: one script writes both.
   */
  escalationClaim: (member: string) => `${PREFIX}:{esc}:claim:${member}`,
  /**
   * Hash, one per request across the approvals that carry it (a superseded one and its successor):
   * `start` (ms), `origin` (approvalId of the first card), `s:<approvalId>` once that approval is
   * scheduled, `f<step>` once a step fired (JSON of what it did) and `c<step>` (the token of the
   * claim that marked it), `paged:<tag>` (`tag`) for each PagerDuty service paged, the tag a short
   * hash of its routing key. Never the routing key itself: an earlier release wrote it as the value
   * of `paged:<tag>`, and before that of `paged` alone, which are still read (escalationStore.ts).
   */
  escalationLineage: (lineage: string) => `${PREFIX}:esc:line:{${lineage}}`,
  /**
   * Hash of an ended request's pages not yet resolved: `approvalId`, `dedupKey`, and the lineage's
   * `paged:<tag>` fields (tags, not routing keys), each taken off once its resolve settled. In the
   * lineage's slot: the lineage's end moves them here in one script.
   */
  escalationUnresolved: (lineage: string) => `${PREFIX}:esc:unresolved:{${lineage}}`,
  /** JSON array of the Slack users on call for one PagerDuty schedule or policy, for a short while. */
  oncallPagerDuty: (source: string) => `${PREFIX}:oncall:pd:{${source}}`,
  /** JSON of one Slack user's absence (`/countersign away`), expiring when it ends (awayStore.ts). */
  away: (userId: string) => `${PREFIX}:away:{${userId}}`,
  /**
   * Sorted set: who named this user their delegate, scored by when their absence ends (ms). A
   * hint only: each name is checked against that person's own `away` key before it counts.
   */
  standIn: (delegate: string) => `${PREFIX}:standin:{${delegate}}`,
  /** Sorted set: Slack users whose App Home is shown, scored by when that stops counting (ms). */
  homeViewers: () => `${PREFIX}:{home-viewers}`,

  // Remembered grants (grantStore.ts). A grant id starts with its bucket's tag (grantIds.ts): from
  // the id alone the store finds the string its grant is a row of.
  /**
   * String, one per bucket tag: the JSON array of its grants' rows (grantRows.ts), the grants of
   * every bucket whose tag it is (nearly always one). Short: the key is paid for per grant.
   */
  grantTag: (bucketTag: string) => `${PREFIX}:g:{${bucketTag}}`,
  /**
   * Set, for as long as a resolved record is kept, by the count of one approval stage's use of a
   * grant of this tag (grantScripts.ts, RECORD_USE): in the tag's slot, so the count checks it in
   * its own step, and a use finished by two replicas (or replayed) is counted once.
   */
  grantUseCounted: (bucketTag: string, approvalId: string, sourceIndex: number) =>
    `${PREFIX}:g:{${bucketTag}}:u:${approvalId}:${sourceIndex}`,
  /**
   * One reserve or give-back of a use of a grant of this tag, by its call's random id, with the
   * call's answer, briefly: the call sent again (its reply lost) answers from it (grantScripts.ts).
   */
  grantUseCall: (bucketTag: string, callId: string) => `${PREFIX}:g:{${bucketTag}}:c:${callId}`,
  /** String: the tags of the grants ending in this minute (ms / 60,000), 10 characters each. */
  grantEnds: (minute: number) => `${PREFIX}:{grants}:ends:${minute}`,
  /** Sorted set of the minutes that have a `grantEnds` string, scored by themselves. */
  grantEndMinutes: () => `${PREFIX}:{grants}:endMinutes`,
  /** Hash: minute → how much of its `grantEnds` string the sweep has read. */
  grantEndsRead: () => `${PREFIX}:{grants}:endsRead`,
  /** Streams of bucket tags (field `t`), newest last: a channel's and a granter's grants. */
  grantsListedIn: (channel: string) => `${PREFIX}:gl:c:{${channel}}`,
  grantsListedBy: (userId: string) => `${PREFIX}:gl:u:{${userId}}`,
  /** Set of the channels with a listing stream: "all grants" reads theirs. */
  grantChannels: () => `${PREFIX}:{grants}:channels`,
  /**
   * Hash: channel → how many grants were listed there, bumped after each listing entry is added.
   * The sweep forgets a channel whose stream is empty only if this did not move meanwhile.
   */
  grantChannelListings: () => `${PREFIX}:{grants}:channelListings`,

  // The layout of releases before the compact one (legacyGrantStore.ts), read until its grants end.
  // A grant and the bucket it lives in share one hash tag, and the tag of the compact string.
  /**
   * Hash, one per grant: `d` = the JSON that never changes, `end` = ms when it stops being live
   * (bot-held) or listed (host-held), `uses`, `last`, `revAt`, `revBy`, `rep` (the grant that
   * replaced it); `left`/`max`/`exh` for a grant by uses; `bk`/`cf` = its bucket key and field,
   * so it can leave the bucket without decoding `d`.
   */
  grant: (bucketTag: string, grantId: string) => `${PREFIX}:grant:{${bucketTag}}:${grantId}`,
  /**
   * Hash, one per (caller, tool, sandboxMode, route): canonical capabilities JSON → the bot-held
   * grantId of that key (one at a time: a new grant of the key replaces the old one).
   */
  grantBucket: (bucketTag: string, bucketHash: string) =>
    `${PREFIX}:grants:bucket:{${bucketTag}}:${bucketHash}`,
  /** Sorted sets of grantIds by createdAt (ms): what listing reads instead of every grant. */
  grantsByChannel: (channel: string) => `${PREFIX}:grants:channel:{${channel}}`,
  grantsByGranter: (userId: string) => `${PREFIX}:grants:by:{${userId}}`,
  grantsAll: () => `${PREFIX}:{grants}:all`,
  /** Sorted set of grantIds by `end` (ms): what sweep() looks at. */
  grantsExpiring: () => `${PREFIX}:{grants}:expiring`,
  /**
   * Stream of grant events (created, used, exhausted, expired, revoked, replaced), capped with
   * XADD MAXLEN ~.
   */
  grantAudit: `${PREFIX}:{grants}:audit`,
  /**
   * Set, for as long as a resolved record is kept, when one approval stage's `used` entry is
   * written: in the stream's slot, so the entry is written once, by whichever write sets this first.
   */
  grantUseRecorded: (approvalId: string, sourceIndex: number) =>
    `${PREFIX}:{grants}:used:${approvalId}:${sourceIndex}`,

  // Batch triage (batchGroups.ts): a group is one channel's pending approvals that ask the same,
  // its id `<channel>:<digest>`. Every batch key of a channel shares the tag `{<channel>}`, so what
  // a moment's joins do to all of a channel's groups is one script.
  /**
   * Never stored: the prefix of a channel's batch keys, which the join script declares (it routes
   * the script to the channel's slot on a Cluster) and builds its groups' keys from.
   */
  batchChannel,
  /** Sorted set: a group's approvalIds scored by their card's ts, so a summary lists the oldest first. */
  batchOrder: (groupId: string) => batchKey(groupId, 'o'),
  /**
   * Hash: the group's summary card: `state` (posting | posted | closed), `ts`, `rev` (bumped by
   * every join and leave, so a render that raced a change is drawn again), `shared` (JSON),
   * `note` (the last batch decision, shown on the card).
   */
  batchSummary: (groupId: string) => batchKey(groupId, 's'),
  /**
   * String, with a TTL: an open "Reject all" form of one user (batchRejectForms.ts): its channel,
   * members and which were refused, audited, when it opened. Its metadata carries only the id.
   */
  batchRejectForm: (userId: string, formId: string) => `${PREFIX}:batchform:{${userId}}:${formId}`,
} as const;
