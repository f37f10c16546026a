/**
 * The `model` node: one prediction per iteration on a Replicate-style predictions API
 * (docs/workflow-format.md): create, poll until it ends (heartbeating, so a run's cancel arrives and then
 * cancels the prediction too), then store every output file and type it by its bytes.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Config } from '../config';
import type { Part } from '../domain/parts';
import { completedOf, failed } from '../domain/items';
import { filePart, runAccount, storeProviderFile, type FileDeps } from './files';
import { checkpoint, heartbeating, resumedCheckpoint } from './heartbeat';
import {
  getJson,
  postJson,
  providerGuard,
  providerRequest,
  type OutboundGuard,
  type ProviderGuard,
} from './provider-http';
import type { NodeRequest, NodeResult } from './types';
import { predictionSeconds } from './pricing';
import { providerWords } from './failures';
import { configuredProvider, rowTemplates } from './node-inputs';

interface Prediction {
  id?: string;
  status?: 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled' | 'aborted' | string;
  output?: unknown;
  error?: unknown;
  metrics?: { predict_time?: number };
}

// `aborted`: the prediction's deadline passed before it started (it never ran; nothing to pay).
const ENDED = new Set(['succeeded', 'failed', 'canceled', 'aborted']);
const FILE_URL = /^(https?:\/\/|data:)/i;

/** Renders every string at any depth of the node's `input` as a template. */
function renderDeep(value: unknown, fill: (template: string) => string): unknown {
  if (typeof value === 'string') return fill(value);
  if (Array.isArray(value)) return value.map((v) => renderDeep(v, fill));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderDeep(v, fill)]));
  }
  return value;
}

/** The prediction this activity (or chunk row) created in an earlier attempt, so a retry resumes it instead of paying twice. */
function resumedPredictionId(): string | undefined {
  const details = resumedCheckpoint() as { predictionId?: unknown } | undefined;
  return typeof details?.predictionId === 'string' ? details.predictionId : undefined;
}

/** True only for a cancel the run asked for; a timed-out attempt or a worker shutdown leaves the prediction running for the retry. */
function cancelRequested(): boolean {
  try {
    return Context.current().cancellationDetails?.cancelRequested === true;
  } catch {
    return false;
  }
}

function wait(ms: number): Promise<void> {
  try {
    return Context.current().sleep(ms); // rejects at once when the activity is cancelled
  } catch {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}

type ModelDeps = {
  config: Pick<Config, 'providers' | 'prices'>;
  pollMs?: number;
  files: () => FileDeps;
  guard: OutboundGuard;
};

/** Builds the activity that runs one iteration of a model node. */
export function createModelActivity(deps: ModelDeps) {
  const pollMs = deps.pollMs ?? 1_000;
  return async function model(req: NodeRequest<'model'>): Promise<NodeResult> {
    const { node } = req;
    const provider = modelProvider(deps, node);
    const fill = rowTemplates(req);

    let predictionId = resumedPredictionId();
    return heartbeating(
      async () => {
        let prediction: Prediction;
        try {
          if (predictionId) {
            prediction = await fetchPrediction(provider, predictionId);
          } else {
            const created = await createPrediction(provider, node, fill);
            prediction = created;
            predictionId = created.id;
            checkpoint({ predictionId }); // at once: an attempt that dies now must not make its retry pay for a second prediction
          }
          prediction = await pollUntilEnded(provider, predictionId, prediction, pollMs);
        } catch (err) {
          if (predictionId && cancelRequested())
            await cancelPrediction(
              provider.guard,
              provider.name,
              `${predictionUrl(provider, predictionId)}/cancel`,
              provider.auth,
            );
          throw err;
        }
        throwIfUnsuccessful(provider.name, prediction);
        return predictionResult(deps, req, provider, prediction);
      },
      () => ({ predictionId }),
    );
  };
}

/** The provider a model node calls: its name, API base, auth header and outbound guard. */
interface ModelProvider {
  name: string;
  base: string;
  auth: Record<string, string>;
  guard: ProviderGuard;
}

function modelProvider(deps: ModelDeps, node: NodeRequest<'model'>['node']): ModelProvider {
  const name = node.provider ?? 'replicate';
  const provider = configuredProvider(deps.config, 'model', name, 'replicate');
  return {
    name,
    base: provider.base_url.replace(/\/$/, ''),
    auth: provider.api_key ? { authorization: `Bearer ${provider.api_key}` } : {},
    // Its configured origin is trusted; output URLs in its answers are checked like a caller's.
    guard: providerGuard(deps.guard, provider),
  };
}

function predictionUrl(provider: ModelProvider, id: string): string {
  return `${provider.base}/predictions/${encodeURIComponent(id)}`;
}

async function fetchPrediction(provider: ModelProvider, id: string): Promise<Prediction> {
  return (await getJson(
    provider.guard,
    provider.name,
    predictionUrl(provider, id),
    provider.auth,
  )) as Prediction;
}

/** Creates the prediction with the node's rendered input; an answer without an id is retried. */
async function createPrediction(
  provider: ModelProvider,
  node: NodeRequest<'model'>['node'],
  fill: (template: string) => string,
): Promise<Prediction & { id: string }> {
  const target = node.version !== undefined ? { version: node.version } : { model: node.model };
  const prediction = (await postJson(
    provider.guard,
    provider.name,
    `${provider.base}/predictions`,
    { ...target, input: renderDeep(node.input, fill) },
    provider.auth,
  )) as Prediction;
  if (typeof prediction.id !== 'string')
    throw ApplicationFailure.retryable(
      `${provider.name} created a prediction without an id`,
      'ProviderUnavailable',
    );
  return prediction as Prediction & { id: string };
}

/** Polls the prediction every pollMs until it has ended. */
async function pollUntilEnded(
  provider: ModelProvider,
  id: string,
  prediction: Prediction,
  pollMs: number,
): Promise<Prediction> {
  while (!ENDED.has(prediction.status ?? '')) {
    await wait(pollMs);
    prediction = await fetchPrediction(provider, id);
  }
  return prediction;
}

/** A failed, canceled or aborted prediction fails the item for good (a re-run of failed items, D38, tries it again). */
function throwIfUnsuccessful(providerName: string, prediction: Prediction): void {
  if (prediction.status === 'failed') {
    const reason =
      typeof prediction.error === 'string'
        ? prediction.error
        : JSON.stringify(prediction.error ?? 'no message');
    throw ApplicationFailure.nonRetryable(
      `${providerName}: the prediction failed: ${providerWords(reason)}`,
      'ProviderRejected',
    );
  }
  if (prediction.status === 'canceled') {
    throw ApplicationFailure.nonRetryable(
      `${providerName}: the prediction was canceled`,
      'ProviderRejected',
    );
  }
  if (prediction.status === 'aborted') {
    throw ApplicationFailure.nonRetryable(
      `${providerName}: the prediction was aborted: its deadline passed before it started`,
      'ProviderRejected',
    );
  }
}

/** A succeeded prediction's item (its output files stored) and its cost. */
async function predictionResult(
  deps: ModelDeps,
  req: NodeRequest<'model'>,
  provider: ModelProvider,
  prediction: Prediction,
): Promise<NodeResult> {
  const { node } = req;
  // D17: seconds of prediction time times the model's per-second price.
  const price = deps.config.prices[node.model ?? node.version ?? '']?.per_second ?? 0;
  const costUsd = predictionSeconds(prediction.metrics?.predict_time) * price;
  const urls = fileUrlCount(prediction.output);
  if (urls > MAX_OUTPUT_FILES)
    return {
      items: [
        failed({
          message: `${provider.name}: the prediction's output lists ${urls} files, more than the ${MAX_OUTPUT_FILES} one item holds`,
          type: 'provider_error',
        }),
      ],
      costUsd, // the prediction ran: its time is billed, nothing of it is fetched
    };
  const files = deps.files();
  const accountId = await runAccount(files, req);
  try {
    const parts = await outputParts(prediction.output, (url, i) =>
      storeProviderFile(files, provider.guard, provider.name, url, {
        accountId,
        runId: req.runId,
        stem: `output-${i + 1}`,
      }).then((doc) => filePart(files.links, doc)),
    );
    return { items: [completedOf(parts)], costUsd };
  } catch (err) {
    // An output refused for good (a URL the guard refuses, a malformed data: URL) fails the item;
    // the prediction ran, so its time is billed, as when it lists too many files.
    if (err instanceof ApplicationFailure && err.nonRetryable)
      return { items: [failed({ message: err.message, type: 'provider_error' })], costUsd };
    throw err;
  }
}

/**
 * The most files one prediction's output may list: each is fetched and stored (bounded by
 * MAX_UPLOAD_BYTES, not by the storage quota: outputs that were paid for are kept, D19), so an
 * answer listing thousands would have the worker fetch them all, one after the other.
 */
export const MAX_OUTPUT_FILES = 100;

/** How many of a prediction's output values are file URLs (outputParts stores each). */
function fileUrlCount(output: unknown): number {
  const list = Array.isArray(output) ? output : [output];
  return list.filter((value) => typeof value === 'string' && FILE_URL.test(value)).length;
}

/** Best effort: the run is being cancelled either way, so a provider that does not answer is not waited for long. */
async function cancelPrediction(
  guard: ProviderGuard,
  provider: string,
  url: string,
  auth: Record<string, string>,
): Promise<void> {
  try {
    await providerRequest(guard, provider, url, {
      method: 'POST',
      headers: auth,
      signal: AbortSignal.timeout(5_000),
    });
  } catch {
    // the provider bills what ran; nothing more to do here
  }
}

/**
 * A prediction's output as parts: URLs (alone or in a list) are stored and typed by their bytes;
 * a list of plain strings is one text (language models stream tokens that way); other strings
 * are text parts; anything else is a json part.
 */
async function outputParts(
  output: unknown,
  store: (url: string, index: number) => Promise<Part>,
): Promise<Part[]> {
  if (output === null || output === undefined) return [];
  const list = Array.isArray(output) ? output : [output];
  if (
    Array.isArray(output) &&
    output.length > 0 &&
    output.every((v) => typeof v === 'string' && !FILE_URL.test(v))
  ) {
    return [{ type: 'text', text: output.join('') }];
  }
  const parts: Part[] = [];
  let files = 0;
  for (const value of list) {
    if (typeof value === 'string')
      parts.push(
        FILE_URL.test(value) ? await store(value, files++) : { type: 'text', text: value },
      );
    else if (value !== null && value !== undefined) parts.push({ type: 'json', data: value });
  }
  return parts;
}
