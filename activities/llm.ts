/** The `llm` node: one OpenAI-compatible chat completion per iteration (docs/workflow-format.md). */
import type { Config } from '../config';
import { completed, valuePart } from '../domain/items';
import { JsonTooDeep, parseJsonWithin } from '../domain/json-depth';
import { ApplicationFailure } from '@temporalio/activity';
import { heartbeating } from './heartbeat';
import { postJson, providerGuard, type OutboundGuard } from './provider-http';
import { tokenCost } from './pricing';
import type { NodeRequest, NodeResult } from './types';
import { configuredProvider, rowTemplates } from './node-inputs';

interface ChatCompletion {
  choices?: Array<{ message?: { content?: string | null } }>;
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
    const answer = (await heartbeating(() =>
      postJson(
        providerGuard(deps.guard, provider),
        providerName,
        `${provider.base_url.replace(/\/$/, '')}/chat/completions`,
        {
          model: node.model,
          messages,
          ...(node.temperature !== undefined ? { temperature: node.temperature } : {}),
          ...(node.max_tokens !== undefined ? { max_tokens: node.max_tokens } : {}),
          ...(output === 'text'
            ? {}
            : { response_format: responseFormat(output, node.json_schema) }),
        },
        provider.api_key ? { authorization: `Bearer ${provider.api_key}` } : {},
      ),
    )) as ChatCompletion;
    const content = answer.choices?.[0]?.message?.content;
    if (typeof content !== 'string')
      throw ApplicationFailure.retryable(
        `${providerName} answered without message content`,
        'ProviderUnavailable',
      );
    // D36: as the provider reported them, but counts only (a negative or NaN count would credit the account).
    const tokens = reportedTokens(answer.usage);
    const costUsd = tokenCost(deps.config.prices, node.model, tokens);
    if (output === 'text')
      return { items: [completed({ type: 'text', text: content })], costUsd, tokens };
    const data = parseModelJson(providerName, content);
    if (output === 'json') return { items: [completed({ type: 'json', data })], costUsd, tokens };
    const list = Array.isArray(data) ? data : (data as { items?: unknown })?.items;
    if (!Array.isArray(list))
      throw modelOutputError(providerName, 'the structured list has no `items` array');
    return { items: list.map((element) => completed(valuePart(element))), costUsd, tokens };
  };
}

/** D36: a provider's token counts, untrusted: anything but a non-negative integer counts as 0. */
function reportedTokens(usage: ChatCompletion['usage']): { input: number; output: number } {
  const count = (n: unknown) => (Number.isSafeInteger(n) && (n as number) > 0 ? (n as number) : 0);
  return { input: count(usage?.prompt_tokens), output: count(usage?.completion_tokens) };
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

function parseModelJson(provider: string, content: string): unknown {
  try {
    return parseJsonWithin(content);
  } catch (err) {
    if (err instanceof JsonTooDeep)
      throw modelOutputError(provider, `the model answered with JSON that ${err.message}`);
    throw modelOutputError(provider, 'the model answered with invalid JSON');
  }
}

// The model answered, but not with what was asked: retrying the same prompt would bill again for
// the same answer, so the item fails at once (like any other refusal).
function modelOutputError(provider: string, message: string) {
  return ApplicationFailure.nonRetryable(`${provider}: ${message}`, 'ProviderRejected');
}
