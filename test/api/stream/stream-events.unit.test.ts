/** The events the API itself makes (api/stream/stream-events.ts), framed: the exact bytes a client reads. */
import assert from 'node:assert/strict';
import { formatErrorEvent, formatEvent, formatFirstEvent } from '../../../api/stream/sse';
import {
  createdEventOf,
  keyRevokedEvent,
  resumedEvent,
  settledFailureEvent,
} from '../../../api/stream/stream-events';
import { createdEvent } from '../../../domain/run';

describe('stream events the API makes (api/stream/stream-events.ts)', () => {
  const run = {
    _id: 'run_01J00000000000000000000000',
    created_at: new Date(1_700_000_000_500),
    published_workflow_id: 'wf_1',
  };

  it('builds response.created with the bytes of the workflow’s log entry 0', () => {
    const workflows = createdEvent({
      runId: run._id,
      createdAtMs: run.created_at.getTime(),
      publishedWorkflowId: 'wf_1',
    });
    assert.equal(formatEvent(createdEventOf(run)), formatEvent(workflows));
    assert.equal(
      formatFirstEvent(createdEventOf(run)),
      'retry: 2000\nid: 0\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"run_01J00000000000000000000000","run_id":"run_01J00000000000000000000000","created_at":1700000000,"workflow_id":"wf_1","service_tier":null}}\n\n',
    );
  });

  it('builds response.resumed numbered with the client’s cursor', () => {
    assert.equal(
      formatEvent(resumedEvent('run_1', 7, 'running')),
      'id: 7\ndata: {"type":"response.resumed","sequence_number":7,"response":{"id":"run_1","run_id":"run_1","status":"running"}}\n\n',
    );
  });

  it('builds the response.failed of a settled run', () => {
    assert.equal(
      formatEvent(settledFailureEvent(3, 'closed')),
      'id: 3\ndata: {"type":"response.failed","sequence_number":3,"response":{"error":{"code":null,"message":"closed"},"incomplete_details":{"reason":"error"},"usage":null,"service_tier":null}}\n\n',
    );
  });

  it('frames the key_revoked error event without an id', () => {
    assert.equal(
      formatErrorEvent(keyRevokedEvent()),
      'data: {"type":"error","error":{"message":"The API key of this stream has been revoked.","type":"authentication_error","code":"key_revoked"}}\n\n',
    );
  });
});
