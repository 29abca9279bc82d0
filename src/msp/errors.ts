import { cutWithMark } from '../util/cutAtCodePoint.js';

// Errors of the MSP client. Callers branch on `kind` (error.data.kind), never on the message
// (docs/msp-approvals.md §8).

/** How much of a method we do not serve goes back in the error: a host may send megabytes. */
const MAX_ECHOED_METHOD_CHARS = 200;

/** `data.kind` by JSON-RPC code, for hosts that send no kind (§8 table). */
const KIND_BY_CODE: ReadonlyMap<number, string> = new Map([
  [-32700, 'parseError'],
  [-32600, 'invalidRequest'],
  [-32601, 'methodNotFound'],
  [-32602, 'invalidParams'],
  [-32603, 'internal'],
  [-32001, 'overloaded'],
  [-32002, 'inputTooLarge'],
  [-32010, 'capabilityRequired'],
  [-32011, 'notFound'],
  [-32013, 'interrupted'],
  [-32014, 'cancelled'],
  [-32020, 'sessionNotFound'],
  [-32021, 'sessionInUse'],
  [-32022, 'sessionAmbiguous'],
  [-32023, 'forkBoundaryInvalid'],
  [-32024, 'sessionNotLoaded'],
  [-32025, 'sessionStreamMismatch'],
  [-32030, 'commandRejected'],
  [-32031, 'backpressured'],
  [-32032, 'skillNotFound'],
  [-32040, 'viewTruncated'],
  [-32041, 'outputUnavailable'],
  [-32042, 'boundaryPruned'],
  [-32050, 'approvalNotFound'],
  [-32051, 'approvalAlreadyResolved'],
  [-32052, 'approvalChoiceInvalid'],
  [-32053, 'approvalRequirementStale'],
  [-32054, 'approvalReviewerUnavailable'],
  [-32055, 'userInputNotFound'],
  [-32056, 'userInputAlreadySettled'],
  [-32057, 'userInputAnswerInvalid'],
]);

/** The only kinds that are retryable by default; `data.retryable` overrides this. */
const RETRYABLE_KINDS: ReadonlySet<string> = new Set(['overloaded', 'backpressured']);

export function kindForCode(code: number): string {
  return KIND_BY_CODE.get(code) ?? 'unknown';
}

/** The `error` member of a JSON-RPC error response. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** An error answered by the other side (or one we answer with). */
export class MspError extends Error {
  override readonly name = 'MspError';
  readonly code: number;
  readonly kind: string;
  readonly data: Record<string, unknown> | undefined;
  readonly retryable: boolean;
  /** The method of the request that failed, when known. */
  readonly method: string | undefined;

  constructor(error: JsonRpcErrorObject, options: { method?: string } = {}) {
    super(error.message);
    this.code = error.code;
    this.data = asRecord(error.data);
    const dataKind = this.data?.kind;
    this.kind = typeof dataKind === 'string' && dataKind !== '' ? dataKind : kindForCode(error.code);
    const dataRetryable = this.data?.retryable;
    this.retryable = typeof dataRetryable === 'boolean' ? dataRetryable : RETRYABLE_KINDS.has(this.kind);
    this.method = options.method;
  }

  /**
   * Builds an MspError from whatever a host put in `error`, so that a malformed error object
   * still rejects the request instead of being lost.
   */
  static fromWire(error: unknown, options: { method?: string } = {}): MspError {
    const record = asRecord(error);
    const code = typeof record?.code === 'number' ? record.code : -32603;
    const message = typeof record?.message === 'string' ? record.message : 'malformed error response';
    return new MspError({ code, message, data: record?.data }, options);
  }

  /**
   * What we answer a host request we do not serve (e.g. userInput/request): the vendor's SDK
   * answers the same, `retryable: false` included, when no handler is registered. An error
   * leaves the request pending for a client that can present it (msp-approvals.md §5.1).
   */
  static methodNotFound(method: string): MspError {
    return new MspError({
      code: -32601,
      message: `method not found: ${cutWithMark(method, MAX_ECHOED_METHOD_CHARS)}`,
      data: { kind: 'methodNotFound', retryable: false },
    });
  }

  /** What we answer a host request whose params we cannot read: the schema's -32602. */
  static invalidParams(message: string): MspError {
    return new MspError({
      code: -32602,
      message,
      data: { kind: 'invalidParams', retryable: false },
    });
  }

  toJsonRpcError(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

/** The connection closed (host exited, stdout ended, or we closed it) while a request waited. */
export class HostGoneError extends Error {
  override readonly name = 'HostGoneError';
  readonly method: string | undefined;

  constructor(message = 'MSP host connection closed', options: { method?: string } = {}) {
    super(options.method === undefined ? message : `${message} (${options.method})`);
    this.method = options.method;
  }
}

/** No response within the request's timeout. The request may still have been applied. */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
  readonly method: string;
  readonly timeoutMs: number;

  constructor(method: string, timeoutMs: number) {
    super(`MSP request ${method} timed out after ${timeoutMs} ms`);
    this.method = method;
    this.timeoutMs = timeoutMs;
  }
}
