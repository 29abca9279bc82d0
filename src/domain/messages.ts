/** A rendered Slack message: the fallback text plus Block Kit blocks. */
export interface RenderedMessage {
  text: string;
  blocks: unknown[];
}
