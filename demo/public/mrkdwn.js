// Slack mrkdwn → a tree of plain nodes. Pure (no DOM), so it is tested in Node too.
//
// Safety rests on two things: tokens are found before the entities &amp; &lt; &gt; are decoded,
// so text a bot escaped can never turn into a link or a mention; and the page builds DOM from
// these nodes with textContent only, so decoded text is never read as HTML.

/**
 * @typedef {{type: 'text', text: string}
 *   | {type: 'bold' | 'italic' | 'strike', children: MrkdwnNode[]}
 *   | {type: 'code' | 'pre', text: string}
 *   | {type: 'link', url: string, label: string}
 *   | {type: 'user' | 'channel' | 'usergroup', id: string, label: string}
 *   | {type: 'broadcast', name: string}
 *   | {type: 'date', seconds: number, format: string, fallback: string}
 *   | {type: 'emoji', name: string}} MrkdwnNode
 */

/** Slack escapes only these three (slack-platform docs: "Escaping text"). */
export function decodeEntities(text) {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** Links the page may open; anything else is shown as its label only. */
export function isSafeUrl(url) {
  return /^(https?:\/\/|mailto:)/i.test(url);
}

// ``` blocks, `inline code`, and <…> tokens, in one pass so that neither is looked for inside
// the others.
const TOKENS = /```([\s\S]*?)```|`([^`\n]+)`|<([^<>\n]+)>/g;
// Slack's emphasis: the markers hug the text and stand at word boundaries.
const BOUNDARY_BEFORE = '(^|[\\s(\\[{"\'.,;:!?/-])';
const BOUNDARY_AFTER = '(?=$|[\\s)\\]}"\'.,;:!?/-])';
const EMPHASIS = new RegExp(`${BOUNDARY_BEFORE}([*_~])(\\S|\\S[^\\n]*?\\S)\\2${BOUNDARY_AFTER}`);
const EMPHASIS_TYPE = { '*': 'bold', _: 'italic', '~': 'strike' };
const EMOJI = /:([a-z0-9_+-]+):/g;

/** @returns {MrkdwnNode[]} */
export function parseMrkdwn(text) {
  /** @type {MrkdwnNode[]} */
  const out = [];
  let last = 0;
  for (const m of text.matchAll(TOKENS)) {
    out.push(...parseInline(text.slice(last, m.index)));
    if (m[1] !== undefined)
      out.push({ type: 'pre', text: decodeEntities(m[1].replace(/^\n/, '').replace(/\n$/, '')) });
    else if (m[2] !== undefined) out.push({ type: 'code', text: decodeEntities(m[2]) });
    else out.push(angleToken(m[3] ?? ''));
    last = (m.index ?? 0) + m[0].length;
  }
  out.push(...parseInline(text.slice(last)));
  return out;
}

/** Text outside tokens: emphasis (nested), then emoji, then plain text. */
function parseInline(text) {
  if (text === '') return [];
  const m = EMPHASIS.exec(text);
  if (!m) return parseEmoji(text);
  const start = m.index + m[1].length;
  return [
    ...parseEmoji(text.slice(0, start)),
    { type: EMPHASIS_TYPE[m[2]], children: parseInline(m[3]) },
    ...parseInline(text.slice(start + m[2].length * 2 + m[3].length)),
  ];
}

function parseEmoji(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(EMOJI)) {
    if (m.index > last) out.push({ type: 'text', text: decodeEntities(text.slice(last, m.index)) });
    out.push({ type: 'emoji', name: m[1] });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ type: 'text', text: decodeEntities(text.slice(last)) });
  return out;
}

/** The inside of `<…>`: a mention, a date, a link, or else the text as written. */
function angleToken(inner) {
  const bar = inner.indexOf('|');
  const target = bar >= 0 ? inner.slice(0, bar) : inner;
  const label = bar >= 0 ? decodeEntities(inner.slice(bar + 1)) : '';
  if (/^@[UW][A-Z0-9]+$/.test(target)) return { type: 'user', id: target.slice(1), label };
  if (/^#[CGD][A-Z0-9]+$/.test(target)) return { type: 'channel', id: target.slice(1), label };
  const group = /^!subteam\^([A-Z0-9]+)$/.exec(target);
  if (group) return { type: 'usergroup', id: group[1], label };
  const broadcast = /^!(here|channel|everyone)$/.exec(target);
  if (broadcast) return { type: 'broadcast', name: broadcast[1] };
  const date = /^!date\^(\d+)\^([^^]*)(?:\^.*)?$/.exec(target);
  if (date) return { type: 'date', seconds: Number(date[1]), format: date[2], fallback: label };
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
    const url = decodeEntities(target);
    return { type: 'link', url, label: label || url };
  }
  return { type: 'text', text: decodeEntities(`<${inner}>`) };
}
