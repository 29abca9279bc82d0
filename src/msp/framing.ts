// NDJSON framing for MSP (docs/msp-approvals.md §1): one UTF-8 JSON object per line, `\n`
// terminated; a `\r` before the `\n` and blank lines are tolerated on input; 10 MiB cap per frame.

/** The host's default frame cap, in both directions. */
export const DEFAULT_MAX_FRAME_BYTES = 10 * 1024 * 1024;

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

export interface OversizedFrame {
  /** Length of the discarded line in bytes, without its line terminator. */
  bytes: number;
  /** The cap it exceeded. */
  maxFrameBytes: number;
}

export interface FrameDecoderOptions {
  maxFrameBytes?: number;
  /** Called once per discarded line; decoding carries on with the next line. */
  onOversized?: (frame: OversizedFrame) => void;
}

/**
 * Splits a byte stream into frames. Bytes are kept until the newline and decoded as a whole
 * line, so a multi-byte UTF-8 character split across chunks comes out intact (0x0A never
 * occurs inside a multi-byte sequence). A line over the cap is not buffered: once it passes
 * the cap its bytes are only counted until the next newline.
 */
export class FrameDecoder {
  private readonly maxFrameBytes: number;
  private readonly onOversized: ((frame: OversizedFrame) => void) | undefined;
  private pieces: Buffer[] = [];
  private pendingBytes = 0;
  /** Set while we are skipping the rest of an oversized line. */
  private skipping = false;

  constructor(options: FrameDecoderOptions = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.onOversized = options.onOversized;
  }

  /** Feeds one chunk; returns the frames it completed, in order. */
  push(chunk: Buffer): string[] {
    const frames: string[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      this.append(chunk, start, end);
      if (newline === -1) break;
      this.finishLine(frames);
      start = newline + 1;
    }
    return frames;
  }

  /** The stream ended: a last line without its `\n` is still a frame (lenient). */
  end(): string[] {
    const frames: string[] = [];
    if (this.skipping || this.pendingBytes > 0) this.finishLine(frames);
    return frames;
  }

  private append(chunk: Buffer, start: number, end: number): void {
    const length = end - start;
    if (length === 0) return;
    this.pendingBytes += length;
    if (this.skipping) return;
    // One extra byte of slack: a trailing `\r` does not count against the cap.
    if (this.pendingBytes > this.maxFrameBytes + 1) {
      this.skipping = true;
      this.pieces = [];
      return;
    }
    // subarray shares memory with the chunk; copy so that we never pin a large chunk.
    this.pieces.push(Buffer.from(chunk.subarray(start, end)));
  }

  private finishLine(frames: string[]): void {
    const pieces = this.pieces;
    const total = this.pendingBytes;
    const skipped = this.skipping;
    this.pieces = [];
    this.pendingBytes = 0;
    this.skipping = false;

    if (skipped) {
      this.reportOversized(total);
      return;
    }
    let line = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, total);
    if (line.length > 0 && line[line.length - 1] === CARRIAGE_RETURN)
      line = line.subarray(0, line.length - 1);
    if (line.length > this.maxFrameBytes) {
      this.reportOversized(total);
      return;
    }
    const text = line.toString('utf8');
    if (text.trim() === '') return;
    frames.push(text);
  }

  private reportOversized(bytes: number): void {
    this.onOversized?.({ bytes, maxFrameBytes: this.maxFrameBytes });
  }
}

/** One frame on the wire: compact JSON plus `\n` (JSON.stringify escapes every newline). */
export function encodeFrame(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}
