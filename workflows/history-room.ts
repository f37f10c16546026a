/**
 * The room a run's history has for the answers of its inline rows (D31). Temporal terminates a
 * workflow whose history passes 50 MB, and a terminated run ends without its record's output or
 * its webhook. A row's answer enters the history when its activity completes (and an output item
 * again when the run's end is written), and the rows in flight answer at about the same time, so
 * checking the history's size before each start is not enough: 64 rows of 1 MB answers started
 * together on an empty history and passed the limit together, 8 s into the run.
 *
 * So a chunk holds its worst case (its input and the most its rows' items may hold) from its
 * start until its answer is in the history, and starts only while the history, what the chunks in
 * flight hold and the output written again at the end fit `limit`. One that does not fit waits
 * for the chunks in flight (their answers are usually far below their worst case); with none in
 * flight nothing could make room, and the caller fails the node. Deterministic: the history's
 * size is the workflow task's, the same on replay.
 */

export interface HistoryRoomSource {
  /** The history's bytes as of the current workflow task (workflowInfo().historySize). */
  historyBytes(): number;
  /** Bytes the run's end writes again: its output items so far. */
  endBytes(): number;
}

export class HistoryRoom {
  private held = 0;
  private holding = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly limit: number,
    private readonly source: HistoryRoomSource,
  ) {}

  /**
   * Holds `bytes` for a chunk until the returned release (called once its answer is in). When they
   * do not fit, waits for the chunks in flight while `mayWait()` says so (a patch: runs started
   * before hold without waiting, as they did); undefined when nothing in flight could make room.
   */
  async take(bytes: number, mayWait: () => boolean): Promise<(() => void) | undefined> {
    for (;;) {
      if (this.fits(bytes) || !mayWait()) return this.hold(bytes);
      if (this.holding === 0) return undefined;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  private fits(bytes: number): boolean {
    const { historyBytes, endBytes } = this.source;
    return historyBytes() + endBytes() + this.held + bytes <= this.limit;
  }

  private hold(bytes: number): () => void {
    this.held += bytes;
    this.holding += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= bytes;
      this.holding -= 1;
      for (const wake of this.waiting.splice(0)) wake();
    };
  }
}
