import type { HomeView } from '@slack/types';
import type { Logger } from 'pino';
import { type HomeInput, MAX_HOME_WAITING, renderHome, renderNoAccessHome } from '../cards/renderHome.js';
import type { StatsView } from '../cards/renderStats.js';
import { subjectSummary } from '../cards/subjectSummary.js';
import type { Refused } from '../domain/authorization.js';
import type { Away } from '../domain/away.js';
import type { Grant } from '../domain/grants/grant.js';
import type { RecentDecision } from '../domain/recentDecision.js';
import type { ApprovalRecord } from '../domain/record.js';
import type { HomeViewers } from '../store/homeViewers.js';
import type { RecentDecisions } from '../store/recentDecisions.js';
import { TrailingThrottle } from '../util/trailingThrottle.js';
import type { Permalinks } from './permalinks.js';
import { classifySlackError } from './slackFailures.js';
import type { SlackViews } from './slackViews.js';
import { statsFor, type UserStatsOptions } from './userStats.js';
import type { WaitingApprovals } from './waitingApprovals.js';

type HomeInputAway = NonNullable<HomeInput['away']>;

export interface HomeTabOptions {
  views: SlackViews;
  waiting: WaitingApprovals;
  recent: RecentDecisions;
  /**
   * Whether the user may still be shown one of their own past decisions: what they decided once
   * is not theirs to see for ever (a member who became a guest, a route that no longer lets them in).
   */
  mayRecall: (userId: string, decision: RecentDecision) => Promise<boolean>;
  viewers: HomeViewers;
  permalinks: Permalinks;
  /**
   * Whether the user is a stranger, and the routes that let them in all the same
   * (Authorizer.asStranger over every route); undefined for a member. Asked at every publish.
   */
  stranger: (userId: string) => Promise<{ refused: Refused; letIn: readonly string[] } | undefined>;
  /** Where cards go when no route says otherwise. */
  channel: string;
  status: () => { host: boolean; redis: boolean };
  /** The grants the user is shown (relay/grantLists.ts); without it, the section says none. */
  grants?: (userId: string) => Promise<Grant[]>;
  /** Decision analytics of the user's routes; without it, the Home has no such section. */
  stats?: UserStatsOptions;
  /** The user's absence and whom they stand in for (store/awayStore.ts); without it, not shown. */
  away?: {
    get(userId: string): Promise<Away | undefined>;
    standingInFor(userId: string): Promise<Away[]>;
  };
  logger: Logger;
  /** How long approvals may keep changing before a Home is published again (a burst is one publish). */
  settleMs?: number;
  /** One user's Home is published at most once per this; views.publish is rate-limited. */
  intervalMs?: number;
}

/** How old the Home's stats may be: its publishes follow every change, the stats need not. */
const HOME_STATS_STALE_MS = 60_000;

/** Publishes of one Home Slack may refuse for now in a row (429s, lost answers) before it is left as is. */
const MAX_REPUBLISHES = 5;

/**
 * Each user's Home tab: published when they open it, and again when approvals change while they
 * count as viewers (they opened it lately). Publishes are throttled per user, on the trailing
 * edge, so a burst of approvals costs a user's Home a few publishes and the last shows them all.
 */
export class HomeTab {
  private readonly publishes: TrailingThrottle;
  /** Changes are gathered for a moment before the viewers are read: one Redis read per burst. */
  private readonly refreshes: TrailingThrottle;
  /**
   * What each user did on their Home (a revocation), shown until a publish carrying it lands:
   * a publish Slack refused for now is asked again, and must still say it. Each note is its own
   * object, so one published is told apart from a newer one with the same words.
   */
  private readonly notices = new Map<string, { text: string }>();
  /** userId → the one publish asked again once Slack lets it (a 429's Retry-After), and how many in a row. */
  private readonly republishes = new Map<string, { timer?: NodeJS.Timeout; failed: number }>();
  private readonly intervalMs: number;

  constructor(private readonly options: HomeTabOptions) {
    const settleMs = options.settleMs ?? 500;
    this.intervalMs = options.intervalMs ?? 3_000;
    this.publishes = new TrailingThrottle((userId) => this.publish(userId), {
      settleMs,
      intervalMs: this.intervalMs,
    });
    this.refreshes = new TrailingThrottle(() => this.refreshViewers(), { settleMs, intervalMs: settleMs });
  }

  /**
   * The user opened the tab: remember them as a viewer, and show it now. The publish runs on a
   * later timer, so a stranger's refusal drops them (publish) only after this has noted them.
   */
  async opened(userId: string): Promise<void> {
    this.publishes.request(userId, true);
    await this.options.viewers.opened(userId);
  }

  /**
   * RecordKeeper's follower: must not throw or wait. A record resolved by a click goes into its
   * decider's recent list (once) before the viewers' Homes are refreshed.
   */
  follow(record: ApprovalRecord): void {
    const decidedBy = record.phase === 'resolved' ? record.resolution?.slackUserId : undefined;
    const noted = decidedBy ? this.noteDecision(decidedBy, record) : Promise.resolve();
    void noted.then(() => this.refreshes.request('viewers'));
  }

  /** The user did something on their Home (revoked a grant): show it at once, with `notice`. */
  changed(userId: string, notice: string): void {
    this.notices.set(userId, { text: notice });
    this.publishes.request(userId, true);
  }

  /** Someone's absence changed: their Home and their delegate's are published again. */
  awayChanged(userIds: readonly string[]): void {
    for (const userId of userIds) this.publishes.request(userId, true);
  }

  /** A grant was revoked: every open Home that may list it is published again. */
  grantsChanged(): void {
    this.refreshes.request('viewers');
  }

  stop(): void {
    this.publishes.stop();
    this.refreshes.stop();
    for (const { timer } of this.republishes.values()) clearTimeout(timer);
    this.republishes.clear();
  }

  private async noteDecision(userId: string, record: ApprovalRecord): Promise<void> {
    const { resolution, slack } = record;
    if (!resolution) return;
    const what = subjectSummary(record);
    try {
      await this.options.recent.add(userId, {
        approvalId: record.approvalId,
        tool: record.tool,
        ...(what ? { summary: what } : {}),
        decision: resolution.decision,
        decidedAt: resolution.decidedAt,
        channel: slack.channel,
        ...(slack.ts ? { ts: slack.ts } : {}),
        route: record.route ?? '',
      });
    } catch (err) {
      this.options.logger.warn({ err, approvalId: record.approvalId }, 'could not note a recent decision');
    }
  }

  private async refreshViewers(): Promise<void> {
    try {
      for (const userId of await this.options.viewers.current()) this.publishes.request(userId);
    } catch (err) {
      this.options.logger.warn({ err }, 'could not read who has App Home open');
    }
  }

  /** The user's recent decisions they may still be shown, each checked as the Home is published. */
  private async recalled(userId: string): Promise<RecentDecision[]> {
    const { recent, mayRecall } = this.options;
    const decisions = await recent.list(userId);
    const shown = await Promise.all(decisions.map((decision) => mayRecall(userId, decision)));
    return decisions.filter((_, i) => shown[i]);
  }

  /** A Home without its grants beats no Home: what waits for the user matters more. */
  private async grantsOf(userId: string): Promise<Grant[]> {
    try {
      return (await this.options.grants?.(userId)) ?? [];
    } catch (err) {
      this.options.logger.warn({ err, userId }, 'could not list grants for the App Home');
      return [];
    }
  }

  /** Stats are a nice-to-have beside what waits: a failed read leaves the section out. */
  private async statsOf(userId: string): Promise<StatsView | undefined> {
    const { stats, logger } = this.options;
    if (!stats) return undefined;
    try {
      return await statsFor(userId, { window: '7d', staleMs: HOME_STATS_STALE_MS }, stats);
    } catch (err) {
      logger.warn({ err, userId }, 'could not read decision stats for the App Home');
      return undefined;
    }
  }

  /** A Home without the user's status beats no Home. */
  private async awayOf(userId: string): Promise<HomeInputAway | undefined> {
    const { away } = this.options;
    if (!away) return undefined;
    try {
      const [own, standingInFor] = await Promise.all([away.get(userId), away.standingInFor(userId)]);
      return { ...(own ? { own } : {}), standingInFor };
    } catch (err) {
      this.options.logger.warn({ err, userId }, 'could not read who is away for the App Home');
      return undefined;
    }
  }

  private async publish(userId: string): Promise<void> {
    const { views, logger } = this.options;
    try {
      const notice = this.notices.get(userId);
      const { view, follows } = await this.viewOf(userId, notice);
      if (!follows) await this.unfollow(userId);
      await views.publish(userId, view);
      this.forgetNotice(userId, notice);
      // Shown: a publish still asked again for an older failure has nothing left to show.
      clearTimeout(this.republishes.get(userId)?.timer);
      this.republishes.delete(userId);
    } catch (err) {
      const again = this.publishLater(userId, err);
      logger.warn({ err, userId, ...(again ? { retryInMs: again } : {}) }, 'could not publish the App Home');
    }
  }

  /**
   * A Home no approval changes is not published again as they change: each such publish would
   * spend Slack's views.publish budget for nothing, on as many users as strangers choose to be.
   * A failed drop costs only those publishes.
   */
  private async unfollow(userId: string): Promise<void> {
    try {
      await this.options.viewers.left(userId);
    } catch (err) {
      this.options.logger.warn({ err, userId }, 'could not stop following an App Home');
    }
  }

  /**
   * The user's Home as it is now, and whether it follows approvals (see unfollow). A stranger
   * no route lets in (or one Slack does not confirm) is told only that; one some route lets in
   * is shown what the checks let them see, but not SLACK_CHANNEL, the bot's health or who is
   * away, which no route is theirs to know.
   */
  private async viewOf(
    userId: string,
    notice: { text: string } | undefined,
  ): Promise<{ view: HomeView; follows: boolean }> {
    const { waiting, permalinks, channel, status } = this.options;
    const stranger = await this.options.stranger(userId);
    if (stranger && stranger.letIn.length === 0) {
      // One Slack did not confirm may be a member: their Home is right again once Slack answers.
      return { view: renderNoAccessHome(stranger.refused), follows: stranger.refused.why === 'unverified' };
    }
    const [items, decisions, grants, stats, away] = await Promise.all([
      waiting.for(userId, MAX_HOME_WAITING),
      this.recalled(userId),
      this.grantsOf(userId),
      this.statsOf(userId),
      stranger ? undefined : this.awayOf(userId),
    ]);
    const recentLinked = await Promise.all(
      decisions.map(async (decision) => {
        const permalink = decision.ts ? await permalinks.of(decision.channel, decision.ts) : undefined;
        return permalink ? { decision, permalink } : { decision };
      }),
    );
    const view = renderHome({
      waiting: items,
      recent: recentLinked,
      ...(stranger ? {} : { channel, status: status() }),
      now: new Date(),
      grants,
      ...(stats ? { stats } : {}),
      ...(notice ? { notice: notice.text } : {}),
      ...(away ? { away } : {}),
    });
    return { view, follows: true };
  }

  /** A note shown is not shown again, unless a newer one came while it was on its way. */
  private forgetNotice(userId: string, shown: { text: string } | undefined): void {
    if (shown && this.notices.get(userId) === shown) this.notices.delete(userId);
  }

  /**
   * views.publish is limited per workspace (Tier 4) while the throttle is per user: in a burst
   * with many Homes open, Slack may answer 429 for longer than a quick retry waits, and the
   * publish dropped is likely the last, the one that is right. Nothing else would ask again, so
   * the Home is published again once Slack allows (after a lost answer, an interval later),
   * through the throttle: one pending per user, showing what is true then. A few in a row at
   * most: a Slack that keeps refusing is not asked forever. Returns the wait, if any.
   */
  private publishLater(userId: string, err: unknown): number | undefined {
    const failure = classifySlackError(err);
    if (failure.kind !== 'rateLimited' && failure.kind !== 'retry') return undefined;
    const entry = this.republishes.get(userId) ?? { failed: 0 };
    entry.failed += 1;
    if (entry.failed > MAX_REPUBLISHES) {
      this.republishes.delete(userId);
      return undefined;
    }
    const waitMs = failure.kind === 'rateLimited' ? failure.retryAfterMs : this.intervalMs * entry.failed;
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      this.publishes.request(userId, true);
    }, waitMs);
    entry.timer.unref();
    this.republishes.set(userId, entry);
    return waitMs;
  }
}
