// Block Kit JSON → DOM, the way Slack draws it. Every string reaches the page through
// textContent or a checked href: nothing the bot (or the agent behind it) wrote is parsed as HTML.

import { formatSlackDate } from './dates.js';
import { decodeEntities, isSafeUrl, parseMrkdwn } from './mrkdwn.js';

const EMOJI = {
  white_check_mark: '✅',
  heavy_check_mark: '✔️',
  no_entry: '⛔',
  no_entry_sign: '🚫',
  x: '❌',
  grey_question: '❔',
  question: '❓',
  hourglass: '⌛',
  hourglass_flowing_sand: '⏳',
  arrows_counterclockwise: '🔄',
  ghost: '👻',
  lock: '🔒',
  scales: '⚖️',
  robot_face: '🤖',
  large_green_circle: '🟢',
  red_circle: '🔴',
  white_circle: '⚪',
  warning: '⚠️',
  rotating_light: '🚨',
  bell: '🔔',
  eyes: '👀',
  information_source: 'ℹ️',
  wave: '👋',
};

/**
 * @typedef {object} RenderContext
 * @property {(id: string) => string} userName
 * @property {(button: object, blockId: string | undefined) => void} onButton
 * @property {Map<string, Map<string, () => object>>} [inputs] filled by input blocks (modals)
 * @property {Record<string, string>} [errors] block_id → error from response_action: errors
 */

/** @returns {HTMLElement} */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function emoji(name) {
  return Object.hasOwn(EMOJI, name) ? EMOJI[name] : `:${name}:`;
}

function appendMrkdwn(parent, nodes, ctx) {
  for (const n of nodes) {
    switch (n.type) {
      case 'text':
        parent.append(document.createTextNode(n.text));
        break;
      case 'bold':
      case 'italic':
      case 'strike': {
        const tag = { bold: 'b', italic: 'i', strike: 's' }[n.type];
        const child = el(tag);
        appendMrkdwn(child, n.children, ctx);
        parent.append(child);
        break;
      }
      case 'code':
        parent.append(el('code', 'bk-code', n.text));
        break;
      case 'pre':
        parent.append(el('pre', 'bk-pre', n.text));
        break;
      case 'link': {
        if (isSafeUrl(n.url)) {
          const a = el('a', 'bk-link', n.label);
          a.href = n.url;
          a.target = '_blank';
          a.rel = 'noopener noreferrer';
          a.title = n.url;
          parent.append(a);
        } else parent.append(document.createTextNode(n.label));
        break;
      }
      case 'user':
        parent.append(el('span', 'bk-mention', `@${ctx.userName(n.id)}`));
        break;
      case 'channel':
        parent.append(el('span', 'bk-mention', `#${n.label || n.id}`));
        break;
      case 'usergroup':
        parent.append(el('span', 'bk-mention', n.label || `@${n.id}`));
        break;
      case 'broadcast':
        parent.append(el('span', 'bk-mention bk-broadcast', `@${n.name}`));
        break;
      case 'date': {
        const span = el('time', 'bk-date', formatSlackDate(n.seconds, n.format, n.fallback));
        span.dateTime = new Date(n.seconds * 1000).toISOString();
        span.title = n.fallback;
        // Kept so that the page can refresh `{ago}` as time passes, as Slack does.
        span.dataset.seconds = String(n.seconds);
        span.dataset.format = n.format;
        span.dataset.fallback = n.fallback;
        parent.append(span);
        break;
      }
      case 'emoji':
        parent.append(el('span', 'bk-emoji', emoji(n.name)));
        break;
    }
  }
}

/** A text object: mrkdwn parsed, plain_text shown as written (emoji codes if it asks). */
export function renderText(obj, ctx, className = 'bk-text') {
  const node = el('div', className);
  if (!obj || typeof obj.text !== 'string') return node;
  if (obj.type === 'mrkdwn') {
    appendMrkdwn(node, parseMrkdwn(obj.text), ctx);
  } else {
    const text = decodeEntities(obj.text);
    node.textContent = obj.emoji === true ? text.replace(/:([a-z0-9_+-]+):/g, (_, n) => emoji(n)) : text;
  }
  return node;
}

function plain(obj) {
  return obj && typeof obj.text === 'string' ? decodeEntities(obj.text) : '';
}

function renderButton(button, blockId, ctx) {
  const b = el('button', `bk-button${button.style ? ` bk-${button.style}` : ''}`, plain(button.text));
  b.type = 'button';
  if (button.action_id) b.dataset.actionId = button.action_id;
  if (button.url && isSafeUrl(button.url)) {
    b.title = button.url;
    b.addEventListener('click', () => window.open(button.url, '_blank', 'noopener,noreferrer'));
  }
  b.addEventListener('click', () => ctx.onButton(button, blockId));
  return b;
}

function renderElement(element, blockId, ctx) {
  if (element.type === 'button') return renderButton(element, blockId, ctx);
  if (element.type === 'image') return el('span', 'bk-image', `[image: ${element.alt_text ?? ''}]`);
  return el('span', 'bk-unsupported', `[${element.type} is not drawn by this page]`);
}

function renderInput(block, ctx) {
  const wrap = el('div', 'bk-input');
  const id = `in-${block.block_id ?? Math.random().toString(36).slice(2)}`;
  const label = el('label', 'bk-input-label', plain(block.label));
  label.htmlFor = id;
  if (block.optional) label.append(el('span', 'bk-optional', ' (optional)'));
  wrap.append(label);
  const element = block.element ?? {};
  let field;
  if (element.type === 'plain_text_input') {
    field = element.multiline ? el('textarea', 'bk-field') : el('input', 'bk-field');
    if (!element.multiline) field.type = 'text';
    if (element.placeholder) field.placeholder = plain(element.placeholder);
    if (element.max_length) field.maxLength = element.max_length;
    if (element.initial_value) field.value = element.initial_value;
    field.id = id;
    wrap.append(field);
    if (ctx.inputs && block.block_id && element.action_id) {
      const byAction = ctx.inputs.get(block.block_id) ?? new Map();
      byAction.set(element.action_id, () => ({ type: 'plain_text_input', value: field.value }));
      ctx.inputs.set(block.block_id, byAction);
    }
  } else {
    wrap.append(el('span', 'bk-unsupported', `[${element.type} input is not drawn by this page]`));
  }
  if (block.hint) wrap.append(el('div', 'bk-hint', plain(block.hint)));
  const error = block.block_id ? ctx.errors?.[block.block_id] : undefined;
  if (error) wrap.append(el('div', 'bk-error', error));
  return wrap;
}

/** rich_text as plain text: its text elements are not mrkdwn and must not be parsed as such. */
function richTextOf(block, ctx) {
  const parts = [];
  const walk = (node) => {
    if (typeof node.text === 'string') parts.push(node.text);
    else if (node.type === 'user') parts.push(`@${ctx.userName(node.user_id)}`);
    else if (node.type === 'emoji') parts.push(emoji(node.name));
    for (const child of node.elements ?? []) walk(child);
  };
  walk(block);
  return parts.join('');
}

/** One block. */
export function renderBlock(block, ctx) {
  const node = el('div', `bk-block bk-${block.type}`);
  if (block.block_id) node.dataset.blockId = block.block_id;
  switch (block.type) {
    case 'header':
      node.append(renderText(block.text, ctx, 'bk-header-text'));
      break;
    case 'section': {
      const main = el('div', 'bk-section-main');
      if (block.text) main.append(renderText(block.text, ctx));
      if (Array.isArray(block.fields) && block.fields.length > 0) {
        const fields = el('div', 'bk-fields');
        for (const f of block.fields) fields.append(renderText(f, ctx, 'bk-field-text'));
        main.append(fields);
      }
      node.append(main);
      if (block.accessory) node.append(renderElement(block.accessory, block.block_id, ctx));
      break;
    }
    case 'context':
      for (const e of block.elements ?? []) {
        node.append(
          e.type === 'image' ? renderElement(e, block.block_id, ctx) : renderText(e, ctx, 'bk-context-text'),
        );
      }
      break;
    case 'divider':
      node.append(el('hr'));
      break;
    case 'actions':
      for (const e of block.elements ?? []) node.append(renderElement(e, block.block_id, ctx));
      break;
    case 'input':
      node.append(renderInput(block, ctx));
      break;
    case 'image':
      node.append(renderElement(block, block.block_id, ctx));
      break;
    case 'rich_text':
      node.append(el('div', 'bk-text', richTextOf(block, ctx)));
      break;
    case 'markdown':
      node.append(el('div', 'bk-text', block.text ?? ''));
      break;
    default:
      node.append(el('span', 'bk-unsupported', `[${block.type} block is not drawn by this page]`));
  }
  return node;
}

/** Redraws every date token under `root` for the current time. */
export function refreshDates(root) {
  for (const t of root.querySelectorAll('time.bk-date')) {
    t.textContent = formatSlackDate(
      Number(t.dataset.seconds),
      t.dataset.format ?? '',
      t.dataset.fallback ?? '',
    );
  }
}

/** A message's or view's blocks; a message without blocks shows its text as mrkdwn. */
export function renderBlocks(blocks, fallbackText, ctx) {
  const wrap = el('div', 'bk-blocks');
  if (Array.isArray(blocks) && blocks.length > 0) {
    for (const b of blocks) wrap.append(renderBlock(b, ctx));
  } else if (fallbackText) {
    wrap.append(renderText({ type: 'mrkdwn', text: fallbackText }, ctx));
  }
  return wrap;
}
