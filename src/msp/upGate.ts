import { HostGoneError } from './errors.js';

// Callers that need a live host (decide) wait here, bounded, while the host is down.

interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export class UpGate<T> {
  private readonly waiters = new Set<Waiter<T>>();

  /** Resolves with the next open(); rejects with HostGoneError after `timeoutMs`. */
  wait(timeoutMs: number, describe: () => string): Promise<T> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter<T> = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          reject(new HostGoneError(describe()));
        }, timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  open(value: T): void {
    for (const waiter of this.settleAll()) waiter.resolve(value);
  }

  fail(error: Error): void {
    for (const waiter of this.settleAll()) waiter.reject(error);
  }

  private settleAll(): Waiter<T>[] {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const waiter of waiters) clearTimeout(waiter.timer);
    return waiters;
  }
}
