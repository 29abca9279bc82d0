// No message the bot posts unfurls: agent text in it (a command, a URL it fetches, a choice's
// label) must never make Slack fetch a link or show a preview of it. Set where every post leaves
// (webClient.ts, cardCalls.ts), so that no caller can forget it.

/** `args` of a chat.postMessage with link and media previews off; `args` itself when they are already. */
export function withoutUnfurls<T extends object>(args: T): T & { unfurl_links: false; unfurl_media: false } {
  const set = args as { unfurl_links?: unknown; unfurl_media?: unknown };
  if (set.unfurl_links === false && set.unfurl_media === false)
    return args as T & { unfurl_links: false; unfurl_media: false };
  return { ...args, unfurl_links: false, unfurl_media: false };
}
