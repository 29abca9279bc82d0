import { LRUCache } from 'lru-cache';
import { MAX_HOST_ID_CHARS } from '../../msp/protocol.js';
import { MAX_FOLLOWED_SESSIONS } from '../../msp/sessionFollower.js';
import { cutAtCodePoint } from '../../util/cutAtCodePoint.js';
import { fitText } from './intake/fitText.js';
import type { PartReport } from './intake/partIntake.js';

// What the bot remembers of each session a host announced (sessionSeen), for the cards and the
// routes. Everything in it is the host's to choose: the sessionId, the title, the prompt, the
// directory. So it is kept per host (one host never names another's session, whatever id it
// gives) and bounded, in what one session keeps and in how many sessions a host keeps.

/**
 * A session's label and title, in characters. More than any card shows of it (cards/budget.ts:
 * 500 at most) and far more than a route's `sessionTitles` glob is ever written for.
 */
export const MAX_SESSION_TEXT_CHARS = 1024;
/**
 * A workspaceRoot longer than this (Linux's PATH_MAX) is no directory a session runs in: it is
 * not kept, and the session's workspace is unknown. A cut path would be another path, on which
 * routes and risk rules would resolve relative paths wrongly.
 */
export const MAX_WORKSPACE_ROOT_CHARS = 4096;
/**
 * A session whose id is longer is not remembered at all: its key alone would be unbounded. The
 * bound every host id is held to (no frame with a longer session id gets this far).
 */
export const MAX_SESSION_ID_CHARS = MAX_HOST_ID_CHARS;
/**
 * Sessions remembered per host, the ones announced longest ago forgotten first. A host lists its
 * loaded sessions and announces each one it starts: thousands is a busy host, and every one it
 * still has is announced again (session/list after a restart or a gap). At the bounds above one
 * host keeps at most about 65 MB (twice that in text outside Latin-1), where unbounded, one host
 * could fill the bot's memory (60 titles of 4 MB took 300 MB for good).
 * A forgotten session is one the bot has not seen yet: its approvals are routed and shown
 * without its title or workspace (no `sessionTitles` or `workspaces` route matches them) until
 * the host announces it again. As many as the host's follower keeps following.
 */
export const MAX_SESSIONS_PER_HOST = MAX_FOLLOWED_SESSIONS;

/** What a session announcement says, as the host sent it. */
export interface SessionAnnounced {
  label?: string;
  title?: string;
  workspaceRoot?: string;
}

/** What is kept of one session. */
export interface KnownSession {
  /** What cards call the session: masked and cut (intake's fitText), with what that did. */
  label?: { text: string; intake: PartReport };
  /** What routes match `sessionTitles` on: as the host wrote it, cut. */
  title?: string;
  workspaceRoot?: string;
}

/**
 * The first `max` characters of `text`, in a string of their own. A V8 slice of a long string
 * keeps the whole of it alive: a title cut out of a 4 MB frame would hold the 4 MB.
 */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  return Buffer.from(cutAtCodePoint(text, max), 'utf16le').toString('utf16le');
}

/** A fitted text, never a slice of the text it came from (see cut). */
function fitted(raw: string): { text: string; intake: PartReport } {
  const fit = fitText(raw, MAX_SESSION_TEXT_CHARS);
  const text = fit.text === raw ? raw : Buffer.from(fit.text, 'utf16le').toString('utf16le');
  return { text, intake: { maskedSecrets: fit.maskedSecrets, truncated: fit.truncated } };
}

export class KnownSessions {
  private readonly byHost = new Map<string, LRUCache<string, KnownSession>>();

  constructor(private readonly maxPerHost = MAX_SESSIONS_PER_HOST) {}

  /** The host announced the session: what it says now replaces what it said before. */
  seen(hostId: string, sessionId: string, announced: SessionAnnounced): void {
    if (sessionId.length > MAX_SESSION_ID_CHARS) return;
    let sessions = this.byHost.get(hostId);
    if (!sessions) {
      sessions = new LRUCache({ max: this.maxPerHost });
      this.byHost.set(hostId, sessions);
    }
    const { label, title, workspaceRoot } = announced;
    const kept: KnownSession = {};
    if (label !== undefined) kept.label = fitted(label);
    if (title !== undefined) kept.title = cut(title, MAX_SESSION_TEXT_CHARS);
    if (workspaceRoot !== undefined && workspaceRoot.length <= MAX_WORKSPACE_ROOT_CHARS) {
      kept.workspaceRoot = workspaceRoot;
    }
    // The newest: the session announced longest ago is the one forgotten past the bound.
    sessions.set(sessionId, kept);
  }

  /** What the host said of its session, if the bot still knows it. */
  get(hostId: string, sessionId: string): KnownSession | undefined {
    // peek, not get: only an announcement keeps a session, never an approval that reads it.
    return this.byHost.get(hostId)?.peek(sessionId);
  }
}
