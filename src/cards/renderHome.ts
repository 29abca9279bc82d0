import type { ActionsBlock, HomeView, KnownBlock, SectionBlock } from '@slack/types';
import type { Refused } from '../domain/authorization.js';
import type { Away } from '../domain/away.js';
import type { Grant } from '../domain/grants/grant.js';
import type { RecentDecision } from '../domain/recentDecision.js';
import { context, divider, header, packSections, plainText, section } from './blocks.js';
import { channelLink } from './channelLink.js';
import { describeDecision } from './describeDecision.js';
import { clipProse } from './prose.js';
import { awayStatusLines } from './renderAway.js';
import { grantBlocks } from './renderGrantList.js';
import { renderHomeStats, type StatsView } from './renderStats.js';
import { noAccessText } from './renderUserMessages.js';
import { oneLineSubject, safeLink, type WaitingApproval, waitingLine } from './renderWaiting.js';
import { slackDate } from './slackDate.js';

// The app's Home tab for one user: what waits for them, what they decided lately, and whether the
// bot's parts are up. Pure; slack/homeTab.ts gathers the facts and publishes it.

/** A Home view holds 100 blocks; the rest of the page needs about ten. */
export const MAX_HOME_WAITING = 40;
/** Slack's limit on a Home view's blocks. */
export const MAX_HOME_BLOCKS = 100;
/** At most this many grants, fewer when the rest of the page leaves less room. */
export const MAX_HOME_GRANTS = 30;

export interface HomeInput {
  /** Oldest first. */
  waiting: readonly WaitingApproval[];
  /** Newest first, with the link to each card when Slack gave one. */
  recent: ReadonlyArray<{ decision: RecentDecision; permalink?: string }>;
  /**
   * Where cards go when no route says otherwise, and whether the bot's parts are up: left out for
   * a stranger some route lets in (a guest on an allowGuests route), who is shown only what waits
   * for them and what is theirs, the same checks deciding each.
   */
  channel?: string;
  status?: { host: boolean; redis: boolean };
  now: Date;
  /** The user's own grants and those of their routes' channels (every grant for an admin). */
  grants?: readonly Grant[];
  /** What the user just did here (a revocation), shown above their grants. */
  notice?: string;
  /** Decision analytics of the routes the user approves on; absent for anyone else. */
  stats?: StatsView;
  /** The user's own absence, and those away they stand in for (`/countersign away`). */
  away?: { own?: Away; standingInFor: readonly Away[] };
}

function waitingItem(item: WaitingApproval, i: number, now: Date): SectionBlock {
  const block = section(waitingLine(item, now));
  const url = safeLink(item.permalink);
  if (url) {
    block.accessory = { type: 'button', action_id: `cs_home_open_${i}`, text: plainText('Open card'), url };
  }
  return block;
}

function recentLine({ decision, permalink }: HomeInput['recent'][number]): string {
  const tool = clipProse(decision.tool.replace(/\s+/g, ' '), 60);
  const link = safeLink(permalink);
  const parts = [describeDecision(decision.decision), link ? `*<${link}|${tool}>*` : `*${tool}*`];
  const subject = oneLineSubject(decision.summary);
  if (subject) parts.push(subject);
  const when = slackDate(decision.decidedAt);
  if (when) parts.push(when);
  return parts.join(' — ');
}

export function renderHome(input: HomeInput): HomeView {
  const status = (up: boolean) => (up ? ':large_green_circle: up' : ':red_circle: down');
  const blocks: Array<KnownBlock | ActionsBlock> = [
    header('Countersign'),
    section(
      input.channel === undefined
        ? 'The approval requests you may decide are listed here. Decide on each card with one click.'
        : `Approval requests from your agents are posted in ${channelLink(input.channel)}. Decide on each card with one click.`,
    ),
  ];
  if (input.status) {
    blocks.push(
      context([`Agent host: ${status(input.status.host)}`, `Redis: ${status(input.status.redis)}`]),
    );
  }
  if (input.away) {
    blocks.push(
      header('Your status'),
      ...packSections(awayStatusLines(input.away.own, input.away.standingInFor)),
    );
  }
  blocks.push(header('Waiting for you'));
  const { waiting, now } = input;
  if (waiting.length === 0) blocks.push(context(['Nothing is waiting for you to decide.']));
  waiting.slice(0, MAX_HOME_WAITING).forEach((item, i) => {
    blocks.push(waitingItem(item, i, now));
  });
  if (waiting.length > MAX_HOME_WAITING) {
    blocks.push(context([`…and ${waiting.length - MAX_HOME_WAITING} more, newer than these.`]));
  }
  blocks.push(divider(), header('Recently decided by you'));
  if (input.recent.length === 0) blocks.push(context(['Nothing yet.']));
  else blocks.push(...packSections(input.recent.map(recentLine)));
  const stats = renderHomeStats(input.stats);
  if (stats.length > 0) blocks.push(divider(), ...stats);
  blocks.push(divider(), header('Grants'));
  if (input.notice) blocks.push(context([input.notice]));
  const grants = input.grants ?? [];
  if (grants.length === 0) blocks.push(context(['No active grants of yours or in your channels.']));
  // One block is kept for the line that counts the grants left out.
  else blocks.push(...grantBlocks(grants, Math.min(MAX_HOME_GRANTS, MAX_HOME_BLOCKS - blocks.length - 1)));
  return { type: 'home', blocks };
}

/** The Home of a stranger no route lets in: that they have no access here, and why; nothing else. */
export function renderNoAccessHome(refused: Refused): HomeView {
  return { type: 'home', blocks: [header('Countersign'), section(noAccessText(refused))] };
}
