import type { RenderedMessage } from '../domain/messages.js';
import type { Refusal } from '../domain/refusal.js';

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

/**
 * Failures the card channel has logged already, in words that say what to do (a channel to
 * invite the bot to, a call given up on): whoever catches one need not log it again, with a
 * stack that adds nothing. A WeakSet, so the error itself is passed on unchanged.
 */
const alreadyLogged = new WeakSet<object>();

export function markLogged(err: unknown): void {
  if (typeof err === 'object' && err !== null) alreadyLogged.add(err);
}

export function wasLogged(err: unknown): boolean {
  return typeof err === 'object' && err !== null && alreadyLogged.has(err);
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

/**
 * Tells one person, and only them, what came of their click. The relay hands over the outcome;
 * slack/ turns it into the sentence (cards/renderUserMessages.ts) and sends it, ephemeral.
 */
export interface RefusalNotifier {
  refuse(channel: string, userId: string, refusal: Refusal): Promise<void>;
}
