/** The demo account, key and workflow `npm start` guarantees, kept across restarts in .data/demo.json. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Collections } from '../../store/db';
import { createAccount, findLiveKey, issueKey } from '../../store/accounts';
import { publishWorkflow } from '../../store/publish-workflow';
import { findWorkflow } from '../../store/workflows';

const DEMO_WORKFLOW = path.resolve(__dirname, '..', '..', 'examples', 'hello.json');

/** Returns the demo key and workflow slug, creating whatever is missing. */
export async function ensureDemo(
  collections: Collections,
  stateFile: string,
): Promise<{ key: string; accountId: string; slug: string }> {
  let state = existsSync(stateFile)
    ? (JSON.parse(readFileSync(stateFile, 'utf8')) as { key: string; accountId: string })
    : null;
  if (!state || !(await findLiveKey(collections, state.key))) {
    const account = await createAccount(collections, { name: 'demo', creditsUsd: 10 });
    const { secret } = await issueKey(collections, account._id, 'demo');
    state = { key: secret, accountId: account._id };
    // A local, single-user convenience: the demo key is shown on every start. Production keys are shown once (D6).
    writeFileSync(stateFile, JSON.stringify(state, null, 2), { mode: 0o600 });
  }
  const graph = JSON.parse(readFileSync(DEMO_WORKFLOW, 'utf8')) as { slug: string };
  if (!(await findWorkflow(collections, state.accountId, graph.slug))) {
    await publishWorkflow(collections, state.accountId, graph);
  }
  return { ...state, slug: graph.slug };
}
