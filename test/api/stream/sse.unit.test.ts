/** SSE framing (api/stream/sse.ts, D11): what a client's parser, e.g. a browser's EventSource, reads. */
import assert from 'node:assert/strict';
import { DONE, formatEvent, KEEPALIVE } from '../../../api/stream/sse';
import { createdEvent } from '../../../domain/run';

describe('SSE framing (api/stream/sse.ts)', () => {
  const event = createdEvent({
    runId: 'run_01J00000000000000000000000',
    createdAtMs: 1_700_000_000_500,
    publishedWorkflowId: 'wf_1',
  });

  it('frames an event as an id line, one data line of JSON and a blank line', () => {
    const lines = formatEvent(event).split('\n');
    assert.equal(lines[0], 'id: 0');
    assert.ok(
      lines[1].startsWith('data: {"type":"response.created","sequence_number":0,'),
      'type, then sequence_number first',
    );
    assert.deepEqual(lines.slice(2), ['', ''], 'ends with a blank line');
    assert.deepEqual(JSON.parse(lines[1].slice('data: '.length)), event);
  });

  it('keeps a value with newlines on one data line (JSON escapes them)', () => {
    const withNewlines = createdEvent({
      runId: 'run_1',
      createdAtMs: 0,
      publishedWorkflowId: 'wf_a\nb\r\nc',
    });
    assert.equal(formatEvent(withNewlines).split('\n').length, 4);
  });

  it('has a comment keepalive and a [DONE] sentinel', () => {
    assert.equal(KEEPALIVE, ': keepalive\n\n');
    assert.equal(DONE, 'data: [DONE]\n\n');
  });
});
