/**
 * Checks real answers against the served OpenAPI document (D25): the status must be documented
 * for the operation, the content type among the documented ones, every JSON body valid against
 * the documented schema (ajv, JSON Schema 2020-12, OpenAPI 3.1's dialect), documented headers
 * present, and every SSE event valid against the documented item schema.
 */
import assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ApiResponse } from './http';
import type { SseClient } from './sse';

type Json = any;

const DOC_ID = 'https://wrs.invalid/openapi.json';
export const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Rewrites document-local refs (`#/components/...`) to point into the document registered with ajv. */
function absoluteRefs(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(absoluteRefs);
  if (schema === null || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' && v.startsWith('#') ? DOC_ID + v : absoluteRefs(v),
    ]),
  );
}

export class Conformance {
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<object, ReturnType<Ajv2020['compile']>>();
  /** `METHOD /path` → statuses seen. */
  readonly seen = new Map<string, Set<number>>();

  constructor(readonly doc: Json) {
    // strict: false: the document carries OpenAPI keywords (paths, links ...) that are not JSON Schema.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(this.ajv);
    this.ajv.addSchema(doc, DOC_ID);
  }

  /** Every documented operation as `METHOD /path`. */
  operations(): string[] {
    return Object.entries(this.doc.paths as Record<string, Json>).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`),
    );
  }

  private operation(method: string, template: string): Json {
    const op = this.doc.paths[template]?.[method.toLowerCase()];
    assert.ok(op, `the document has no operation ${method} ${template}`);
    return op;
  }

  private validator(schema: Json) {
    let validate = this.validators.get(schema);
    if (!validate) {
      validate = this.ajv.compile(absoluteRefs(schema));
      this.validators.set(schema, validate);
    }
    return validate;
  }

  /** Asserts `value` matches a schema of the document (errors listed in the message). */
  validate(schema: Json, value: unknown, what: string): void {
    const validate = this.validator(schema);
    assert.ok(
      validate(value),
      `${what} does not match its documented schema: ${this.ajv.errorsText(validate.errors, { separator: '\n  ' })}\n${JSON.stringify(value)?.slice(0, 1500)}`,
    );
  }

  /** The documented response of an operation for a status; fails when it is not documented. */
  private documented(method: string, template: string, status: number): Json {
    const op = this.operation(method, template);
    const response = op.responses?.[String(status)];
    assert.ok(
      response,
      `${method} ${template} answered ${status}, which the document does not list (it lists ${Object.keys(op.responses ?? {}).join(', ')})`,
    );
    const key = `${method.toUpperCase()} ${template}`;
    if (!this.seen.has(key)) this.seen.set(key, new Set());
    this.seen.get(key)!.add(status);
    return response;
  }

  /** The documented media type matching an answer's Content-Type (exact, `type/*` or `*\/*`). */
  private mediaType(response: Json, contentType: string, what: string): Json {
    const content = response.content ?? {};
    const type = contentType.split(';')[0].trim().toLowerCase();
    const match = content[type] ?? content[`${type.split('/')[0]}/*`] ?? content['*/*'];
    assert.ok(
      match,
      `${what}: Content-Type ${type || '(none)'} is not documented (documented: ${Object.keys(content).join(', ') || 'no content'})`,
    );
    return match;
  }

  /** Checks one answer (JSON parsed or text, as support/http.ts returns it); returns it for chaining. */
  check<T extends ApiResponse>(method: string, template: string, res: T): T {
    const what = `${method} ${template} ${res.status}`;
    const response = this.documented(method, template, res.status);
    for (const name of Object.keys(response.headers ?? {})) {
      assert.ok(res.headers.has(name), `${what}: documented header ${name} is missing`);
    }
    const hasBody = res.body !== null && res.body !== undefined && res.body !== '';
    if (!hasBody) return res;
    const media = this.mediaType(response, res.headers.get('content-type') ?? '', what);
    if ((res.headers.get('content-type') ?? '').startsWith('application/json')) {
      assert.ok(media.schema, `${what}: no schema documented for the JSON body`);
      this.validate(media.schema, res.body, what);
    }
    return res;
  }

  /** Checks a finished (or aborted) SSE answer: documented 200, event-stream, every event valid, `id:` = sequence_number. */
  checkStream(method: string, template: string, client: SseClient): void {
    const what = `${method} ${template} ${client.status}`;
    const response = this.documented(method, template, client.status);
    const media = this.mediaType(response, client.headers.get('content-type') ?? '', what);
    // A 3.1 document has no `itemSchema`: the stream's schema refers to each event's fields (as schemathesis reads it).
    const ref = media.schema?.$ref as string | undefined;
    assert.ok(
      ref?.startsWith('#/components/schemas/'),
      `${what}: no schema documented for the events`,
    );
    const itemSchema = this.doc.components.schemas[ref!.split('/').at(-1)!];
    // Its `data` carries the payload's own schema as `contentSchema`, which JSON Schema only annotates,
    // so the parsed payload is validated against it here.
    const payloadSchema = findContentSchema(itemSchema);
    assert.ok(payloadSchema, `${what}: the item schema documents no contentSchema for \`data\``);
    const events = client.frames.filter((f) => f.event);
    assert.ok(events.length > 0, `${what}: no events`);
    for (const frame of client.frames.filter((f) => f.data !== undefined)) {
      const fields = {
        ...(frame.id === undefined ? {} : { id: frame.id }),
        ...(frame.retry === undefined ? {} : { retry: frame.retry }),
        data: frame.data,
      };
      this.validate(itemSchema, fields, `${what} SSE event`);
    }
    for (const frame of events) {
      this.validate(payloadSchema, frame.event, `${what} event ${frame.event.type}`);
      assert.equal(
        frame.id,
        String(frame.event.sequence_number),
        `${what}: SSE id and sequence_number differ`,
      );
    }
  }
}

/** The first `contentSchema` inside a schema (the documented payload of an SSE event's `data`). */
function findContentSchema(schema: Json): Json | undefined {
  if (schema === null || typeof schema !== 'object') return undefined;
  if (schema.contentSchema) return schema.contentSchema;
  for (const value of Object.values(schema)) {
    const found = findContentSchema(value);
    if (found) return found;
  }
  return undefined;
}
