/**
 * Entry of the short-lived child process that bundles the workflow code for a worker starting
 * without a prebuilt bundle (worker/workflow-bundle.ts says why): sends the code over IPC and exits.
 */
import { bundleWorkflows, type BundleMessage } from './workflow-bundle';

// The worker that asked is gone (killed while we bundled): nobody wants the bundle.
process.once('disconnect', () => process.exit(0));

bundleWorkflows().then(
  ({ code }) => send({ code }),
  (err: unknown) =>
    send({ error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
);

function send(message: BundleMessage): void {
  if (!process.send) throw new Error('worker/bundle-main.ts runs as a child process with IPC');
  process.send(message, () => process.exit('code' in message ? 0 : 1));
}
