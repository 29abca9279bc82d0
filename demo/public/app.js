// The demo page: one Slack channel, the app's Home tab, modals and confirm dialogs, seen as the
// demo user picked at the top left. It redraws from /api/state whenever /api/events says that
// something changed, and sends every click to the demo server, which signs it as Slack does.

import { el, refreshDates, renderBlocks, renderText } from './blockKit.js';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

const page = {
  user: localStorage.getItem('countersign-demo-user') ?? 'U0ALICE',
  tab: 'channel',
  /** @type {any} */
  state: null,
  /** key → {stamp, node}: a message is redrawn only when it changed. */
  drawn: new Map(),
  /** The modal on screen: {id, hash, inputs} */
  modal: null,
  /** Whether a pointer is pressed: the channel does not scroll away from under it. */
  pressing: false,
};

// ---- talking to the demo server

async function api(path, body) {
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user: page.user, ...body }),
  });
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(answer.error ?? `HTTP ${res.status}`);
  if (answer.status !== undefined && answer.status !== 200) {
    throw new Error(`the bot answered HTTP ${answer.status}`);
  }
  return answer;
}

let loading = false;
let again = false;
async function refresh() {
  if (loading) {
    again = true;
    return;
  }
  loading = true;
  try {
    const res = await fetch(`/api/state?user=${encodeURIComponent(page.user)}`);
    if (res.ok) {
      page.state = await res.json();
      draw();
    }
  } finally {
    loading = false;
    if (again) {
      again = false;
      void refresh();
    }
  }
}

function toast(message) {
  const t = $('toast');
  t.textContent = message;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => {
    t.hidden = true;
  }, 6000);
}

function attempt(promise) {
  promise.catch((err) => toast(err instanceof Error ? err.message : String(err)));
}

// ---- drawing

function userName(id) {
  return page.state?.users.find((u) => u.id === id)?.name ?? id;
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString('en-US', { hour: 'numeric', minute: '2-digit' });
}

function context(onButton) {
  return { userName, onButton };
}

function messageNode(message, { ephemeral = false } = {}) {
  const node = el('article', `message${ephemeral ? ' ephemeral' : ''}`);
  if (!ephemeral) node.dataset.ts = message.ts;
  node.append(el('div', 'avatar', 'CS'));
  const body = el('div', 'message-body');
  const meta = el('div', 'meta');
  meta.append(
    el('span', 'author', 'countersign'),
    el('span', 'app-badge', 'APP'),
    el('span', 'when', clock(message.at)),
  );
  if (ephemeral) meta.append(el('span', 'only-you', 'Only visible to you'));
  body.append(meta);
  const onButton = (button, blockId) => press(message, button, blockId, ephemeral);
  body.append(renderBlocks(message.blocks, message.text, context(onButton)));
  if (message.replies?.length) {
    const thread = el('div', 'thread');
    thread.append(
      el(
        'div',
        'thread-count',
        `${message.replies.length} ${message.replies.length === 1 ? 'reply' : 'replies'}`,
      ),
    );
    for (const reply of message.replies) thread.append(messageNode(reply));
    body.append(thread);
  }
  node.append(body);
  return node;
}

function drawChannel() {
  const list = $('messages');
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  const items = [
    ...page.state.messages.map((m) => ({
      key: `m:${m.ts}`,
      stamp: `${m.version}|${m.replies.map((r) => `${r.ts}:${r.version}`).join(',')}`,
      at: m.at,
      make: () => messageNode(m),
    })),
    ...page.state.ephemerals.map((e) => ({
      key: `e:${e.id}`,
      stamp: '1',
      at: e.at,
      make: () => messageNode(e, { ephemeral: true }),
    })),
  ].sort((a, b) => a.at - b.at);
  const keep = new Map();
  const nodes = items.map((item) => {
    const old = page.drawn.get(item.key);
    const node = old && old.stamp === item.stamp ? old.node : item.make();
    keep.set(item.key, { stamp: item.stamp, node });
    return node;
  });
  page.drawn = keep;
  if (nodes.length === 0) {
    list.replaceChildren(el('p', 'empty', 'Waiting for the agent host to ask for something…'));
    return;
  }
  placeInOrder(list, nodes);
  if (nearBottom && !page.pressing) list.scrollTop = list.scrollHeight;
}

/**
 * Makes `nodes` the children of `list`, moving only what is out of place. A node that is taken
 * out of the document, even for a moment, loses a click being pressed on it (Chromium drops the
 * click when the mousedown's node is removed), so a card that did not change stays where it is
 * while others arrive.
 */
function placeInOrder(list, nodes) {
  const wanted = new Set(nodes);
  for (const child of [...list.children]) if (!wanted.has(child)) child.remove();
  nodes.forEach((node, i) => {
    if (list.children[i] !== node) list.insertBefore(node, list.children[i] ?? null);
  });
}

function drawHome() {
  const home = $('home-view');
  const view = page.state.home;
  home.replaceChildren(
    view
      ? renderBlocks(
          view.view.blocks,
          '',
          context((button) => toast(`${button.action_id}: Home tab buttons are not wired in this demo`)),
        )
      : el('p', 'empty', 'Opening the Home tab…'),
  );
}

function drawModal() {
  const shown = page.state.modal;
  if (!shown) {
    if (page.modal) closeOverlay('modal');
    page.modal = null;
    return;
  }
  if (page.modal && page.modal.id === shown.id && page.modal.hash === shown.hash) return;
  const view = shown.view;
  const inputs = new Map();
  const form = el('form', 'modal');
  form.setAttribute('role', 'dialog');
  form.setAttribute('aria-modal', 'true');
  form.setAttribute('aria-label', view.title?.text ?? 'Modal');
  const head = el('header', 'modal-head');
  head.append(
    renderText(
      view.title,
      context(() => undefined),
      'modal-title',
    ),
  );
  const x = el('button', 'modal-x', '×');
  x.type = 'button';
  x.setAttribute('aria-label', 'Close');
  head.append(x);
  const body = renderBlocks(view.blocks, '', {
    ...context((button) => toast(`${button.action_id}: buttons inside modals are not wired in this demo`)),
    inputs,
  });
  body.classList.add('modal-body');
  const foot = el('footer', 'modal-foot');
  const cancel = el('button', 'bk-button', view.close?.text ?? 'Cancel');
  cancel.type = 'button';
  foot.append(cancel);
  if (view.submit) {
    const submit = el('button', 'bk-button bk-primary', view.submit.text);
    submit.type = 'submit';
    foot.append(submit);
  }
  form.append(head, body, foot);
  const close = () => attempt(api('/api/close', { viewId: shown.id }));
  x.addEventListener('click', close);
  cancel.addEventListener('click', close);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const values = {};
    for (const [blockId, byAction] of inputs) {
      values[blockId] = {};
      for (const [actionId, read] of byAction) values[blockId][actionId] = read();
    }
    attempt(
      api('/api/submit', { viewId: shown.id, values }).then((answer) => {
        for (const [blockId, message] of Object.entries(answer.errors ?? {})) {
          const block = form.querySelector(`[data-block-id="${CSS.escape(blockId)}"]`);
          block?.append(el('div', 'bk-error', message));
        }
      }),
    );
  });
  page.modal = { id: shown.id, hash: shown.hash };
  openOverlay('modal', form);
  form.querySelector('textarea, input')?.focus();
}

function draw() {
  if (!page.state) return;
  drawChannel();
  if (page.tab === 'home') drawHome();
  drawModal();
}

// ---- overlays: the modal, and a button's confirm dialog on top of it

function openOverlay(kind, content) {
  closeOverlay(kind);
  const layer = el('div', `overlay overlay-${kind}`);
  layer.append(content);
  document.body.append(layer);
}

function closeOverlay(kind) {
  for (const layer of document.querySelectorAll(`.overlay-${kind}`)) layer.remove();
}

/** Slack's confirm dialog; resolves true when the confirm button is pressed. */
function confirmDialog(confirm) {
  return new Promise((resolve) => {
    const box = el('div', 'confirm');
    box.setAttribute('role', 'alertdialog');
    box.setAttribute('aria-modal', 'true');
    box.append(
      renderText(
        confirm.title,
        context(() => undefined),
        'confirm-title',
      ),
    );
    box.append(
      renderText(
        confirm.text,
        context(() => undefined),
        'confirm-text',
      ),
    );
    const foot = el('div', 'confirm-foot');
    const deny = el('button', 'bk-button', confirm.deny?.text ?? 'Cancel');
    const ok = el(
      'button',
      `bk-button bk-${confirm.style === 'danger' ? 'danger' : 'primary'}`,
      confirm.confirm?.text ?? 'Yes',
    );
    deny.type = 'button';
    ok.type = 'button';
    foot.append(deny, ok);
    box.append(foot);
    const done = (answer) => {
      closeOverlay('confirm');
      resolve(answer);
    };
    deny.addEventListener('click', () => done(false));
    ok.addEventListener('click', () => done(true));
    openOverlay('confirm', box);
    ok.focus();
  });
}

async function press(message, button, blockId, ephemeral) {
  if (button.confirm && !(await confirmDialog(button.confirm))) return;
  if (ephemeral) {
    toast('Buttons on ephemeral messages are not wired in this demo');
    return;
  }
  await api('/api/action', {
    channel: page.state.channel.id,
    ts: message.ts,
    actionId: button.action_id,
    blockId,
    value: button.value,
    text: button.text?.text,
  });
}

// ---- chrome: user picker, tabs, composer

function setUser(id) {
  page.user = id;
  localStorage.setItem('countersign-demo-user', id);
  page.drawn.clear();
  page.modal = null;
  closeOverlay('modal');
  closeOverlay('confirm');
  if (page.tab === 'home') attempt(api('/api/home', {}));
  void refresh();
}

function setTab(tab) {
  page.tab = tab;
  for (const b of document.querySelectorAll('[data-tab]'))
    b.classList.toggle('active', b.dataset.tab === tab);
  $('channel').hidden = tab !== 'channel';
  $('home').hidden = tab !== 'home';
  $('title').textContent = tab === 'home' ? 'Countersign · Home' : '# approvals';
  if (tab === 'home') {
    if (page.state) drawHome();
    attempt(api('/api/home', {}));
  }
}

async function start() {
  const res = await fetch(`/api/state?user=${encodeURIComponent(page.user)}`);
  if (!res.ok) page.user = 'U0ALICE';
  page.state = res.ok ? await res.json() : null;
  const picker = /** @type {HTMLSelectElement} */ ($('user'));
  if (!page.state) await refresh();
  for (const u of page.state.users) {
    const option = el('option', '', `${u.name} — ${u.title}`);
    option.value = u.id;
    picker.append(option);
  }
  picker.value = page.user;
  picker.addEventListener('change', () => setUser(picker.value));
  for (const b of document.querySelectorAll('[data-tab]'))
    b.addEventListener('click', () => setTab(b.dataset.tab));
  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    const input = /** @type {HTMLInputElement} */ ($('composer-input'));
    const line = input.value.trim();
    const m = /^(\/[a-z0-9_-]+)\s*([\s\S]*)$/.exec(line);
    if (!m) {
      toast('This demo channel only takes slash commands, e.g. /countersign help');
      return;
    }
    input.value = '';
    attempt(api('/api/command', { command: m[1], text: m[2] }));
  });
  document.addEventListener('pointerdown', () => (page.pressing = true), true);
  for (const end of ['pointerup', 'pointercancel'])
    document.addEventListener(end, () => (page.pressing = false), true);
  draw();
  const events = new EventSource('/api/events');
  events.addEventListener('change', () => void refresh());
  events.addEventListener('open', () => {
    $('connection').textContent = '● live';
    $('connection').className = 'live';
  });
  events.addEventListener('error', () => {
    $('connection').textContent = '● reconnecting…';
    $('connection').className = 'offline';
  });
  setInterval(() => refreshDates(document.body), 20_000);
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    const deny = document.querySelector('.overlay-confirm .confirm-foot .bk-button');
    if (deny) deny.click();
    else document.querySelector('.overlay-modal .modal-x')?.click();
  });
}

void start();
