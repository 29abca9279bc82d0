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

/** The first buffer for a line that spans chunks; it doubles from there. */
const INITIAL_LINE_BYTES = 4 * 1024;
/** A line buffer up to this size is kept for the next line; a larger one is let go. */
const KEPT_LINE_BYTES = 64 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * Splits a byte stream into frames. Bytes are kept until the newline and decoded as a whole
 * line, so a multi-byte UTF-8 character split across chunks comes out intact (0x0A never
 * occurs inside a multi-byte sequence). A line over the cap is not buffered: once it passes
 * the cap its bytes are only counted until the next newline.
 *
 * A line that spans chunks is copied into one buffer that doubles as it fills: kept as one
 * buffer per chunk, a host writing a line a byte at a time would cost a Buffer object (about a
 * hundred bytes of heap) per byte. A line that starts and ends in one chunk, the usual case, is
 * decoded from the chunk without a copy.
 */
export class FrameDecoder {
  private readonly maxFrameBytes: number;
  private readonly onOversized: ((frame: OversizedFrame) => void) | undefined;
  /** Holds the unfinished line in its first pendingBytes bytes (unless skipping). */
  private line: Buffer = EMPTY;
  private pendingBytes = 0;
  /** Set while we are skipping the rest of an oversized line. */
  private skipping = false;

  constructor(options: FrameDecoderOptions = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.onOversized = options.onOversized;
  }

  /** How many bytes the decoder holds for lines that span chunks (for tests). */
  get heldBytes(): number {
    return this.line.length;
  }

  /** Feeds one chunk; returns the frames it completed, in order. */
  push(chunk: Buffer): string[] {
    const frames: string[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      if (newline === -1) {
        this.append(chunk, start, chunk.length);
        break;
      }
      if (this.pendingBytes === 0) {
        this.emit(chunk.subarray(start, newline), frames);
      } else {
        this.append(chunk, start, newline);
        this.finishLine(frames);
      }
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
    const offset = this.pendingBytes;
    this.pendingBytes += length;
    if (this.skipping) return;
    // One extra byte of slack: a trailing `\r` does not count against the cap.
    if (this.pendingBytes > this.maxFrameBytes + 1) {
      this.skipping = true;
      this.line = EMPTY;
      return;
    }
    this.makeRoom(offset, this.pendingBytes);
    // A copy: holding the chunk itself would pin all of it for a few bytes of line.
    chunk.copy(this.line, offset, start, end);
  }

  /** Grows the line buffer to hold `needed` bytes, keeping its first `used`. */
  private makeRoom(used: number, needed: number): void {
    if (this.line.length >= needed) return;
    const doubled = Math.max(INITIAL_LINE_BYTES, 2 * this.line.length);
    const grown = Buffer.allocUnsafe(Math.max(needed, Math.min(doubled, this.maxFrameBytes + 1)));
    this.line.copy(grown, 0, 0, used);
    this.line = grown;
  }

  private finishLine(frames: string[]): void {
    const total = this.pendingBytes;
    const skipped = this.skipping;
    this.pendingBytes = 0;
    this.skipping = false;
    if (skipped) {
      this.reportOversized(total);
      return;
    }
    // emit() decodes into a string, so the buffer is free again right after.
    this.emit(this.line.subarray(0, total), frames);
    if (this.line.length > KEPT_LINE_BYTES) this.line = EMPTY;
  }

  /** Decodes one whole line (without its `\n`) into a frame, unless it is blank or too big. */
  private emit(bytes: Buffer, frames: string[]): void {
    const total = bytes.length;
    const line = total > 0 && bytes[total - 1] === CARRIAGE_RETURN ? bytes.subarray(0, total - 1) : bytes;
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
