/** domain/run-log.ts: a run's event log kept compact, read back byte for byte. */
import assert from 'node:assert/strict';
import { RunLog, codeToken, itemEventOf } from '../../domain/run-log';
import { idAtOffset, newId } from '../../domain/ids';
import { createdEvent, type RunEvent } from '../../domain/run';

const BASE = newId('item', 1_700_000_000_000, () => 0.99); // near the top of its halves: offsets carry
const created = createdEvent({ runId: 'run_1', createdAtMs: 0, publishedWorkflowId: 'wf_1' });
const completed = (seq: number): RunEvent => ({
  type: 'response.completed',
  sequence_number: seq,
  response: { usage: null, service_tier: null },
});

/** A log as a run makes it: created, item events with codes `codes` (ids from BASE), completed. */
function runEvents(codes: number[]): RunEvent[] {
  const events: RunEvent[] = [{ ...created, sequence_number: 0 }];
  for (const code of codes) events.push(itemEventOf(BASE, code, events.length));
  events.push(completed(events.length));
  return events;
}

/** Codes of `rows` rows started and done a block at a time (D35 stored rows). */
function blockCodes(rows: number, block: number): number[] {
  const codes: number[] = [];
  for (let first = 0; first < rows; first += block) {
    const n = Math.min(block, rows - first);
    for (let k = 0; k < n; k++) codes.push((first + k) * 2);
    for (let k = 0; k < n; k++) codes.push((first + k) * 2 + 1);
  }
  return codes;
}

/** Every event read back as the original, as an object and as the JSON text a stream sends. */
function assertSame(log: RunLog, events: RunEvent[]): void {
  assert.equal(log.length, events.length);
  for (let seq = 0; seq < events.length; seq++) {
    const text = JSON.stringify(events[seq]);
    assert.equal(JSON.stringify(log.at(seq)), text, `event ${seq}`);
    assert.equal(log.jsonAt(seq), text, `event ${seq} as text`);
  }
}

describe('run log (domain/run-log.ts, D35)', () => {
  it("keeps a big run's block rows as a few segments and reads every event back byte for byte", () => {
    const events = runEvents(blockCodes(10_000, 1_000));
    const log = RunLog.of(events);
    assertSame(log, events);
    assert.equal(log.segmentCount, 2 + 20, 'the ends, then one segment a block and type');
  });

  it('reads out of order as well as in order', () => {
    const events = runEvents(blockCodes(500, 100));
    const log = RunLog.of(events);
    for (const seq of [1_001, 0, 600, 599, 1, 1_000, 250])
      assert.deepEqual(log.at(seq), events[seq], `event ${seq}`);
    assert.throws(() => log.at(events.length), RangeError);
    assert.throws(() => log.jsonAt(-1), RangeError);
  });

  it('keeps rows finished out of order, and items whose ids follow no base, exactly', () => {
    const interleaved = [0, 2, 4, 3, 6, 1, 5, 7];
    const events = runEvents(interleaved);
    // An item event of a run from before the base (a random id), one with more fields than an item event has.
    events.splice(
      3,
      2,
      {
        ...(events[3] as Extract<RunEvent, { item: unknown }>),
        item: { type: 'message', id: 'item_other', phase: 'final_answer' },
      },
      { ...events[4], extra: true } as unknown as RunEvent,
    );
    assertSame(RunLog.of(events), events);
  });

  it("learns the base from a first item event that is not item 0's", () => {
    const events = runEvents([14, 16, 18, 20]); // items 7 to 10 open
    const log = RunLog.of(events);
    assertSame(log, events);
    assert.equal(log.segmentCount, 3, 'one segment for the four');
  });

  it('takes only the events that continue it', () => {
    const log = RunLog.of(runEvents([0, 1]).slice(0, 2));
    assert.equal(log.append(completed(5)), false);
    assert.equal(log.append(itemEventOf(BASE, 1, 2)), true);
    assert.equal(log.append(itemEventOf(BASE, 1, 2)), false, 'not twice');
    assert.equal(log.length, 3);
  });

  it('appends stored codes, and copies another log from the middle of a segment', () => {
    const events = runEvents(blockCodes(3_000, 1_000));
    const stored = RunLog.of(events.slice(0, 1));
    // The chunks' tokens (domain/run-chunks.ts): `code*count` in base 36.
    stored.appendItemCodes(BASE, tokens(blockCodes(3_000, 1_000)));
    stored.append(completed(stored.length));
    assertSame(stored, events);

    const partial = RunLog.of(events.slice(0, 1_500)); // ends inside a block's done events
    partial.appendFrom(stored);
    assertSame(partial, events);
    assert.equal(partial.segmentCount, stored.segmentCount, 'the same segments, not one an event');
  });

  it("makes another base's stored codes whole rather than misname them", () => {
    const other = idAtOffset(BASE, 1_000_000);
    const log = RunLog.of(runEvents([0, 1]).slice(0, 3));
    log.appendItemCodes(other, '4*3');
    assert.deepEqual(log.at(5), itemEventOf(other, 8, 5));
  });

  it('hands its item events on as codes, and its base, when nothing else lies between', () => {
    const codes = blockCodes(300, 100);
    const log = RunLog.of(runEvents(codes));
    assert.equal(log.itemIdBase, BASE);
    assert.deepEqual(log.itemCodes(1, log.length - 1), codes);
    assert.deepEqual(log.itemCodes(150, 160), codes.slice(149, 159), 'from inside segments');
    assert.equal(log.itemCodes(0, 2), undefined, 'the created event is kept whole');
  });

  it("takes a compact answer's events that continue it: from inside a token, none past a gap", () => {
    const codes = blockCodes(3_000, 1_000);
    const events = runEvents(codes);
    const pieces = [events[0], tokens(codes), events.at(-1)!];
    const answer = (from: number, given = pieces) => ({
      events: [],
      compact: { from, itemIdBase: BASE, pieces: given },
    });
    const whole = new RunLog();
    assert.equal(whole.appendAnswer(answer(0)), events.length);
    assertSame(whole, events);
    assert.equal(whole.segmentCount, 2 + 6, 'the ends, then one segment a block and type');

    // Asked for after event 0, answered when the log had more (they came in another way).
    const behind = RunLog.of(events.slice(0, 1_234));
    assert.equal(behind.appendAnswer(answer(1, pieces.slice(1))), events.length - 1_234);
    assertSame(behind, events);

    const short = RunLog.of(events.slice(0, 1));
    assert.equal(short.appendAnswer(answer(5, pieces.slice(1))), 0, 'events 1 to 4 are missing');
    assert.equal(short.length, 1);
  });

  it('takes an answer of whole events too (workflow code from before the compact option)', () => {
    const events = runEvents([0, 1]);
    const log = RunLog.of(events.slice(0, 2));
    assert.equal(log.appendAnswer({ events: events.slice(1) }), 2);
    assertSame(log, events);
  });

  it('gives a fixed view of what a look saw', () => {
    const events = runEvents([0, 1]);
    const log = RunLog.of(events.slice(0, 2));
    const view = log.view();
    log.append(events[2]);
    assert.equal(view.length, 2);
    assert.equal(log.length, 3);
  });
});

/** Codes as the chunks store them: runs of consecutive codes of one type as `code*count`, base 36. */
function tokens(codes: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < codes.length;) {
    let n = 1;
    while (i + n < codes.length && codes[i + n] === codes[i] + 2 * n) n++;
    out.push(codeToken(codes[i], n));
    i += n;
  }
  return out.join(',');
}
