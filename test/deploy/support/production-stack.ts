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
import type { ServiceStack } from '../../support/service';
import { testStack } from '../../support/stack';

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
