/** A rendered Slack message: the fallback text plus Block Kit blocks. */
export interface RenderedMessage {
  text: string;
  blocks: unknown[];
}

/** Where cards live. slack/ implements it; the relay never sees a Slack client. */
export interface CardChannel {
  /**
   * Resolves with the message's ts and the channel's ID (a `#name` comes back as its ID).
   * `render` is called when the card's turn to be posted comes: a card waiting behind a channel's
   * rate limit holds its record, not its rendered blocks.
   */
  post(channel: string, render: () => RenderedMessage): Promise<{ ts: string; channel: string }>;
  update(channel: string, ts: string, message: RenderedMessage): Promise<void>;
}

/** Tells one person something only they see. */
export interface UserNotifier {
  ephemeral(channel: string, userId: string, text: string): Promise<void>;
}
