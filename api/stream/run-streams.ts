/** The two streams of the spec: the one a streaming start opens, and the reattach stream (rules 2 and 3, D11). */
import type { Context } from 'koa';
import type { Config } from '../../config';
import type { RunDoc } from '../../store/documents';
import { isTerminalEvent } from '../../domain/run';
import { InvalidRequestError } from '../../domain/errors';
import { EVENT_CURSOR } from '../contract/http-schemas';
import { openStream } from './open-stream';
import { createdEventOf, resumedEvent } from './stream-events';
import type { PollerRegistry, RunKnowledge, RunSeed } from './run-poller';
import { RunLog } from '../../domain/run-log';
import type { Collections } from '../../store/db';
import { findRunLog } from '../../store/runs';
import type { KeyCache } from '../auth/key-cache';
import type { KeyCap } from '../limits/key-cap';

export interface RunStreamDeps {
  pollers: PollerRegistry;
  /** A finished run's stream replays its stored log. */
  collections: Pick<Collections, 'runs' | 'runChunks'>;
  config: Pick<Config, 'api'>;
  /** D6: a stream ends when its key is revoked (within KEY_CACHE_MS plus a second). */
  keys: Pick<KeyCache, 'isLive'>;
  /** Open streams per key in this process: one more than the cap is a 429 before any byte. */
  streams: KeyCap;
}

function options(deps: RunStreamDeps, keyId: string) {
  const { keepaliveMs, maxBufferedBytes } = deps.config.api.stream;
  const keyIsLive = () => deps.keys.isLive(keyId);
  return { pollers: deps.pollers, keepaliveMs, maxBufferedBytes, keyIsLive };
}

/** What the API knows of a run before its poller has looked: just its created event. */
function seedOf(run: RunDoc): RunSeed {
  return { status: run.status, events: RunLog.of([createdEventOf(run)]) };
}

/** What the API knows of a run before its poller has looked: a finished run's stored log (compact), else seedOf's. */
async function storedSeedOf(deps: RunStreamDeps, run: RunDoc): Promise<RunSeed> {
  const stored = run.finalized ? await findRunLog(deps.collections, run._id) : null;
  return stored?.log ? { status: stored.status, events: stored.log } : seedOf(run);
}

/**
 * POST /responses with `stream: true`: `response.created` at once, then the run's events.
 * `release` gives back the cap's slot the route took before it started the run.
 */
export function streamNewRun(
  ctx: Context,
  deps: RunStreamDeps,
  run: RunDoc,
  release: () => void,
): void {
  // The caller's key, which an idempotent repeat (D18) may hold instead of the one that started the run.
  const keyId = ctx.state.auth!.keyId;
  openStream(ctx, { ...options(deps, keyId), release }, run._id, seedOf(run), () => ({
    event: createdEventOf(run),
    cursor: 0,
  }));
}

/**
 * GET /runs/{runId}/stream: `response.resumed` with the current status, then the events after
 * the client's cursor (Last-Event-ID or starting_after), or, without one, from now on. The
 * resumed event carries the cursor as its sequence number, so its `id:` is a valid resume point.
 * D11: a cursor at the terminal event is answered 204 (an EventSource stops reconnecting) and a
 * cursor beyond the run's last event is a 400, both before any byte of a stream.
 */
export async function streamExistingRun(
  ctx: Context,
  deps: RunStreamDeps,
  run: RunDoc,
  linkKeyId?: string, // a stream link's key (D34): the stream lives as long as that key
): Promise<void> {
  const given = cursorFrom(ctx);
  // The stream's key: the caller's, a stream link's (D34), else the one that started the run.
  const keyId = ctx.state.auth?.keyId ?? linkKeyId ?? run.key_id;
  // D40: over the cap, a 429 before any byte and before the run's log is read. Streams opened by
  // links (handed to browsers) have slots of their own, so their holders cannot take the key's.
  const freeSlot = deps.streams.take(ctx.state.auth ? keyId : `link:${keyId}`);
  let opened = false;
  let release: (() => void) | undefined;
  try {
    const seed = await storedSeedOf(deps, run);
    const whole = seed.events.length > 1; // the stored log of a finished run
    let spent = false;
    // Cursor 0 (`response.created`) is never beyond nor terminal: it opens at once, as does a run whose whole log is stored.
    if (given !== undefined && given.cursor > 0 && !whole) {
      // A live run: judged against a fresh look, not a poller's last one (another API process may have sent newer events).
      const look = deps.pollers.look(run._id, seed, deps.config.api.stream.keepaliveMs);
      release = look.release;
      const state = await look.state;
      // No look succeeded (Temporal unreachable): the stream opens and sends what comes after the cursor.
      spent = state !== undefined && isSpent(state, given);
    } else if (given !== undefined) {
      spent = isSpent(seed, given);
    }
    if (spent) {
      ctx.status = 204; // nothing left to receive: an EventSource stops here instead of reconnecting
      return;
    }
    opened = true; // the stream gives the slot back when it ends
    openStream(ctx, { ...options(deps, keyId), release: freeSlot }, run._id, seed, (state) => {
      const last = state.events.length - 1;
      // "From now on" still ends with the terminal event of a finished run (spec rule 3).
      const cursor =
        given?.cursor ?? (last >= 0 && isTerminalEvent(state.events.at(last)) ? last - 1 : last);
      return {
        event: resumedEvent(run._id, cursor, state.status),
        cursor,
      };
    });
  } finally {
    if (!opened) freeSlot(); // a 204, a 400 or a failed look: no stream holds the slot
    release?.(); // after openStream subscribed: the poller (and what it knows) carries over
  }
}

/** A client's cursor: the number, the parameter that gave it and its text for messages. */
interface Cursor {
  cursor: number;
  param: string;
  text: string;
}

/** D11: true for a cursor at the terminal event (nothing left: 204); a cursor beyond the last event is a 400. */
function isSpent(state: RunKnowledge, given: Cursor): boolean {
  const last = state.events.length - 1;
  if (given.cursor > last) {
    throw new InvalidRequestError(
      `\`${given.param}\` is ${given.text}, beyond this run's last event (${last}): send the \`id\` of an event you received.`,
      { param: given.param, code: 'cursor_out_of_range' },
    );
  }
  return given.cursor === last && isTerminalEvent(state.events.at(last));
}

/** D11: `Last-Event-ID` (what a browser's EventSource resends) wins over `?starting_after=`. */
function cursorFrom(ctx: Context): Cursor | undefined {
  const header = ctx.get('last-event-id');
  const query = ctx.query.starting_after;
  const [raw, param] = header !== '' ? [header, 'Last-Event-ID'] : [query, 'starting_after'];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !EVENT_CURSOR.test(raw.trim())) {
    throw new InvalidRequestError(
      `\`${param}\` must be an event sequence number (a non-negative integer).`,
      { param },
    );
  }
  const text = raw.trim().replace(/^0+(?=\d)/, ''); // as sent (a number past 2^53 is not exact), no leading zeros
  return { cursor: Number(text), param, text };
}
