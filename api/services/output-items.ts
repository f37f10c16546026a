/**
 * D31: one output of a run, a page at a time (the D23 list shape), for runs live or finished.
 * A finished big run is read chunk by chunk from its record; a live run answers from the workflow.
 */
import { isId } from '../../domain/ids';
import type { Collections } from '../../store/db';
import { chunksOf, findRunHead } from '../../store/runs';
import type { OutputItem } from '../../domain/run';
import { InvalidRequestError, NotFoundError } from '../../domain/errors';
import type { OutputItemList } from '../contract/response-schemas';
import type { RunGateway } from '../temporal/run-gateway';
import type { OutputItemsQuery } from '../contract/request-schemas';

/** What paging an output needs. */
export interface OutputItemsDeps {
  collections: Pick<Collections, 'runs' | 'runChunks'>;
  gateway: RunGateway;
}

/** A page of the caller's run's output `key`: 404 for an unknown run or key, 400 for a cursor that is not one of its items. */
export async function listOutputItems(
  deps: OutputItemsDeps,
  accountId: string,
  runId: string,
  key: string,
  query: OutputItemsQuery,
): Promise<OutputItemList> {
  const doc = isId('run', runId) ? await findRunHead(deps.collections, accountId, runId) : null;
  if (!doc) throw new NotFoundError(`No run \`${runId.slice(0, 64)}\`.`);
  const after = query.starting_after ?? null;

  if (!doc.finalized) {
    const live = await deps.gateway.outputPage(runId, key, after, query.limit);
    if (live && live.value === null) throw unknownOutput(key);
    if (live?.value?.unknown_cursor) throw unknownCursor(after!);
    return page(live?.value?.items ?? [], live?.value?.has_more ?? false);
  }

  // A run that did not complete has no output (D9); its keys are still its workflow's, but it has no items.
  const labels = doc.output ?? {};
  if (doc.status === 'completed' && !Object.hasOwn(labels, key)) throw unknownOutput(key);
  const items: OutputItem[] = [];
  let found = after === null;
  const take = (list: readonly OutputItem[]): boolean => {
    for (const item of list) {
      if (!found) found = item.id === after;
      else if (items.push(item) > query.limit) return true;
    }
    return false;
  };
  let full = take(ownItems(labels, key));
  for await (const chunk of chunksOf(deps.collections, doc)) {
    if (full) break;
    full = take(ownItems(chunk.output, key));
  }
  if (!found) throw unknownCursor(after!);
  return page(items.slice(0, query.limit), items.length > query.limit);
}

/** The items of output `key`, by own property only: `constructor` or `__proto__` is an unknown key, not Object's. */
function ownItems(
  output: Readonly<Record<string, readonly OutputItem[]>>,
  key: string,
): readonly OutputItem[] {
  return Object.hasOwn(output, key) ? output[key] : [];
}

function page(data: OutputItem[], hasMore: boolean): OutputItemList {
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  };
}

function unknownOutput(key: string): NotFoundError {
  return new NotFoundError(`The run has no output \`${key.slice(0, 64)}\`.`);
}

function unknownCursor(after: string): InvalidRequestError {
  return new InvalidRequestError(`\`starting_after\` ${after} is not an item of this output.`, {
    param: 'starting_after',
  });
}
