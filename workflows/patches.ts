/**
 * The workflow versioning policy: a change to workflow code that is not replay-safe ships behind a
 * patch (`patched()`), registered here, and leaves through a deprecation cycle. Workflow code calls
 * `isPatched` / `deprecated` from this module only (test/workflows/patches.unit.test.ts enforces it),
 * so every patch in the code is listed with the release that added it and its stage.
 *
 * Why patches and not Worker Versioning (runs pinned to the build that started them), which the
 * pinned Temporal server 1.29.1 (deployment versions on by default), the CLI 1.5.1 dev server and
 * SDK 1.24 (`workerDeploymentOptions`) all support: a pinned run only ever runs on workers of its
 * build, so every build must keep its own workers polling until its last run closes (24 h for a
 * webhook delivery, D20) and each release needs a `temporal worker deployment set-current-version`
 * step. Compose's `up` and the chart's one worker Deployment (rolling update) replace the workers
 * instead. With patches, old and new workers share one task queue during a rollout and a new worker
 * continues any run an old one started; the replay test (test/workflows/replay.unit.test.ts)
 * proves the saved histories of earlier releases still replay. (An old worker cannot continue a
 * run once a new one recorded a marker it does not know: its task fails and is retried until a
 * new worker takes it.) Item contents count as commands here: an item's size moves HistoryRoom's
 * and splitFinal's decisions, so a change to what workflow code puts in an item, messages
 * included, ships behind a patch too. docs/deploy.md "Changing workflow code safely" is the
 * step-by-step guide.
 *
 * The cycle of one patch (releases N < N+1 < N+2):
 *  - `patched` (release N): `if (isPatched(id)) { new } else { old }`. Runs started before N keep
 *    the old path; runs started on N record a marker and take the new one.
 *  - `deprecated` (release N+1, deployed only once no run started before N is open, i.e. N has
 *    been live longer than the longest workflow: 24 h, the webhook delivery window, D20):
 *    `deprecated(id); new`. Its histories without the marker are deleted from
 *    test/workflows/histories in the same commit (they can no longer be open).
 *  - removed (release N+2, again once no run started before N+1 is open): the call and the entry go.
 */
import { deprecatePatch, patched } from '@temporalio/workflow';

export type PatchStage = 'patched' | 'deprecated';

export interface PatchEntry {
  /** The release (package.json version) that first shipped the patch. */
  since: string;
  /** Where the patch is in its cycle; the entry is deleted when its calls are. */
  stage: PatchStage;
  /** What changed, for whoever advances the cycle. */
  change: string;
}

/** Every patch id in use. */
export const PATCHES = {
  'rerun-known-failed-rows': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D38: a re-run of failed items whose parent's record lists its failed rows runs blocks of those rows only (workflows/carry-over.ts planBlocks), each told its rows (`runRows`) and given only their inline items (`picked`); old runs keep uniform blocks that read the parent's pages.",
  },
  'rerun-one-block': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D38: such a re-run's carried node of at most 100,000 rows runs its failed rows as one block at the run's whole concurrency (workflows/carry-over.ts CarryOver.onePlan) instead of 16 blocks of 4 lanes; old runs keep the 16 blocks.",
  },
  'finalize-local': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D7: a run whose end needs no chunks writes it as a local activity (finalizeRun's marker in the workflow task that ends the run) instead of an activity task and a second workflow task; old runs keep the activity.",
  },
  'answer-waiters-first': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D28: a run without chunks whose end somebody awaits (an `awaitEnd` update in when it ends) writes its end as the activity again, so the workflow task that ends it answers the update without waiting for the local end's writes; old runs keep the local end.",
  },
  'stored-list-nodes': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D35: `text`, `select` and `join` given a stored list (a file's rows, a big node's items) take it: text in blocks (`runNodeBlock`), select and join in an activity that reads it once it is done (`selectStoredItem`, `joinStoredItems`); old runs fail such a node with the refusal they had.",
  },
  'stored-list-batch': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D35: `batch` given a stored list takes it: an activity (`batchStoredRows`) reads its items once it is done and stores their rows as the batch's own list; old runs fail such a batch with the refusal they had.",
  },
  'text-bounds': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "A `text` node's item filled in the workflow is bounded: past 1 MiB (its JSON), or past RUN_TEXT_MAX_CHARS for the run's text nodes in all, it fails in place (`template_too_large`) without its text being built (domain/item-blocks.ts boundedTextItem); old runs fill it whatever its size (a template repeating a placeholder over a large value failed their workflow task again and again).",
  },
  'big-text-in-blocks': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D35: a `text` node of a big inline list (more rows than twice the run's concurrency) fills it in blocks (`runNodeBlock`) whose items go to the store, as a big I/O node does; old runs fill it in the workflow, its items in the history.",
  },
  'blocks-queue': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D35: a big node's blocks (`runNodeBlock`) are scheduled on the run task queue's `-blocks` queue (workflows/definitions.ts blockTaskQueue), from which a worker takes only the blocks it runs at once (WORKER_BLOCKS): blocks past them wait in Temporal instead of in the activity slots of every run's other work. Old runs schedule their blocks on the run task queue.",
  },
  'blocks-fair': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D36: a big node's blocks are scheduled with the normal Temporal priority key (their fairness key, the account, still inherited) and carry the run's own key in their request (`priorityKey`), so a server whose block queue orders by fairness (deploy/temporal-dynamicconfig.yaml) takes accounts' blocks in turn and a `high` run never overtakes another account's blocks; the worker orders one account's blocks and calls by the request's key. Old runs' blocks inherit the run's key.",
  },
  'webhooks-queue': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D20: a webhook's delivery attempts are scheduled on the run task queue's `-webhooks` queue (workflows/definitions.ts webhookTaskQueue), served by each worker up to WORKER_WEBHOOK_DELIVERIES at once, so receivers that hold their connections never take the activity slots runs need; old deliveries stay on the run task queue.",
  },
  'webhooks-fair': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D20, D36: a webhook's delivery attempts are scheduled with the normal Temporal priority key and the account as fairness key, so a server whose webhook queue orders by fairness (deploy/temporal-dynamicconfig.yaml) hands delivery slots to accounts in turn and a `high` run's deliveries never go first; old deliveries inherit the run's priority.",
  },
  'cancel-after-last-work': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D8: a run asked to cancel whose graph finished anyway (its last calls answered before the cancel reached them) ends `cancelled`, as the cancel's 202 said, its finished items kept and billed; old runs end `completed`.",
  },
  'cost-cap-waits': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D36: a unit of a run with max_cost that does not fit while other units' budgets are in flight waits for them to settle (their cost, often far below the per-call budget, replaces the budget) and asks again (workflows/cost-cap.ts takeSettled); old runs end at the cost limit there, often far below it.",
  },
  'history-room': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D31: a chunk of inline rows whose worst-case answer the run's history has no room for (with the chunks in flight and the output the end writes again) waits for those in flight, and with none in flight fails its node (workflows/history-room.ts); old runs start it anyway, as before, and may pass Temporal's 50 MB.",
  },
  'credit-cap': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D17: a run without max_cost whose priced calls outgrow its hold (rows counted only while it works) asks for more hold from the account's available credit before a unit that does not fit (`extendRunHold`), shrinks or waits when none is left, and with nothing in flight fails naming the account's credit (workflows/cost-cap.ts CreditSource); old runs start every unit and may spend past the account's credit.",
  },
  'batch-rows-depth': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "A batch whose rows input is a text holding a JSON array nested deeper than 64 levels fails its node (domain/batch-rows.ts BatchRowsTooDeep); old runs take the rows, and then cannot end (their end's payload overflows the stack).",
  },
  'rerun-empty-blocks': {
    since: '0.1.0',
    stage: 'patched',
    change:
      'D38: a re-run\'s block whose node had no failed rows in it (a node of a branch that completed whole) takes no max_cost budget (workflows/run-workflow.ts noCalls); old runs read such a block as a unit that does not fit and fail at "cost limit reached" with nothing spent.',
  },
  'extension-awaited': {
    since: '0.1.0',
    stage: 'patched',
    change:
      'D17: a hold extension (`extendRunHold`) runs in a non-cancellable scope, so a run cancelled, timed out or failed while one is in flight waits for its answer and gives its hold back at its end; old runs abandon it, and a hold the store booked after their end stays held until the hourly sweep finds the account quiet.',
  },
  'text-work-bound': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "The work of pure nodes in the workflow is bounded: the run's `text` nodes fill at most RUN_TEXT_MAX_LOOKUPS placeholders from RUN_TEXT_MAX_TEMPLATE_CHARS of templates in all, and an inline `join` whose text would pass 1 MiB fails in place, each asked only when past its bound (workflows/engine.ts textFiller, domain/join-items.ts); old runs fill and join whatever it costs (a graph of 6 KB spent over 5 s in one workflow task, and the SDK's deadlock detector then aborted the whole worker).",
  },
  'run-items-bound': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D31: what one run makes and holds in its workflow is bounded in all (domain/run-size.ts): its batch nodes split at most RUN_BATCH_TEXT_MAX_CHARS of text into at most RUN_INLINE_MAX_ROWS rows (past either the batch fails), its results hold at most RUN_INLINE_MAX_OUTPUT_ITEMS items itself and RUN_MAX_OUTPUT_ITEMS in all (past either the result fails), and an item past RUN_INLINE_MAX_OUTPUT_BYTES of the output it holds fails in place (`output_too_large`); each asked only past its bound. Old runs make and hold whatever the graph asks (a text of 300,000 lines fed to a batch and a result aborted the whole worker; one 1 MB input fed to 499 results passed Temporal's 50 MB of history).",
  },
  'inline-reads-bound': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D31: the items of inline lists the run's nodes read in its workflow are bounded in all (domain/run-size.ts RUN_INLINE_MAX_READS; select and user_result do not count): past it the node fails before it reads, asked only then (workflows/engine.ts). Old runs read whatever the graph asks (one 100,000-row list fed to 495 batch nodes aborted the whole worker).",
  },
  'run-blocks-bound': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D31: the blocks a run's big nodes run are bounded in all (RUN_MAX_BLOCKS, about what HISTORY_EVENTS_LIMIT holds): a node that would pass it fails before its blocks are planned, asked only then (workflows/run-workflow.ts runStoredRows). Old runs plan every block (50 text nodes reading a stored list of 900,000 rows planned 45,000 blocks in one workflow task of 4.9 s, and then failed at the history's event limit).",
  },
  'call-input-bound': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "A node call's input is bounded (domain/run-size.ts MAX_CALL_INPUT_BYTES): a node whose call would take more fails before it is scheduled, asked only then (workflows/run-workflow.ts runChunkRows). Old runs schedule it, and Temporal refuses an input over 2 MB by failing the workflow task and terminating the run (four edges of one 600 KB input into an `http_request`).",
  },
  'kept-items-at-rows': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D8, D38: a run that ends with rows unfinished (failed, cancelled) keeps each finished item at its place among the result's items, its `item_index` as its live pages showed it, and its record says so (`items_at_rows`, which a re-run's carry-over requires of a parent that did not complete); asked only when a result has an unfinished row (workflows/run-state.ts final). Old runs number their kept items from 0, so an item's index was not its row, and a re-run of failed items carried finished answers into other rows and never ran the failed one.",
  },
  'rerun-list-rows': {
    since: '0.1.0',
    stage: 'patched',
    change:
      'D38: a re-run carries no items of an `llm` of `output: "list"` from its parent\'s output (each row gives several items, so an item\'s index is no row): such a node runs again whole; asked only when one feeds a result of a re-run (workflows/carry-over.ts inlineFeeders). Old runs carried its items by index into the wrong rows: a failed row vanished and another was called and billed again.',
  },
  'failed-calls-counted': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D36: `usage.provider_calls` counts the calls that failed and were tried again or given up on: a row's `failed_calls`, a unit's `uncounted` (the failed calls of rows it left unfinished) and, when a node gives up, what its last chunk or block made that no answer counted (in the failure's details, or the last checkpoint of a timeout; activities/node-chunk.ts). Usage only, never cost. Asked only when there are such calls; old runs count the calls of the attempts that ended a row.",
  },
  'cost-cap-shrunk-blocks': {
    since: '0.1.0',
    stage: 'patched',
    change:
      "D36: a big node's block of a run with max_cost that the cap shrank to the rows that fit (`limit`) runs again for the rows it left once what it ran is counted (its answers, each counting all its stored rows, add only what is new: workflows/block-answers.ts), asking the cap again as any unit does (waiting while others are in flight); asked only when a block was shrunk. Old runs end at the cost limit after that block, far below it: a chain's first `llm` took the whole cap in its first block and the second never ran.",
  },
} as const satisfies Record<string, PatchEntry>;

export type PatchId = keyof typeof PATCHES;

/** `patched()` for a registered patch: true on new runs and on runs that took the new path before. */
export function isPatched(id: PatchId): boolean {
  return patched(id);
}

/** `deprecatePatch()` for a registered patch in its `deprecated` stage: the new path only, still marked. */
export function deprecated(id: PatchId): void {
  deprecatePatch(id);
}
