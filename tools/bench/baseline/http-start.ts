/**
 * P1's floor for any HTTP service in front of Temporal: a bare `node:http` server in a process of
 * its own (the baseline child) that reads a JSON body, calls `client.workflow.start` of the bare
 * workflow with the bench's codec and answers 202. No auth, no store, no validation, no koa: what
 * an HTTP hop and a second process alone cost against the load process starting workflows itself.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { BARE_TASK_QUEUE, BARE_WORKFLOW_TYPE } from './constants';

export interface BareHttpStart {
  url: string;
  close(): Promise<void>;
}

/** Serves `POST /` with `{"id": "...", "name": "..."}`: starts `bareHello` with that workflow id. */
export async function startBareHttpStart(opts: {
  address: string;
  namespace: string;
  dataConverter: DataConverter;
}): Promise<BareHttpStart> {
  const connection = await Connection.connect({ address: opts.address });
  const client = new Client({
    connection,
    namespace: opts.namespace,
    dataConverter: opts.dataConverter,
  });
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      let body: { id: string; name: string };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        answer(400, { error: 'not JSON' });
        return;
      }
      client.workflow
        .start(BARE_WORKFLOW_TYPE, {
          taskQueue: BARE_TASK_QUEUE,
          workflowId: body.id,
          args: [{ name: body.name }],
        })
        .then(
          () => answer(202, { id: body.id }),
          (err: Error) => answer(500, { error: err.message }),
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await connection.close();
    },
  };
}
