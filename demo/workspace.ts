// The Slack side of the demo: what each demo user sees of the fake Slack (the channel, their
// ephemerals, their open modal, their App Home), and their clicks, modal submissions, slash
// commands and App Home visits sent to the bot as Slack sends them: real signed requests.

import { randomBytes } from 'node:crypto';
import { SIGNING_SECRET } from '../test/support/bot.js';
import type { FakeSlack, SlackMessage, SlackView } from '../test/support/fakeSlack.js';
import {
  blockActionsPayload,
  postEvent,
  postInteraction,
  postSlashCommand,
  viewSubmissionPayload,
} from '../test/support/slackRequests.js';

export interface DemoUser {
  id: string;
  name: string;
  title: string;
}

export const DEMO_USERS: DemoUser[] = [
  { id: 'U0ALICE', name: 'Alice Moreau', title: 'Tech lead' },
  { id: 'U0BOB', name: 'Bob Okafor', title: 'Backend engineer' },
  { id: 'U0CAROL', name: 'Carol Nguyen', title: 'Security' },
];

/**
 * What Slack does to a command's text when the command has `should_escape` (manifest.yml): a
 * typed `@bob` reaches the bot as `<@U0BOB|bob>` (`/countersign away until 3d delegate @bob`).
 */
export function escapeMentions(text: string): string {
  return text.replace(/@([\w.-]+)/g, (typed, name: string) => {
    const lower = name.toLowerCase();
    const user = DEMO_USERS.find(
      (u) => u.id.toLowerCase() === lower || u.name.split(' ')[0]!.toLowerCase() === lower,
    );
    return user ? `<@${user.id}|${name}>` : typed;
  });
}

export interface ShownMessage {
  ts: string;
  text: string;
  blocks: unknown[];
  /** How many states the message has had: the page redraws a message only when it changes. */
  version: number;
  at: number;
  replies: ShownMessage[];
}

export interface ShownEphemeral {
  id: string;
  text: string;
  blocks: unknown[];
  at: number;
}

export interface ShownView {
  id: string;
  hash: string;
  view: Record<string, unknown>;
}

/** Everything one user's page shows. */
export interface WorkspaceState {
  me: string;
  users: DemoUser[];
  channel: { id: string; name: string };
  messages: ShownMessage[];
  ephemerals: ShownEphemeral[];
  modal: ShownView | null;
  home: ShownView | null;
}

export interface ButtonPress {
  channel: string;
  ts: string;
  actionId: string;
  blockId?: string;
  value?: string;
  text?: string;
}

export interface BotAnswer {
  /** The bot's HTTP status. */
  status: number;
  /** Field errors the bot answered a view submission with (response_action: errors). */
  errors?: Record<string, string>;
}

export class UnknownTargetError extends Error {}

export class DemoWorkspace {
  /** trigger_id → the user whose action produced it: views.open tells whom a modal is for. */
  private readonly triggers = new Map<string, string>();
  /** user → the view id of the modal open on their screen. */
  private readonly modals = new Map<string, string>();
  /** Ephemeral answers of slash commands, which come back in the HTTP answer, not the Web API. */
  private readonly commandReplies: Array<ShownEphemeral & { user: string }> = [];
  private readonly listeners = new Set<() => void>();
  private callsSeen = 0;
  private counter = 0;

  constructor(
    private readonly slack: FakeSlack,
    private readonly botUrl: string,
    readonly channel: { id: string; name: string },
  ) {
    for (const u of DEMO_USERS) {
      slack.setUser(u.id, { real_name: u.name, profile: { display_name: u.name, title: u.title } });
    }
    slack.onChange(() => {
      this.noteOpenedViews();
      this.changed();
    });
  }

  /** Calls `listener` whenever what some user sees may have changed. Returns an unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  isUser(id: string): boolean {
    return DEMO_USERS.some((u) => u.id === id);
  }

  stateFor(user: string): WorkspaceState {
    const shown = (m: SlackMessage): ShownMessage => ({
      ts: m.ts,
      text: m.text,
      blocks: m.blocks,
      version: m.versions.length,
      at: m.versions[0]?.at ?? 0,
      replies: this.slack.repliesTo(m.channel, m.ts).map(shown),
    });
    const ephemerals: ShownEphemeral[] = [
      ...this.slack.ephemerals
        .filter((e) => e.user === user && e.channel === this.channel.id)
        .map((e) => ({ id: e.messageTs, text: e.text, blocks: e.blocks, at: e.at })),
      ...this.commandReplies.filter((r) => r.user === user).map(({ user: _, ...r }) => r),
      // Answers that came later, through the command's response_url (/countersign pending, whoami).
      ...this.slack.responses
        .filter((r) => r.id.startsWith(`cmd-${user}-`))
        .map((r) => ({
          id: r.id,
          text: typeof r.body.text === 'string' ? r.body.text : '',
          blocks: Array.isArray(r.body.blocks) ? r.body.blocks : [],
          at: r.at,
        })),
    ].sort((a, b) => a.at - b.at);
    const modalId = this.modals.get(user);
    const modal = modalId ? this.slack.views.get(modalId) : undefined;
    const home = [...this.slack.views.values()].find(
      (v) => v.method === 'views.publish' && v.userId === user,
    );
    return {
      me: user,
      users: DEMO_USERS,
      channel: this.channel,
      messages: this.slack.messagesIn(this.channel.id).map(shown),
      ephemerals,
      modal: modal ? shownView(modal) : null,
      home: home ? shownView(home) : null,
    };
  }

  /** A button press on a message, sent as Slack's block_actions payload. */
  async press(user: string, press: ButtonPress): Promise<BotAnswer> {
    const message = this.slack.message(press.channel, press.ts);
    if (!message) throw new UnknownTargetError(`no message ${press.channel}/${press.ts}`);
    const payload = blockActionsPayload({
      userId: user,
      userName: this.nameOf(user),
      channel: press.channel,
      ts: press.ts,
      actionId: press.actionId,
      value: press.value ?? '',
      ...(press.blockId ? { blockId: press.blockId } : {}),
      ...(press.text ? { buttonText: press.text } : {}),
      responseUrl: this.slack.responseUrl(`${user}-${this.nextId()}`),
      triggerId: this.triggerFor(user),
      messageText: message.text,
      messageBlocks: message.blocks,
    });
    const res = await postInteraction(this.botUrl, SIGNING_SECRET, payload);
    await res.arrayBuffer();
    return { status: res.status };
  }

  /** The user's modal submitted with `values` (view.state.values), as Slack's view_submission. */
  async submitView(
    user: string,
    viewId: string,
    values: Record<string, Record<string, Record<string, unknown>>>,
  ): Promise<BotAnswer> {
    const record = this.openModal(user, viewId);
    const view = record.view;
    const base = viewSubmissionPayload({
      userId: user,
      userName: this.nameOf(user),
      callbackId: String(view.callback_id ?? ''),
      privateMetadata: String(view.private_metadata ?? ''),
      values,
      viewId,
      hash: record.hash,
      triggerId: this.triggerFor(user),
    });
    const baseView = base.view as Record<string, unknown>;
    const payload = { ...base, view: { ...view, ...baseView, blocks: view.blocks ?? [], title: view.title } };
    const res = await postInteraction(this.botUrl, SIGNING_SECRET, payload);
    const body = await res.text();
    const answer = parseViewAnswer(body);
    if (res.status === 200 && answer.errors === undefined && this.modals.get(user) === viewId) {
      // An empty ack (or response_action: clear) closes the modal, as in Slack.
      this.modals.delete(user);
      this.changed();
    }
    return { status: res.status, ...(answer.errors ? { errors: answer.errors } : {}) };
  }

  /** The user closed their modal; the bot hears of it only when the view asked (notify_on_close). */
  async closeView(user: string, viewId: string): Promise<BotAnswer> {
    const record = this.openModal(user, viewId);
    this.modals.delete(user);
    this.changed();
    if (record.view.notify_on_close !== true) return { status: 200 };
    const payload = {
      ...viewSubmissionPayload({
        userId: user,
        userName: this.nameOf(user),
        callbackId: String(record.view.callback_id ?? ''),
        privateMetadata: String(record.view.private_metadata ?? ''),
        values: {},
        viewId,
        hash: record.hash,
      }),
      type: 'view_closed',
      is_cleared: false,
    };
    const res = await postInteraction(this.botUrl, SIGNING_SECRET, payload);
    await res.arrayBuffer();
    return { status: res.status };
  }

  /** The user opened the app's Home tab: Slack sends app_home_opened. */
  async openHome(user: string): Promise<BotAnswer> {
    const res = await postEvent(this.botUrl, SIGNING_SECRET, {
      type: 'app_home_opened',
      user,
      channel: `D${user}`,
      tab: 'home',
      event_ts: `${(Date.now() / 1000).toFixed(6)}`,
    });
    await res.arrayBuffer();
    return { status: res.status };
  }

  /** A slash command typed in the channel; an ephemeral answer is shown to that user only. */
  async command(user: string, command: string, text: string): Promise<BotAnswer> {
    const res = await postSlashCommand(this.botUrl, SIGNING_SECRET, {
      command,
      text: escapeMentions(text),
      user_id: user,
      user_name: this.nameOf(user),
      channel_id: this.channel.id,
      channel_name: this.channel.name,
      response_url: this.slack.responseUrl(`cmd-${user}-${this.nextId()}`),
      trigger_id: this.triggerFor(user),
    });
    const body = await res.text();
    const reply = parseCommandReply(body);
    if (res.status === 200 && reply) {
      this.commandReplies.push({ id: `cmd-${this.nextId()}`, user, at: Date.now(), ...reply });
      this.changed();
    }
    return { status: res.status };
  }

  private openModal(user: string, viewId: string): SlackView {
    const record = this.modals.get(user) === viewId ? this.slack.views.get(viewId) : undefined;
    if (!record) throw new UnknownTargetError(`no open modal ${viewId} for ${user}`);
    return record;
  }

  private noteOpenedViews(): void {
    const calls = this.slack.calls;
    for (; this.callsSeen < calls.length; this.callsSeen += 1) {
      const call = calls[this.callsSeen]!;
      if (call.method !== 'views.open' || call.response.ok !== true) continue;
      const user = this.triggers.get(String(call.args.trigger_id));
      const id = (call.response.view as { id?: unknown } | undefined)?.id;
      if (user && typeof id === 'string') this.modals.set(user, id);
    }
  }

  private triggerFor(user: string): string {
    const id = `${Math.floor(Date.now() / 1000)}.${this.nextId()}.${randomBytes(8).toString('hex')}`;
    this.triggers.set(id, user);
    return id;
  }

  private nameOf(user: string): string {
    return (
      DEMO_USERS.find((u) => u.id === user)
        ?.name.split(' ')[0]
        ?.toLowerCase() ?? user.toLowerCase()
    );
  }

  private nextId(): number {
    this.counter += 1;
    return this.counter;
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}

function shownView(v: SlackView): ShownView {
  return { id: v.id, hash: v.hash, view: v.view };
}

function parseJson(body: string): Record<string, unknown> | undefined {
  if (!body.trim().startsWith('{')) return undefined;
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function parseViewAnswer(body: string): { errors?: Record<string, string> } {
  const json = parseJson(body);
  if (json?.response_action === 'errors' && typeof json.errors === 'object' && json.errors !== null) {
    return { errors: json.errors as Record<string, string> };
  }
  return {};
}

function parseCommandReply(body: string): { text: string; blocks: unknown[] } | undefined {
  const json = parseJson(body);
  if (json) {
    if (json.response_type === 'in_channel') return undefined;
    const text = typeof json.text === 'string' ? json.text : '';
    const blocks = Array.isArray(json.blocks) ? json.blocks : [];
    return text || blocks.length ? { text, blocks } : undefined;
  }
  return body.trim() ? { text: body.trim(), blocks: [] } : undefined;
}
