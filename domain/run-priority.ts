/**
 * D36 run priorities and their Temporal priority keys. The API starts a run's workflow with its
 * key (activities inherit it), and the worker's provider-call scheduler reads it back from the
 * activity's info to order one account's waiting calls: the key is the one place the priority
 * travels, so no workflow argument changes.
 */

export const RUN_PRIORITIES = ['low', 'normal', 'high'] as const;
export type RunPriority = (typeof RUN_PRIORITIES)[number];

/** Temporal's keys run from 1 (first) to 5 by default; 3 is what a workflow without one gets. */
const KEYS: Record<RunPriority, number> = { high: 1, normal: 3, low: 5 };

export function priorityKey(priority: RunPriority): number {
  return KEYS[priority];
}

/** The priority of a Temporal key; no key (a run started before priorities) is `normal`. */
export function priorityOfKey(key: number | undefined | null): RunPriority {
  if (!key) return 'normal';
  if (key < KEYS.normal) return 'high';
  if (key > KEYS.normal) return 'low';
  return 'normal';
}
