import type { IncomingMessage } from 'node:http';

/**
 * The request's path as Bolt's receiver reads it (`new URL(req.url, 'http://localhost').pathname`):
 * every spelling Bolt serves as its events path (`/slack/./events`, `/slack/%2e/events`, an
 * absolute URL) reads the same here. Undefined for a URL that does not parse (`//`), which Bolt
 * throws on: every server of the bot answers it 400 instead.
 */
export function pathOf(req: IncomingMessage): string | undefined {
  try {
    return new URL(req.url ?? '/', 'http://localhost').pathname;
  } catch {
    return undefined;
  }
}
