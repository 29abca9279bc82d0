// Block Kit limits (docs/slack-platform.md §1) and a checker that walks any payload generically.
// Renderers keep these by construction; tests and the fake Slack server call the checker so a
// payload Slack would refuse fails here first. No imports: the fake server uses it as-is.

export const MAX_BLOCKS_PER_MESSAGE = 50;
export const MAX_BLOCKS_PER_VIEW = 100;
export const MAX_TEXT_OBJECT = 3000;
export const MAX_SECTION_TEXT = 3000;
export const MAX_SECTION_FIELDS = 10;
export const MAX_SECTION_FIELD_TEXT = 2000;
export const MAX_HEADER_TEXT = 150;
export const MAX_CONTEXT_ELEMENTS = 10;
/** A table block (messages only, one per message): its rows, the header's included, and cells. */
export const MAX_TABLE_ROWS = 100;
export const MAX_TABLE_CELLS = 20;
export const MAX_ACTIONS_ELEMENTS = 25;
export const MAX_BUTTON_TEXT = 75;
export const MAX_BUTTON_VALUE = 2000;
export const MAX_BUTTON_URL = 3000;
/** block_id, action_id and callback_id. */
export const MAX_ID_LENGTH = 255;
export const MAX_CONFIRM_TITLE = 100;
export const MAX_CONFIRM_TEXT = 300;
export const MAX_CONFIRM_BUTTON = 30;
/**
 * Text across all blocks of one message. Slack's real budget is undocumented (msg_blocks_too_long
 * seen near 13,200; a maintainer spoke of 12,000 with a buffer); this keeps a margin.
 */
export const MAX_TOTAL_BLOCK_TEXT = 11_000;
/** Top-level `text`: chat.update refuses more (msg_too_long). */
export const MAX_MESSAGE_TEXT = 4000;
/** Our own, tighter cap for a card's fallback text. */
export const MAX_CARD_FALLBACK_TEXT = 3000;
/** Modal title, submit and close. */
export const MAX_VIEW_BUTTON_TEXT = 24;
export const MAX_PRIVATE_METADATA = 3000;
export const MAX_INPUT_LABEL = 2000;
export const MAX_INPUT_HINT = 2000;
export const MAX_PLACEHOLDER = 150;
export const MAX_INPUT_MAX_LENGTH = 3000;

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isTextObject(v: unknown): v is { type: 'plain_text' | 'mrkdwn'; text: unknown } {
  return isObj(v) && (v.type === 'plain_text' || v.type === 'mrkdwn') && 'text' in v;
}

interface TextRule {
  max: number;
  plainOnly?: boolean;
  what: string;
}

class Checker {
  readonly violations: string[] = [];
  /** Text objects already held to a place-specific rule, so the generic pass does not repeat it. */
  private readonly placed = new WeakSet<object>();

  add(path: string, problem: string): void {
    this.violations.push(`${path}: ${problem}`);
  }

  text(path: string, v: unknown, rule: TextRule, required = true): void {
    if (v === undefined) {
      if (required) this.add(path, `${rule.what} is missing`);
      return;
    }
    if (!isTextObject(v)) {
      this.add(path, `${rule.what} is not a text object`);
      return;
    }
    this.placed.add(v);
    if (rule.plainOnly && v.type !== 'plain_text') this.add(path, `${rule.what} must be plain_text`);
    if (typeof v.text !== 'string') {
      this.add(path, `${rule.what} has no text string`);
      return;
    }
    if (v.text.length === 0) this.add(path, `${rule.what} is empty`);
    if (v.text.length > rule.max) this.add(path, `${rule.what} is ${v.text.length} chars > ${rule.max}`);
  }

  id(path: string, v: unknown, what: string): void {
    if (v === undefined) return;
    if (typeof v !== 'string' || v.length === 0) this.add(path, `${what} must be a non-empty string`);
    else if (v.length > MAX_ID_LENGTH) this.add(path, `${what} is ${v.length} chars > ${MAX_ID_LENGTH}`);
  }

  string(path: string, v: unknown, max: number, what: string): void {
    if (v === undefined) return;
    if (typeof v !== 'string') this.add(path, `${what} must be a string`);
    else if (v.length > max) this.add(path, `${what} is ${v.length} chars > ${max}`);
  }

  confirm(path: string, v: unknown): void {
    if (v === undefined) return;
    if (!isObj(v)) {
      this.add(path, 'confirm is not an object');
      return;
    }
    this.text(`${path}.title`, v.title, { max: MAX_CONFIRM_TITLE, plainOnly: true, what: 'confirm title' });
    this.text(`${path}.text`, v.text, { max: MAX_CONFIRM_TEXT, what: 'confirm text' });
    this.text(
      `${path}.confirm`,
      v.confirm,
      { max: MAX_CONFIRM_BUTTON, plainOnly: true, what: 'confirm button' },
      false,
    );
    this.text(
      `${path}.deny`,
      v.deny,
      { max: MAX_CONFIRM_BUTTON, plainOnly: true, what: 'deny button' },
      false,
    );
    if (v.style !== undefined && v.style !== 'primary' && v.style !== 'danger') {
      this.add(`${path}.style`, 'style must be primary or danger');
    }
  }

  element(path: string, el: unknown): void {
    if (!isObj(el) || typeof el.type !== 'string') {
      this.add(path, 'element has no type');
      return;
    }
    this.id(`${path}.action_id`, el.action_id, 'action_id');
    this.confirm(`${path}.confirm`, el.confirm);
    this.text(
      `${path}.placeholder`,
      el.placeholder,
      { max: MAX_PLACEHOLDER, plainOnly: true, what: 'placeholder' },
      false,
    );
    if (el.type === 'button') {
      this.text(`${path}.text`, el.text, { max: MAX_BUTTON_TEXT, plainOnly: true, what: 'button text' });
      this.string(`${path}.value`, el.value, MAX_BUTTON_VALUE, 'button value');
      this.string(`${path}.url`, el.url, MAX_BUTTON_URL, 'button url');
      if (el.style !== undefined && el.style !== 'primary' && el.style !== 'danger') {
        this.add(`${path}.style`, 'style must be primary or danger');
      }
    } else if (el.type === 'plain_text_input' && el.max_length !== undefined) {
      if (typeof el.max_length !== 'number' || el.max_length > MAX_INPUT_MAX_LENGTH || el.max_length < 1) {
        this.add(`${path}.max_length`, `max_length must be 1..${MAX_INPUT_MAX_LENGTH}`);
      }
    }
  }

  block(path: string, block: unknown, blockIds: Set<string>): void {
    if (!isObj(block) || typeof block.type !== 'string') {
      this.add(path, 'block has no type');
      return;
    }
    this.id(`${path}.block_id`, block.block_id, 'block_id');
    if (typeof block.block_id === 'string') {
      if (blockIds.has(block.block_id)) this.add(`${path}.block_id`, `duplicate block_id ${block.block_id}`);
      blockIds.add(block.block_id);
    }
    switch (block.type) {
      case 'header':
        this.text(`${path}.text`, block.text, { max: MAX_HEADER_TEXT, plainOnly: true, what: 'header text' });
        break;
      case 'section':
        this.section(path, block);
        break;
      case 'context':
        this.list(path, 'elements', block.elements, MAX_CONTEXT_ELEMENTS, 'context', (p, el) => {
          if (isTextObject(el)) this.text(p, el, { max: MAX_TEXT_OBJECT, what: 'context text' });
        });
        break;
      case 'actions': {
        const actionIds = new Set<string>();
        this.list(path, 'elements', block.elements, MAX_ACTIONS_ELEMENTS, 'actions', (p, el) => {
          this.element(p, el);
          if (isObj(el) && typeof el.action_id === 'string') {
            if (actionIds.has(el.action_id))
              this.add(`${p}.action_id`, `duplicate action_id ${el.action_id}`);
            actionIds.add(el.action_id);
          }
        });
        break;
      }
      case 'input':
        this.text(`${path}.label`, block.label, {
          max: MAX_INPUT_LABEL,
          plainOnly: true,
          what: 'input label',
        });
        this.text(
          `${path}.hint`,
          block.hint,
          { max: MAX_INPUT_HINT, plainOnly: true, what: 'input hint' },
          false,
        );
        this.element(`${path}.element`, block.element);
        break;
      case 'table':
        this.table(path, block);
        break;
      default:
        break;
    }
  }

  /** Slack's table block: at most 100 rows of at most 20 cells, each a raw_text or rich_text. */
  private table(path: string, block: Obj): void {
    const rows = block.rows;
    if (!Array.isArray(rows) || rows.length === 0) {
      this.add(`${path}.rows`, 'table needs a non-empty list of rows');
      return;
    }
    if (rows.length > MAX_TABLE_ROWS)
      this.add(`${path}.rows`, `table has ${rows.length} rows > ${MAX_TABLE_ROWS}`);
    for (const [i, row] of rows.entries()) {
      if (!Array.isArray(row) || row.length === 0 || row.length > MAX_TABLE_CELLS)
        this.add(`${path}.rows[${i}]`, `a table row needs 1 to ${MAX_TABLE_CELLS} cells`);
    }
  }

  private section(path: string, block: Obj): void {
    if (block.text === undefined && block.fields === undefined)
      this.add(path, 'section has neither text nor fields');
    this.text(`${path}.text`, block.text, { max: MAX_SECTION_TEXT, what: 'section text' }, false);
    if (block.fields !== undefined) {
      this.list(path, 'fields', block.fields, MAX_SECTION_FIELDS, 'section fields', (p, f) =>
        this.text(p, f, { max: MAX_SECTION_FIELD_TEXT, what: 'section field' }),
      );
    }
    if (block.accessory !== undefined) this.element(`${path}.accessory`, block.accessory);
  }

  private list(
    path: string,
    key: 'elements' | 'fields',
    items: unknown,
    max: number,
    what: string,
    each: (path: string, item: unknown) => void,
  ): void {
    if (!Array.isArray(items) || items.length === 0) {
      this.add(`${path}.${key}`, `${what} needs a non-empty list`);
      return;
    }
    if (items.length > max) this.add(`${path}.${key}`, `${what} has ${items.length} ${key} > ${max}`);
    for (const [i, item] of items.entries()) each(`${path}.${key}[${i}]`, item);
  }

  /** Every text object anywhere: counted toward the total and held to the general 3,000. */
  sweep(path: string, v: unknown, total: { chars: number }): void {
    if (Array.isArray(v)) {
      for (const [i, item] of v.entries()) this.sweep(`${path}[${i}]`, item, total);
      return;
    }
    if (!isObj(v)) return;
    if (isTextObject(v) && typeof v.text === 'string') {
      total.chars += v.text.length;
      if (!this.placed.has(v)) this.text(path, v, { max: MAX_TEXT_OBJECT, what: 'text' });
      return;
    }
    for (const [key, child] of Object.entries(v)) this.sweep(`${path}.${key}`, child, total);
  }

  blocks(blocks: unknown, maxBlocks: number, maxTotal: number | undefined): void {
    if (blocks === undefined) return;
    if (!Array.isArray(blocks)) {
      this.add('blocks', 'must be an array');
      return;
    }
    if (blocks.length > maxBlocks) this.add('blocks', `${blocks.length} blocks > ${maxBlocks}`);
    const ids = new Set<string>();
    for (const [i, b] of blocks.entries()) this.block(`blocks[${i}]`, b, ids);
    const total = { chars: 0 };
    this.sweep('blocks', blocks, total);
    if (maxTotal !== undefined && total.chars > maxTotal) {
      this.add('blocks', `${total.chars} characters of text across blocks > ${maxTotal}`);
    }
  }
}

/** Characters of text in every text object of `blocks` (what Slack's block size budget counts). */
export function countBlockText(blocks: unknown): number {
  let chars = 0;
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) for (const item of v) walk(item);
    else if (isTextObject(v) && typeof v.text === 'string') chars += v.text.length;
    else if (isObj(v)) for (const child of Object.values(v)) walk(child);
  };
  walk(blocks);
  return chars;
}

/** Violations of Slack's message limits in a chat.postMessage/chat.update payload; empty = ok. */
export function checkMessageLimits(message: { text?: unknown; blocks?: unknown }): string[] {
  const c = new Checker();
  const hasBlocks = Array.isArray(message.blocks) && message.blocks.length > 0;
  if (message.text === undefined) {
    if (hasBlocks) c.add('text', 'fallback text is missing (notifications and screen readers use it)');
    else c.add('message', 'has neither text nor blocks');
  } else if (typeof message.text !== 'string') {
    c.add('text', 'must be a string');
  } else if (message.text.length > MAX_MESSAGE_TEXT) {
    c.add('text', `${message.text.length} chars > ${MAX_MESSAGE_TEXT}`);
  }
  c.blocks(message.blocks, MAX_BLOCKS_PER_MESSAGE, MAX_TOTAL_BLOCK_TEXT);
  if (tablesIn(message.blocks) > 1) c.add('blocks', 'a message holds at most one table block');
  return c.violations;
}

function tablesIn(blocks: unknown): number {
  return Array.isArray(blocks) ? blocks.filter((b) => isObj(b) && b.type === 'table').length : 0;
}

/** Violations of Slack's limits in a modal or Home tab view (views.open/push/update/publish). */
export function checkViewLimits(view: unknown): string[] {
  const c = new Checker();
  if (!isObj(view)) return ['view: must be an object'];
  if (view.type !== 'modal' && view.type !== 'home') c.add('type', 'must be modal or home');
  if (tablesIn(view.blocks) > 0) c.add('blocks', 'table blocks are for messages only');
  c.id('callback_id', view.callback_id, 'callback_id');
  c.string('private_metadata', view.private_metadata, MAX_PRIVATE_METADATA, 'private_metadata');
  if (view.type === 'modal') {
    const rule = { max: MAX_VIEW_BUTTON_TEXT, plainOnly: true };
    c.text('title', view.title, { ...rule, what: 'title' });
    c.text('close', view.close, { ...rule, what: 'close' }, false);
    const hasInput = Array.isArray(view.blocks) && view.blocks.some((b) => isObj(b) && b.type === 'input');
    c.text('submit', view.submit, { ...rule, what: 'submit' }, hasInput);
  }
  if (!Array.isArray(view.blocks)) c.add('blocks', 'must be an array');
  c.blocks(view.blocks, MAX_BLOCKS_PER_VIEW, undefined);
  return c.violations;
}
