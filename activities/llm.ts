/** The `llm` node: one OpenAI-compatible chat completion per iteration (docs/workflow-format.md). */
import type { Config } from '../config';
import { completed, failed, valuePart } from '../domain/items';
import type { Item } from '../domain/parts';
import { JsonOutOfBounds, parseJsonWithin } from '../domain/json-depth';
import { providerWords } from './failures';
import { heartbeating } from './heartbeat';
import { postJson, providerGuard, type OutboundGuard } from './provider-http';
import { tokenCost } from './pricing';
import type { NodeRequest, NodeResult } from './types';
import { configuredProvider, rowTemplates } from './node-inputs';

interface ChatCompletion {
  choices?: Array<{ message?: { content?: string | null; refusal?: string | null } }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

/** Builds the activity that runs one iteration of an llm node. */
export function createLlmActivity(deps: {
  config: Pick<Config, 'providers' | 'prices'>;
  guard: OutboundGuard;
}) {
  return async function llm(req: NodeRequest<'llm'>): Promise<NodeResult> {
    const { node } = req;
    const providerName = node.provider ?? 'openai';
    const provider = configuredProvider(deps.config, 'llm', providerName, 'openai');
    const fill = rowTemplates(req);
    const messages = [
      ...(node.system ? [{ role: 'system', content: fill(node.system) }] : []),
      { role: 'user', content: fill(node.prompt) },
    ];
    const output = node.output ?? 'text';
    const body = {
      model: node.model,
      messages,
      ...(node.temperature !== undefined ? { temperature: node.temperature } : {}),
      ...(node.max_tokens !== undefined ? { max_tokens: node.max_tokens } : {}),
      ...(output === 'text' ? {} : { response_format: responseFormat(output, node.json_schema) }),
    };
    const answer = (await heartbeating(() =>
      postJson(
        providerGuard(deps.guard, provider),
        providerName,
        `${provider.base_url.replace(/\/$/, '')}/chat/completions`,
        body,
        provider.api_key ? { authorization: `Bearer ${provider.api_key}` } : {},
      ),
    )) as ChatCompletion;
    // D36: as the provider reported them, within what one call can have used (reportedTokens).
    const tokens = reportedTokens(answer.usage, {
      input: Buffer.byteLength(JSON.stringify(body)) + 1_000,
      output: node.max_tokens ?? OUTPUT_TOKENS_MAX,
    });
    const costUsd = tokenCost(deps.config.prices, node.model, tokens);
    const answered = (items: Item[]): NodeResult => ({ items, costUsd, tokens });
    // The model answered, but not with what was asked: the item fails at once (retrying the same
    // prompt would bill again for the same answer), and the call is billed: it was made (D9, D17).
    const unusable = (message: string) =>
      answered([failed({ message: `${providerName}: ${message}`, type: 'provider_error' })]);
    const message = answer.choices?.[0]?.message;
    if (typeof message?.refusal === 'string')
      return unusable(`the model refused: ${providerWords(message.refusal)}`);
    const content = message?.content;
    if (typeof content !== 'string') return unusable('the answer has no message content');
    if (output === 'text') return answered([completed({ type: 'text', text: content })]);
    let data: unknown;
    try {
      data = parseJsonWithin(content);
    } catch (err) {
      return unusable(
        err instanceof JsonOutOfBounds
          ? `the model answered with JSON that ${err.message}`
          : 'the model answered with invalid JSON',
      );
    }
    if (output === 'json') return answered([completed({ type: 'json', data })]);
    const list = Array.isArray(data) ? data : (data as { items?: unknown })?.items;
    if (!Array.isArray(list)) return unusable('the structured list has no `items` array');
    return answered(list.map((element) => completed(valuePart(element))));
  };
}

/**
 * The most output tokens one call is believed to have used: more than any model answers in one
 * call (reasoning included). A provider's claim past it is billed at it.
 */
export const OUTPUT_TOKENS_MAX = 1_000_000;

/**
 * D36: a provider's token counts, untrusted: anything but a non-negative integer counts as 0, and
 * a count is believed only up to `most`, what the call can have used: prompt tokens up to the
 * bytes of the request sent (a token is at least a byte of it) and 1,000 more (the chat format's
 * own), completion tokens up to the node's `max_tokens`, else OUTPUT_TOKENS_MAX. A provider that
 * reported 9e15 tokens billed one call $27,000,000,000.
 */
function reportedTokens(
  usage: ChatCompletion['usage'],
  most: { input: number; output: number },
): { input: number; output: number } {
  const count = (n: unknown, bound: number) =>
    Number.isSafeInteger(n) && (n as number) > 0 ? Math.min(n as number, bound) : 0;
  return {
    input: count(usage?.prompt_tokens, most.input),
    output: count(usage?.completion_tokens, most.output),
  };
}

/** Structured outputs: `json` asks for the node's schema, `list` for an object wrapping an `items` array. */
function responseFormat(output: 'json' | 'list', schema: Record<string, unknown> | undefined) {
  if (output === 'json') {
    return schema
      ? { type: 'json_schema', json_schema: { name: 'output', schema } }
      : { type: 'json_object' };
  }
  return {
    type: 'json_schema',
    json_schema: {
      name: 'list',
      schema: {
        type: 'object',
        properties: { items: { type: 'array', items: schema ?? { type: 'string' } } },
        required: ['items'],
        additionalProperties: false,
      },
    },
  };
}
