import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_FRAME_BYTES,
  encodeFrame,
  FrameDecoder,
  type OversizedFrame,
} from '../../../src/msp/framing.js';
import { transcriptLines } from '../../support/transcripts.js';

function decodeAll(decoder: FrameDecoder, chunks: Buffer[]): string[] {
  const frames: string[] = [];
  for (const chunk of chunks) frames.push(...decoder.push(chunk));
  frames.push(...decoder.end());
  return frames;
}

describe('FrameDecoder', () => {
  it('splits lines, strips \\r before \\n and ignores blank lines', () => {
    const decoder = new FrameDecoder();
    const frames = decodeAll(decoder, [Buffer.from('{"a":1}\r\n\n  \r\n{"b":2}\n\r\n{"c":3}\n')]);
    expect(frames).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });

  it('joins a line split across chunks, also in the middle of a multi-byte character', () => {
    const bytes = Buffer.from('{"text":"héllo €😀"}\n{"n":2}\n', 'utf8');
    const euro = bytes.indexOf(Buffer.from('€'));
    const emoji = bytes.indexOf(Buffer.from('😀'));
    const chunks = [bytes.subarray(0, 3), bytes.subarray(3, euro + 1), bytes.subarray(euro + 1, emoji + 2)];
    chunks.push(bytes.subarray(emoji + 2, emoji + 3), bytes.subarray(emoji + 3));
    const frames = decodeAll(new FrameDecoder(), chunks);
    expect(frames).toEqual(['{"text":"héllo €😀"}', '{"n":2}']);
    expect(JSON.parse(frames[0]!)).toEqual({ text: 'héllo €😀' });
  });

  it('feeds byte by byte', () => {
    const bytes = Buffer.from('{"x":"ü"}\r\n{"y":1}\n');
    const chunks = [...bytes].map((byte) => Buffer.from([byte]));
    expect(decodeAll(new FrameDecoder(), chunks)).toEqual(['{"x":"ü"}', '{"y":1}']);
  });

  it('returns a last line without newline at end of stream', () => {
    const decoder = new FrameDecoder();
    expect(decoder.push(Buffer.from('{"a":1}\n{"b"'))).toEqual(['{"a":1}']);
    expect(decoder.push(Buffer.from(':2}'))).toEqual([]);
    expect(decoder.end()).toEqual(['{"b":2}']);
  });

  it('skips an oversized line without buffering it, reports its size and decodes the next line', () => {
    const oversized: OversizedFrame[] = [];
    const decoder = new FrameDecoder({ maxFrameBytes: 64, onOversized: (frame) => oversized.push(frame) });
    const big = `{"pad":"${'x'.repeat(200)}"}`;
    const frames = decodeAll(decoder, [
      Buffer.from(`{"first":1}\n${big.slice(0, 50)}`),
      Buffer.from(big.slice(50, 120)),
      Buffer.from(`${big.slice(120)}\n{"next":2}\n`),
    ]);
    expect(frames).toEqual(['{"first":1}', '{"next":2}']);
    expect(oversized).toEqual([{ bytes: big.length, maxFrameBytes: 64 }]);
  });

  it('accepts a line of exactly the cap (also with \\r) and refuses cap + 1', () => {
    const oversized: OversizedFrame[] = [];
    const decoder = new FrameDecoder({ maxFrameBytes: 10, onOversized: (frame) => oversized.push(frame) });
    const exact = `"${'a'.repeat(8)}"`;
    const tooLong = `"${'a'.repeat(9)}"`;
    const frames = decodeAll(decoder, [
      Buffer.from(`${exact}\n${exact}\r\n${tooLong}\n${tooLong}\r\n"ok"\n`),
    ]);
    expect(frames).toEqual([exact, exact, '"ok"']);
    expect(oversized.map((frame) => frame.bytes)).toEqual([11, 12]);
  });

  it('reports an oversized line that the stream ends in', () => {
    const oversized: OversizedFrame[] = [];
    const decoder = new FrameDecoder({ maxFrameBytes: 4, onOversized: (frame) => oversized.push(frame) });
    expect(decodeAll(decoder, [Buffer.from('"1"\n"123456789"')])).toEqual(['"1"']);
    expect(oversized).toEqual([{ bytes: 11, maxFrameBytes: 4 }]);
  });

  it('applies the 10 MiB default cap: 10 MiB passes, 10 MiB + 1 is skipped, the next frame decodes', () => {
    const oversized: OversizedFrame[] = [];
    const decoder = new FrameDecoder({ onOversized: (frame) => oversized.push(frame) });
    const atCap = Buffer.alloc(DEFAULT_MAX_FRAME_BYTES, 0x61);
    atCap[0] = 0x22;
    atCap[atCap.length - 1] = 0x22;
    const overCap = Buffer.alloc(DEFAULT_MAX_FRAME_BYTES + 1, 0x61);
    const frames = decodeAll(decoder, [atCap, Buffer.from('\n'), overCap, Buffer.from('\n{"after":true}\n')]);
    expect(frames).toHaveLength(2);
    expect(frames[0]!.length).toBe(DEFAULT_MAX_FRAME_BYTES);
    expect(frames[1]).toBe('{"after":true}');
    expect(oversized).toEqual([
      { bytes: DEFAULT_MAX_FRAME_BYTES + 1, maxFrameBytes: DEFAULT_MAX_FRAME_BYTES },
    ]);
  });

  it('holds a line trickled a byte at a time in at most twice its size', () => {
    const decoder = new FrameDecoder();
    const head = '{"jsonrpc":"2.0","method":"x","params":"';
    decoder.push(Buffer.from(head));
    const byte = Buffer.from('a');
    const trickled = 1_000_000;
    for (let index = 0; index < trickled; index++) decoder.push(byte);
    const pending = head.length + trickled;
    expect(decoder.heldBytes).toBeGreaterThanOrEqual(pending);
    expect(decoder.heldBytes).toBeLessThanOrEqual(2 * pending);
    // The trickled line is still decoded whole.
    const frames = decoder.push(Buffer.from('"}\n'));
    expect(frames).toHaveLength(1);
    expect((JSON.parse(frames[0]!) as { params: string }).params).toHaveLength(trickled);
  });

  it('lets go of the buffer of a large line once the line is done', () => {
    const decoder = new FrameDecoder();
    const big = `"${'a'.repeat(1_000_000)}"`;
    for (let offset = 0; offset < big.length; offset += 1000) {
      decoder.push(Buffer.from(big.slice(offset, offset + 1000)));
    }
    expect(decoder.push(Buffer.from('\n'))).toEqual([big]);
    expect(decoder.heldBytes).toBeLessThan(100_000);
  });

  it('decodes the framing-tolerance-cr-input transcript (client lines end in \\r)', () => {
    const lines = transcriptLines('framing-tolerance-cr-input');
    const wire = Buffer.from(lines.map((line) => `${line.raw}\n`).join(''), 'utf8');
    expect(lines.filter((line) => line.raw.endsWith('\r'))).toHaveLength(2);
    // Odd chunk sizes so that some \r\n pairs are split between chunks.
    const chunks: Buffer[] = [];
    for (let offset = 0; offset < wire.length; offset += 37) chunks.push(wire.subarray(offset, offset + 37));
    const frames = decodeAll(new FrameDecoder(), chunks);
    expect(frames).toEqual(lines.map((line) => line.raw.replace(/\r$/, '')));
    const parsed = frames.map((frame) => JSON.parse(frame) as { jsonrpc: string; method?: string });
    expect(parsed.every((frame) => frame.jsonrpc === '2.0')).toBe(true);
    expect(parsed[0]!.method).toBe('initialize');
    expect(parsed[2]!.method).toBe('initialized');
  });
});

describe('encodeFrame', () => {
  it('writes compact JSON and one trailing newline, escaping newlines inside strings', () => {
    const frame = encodeFrame({
      jsonrpc: '2.0',
      method: 'x',
      params: { text: 'a\nb', nested: { list: [1, 2] } },
    });
    expect(frame).toBe('{"jsonrpc":"2.0","method":"x","params":{"text":"a\\nb","nested":{"list":[1,2]}}}\n');
    expect(frame.indexOf('\n')).toBe(frame.length - 1);
  });
});
