/** A rendered Slack message: the fallback text plus Block Kit blocks. */
export interface RenderedMessage {
  text: string;
  blocks: unknown[];
}

/** Where cards live. slack/ implements it; the relay never sees a Slack client. */
export interface CardChannel {
  /** Resolves with the message's ts and the channel's ID (a `#name` comes back as its ID). */
  post(channel: string, message: RenderedMessage): Promise<{ ts: string; channel: string }>;
  update(channel: string, ts: string, message: RenderedMessage): Promise<void>;
}

/** Tells one person something only they see. */
export interface UserNotifier {
  ephemeral(channel: string, userId: string, text: string): Promise<void>;
}
