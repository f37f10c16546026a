// D4: matching a start request's `inputs` against a workflow's contract.
import type { Contract } from './contract';
import { inputValueProblem, isPlainObject } from './input-values';
import { normalizeLabel } from './labels';
import type { Problem } from './problems';

export type InputsResult =
  { ok: true; values: Record<string, unknown> } | { ok: false; problems: Problem[] };

const hasOwn = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);

/**
 * An answer about unknown keys stays small whatever was sent: a 66-byte start of a workflow with
 * hundreds of long input keys was answered 19 MB when each unknown key listed them all.
 */
const MAX_UNKNOWN_NAMED = 20;
const MAX_INPUTS_LISTED = 10;
const MAX_KEY_SHOWN = 64;

/** A key as a problem names it: its first MAX_KEY_SHOWN characters. */
function clip(key: string): string {
  return key.length > MAX_KEY_SHOWN ? `${key.slice(0, MAX_KEY_SHOWN)}…` : key;
}

/** The workflow's inputs for a hint: the first MAX_INPUTS_LISTED, clipped. */
function inputList(known: Set<string>): string {
  const keys = [...known];
  const shown = keys.slice(0, MAX_INPUTS_LISTED).map((k) => `\`${clip(k)}\``);
  const more = keys.length - shown.length;
  return `${shown.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** Checks `inputs` against the contract (D4); on success returns the values by key with defaults applied. */
export function validateInputs(contract: Contract, inputs: unknown): InputsResult {
  const given = inputs === undefined ? {} : inputs;
  if (!isPlainObject(given)) {
    return { ok: false, problems: [{ field: 'inputs', problem: 'must be an object' }] };
  }

  const problems: Problem[] = [];
  const values: Record<string, unknown> = {};
  for (const input of contract.inputs) {
    const value = hasOwn(given, input.key) ? given[input.key] : undefined;
    if (value === undefined) {
      if (input.default !== undefined) values[input.key] = input.default;
      else if (input.required) problems.push({ field: input.key, problem: 'is required' });
      continue;
    }
    const problem = inputValueProblem(input.type, value);
    if (problem !== undefined) problems.push({ field: input.key, problem });
    else values[input.key] = value;
  }

  const known = new Set(contract.inputs.map((i) => i.key));
  const unknown = Object.keys(given).filter((key) => !known.has(key));
  for (const key of unknown.slice(0, MAX_UNKNOWN_NAMED)) {
    const normalized = normalizeLabel(key);
    let hint: string;
    if (known.has(normalized)) hint = `did you mean \`${clip(normalized)}\`?`;
    else if (known.size === 0) hint = 'it takes no inputs';
    else hint = `its inputs are ${inputList(known)}`;
    problems.push({ field: clip(key), problem: `is not an input of this workflow (${hint})` });
  }
  if (unknown.length > MAX_UNKNOWN_NAMED)
    problems.push({
      field: clip(unknown[MAX_UNKNOWN_NAMED]),
      problem: `and ${unknown.length - MAX_UNKNOWN_NAMED - 1} more keys are not inputs of this workflow either`,
    });

  return problems.length > 0 ? { ok: false, problems } : { ok: true, values };
}
