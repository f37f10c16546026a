/**
 * The production Temporal of docker-compose.yml for a describe block (tools/stack/production-temporal.ts):
 * PostgreSQL, the Compose schema and namespace jobs, the real server at the pinned version; MongoDB is
 * the shared test stack's FerretDB. Started in `before`, stopped in `after`.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  schemaJobs,
  schemaVersions,
  scratchDir,
  startPostgres,
  startProductionTemporal,
  type Postgres,
  type ProductionTemporal,
  type SchemaJobs,
} from '../../../tools/stack/production-temporal';
import { Client, Connection } from '@temporalio/client';
import type { ServiceStack } from '../../support/service';
import { testStack } from '../../support/stack';
import { waitFor } from '../../support/http';
import { SEARCH_ATTRIBUTES } from '../../../workflows/definitions';

export interface ProductionStack {
  pg: Postgres;
  temporal: ProductionTemporal;
  jobs: SchemaJobs;
  /** What `temporal-schema-setup` printed on the first start. */
  setupOutput: string;
  /** The schema versions before that first start (an older release's) and after it. */
  versionsBefore: Awaited<ReturnType<typeof schemaVersions>>;
  versionsAfter: Awaited<ReturnType<typeof schemaVersions>>;
  /** For startService({ stack }). */
  stack: ServiceStack;
}

/** Temporal's PostgreSQL role, as deploy/compose/postgresql-init.sh creates it (a test password). */
export const TEMPORAL_DB = { user: 'temporal', password: 'wrs-test-temporal-db' };

/** Schema versions one step behind those of temporal-server 1.29.1 (1.18 and 1.9). */
export const OLDER_SCHEMA = { temporal: '1.17', visibility: '1.8' };

export function useProductionStack(): ProductionStack {
  const ctx = {} as ProductionStack;
  let dir: string | undefined;
  before(async function () {
    this.timeout(900_000); // the server and the schema tool are built from Go on first use (minutes)
    dir = scratchDir('wrs-prod-temporal-');
    ctx.pg = await startPostgres({
      dir: path.join(dir, 'pg'),
      temporalUser: TEMPORAL_DB.user,
      temporalPassword: TEMPORAL_DB.password,
    });
    ctx.jobs = await schemaJobs(ctx.pg, TEMPORAL_DB);
    // The database an older admin-tools release left (one minor back): the setup job must upgrade it.
    await ctx.jobs.installAt(OLDER_SCHEMA);
    ctx.versionsBefore = await schemaVersions(ctx.pg);
    ctx.setupOutput = await ctx.jobs.setup();
    ctx.versionsAfter = await schemaVersions(ctx.pg);
    ctx.temporal = await startProductionTemporal({
      dir: path.join(dir, 'temporal'),
      pg: ctx.pg,
      db: TEMPORAL_DB,
    });
    await untilStartsAccepted(ctx.temporal.address, ctx.temporal.namespace);
    const { stack, bundle } = await testStack();
    ctx.stack = { temporalAddress: ctx.temporal.address, mongoUri: stack.mongo.uri, bundle };
  });
  after(async () => {
    await ctx.temporal?.stop();
    await ctx.pg?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  return ctx;
}

/**
 * Waits until the new server accepts a start that carries our search attributes: they reach the
 * frontend's caches some seconds after the namespace job registered them, and a run started
 * meanwhile was refused (seen as a 500 when the previous file's server had just stopped).
 */
async function untilStartsAccepted(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection, namespace });
    await waitFor(
      async () => {
        const id = `probe-${Date.now()}-${Math.random().toString(36).slice(2)}`;
        try {
          const handle = await client.workflow.start('probe', {
            workflowId: id,
            taskQueue: 'wrs-probe',
            typedSearchAttributes: [
              { key: SEARCH_ATTRIBUTES.accountId, value: 'acct_probe' },
              { key: SEARCH_ATTRIBUTES.publishedWorkflowId, value: 'wf_probe' },
              { key: SEARCH_ATTRIBUTES.workflowVersion, value: 1 },
            ],
          });
          await handle.terminate('probe');
          return true;
        } catch {
          return undefined;
        }
      },
      {
        timeoutMs: 60_000,
        what: 'the production Temporal accepting starts with search attributes',
      },
    );
  } finally {
    await connection.close();
  }
}
