// A value that a beforeAll hook makes, usable as a constant from the file's top level.
/**
 * An object that stands for the value `get` returns once a hook has made it: every property read
 * goes to the current value. `refuse` names properties that must not be used through it, and why.
 */
export function standIn<T extends object>(name: string, get: () => T | undefined, refuse: Record<string, string> = {}): T {
  const target = () => {
    const value = get();
    if (value === undefined) throw new Error(`${name} is used outside beforeAll…afterAll (or its setup failed or was disabled)`);
    return value;
  };
  return new Proxy({} as T, {
    get(_, property) {
      if (typeof property === 'string' && property in refuse) throw new Error(`${name}.${property}: ${refuse[property]}`);
      const value = target();
      const found = Reflect.get(value, property, value);
      return typeof found === 'function' ? found.bind(value) : found;
    },
    has: (_, property) => Reflect.has(target(), property),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor: (_, property) => Reflect.getOwnPropertyDescriptor(target(), property),
  });
}
