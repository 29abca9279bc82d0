// Types of mspSchema.mjs (plain ESM, so that the fake host process can load it too).

/** Who wrote a frame: the bot (`client`) or the MSP host (`server`). */
export type FrameDirection = 'client' | 'server';

export interface MethodSpec {
  /** The `$defs` name of the params, when the method has params. */
  params: string | undefined;
  /** The `$defs` name of the result, when the method is a request. */
  result: string | undefined;
}

export interface MspSchema {
  /** The vendored bundle as it is on disk. */
  readonly vendored: {
    $defs: Record<string, unknown>;
    methods: Record<string, unknown>;
    requests: Record<string, unknown>;
    notifications: Record<string, unknown>;
    [key: string]: unknown;
  };
  /** How many `x-msp-openness: open` enums were opened at load time. */
  readonly openedEnums: number;
  /** Client → server requests. */
  readonly methods: Readonly<Record<string, MethodSpec>>;
  /** Server → client requests. */
  readonly requests: Readonly<Record<string, MethodSpec>>;
  /** Notifications, the vendored ones and LOCAL_NOTIFICATIONS. */
  readonly notifications: Readonly<Record<string, MethodSpec>>;
  /** Readable errors of `value` against `$defs/<name>`; empty when it conforms. */
  check(name: string, value: unknown, label?: string): string[];
}

export interface FrameValidator {
  /**
   * Reasons `frame` (parsed, or a raw line) does not conform; empty when it does. Feed every frame
   * of one connection in the order each side wrote them.
   */
  validate(frame: unknown, direction: FrameDirection): string[];
}

export const SCHEMA_URL: URL;
export const LOCAL_NOTIFICATIONS: Readonly<Record<string, { params: { $ref: string } }>>;
export function loadMspSchema(): Promise<MspSchema>;
/** Generates the cached validators if missing, without loading them. */
export function prepareMspSchema(): Promise<void>;
export function createFrameValidator(): Promise<FrameValidator>;
