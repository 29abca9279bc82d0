// A MONITOR connection for tests that count what the bot sends. ioredis's monitor() may fail to
// start when a monitored line arrives in the same read as MONITOR's own +OK (other tests' traffic
// on a shared server): it rejects with "Command queue state error". That says nothing about the
// code under test, so the start is tried again.

import { Redis } from 'ioredis';

const ATTEMPTS = 5;

/** A connection in monitor mode on the server at `url`; disconnect it when done. */
export async function startMonitor(url: string): Promise<Redis> {
  for (let attempt = 1; ; attempt++) {
    const base = new Redis(url, { lazyConnect: true });
    try {
      // monitor() opens a connection of its own: the base one is never used.
      return await base.monitor();
    } catch (error) {
      if (attempt >= ATTEMPTS || !String(error).includes('Command queue state error')) throw error;
    } finally {
      base.disconnect();
    }
  }
}
