// D4: matching a start request's `inputs` against a workflow's contract.
import type { Contract } from './contract';
import { inputValueProblem, isPlainObject } from './input-values';
import { normalizeLabel } from './labels';
import type { Problem } from './problems';

export type InputsResult =
  { ok: true; values: Record<string, unknown> } | { ok: false; problems: Problem[] };

const hasOwn = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);

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
  for (const key of Object.keys(given)) {
    if (known.has(key)) continue;
    const normalized = normalizeLabel(key);
    let hint: string;
    if (known.has(normalized)) hint = `did you mean \`${normalized}\`?`;
    else if (known.size === 0) hint = 'it takes no inputs';
    else hint = `its inputs are ${[...known].map((k) => `\`${k}\``).join(', ')}`;
    const problem = `is not an input of this workflow (${hint})`;
    problems.push({ field: key, problem });
  }

  return problems.length > 0 ? { ok: false, problems } : { ok: true, values };
}
