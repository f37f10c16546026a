/**
 * The events of a run's stream (spec "Events", D11–D14), defined once: this zod schema is the
 * OpenAPI document's (api/contract re-exports it) and the TypeScript types are inferred from it
 * (domain/run.ts re-exports them as types only, so the workflow bundle loads none of this).
 */
import { z } from 'zod';
import { RunStatusSchema } from './run-view';

const seq = z.int().min(0).describe('Position in the run’s event log (D11); also the SSE `id:`.');
const usage = { usage: z.null(), service_tier: z.null() };
const itemEvent = <T extends string>(type: T) =>
  z.object({
    type: z.literal(type),
    sequence_number: seq,
    output_index: z.int().min(0),
    item: z.object({
      type: z.literal('message'),
      id: z.string(),
      phase: z.literal('final_answer'),
    }),
  });

/** Every event a stream can carry; `[DONE]` and `: keepalive` comments are framing, not events. */
export const StreamEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('response.created'),
    sequence_number: seq,
    response: z.object({
      id: z.string(),
      run_id: z.string(),
      created_at: z.int().describe('Unix seconds (D12).'),
      workflow_id: z.string(),
      service_tier: z.null(),
    }),
  }),
  z.object({
    type: z.literal('response.resumed'),
    sequence_number: seq.describe('The client’s cursor: the last event it has.'),
    response: z.object({ id: z.string(), run_id: z.string(), status: RunStatusSchema }),
  }),
  itemEvent('response.output_item.added'),
  itemEvent('response.output_item.done'),
  z.object({
    type: z.literal('response.completed'),
    sequence_number: seq,
    response: z.object(usage),
  }),
  z.object({
    type: z.literal('response.failed'),
    sequence_number: seq,
    response: z.object({
      error: z.object({ code: z.null(), message: z.string() }),
      incomplete_details: z.object({ reason: z.literal('error') }),
      ...usage,
    }),
  }),
  z.object({
    type: z.literal('response.cancelled'),
    sequence_number: seq,
    response: z.object(usage),
  }),
]);

/** Everything a stream may carry. */
export type StreamEvent = z.infer<typeof StreamEventSchema>;
/** The first event of a reattached stream (per connection, not in the log); its number is the client's cursor. */
export type ResumedEvent = Extract<StreamEvent, { type: 'response.resumed' }>;
/** Events of a run's log. `response.resumed` is per connection and lives in the API. */
export type RunEvent = Exclude<StreamEvent, ResumedEvent>;
/** What an item event says beyond its type and number. */
export type ItemEventBody = Pick<
  Extract<RunEvent, { type: 'response.output_item.added' }>,
  'output_index' | 'item'
>;
