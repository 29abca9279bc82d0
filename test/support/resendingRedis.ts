/**
 * `redis` running each of `commands` twice and answering with the second run's reply, as ioredis
 * does when a dropped connection lost the first reply (autoResendUnfulfilledCommands): what a
 * script or command must survive to be "once per call".
 */
export function resendingRedis<T extends object>(redis: T, commands: readonly string[]): T {
  return new Proxy(redis, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (!commands.includes(String(prop))) return value.bind(target);
      return async (...args: unknown[]) => {
        await value.apply(target, args);
        return value.apply(target, args);
      };
    },
  });
}
