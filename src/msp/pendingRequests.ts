// Our requests to the host that wait for its answer (connection.ts): our id space ("c1", "c2",
// …), the timeout of each, and rejecting them all when the connection goes.

import { HostGoneError, RequestTimeoutError } from './errors.js';
import type { JsonRpcId } from './jsonRpc.js';

export interface PendingRequest {
  method: string;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

export class PendingRequests {
  private nextId = 1;
  private readonly entries = new Map<JsonRpcId, PendingRequest>();

  /** The id of our next request. */
  newId(): string {
    return `c${this.nextId++}`;
  }

  /** Waits for the answer to `id`; without one within `timeoutMs` it rejects with RequestTimeoutError. */
  add(
    id: string,
    method: string,
    timeoutMs: number | undefined,
    resolve: (result: unknown) => void,
    reject: (error: Error) => void,
  ): void {
    const entry: PendingRequest = { method, resolve, reject, timer: undefined };
    if (timeoutMs !== undefined) {
      entry.timer = setTimeout(() => {
        this.entries.delete(id);
        reject(new RequestTimeoutError(method, timeoutMs));
      }, timeoutMs);
    }
    this.entries.set(id, entry);
  }

  /** Stops waiting for `id`; returns its entry, for the caller to resolve or reject. */
  settle(id: JsonRpcId): PendingRequest | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    this.entries.delete(id);
    if (entry.timer !== undefined) clearTimeout(entry.timer);
    return entry;
  }

  /** Every waiting request rejects with HostGoneError, saying `reason`. */
  rejectAll(reason: HostGoneError): void {
    for (const [id, entry] of [...this.entries]) {
      this.settle(id);
      entry.reject(new HostGoneError(reason.message, { method: entry.method }));
    }
  }
}
