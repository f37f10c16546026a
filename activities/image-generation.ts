/** The `image_generation` node: one OpenAI-compatible images generation per iteration, `n` stored images in one item (docs/workflow-format.md). */
import { ApplicationFailure } from '@temporalio/activity';
import type { Config } from '../config';
import type { Part } from '../domain/parts';
import { fallbackName } from '../lib/files/names';
import { completedOf } from '../domain/items';
import { filePart, runAccount, storeOutputBytes, storeProviderFile, type FileDeps } from './files';
import { heartbeating } from './heartbeat';
import { DEFAULT_MAX_ANSWER_BYTES } from '../lib/net/read-limited';
import { postJson, providerGuard, type OutboundGuard } from './provider-http';
import type { NodeRequest, NodeResult } from './types';
import { configuredProvider, rowTemplates } from './node-inputs';

interface ImagesAnswer {
  data?: Array<{ b64_json?: string; url?: string }>;
}

/** Builds the activity that runs one iteration of an image_generation node. */
export function createImageGenerationActivity(deps: {
  config: Pick<Config, 'providers' | 'prices'>;
  files: () => FileDeps;
  guard: OutboundGuard;
}) {
  const call = async (req: NodeRequest<'image_generation'>): Promise<NodeResult> => {
    const { node } = req;
    const providerName = node.provider ?? 'openai';
    const provider = configuredProvider(deps.config, 'image', providerName, 'openai');
    // Its configured origin is trusted; image URLs in its answer are checked like a caller's.
    const guard = providerGuard(deps.guard, provider);
    const n = node.n ?? 1;
    // No `response_format`: newer models refuse it and always answer b64_json; older ones answer URLs. Both are handled.
    // The images come inline (b64_json) in this one JSON answer: each of the n may fill the cap.
    const cap = (guard.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES) * n;
    const answer = (await postJson(
      { ...guard, maxAnswerBytes: cap },
      providerName,
      `${provider.base_url.replace(/\/$/, '')}/images/generations`,
      {
        model: node.model,
        prompt: rowTemplates(req)(node.prompt),
        n,
        ...(node.size ? { size: node.size } : {}),
      },
      provider.api_key ? { authorization: `Bearer ${provider.api_key}` } : {},
    )) as ImagesAnswer;
    // At most the n asked for are kept and billed (D17: the hold of `n` images is a true bound);
    // more is a provider's error, and each one would be a stored file and a charge.
    const images = Array.isArray(answer.data) ? answer.data.slice(0, n) : [];
    if (images.length === 0)
      throw ApplicationFailure.retryable(
        `${providerName} answered without images`,
        'ProviderUnavailable',
      );
    // An entry that is neither is the provider's error, the same if asked again: the item fails.
    const unusable = images.findIndex(
      (image) =>
        !image ||
        typeof image !== 'object' ||
        (typeof image.b64_json !== 'string' && typeof image.url !== 'string'),
    );
    if (unusable !== -1)
      throw ApplicationFailure.nonRetryable(
        `${providerName} answered image ${unusable + 1} without b64_json or url`,
        'ProviderRejected',
      );

    const files = deps.files();
    const accountId = await runAccount(files, req);
    const parts: Part[] = [];
    for (const [i, image] of images.entries()) {
      const stem = `image-${i + 1}`;
      let doc;
      if (typeof image.b64_json === 'string') {
        doc = await storeOutputBytes(files, Buffer.from(image.b64_json, 'base64'), {
          accountId,
          runId: req.runId,
          name: (mime) => fallbackName(stem, mime),
        });
      } else {
        doc = await storeProviderFile(files, guard, providerName, image.url!, {
          accountId,
          runId: req.runId,
          stem,
        });
      }
      // Typed by its bytes: what is not an image is not billed as one.
      if (!doc.metadata.mime_type.startsWith('image/'))
        throw ApplicationFailure.nonRetryable(
          `${providerName} answered image ${i + 1} with bytes that are not an image (${doc.metadata.mime_type})`,
          'ProviderRejected',
        );
      parts.push(await filePart(files.links, doc, 'image')); // docs/workflow-format.md: an image generation yields image parts
    }
    // D17: images times the per-image price of the model (the images actually made).
    const costUsd = images.length * (deps.config.prices[node.model]?.per_image ?? 0);
    return { items: [completedOf(parts)], costUsd };
  };
  return function imageGeneration(req: NodeRequest<'image_generation'>): Promise<NodeResult> {
    return heartbeating(() => call(req));
  };
}
