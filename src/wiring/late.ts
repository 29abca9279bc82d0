// The few circles between parts, made explicit: a part that needs another one built after it (which
// in turn takes the first) is handed a Late and reaches it through get() once running. assemble.ts
// creates each Late, and set()s it right where the part it stands for is built; nothing calls get()
// before start-up, when every one is filled in.
export class Late<T> {
  private value: T | undefined;

  constructor(private readonly name: string) {}

  set(value: T): T {
    if (this.value !== undefined) throw new Error(`${this.name} is wired twice`);
    this.value = value;
    return value;
  }

  get(): T {
    if (this.value === undefined) throw new Error(`${this.name} is used before it is built`);
    return this.value;
  }
}
