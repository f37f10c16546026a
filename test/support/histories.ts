/**
 * Saved workflow histories and their replay (the versioning policy, workflows/patches.ts): where
 * tools/scripts/record-histories.ts writes them, the fixed test key they are sealed with (D32), the
 * run secrets that open their run-keyed payloads (D39), and `replayAll`, which replays them against
 * a workflow bundle with the production data converter the way a worker would after a deploy.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { FAILURE_CONVERTER_PATH } from '../../lib/codec/data-converter';
import { EncryptionCodec, keyRing } from '../../lib/codec/payload-codec';
import { RunSecrets } from '../../lib/codec/run-keys';

/** test/workflows/histories: one directory per release that recorded (`<version>-<commit>`), plus the patch example's. */
export const HISTORIES_DIR = path.join(__dirname, '..', 'workflows', 'histories');
/** The patch example's histories (test/workflows/fixtures/patch-example), one per version that recorded one. */
export const PATCH_EXAMPLE_DIR = path.join(HISTORIES_DIR, 'patch-example');

/**
 * The payload key the histories are sealed with: a test key, public on purpose (it protects only
 * test data). Recording sets it as PAYLOAD_KEYS, so the histories are sealed as production seals.
 */
export const REPLAY_KEY_ID = 'replay-test';
export const REPLAY_PAYLOAD_KEYS = `${REPLAY_KEY_ID}:HvT6a/LRqEUhxVZIRm5geukjZZ0uSCa2Ao59TSvP538=`;
/** Per directory: the run secrets (D39) of the runs whose histories it holds, run id -> base64. */
export const RUN_SECRETS_FILE = 'run-secrets.json';
/** Per directory: what recorded it (release, commit, time, the shapes). */
export const MANIFEST_FILE = 'manifest.json';

export interface SavedHistory {
  /** The file, relative to HISTORIES_DIR. */
  file: string;
  workflowId: string;
  history: proto.temporal.api.history.v1.IHistory;
}

/**
 * Temporal's JSON form of a history (proto3 JSON, as `temporal workflow show --output json` writes).
 * The SDK's own historyToJSON/historyFromJSON fail in this install ("type must be a Type"): npm
 * gives @temporalio/common and @temporalio/proto two copies of protobufjs 8, and the converter of
 * one refuses the types of the other. So the converter is loaded from @temporalio/proto's copy.
 */
const protojson: {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options?: object): unknown;
} = require(
  require.resolve('protobufjs/ext/protojson', {
    paths: [path.dirname(require.resolve('@temporalio/proto/package.json'))],
  }),
);
const historyType = (patchProtobufRoot(proto) as any).lookupType('temporal.api.history.v1.History');

export function historyToJSON(history: proto.temporal.api.history.v1.IHistory): string {
  const message = proto.temporal.api.history.v1.History.fromObject(history);
  return JSON.stringify(protojson.toJson(historyType, message), null, 2);
}

export function historyFromJSON(json: string): proto.temporal.api.history.v1.IHistory {
  const history = protojson.fromJson(historyType, JSON.parse(json), { ignoreUnknownFields: true });
  if (!history) throw new TypeError('not a history');
  return history as proto.temporal.api.history.v1.IHistory;
}

/** The production data converter with the replay key and a directory's saved run secrets. */
export function replayDataConverter(secrets: Record<string, string> = {}) {
  const key = Buffer.from(REPLAY_PAYLOAD_KEYS.slice(REPLAY_KEY_ID.length + 1), 'base64');
  const codec = new EncryptionCodec(
    async () => keyRing([{ id: REPLAY_KEY_ID, key }]),
    new RunSecrets(async (runId) =>
      secrets[runId] ? Buffer.from(secrets[runId], 'base64') : null,
    ),
  );
  return { payloadCodecs: [codec], failureConverterPath: FAILURE_CONVERTER_PATH };
}

/** What a release directory's manifest says (written by tools/scripts/record-histories.ts). */
export interface HistoryManifest {
  release: string;
  commit: string;
  recordedAt: string;
  histories: string[];
  /** Histories a later release could not replay, retired before any deployment, with the reason. */
  retired?: Record<string, string>;
}

export function readManifest(dir: string): HistoryManifest {
  return JSON.parse(fs.readFileSync(path.join(dir, MANIFEST_FILE), 'utf8')) as HistoryManifest;
}

/** The release directories (everything but the patch example's), oldest recording first (names are not ordered: they end in a commit). */
export function releaseDirs(): string[] {
  if (!fs.existsSync(HISTORIES_DIR)) return [];
  return fs
    .readdirSync(HISTORIES_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== path.basename(PATCH_EXAMPLE_DIR))
    .map((e) => path.join(HISTORIES_DIR, e.name))
    .map((dir) => ({ dir, at: readManifest(dir).recordedAt }))
    .sort((a, b) => a.at.localeCompare(b.at))
    .map(({ dir }) => dir);
}

/** The histories of one directory (every `*.json` but the manifest and the secrets). */
export function loadHistories(dir: string): SavedHistory[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json') && f !== RUN_SECRETS_FILE && f !== MANIFEST_FILE)
    .sort()
    .map((f) => {
      const history = historyFromJSON(fs.readFileSync(path.join(dir, f), 'utf8'));
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      // The workflow id is not in the history itself; the file name carries it after the shape.
      const workflowId = f.replace(/\.json$/, '').split('@')[1] ?? f;
      if (!started) throw new Error(`${f}: not a history (no WorkflowExecutionStarted first)`);
      return { file: path.relative(HISTORIES_DIR, path.join(dir, f)), workflowId, history };
    });
}

/** The run secrets saved with a directory's histories. */
export function loadRunSecrets(dir: string): Record<string, string> {
  const file = path.join(dir, RUN_SECRETS_FILE);
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
}

/** Replays `histories` against `bundle`; one entry per history, with the error when it did not replay. */
export async function replayAll(
  bundle: WorkflowBundleWithSourceMap,
  histories: SavedHistory[],
  secrets: Record<string, string> = {},
): Promise<Array<{ file: string; error?: Error }>> {
  const byId = new Map(histories.map((h) => [h.workflowId, h.file]));
  const results: Array<{ file: string; error?: Error }> = [];
  const replays = Worker.runReplayHistories(
    {
      workflowBundle: bundle,
      dataConverter: replayDataConverter(secrets),
      replayName: 'saved-histories',
    },
    histories.map((h) => ({ workflowId: h.workflowId, history: h.history })),
  );
  for await (const result of replays)
    results.push({ file: byId.get(result.workflowId) ?? result.workflowId, error: result.error });
  return results;
}
