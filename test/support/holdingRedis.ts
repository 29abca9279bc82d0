/**
 * `redis` with `command` held until release(), from its `from`th call on (the calls before go
 * through), and the name of every command called through it: a test sees what the store sends
 * while that one is out. `holding` resolves once a call is being held.
 */
export function holdingRedis<T extends object>(redis: T, command: string, from = 1) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holds!: () => void;
  const holding = new Promise<void>((resolve) => {
    holds = resolve;
  });
  const called = new Set<string>();
  let calls = 0;
  const client = new Proxy(redis, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        called.add(String(prop));
        if (prop !== command || ++calls < from) return value.apply(target, args);
        holds();
        return held.then(() => value.apply(target, args));
      };
    },
  });
  return { client, release, called, holding };
}
