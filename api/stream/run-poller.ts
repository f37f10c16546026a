/**
 * D15: one poller per run per API process, however many clients stream it. A poller asks the
 * run for news once per poll interval, keeps the run's event log as far as it knows it, and
 * lets every subscriber read the events after its cursor. The log is compact (domain/run-log.ts):
 * a million-row run's two million item events are numbers, made into events one at a time as
 * each client's socket takes them, so a stream of a big run costs the API little. It also waits
 * for the run's end (the `awaitEnd` update, one per process and run): the end and the events of
 * the run's last step reach the clients the moment the workflow gets there, not up to a poll
 * interval later, with no extra query. It stops when its last subscriber leaves or has been
 * given the terminal event: nothing outlives the clients. A run deleted while streamed (D39: its
 * record and its workflow gone) ends its streams with a `not_found` error event.
 */
import { isTerminal, isTerminalEvent, type RunSnapshot, type RunStatus } from '../../domain/run';
import { RunLog, type EventsView } from '../../domain/run-log';

/** Where a poller gets news: the live workflow, and the final record once Temporal is done. */
export interface PollSource {
  /** The live snapshot after a sequence number, or null for "no news yet"; throws when Temporal cannot be reached or a started run did not answer. */
  snapshot(runId: string, afterSequence: number): Promise<RunSnapshot | null>;
  /**
   * The run's terminal snapshot, with the log's last events, once it ends; null when it cannot be
   * waited for (closed already, unknown, Temporal unreachable) or `signal` fired.
   */
  awaitEnd(runId: string, signal: AbortSignal): Promise<RunSnapshot | null>;
  /** The stored record's status, and its whole event log once finalized. */
  stored(runId: string): Promise<{ status: RunStatus; log: RunLog | null } | null>;
}

/** What a poller knows about its run. */
export interface RunKnowledge {
  status: RunStatus;
  /** The log so far, by sequence number. */
  events: EventsView;
}

/** What a new poller starts from: what the caller knows of the run (a log the poller copies from). */
export interface RunSeed extends RunKnowledge {
  events: RunLog;
}

/** One streaming client. */
export interface Subscriber {
  /**
   * The poller knows the run's state: open the stream and return the client's cursor (last
   * sequence it has). `state.events` is the poller's log, which grows: the client reads from it.
   */
  start(state: RunKnowledge): number;
  /** The events after the cursor up to `upTo` may be sent, in order (read from the log `start` was given). */
  advance(upTo: number): void;
  /** The terminal event was delivered: finish the stream. */
  end(): void;
  /**
   * The server is going away: close without `[DONE]`, so the client reconnects elsewhere (spec
   * rule 2), after a comment saying so (api/stream/sse.ts RECONNECT).
   */
  drop(): void;
  /** D39: the run was deleted: end the stream saying so, without `[DONE]`. */
  gone(): void;
}

interface Attached {
  sub: Subscriber;
  cursor: number | null; // null until started
}

/**
 * Looks in a row that found neither the run's workflow nor its record before the run counts as
 * deleted: one could fall between a start's record and its workflow on another process's view.
 */
const GONE_LOOKS = 2;

/** How long a poller waits before trying again to wait for a run's end that it could not wait for. */
const END_WAIT_RETRY_MS = 30_000;

export class RunPoller {
  status: RunStatus;
  readonly log = new RunLog();
  queries = 0;
  private readonly attached = new Set<Attached>();
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private ready = false;
  private stopped = false;
  /** Looks begun so far, and who waits for the state after a look begun from a given one on. */
  private looksBegun = 0;
  private lookWaiters: Array<{ from: number; resolve: (state: RunKnowledge | undefined) => void }> =
    [];
  /** The wait for the run's end: under way, or when it may be tried again after failing. */
  private endWait: AbortController | undefined;
  private endWaitRetryAt = 0;
  /** Looks in a row that found neither the workflow nor the record (GONE_LOOKS: deleted). */
  private goneLooks = 0;

  constructor(
    readonly runId: string,
    seed: RunSeed,
    private readonly source: PollSource,
    private readonly pollMs: number,
    private readonly onStop: (poller: RunPoller) => void,
  ) {
    this.status = seed.status;
    this.log.appendFrom(seed.events);
    // The first look happens at once, so a new stream learns the current status without waiting a tick.
    this.timer = setTimeout(() => void this.tick(), 0);
    this.waitForEnd();
  }

  get subscriberCount(): number {
    return this.attached.size;
  }

  get terminal(): boolean {
    const last = this.log.last();
    return last !== undefined && isTerminalEvent(last);
  }

  /** Adds a client; returns the function that removes it. */
  subscribe(sub: Subscriber): () => void {
    const entry: Attached = { sub, cursor: null };
    this.attached.add(entry);
    if (this.ready) this.startOne(entry);
    return () => this.detach(entry);
  }

  /**
   * The run's state after the next successful look that begins from now on (not one already under
   * way): what a resuming client's cursor is judged against (D11). Undefined if the poller stops first.
   * The caller keeps the poller alive meanwhile by being subscribed.
   */
  nextLook(): Promise<RunKnowledge | undefined> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve(undefined);
      this.lookWaiters.push({ from: this.looksBegun + 1, resolve });
    });
  }

  /** Stops polling; pending timers are cleared so nothing keeps running for a run nobody watches. */
  stop(dropClients = false): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const waiter of this.lookWaiters.splice(0)) waiter.resolve(undefined);
    if (dropClients) for (const entry of [...this.attached]) entry.sub.drop();
    this.attached.clear();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.endWait?.abort();
    this.onStop(this);
  }

  private detach(entry: Attached): void {
    this.attached.delete(entry);
    if (this.attached.size === 0) this.stop();
  }

  private startOne(entry: Attached): void {
    entry.cursor = entry.sub.start({ status: this.status, events: this.log });
    // Missed events go out at once, but spec rule 3: a terminal event reaches a newly attached
    // client on the next poll tick, about a second later.
    this.deliver(entry, false);
  }

  private deliver(entry: Attached, includeTerminal: boolean): void {
    if (entry.cursor === null) return;
    const last = this.log.length - 1;
    const upTo = !includeTerminal && this.terminal ? last - 1 : last;
    if (upTo > entry.cursor) {
      entry.cursor = upTo;
      entry.sub.advance(upTo);
    }
    // Past the terminal event (or resumed after it): the stream is over.
    if (includeTerminal && this.terminal && entry.cursor >= last) {
      this.attached.delete(entry);
      entry.sub.end();
    }
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.ticking) return;
    this.ticking = true;
    const look = ++this.looksBegun;
    const started = Date.now();
    let looked = true;
    let behind = false;
    try {
      if (!this.terminal) behind = await this.learn();
    } catch {
      // A failed look is "no news yet" (D15): the stream never fails because a poll did.
      looked = false;
    } finally {
      this.ticking = false;
    }
    if (this.stopped) return;
    if (this.goneLooks >= GONE_LOOKS) {
      for (const entry of [...this.attached]) entry.sub.gone();
      this.attached.clear();
      return this.stop();
    }
    // Until one look succeeded the run's state is unknown (Temporal down): clients wait,
    // with keepalives, instead of being told the stale `pending` of the stored record.
    if (looked) {
      const state = { status: this.status, events: this.log.view() };
      this.lookWaiters = this.lookWaiters.filter(
        (waiter) => waiter.from > look || (waiter.resolve(state), false),
      );
    }
    if (looked || this.ready) {
      const first = !this.ready;
      this.ready = true;
      for (const entry of [...this.attached]) {
        if (entry.cursor === null) this.startOne(entry);
        else if (!first) this.deliver(entry, true);
      }
    }
    if (this.attached.size === 0) return this.stop();
    this.waitForEnd();
    // A run whose log has more events than one answer holds (a big run, a late reattach) is read
    // page after page at once; the once-a-second pace is for learning news, not for catching up.
    const wait = behind ? 0 : Math.max(0, started + this.pollMs - Date.now());
    this.timer = setTimeout(() => void this.tick(), wait);
  }

  /** Takes in what the run has that this poller lacks; true when the answer was one page of more. */
  private async learn(): Promise<boolean> {
    this.queries++;
    let snapshot: RunSnapshot | null;
    try {
      snapshot = await this.source.snapshot(this.runId, this.log.length - 1);
    } catch (err) {
      // Temporal unreachable: a run that ended just before still has its whole log in its record.
      const stored = await this.source.stored(this.runId);
      if (!stored?.log || !isTerminal(stored.status)) throw err;
      this.log.appendFrom(stored.log);
      this.status = stored.status;
      return false;
    }
    if (snapshot) {
      // An answer begun before the end arrived (ended(), below) is older than what the poller
      // knows; one that brings the end itself carries the run's final status.
      if (!this.terminal) this.status = snapshot.status;
      return this.log.appendAnswer(snapshot) > 0 && snapshot.eventCount > this.log.length;
    }
    // No news from Temporal: no worker has run the run yet, or its workflow has closed.
    const stored = await this.source.stored(this.runId);
    this.goneLooks = stored ? 0 : this.goneLooks + 1;
    if (!stored) return false;
    if (stored.log) this.log.appendFrom(stored.log);
    if (isTerminal(stored.status) || this.status === 'pending') this.status = stored.status;
    return false;
  }

  /**
   * Waits for the run's end unless it is known, a wait is under way, or one failed lately (every
   * wait of this process is one update, so trying again costs Temporal nothing new).
   */
  private waitForEnd(): void {
    if (this.stopped || this.terminal || this.endWait || Date.now() < this.endWaitRetryAt) return;
    const wait = new AbortController();
    this.endWait = wait;
    void this.source
      .awaitEnd(this.runId, wait.signal)
      .catch(() => null)
      .then((end) => {
        if (this.endWait === wait) this.endWait = undefined;
        if (this.stopped) return;
        if (end) this.ended(end);
        else this.endWaitRetryAt = Date.now() + END_WAIT_RETRY_MS;
      });
  }

  /**
   * The run ended: its last events join the log if they follow on from it (else the next ticks
   * page through the rest as usual), and the clients that were watching get them and the end at
   * once. A client that attaches only now gets the terminal event on the next tick (spec rule 3).
   */
  private ended(end: RunSnapshot): void {
    if (this.terminal) return; // a look got there first: the ticks deliver it as usual
    this.log.appendAnswer(end); // the events that continue the log (an answer may overlap it)
    if (!this.terminal) return;
    this.status = end.status;
    if (!this.ready) return;
    for (const entry of [...this.attached]) this.deliver(entry, true);
    if (this.attached.size === 0) this.stop();
  }
}

/** Every poller of one API process, keyed by run id. */
export class PollerRegistry {
  private readonly pollers = new Map<string, RunPoller>();
  /** Set by stopAll: a stream that opens afterwards (its route was still deciding) is dropped at once. */
  private stopped = false;

  constructor(
    private readonly source: PollSource,
    private readonly pollMs: number,
  ) {}

  /** Subscribes a client to the run's poller, creating it (seeded with what the caller knows) if needed. */
  subscribe(runId: string, seed: RunSeed, sub: Subscriber): () => void {
    if (this.stopped) {
      sub.drop();
      return () => {};
    }
    let poller = this.pollers.get(runId);
    if (!poller) {
      poller = new RunPoller(runId, seed, this.source, this.pollMs, (p) => {
        if (this.pollers.get(p.runId) === p) this.pollers.delete(p.runId);
      });
      this.pollers.set(runId, poller);
    }
    return poller.subscribe(sub);
  }

  /**
   * The run's state after a fresh look (D11: a resuming cursor is judged against it), or undefined
   * when none succeeds within `timeoutMs` (Temporal unreachable). `release` must be called: until
   * then the run's poller stays alive, so a stream opened meanwhile reuses it and its log.
   */
  look(
    runId: string,
    seed: RunSeed,
    timeoutMs: number,
  ): { state: Promise<RunKnowledge | undefined>; release: () => void } {
    const release = this.subscribe(runId, seed, {
      start: () => Number.MAX_SAFE_INTEGER,
      advance: () => {},
      end: () => {},
      drop: () => {},
      gone: () => {},
    });
    const poller = this.pollers.get(runId)!;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>(
      (resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)),
    );
    const state = Promise.race([poller.nextLook(), timeout]).finally(() => clearTimeout(timer));
    return { state, release };
  }

  /** Live pollers (tests assert that disconnects leave none behind). */
  get size(): number {
    return this.pollers.size;
  }

  get(runId: string): RunPoller | undefined {
    return this.pollers.get(runId);
  }

  /** Shutdown: stops every poller and drops its clients, who reconnect to another API process; returns how many. */
  stopAll(): number {
    this.stopped = true;
    let dropped = 0;
    for (const poller of [...this.pollers.values()]) {
      dropped += poller.subscriberCount;
      poller.stop(true);
    }
    return dropped;
  }
}
