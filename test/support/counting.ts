/** A real MongoDB collection with the calls of one method counted, and failed on demand. */
import type { Collection, Document } from 'mongodb';

export interface CallProbe {
  calls: number;
  /** While set, the method rejects with it instead of reaching the database. */
  fail: Error | null;
}

/** Wraps `collection` so that calls of `method` are counted (and can be made to fail); everything else passes through. */
export function countingCalls<T extends Document>(
  collection: Collection<T>,
  method: keyof Collection<T>,
): { collection: Collection<T>; probe: CallProbe } {
  const probe: CallProbe = { calls: 0, fail: null };
  const wrapped = new Proxy(collection, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== method || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        probe.calls++;
        if (probe.fail) return Promise.reject(probe.fail);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { collection: wrapped, probe };
}
