/**
 * The playground page: pick a workflow and version, fill the form its contract
 * describes (and the run's metadata, D37, and its cost cap and timeout, D36), stream a run with a
 * live event timeline, see its outputs and usage (D36), cancel, delete (D39) or re-run it (D38), reopen
 * recent runs, and copy the request as code. State lives in this module; rendering is plain DOM.
 */
import { api, apiKey, downloadCsv, ErrorAnswer } from './api';
import { byId, h, say } from './dom';
import { buildForm, type InputsForm, type InputsSchema } from './form';
import type { OutputItem, Run } from '../../clients/typescript';
import { isTerminal, type RunStatus, type StreamEvent } from '../../domain/run';
import { renderRun, type OutputPage, type ShownOutput } from './outputs';
import { followRun } from './sse';
import { curlSnippet, pythonSnippet, typescriptSnippet, type RunRequest } from './snippets';

interface Contract {
  workflow_id: string;
  slug: string;
  name: string | null;
  version: number;
  version_id: string;
  created_at: string;
  inputs: Array<{ key: string; label: string }>;
  outputs: Array<{ key: string; label: string }>;
  inputs_schema: InputsSchema;
}
interface List<T> {
  data: T[];
  has_more: boolean;
  last_id: string | null;
}

const el = {
  keyForm: byId<HTMLFormElement>('key-form'),
  key: byId<HTMLInputElement>('api-key'),
  forget: byId<HTMLButtonElement>('forget-key'),
  notice: byId('notice'),
  workflow: byId<HTMLSelectElement>('workflow'),
  version: byId<HTMLSelectElement>('version'),
  meta: byId('workflow-meta'),
  runForm: byId<HTMLFormElement>('run-form'),
  fields: byId('fields'),
  formError: byId('form-error'),
  run: byId<HTMLButtonElement>('run'),
  cancel: byId<HTMLButtonElement>('cancel'),
  deleteRun: byId<HTMLButtonElement>('delete'),
  rerunFailed: byId<HTMLButtonElement>('rerun-failed'),
  rerunAll: byId<HTMLButtonElement>('rerun-all'),
  metadata: byId<HTMLTextAreaElement>('metadata'),
  priority: byId<HTMLSelectElement>('priority'),
  metadataError: byId('metadata-error'),
  runMetadata: byId('run-metadata'),
  maxCost: byId<HTMLInputElement>('max-cost'),
  maxCostError: byId('max-cost-error'),
  timeoutSeconds: byId<HTMLInputElement>('timeout-seconds'),
  timeoutSecondsError: byId('timeout-seconds-error'),
  runUsage: byId('run-usage'),
  runStatus: byId('run-status'),
  runId: byId('run-id'),
  outputs: byId('outputs'),
  timeline: byId<HTMLOListElement>('timeline'),
  runs: byId<HTMLUListElement>('runs'),
  refreshRuns: byId<HTMLButtonElement>('refresh-runs'),
  codeTabs: byId('code-tabs'),
  code: byId('code'),
  copy: byId<HTMLButtonElement>('copy'),
  copied: byId('copied'),
};

const state = {
  workflows: [] as Contract[],
  contract: undefined as Contract | undefined,
  form: undefined as InputsForm | undefined,
  language: 'curl' as 'curl' | 'typescript' | 'python',
  /** The run on screen, and the controller that stops following it. */
  current: undefined as { id?: string; follow: AbortController; startedAt: number } | undefined,
};

// ---- key -------------------------------------------------------------------------------

el.key.value = apiKey.get();
el.keyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  apiKey.set(el.key.value.trim());
  void loadWorkflows();
});
el.forget.addEventListener('click', () => {
  apiKey.set('');
  el.key.value = '';
  // What the key showed goes with it: the run on screen stops being followed and leaves the page.
  state.current?.follow.abort();
  state.current = undefined;
  clearTimeline();
  el.outputs.replaceChildren();
  for (const text of [el.runId, el.runMetadata, el.runUsage]) say(text, '');
  setStatus('idle');
  state.workflows = [];
  el.workflow.replaceChildren();
  el.version.replaceChildren();
  el.fields.replaceChildren();
  el.runs.replaceChildren();
  say(el.notice, 'Enter an API key to begin. It is kept in this tab only (sessionStorage).');
});

/** Shows an error of a background load where the user will see it. */
function report(err: unknown): void {
  const message =
    err instanceof ErrorAnswer && err.status === 401
      ? 'The API key was refused: check it and press “Use key”.'
      : (err as Error).message;
  say(el.notice, message);
}

// ---- workflows and versions --------------------------------------------------------------

async function loadWorkflows(): Promise<void> {
  if (!apiKey.get())
    return say(
      el.notice,
      'Enter an API key to begin. It is kept in this tab only (sessionStorage).',
    );
  try {
    const all: Contract[] = [];
    let cursor = '';
    for (let page = 0; page < 10; page++) {
      const list = await api<List<Contract>>('GET', `/api/v1/workflows?limit=100${cursor}`);
      all.push(...list.data);
      if (!list.has_more || !list.last_id) break;
      cursor = `&starting_after=${list.last_id}`;
    }
    state.workflows = all;
    say(
      el.notice,
      all.length
        ? ''
        : 'This account has no published workflows yet: publish one with POST /api/v1/workflows (see docs/api.md).',
    );
    el.workflow.replaceChildren(
      ...all.map((w) =>
        h('option', { value: w.workflow_id }, w.name ? `${w.name} (${w.slug})` : w.slug),
      ),
    );
    const wanted = new URLSearchParams(location.hash.slice(1)).get('workflow');
    const chosen = all.find((w) => w.slug === wanted || w.workflow_id === wanted) ?? all[0];
    if (chosen) await chooseWorkflow(chosen.workflow_id);
    void loadRuns();
  } catch (err) {
    report(err);
  }
}

async function chooseWorkflow(workflowId: string, version?: number | string): Promise<void> {
  const latest = state.workflows.find((w) => w.workflow_id === workflowId);
  if (!latest) return;
  el.workflow.value = workflowId;
  el.version.replaceChildren(
    ...Array.from({ length: latest.version }, (_, i) => latest.version - i).map((v) =>
      h('option', { value: v }, v === latest.version ? `v${v} (latest)` : `v${v}`),
    ),
  );
  const contract =
    version === undefined || version === latest.version || version === latest.version_id
      ? latest
      : await api<Contract>(
          'GET',
          `/api/v1/workflows/${workflowId}?version=${encodeURIComponent(version)}`,
        );
  el.version.value = String(contract.version);
  showContract(contract);
}

function showContract(contract: Contract): void {
  state.contract = contract;
  history.replaceState(null, '', `#workflow=${encodeURIComponent(contract.slug)}`);
  say(
    el.meta,
    `${contract.inputs.length} input${contract.inputs.length === 1 ? '' : 's'} → ${contract.outputs.map((o) => o.label).join(', ') || 'no outputs'} · published ${new Date(contract.created_at).toLocaleString()}`,
  );
  state.form = buildForm(el.fields, contract.inputs_schema);
  say(el.formError, '');
  renderCode();
}

el.workflow.addEventListener('change', () => void chooseWorkflow(el.workflow.value).catch(report));
el.version.addEventListener(
  'change',
  () => void chooseWorkflow(el.workflow.value, Number(el.version.value)).catch(report),
);

// ---- code snippets ------------------------------------------------------------------------

/**
 * D37: the metadata field: absent when empty, else a JSON object (the server checks its keys and
 * values and answers `invalid_metadata` naming the one at fault).
 */
function readMetadata(): { metadata?: Record<string, string>; problem?: string } {
  const text = el.metadata.value.trim();
  if (text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: 'must be JSON, e.g. {"order_id": "ord_123"}' };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    return { problem: 'must be a JSON object of strings' };
  return { metadata: value as Record<string, string> };
}

function showMetadataProblem(problem: string | undefined): void {
  say(el.metadataError, problem ?? '');
  el.metadata.setAttribute('aria-invalid', problem ? 'true' : 'false');
}

/**
 * D36: the cost cap and timeout fields, absent when empty. The browser's number parsing is all we
 * check: the server refuses a bad value naming the field, shown beside it (showControlProblem).
 */
function readControls(): { max_cost?: number; timeout_seconds?: number } {
  const number = (input: HTMLInputElement) =>
    input.value.trim() === '' ? undefined : Number(input.value);
  const maxCost = number(el.maxCost);
  const timeout = number(el.timeoutSeconds);
  return {
    ...(maxCost !== undefined ? { max_cost: maxCost } : {}),
    ...(timeout !== undefined ? { timeout_seconds: timeout } : {}),
  };
}

/** D36: a refusal naming `max_cost` or `timeout_seconds`, beside its field; true when it was one. */
function showControlProblem(field: string | undefined, problem: string): boolean {
  const pairs = [
    ['max_cost', el.maxCost, el.maxCostError],
    ['timeout_seconds', el.timeoutSeconds, el.timeoutSecondsError],
  ] as const;
  let shown = false;
  for (const [name, input, error] of pairs) {
    const mine = name === field;
    say(error, mine ? problem : '');
    input.setAttribute('aria-invalid', mine ? 'true' : 'false');
    shown ||= mine;
  }
  return shown;
}

/** D36: what the run used, under its status: calls and tokens, then each node. */
function showRunUsage(run: Run): void {
  const usage = run.usage;
  if (!usage || Object.keys(usage.by_node).length === 0) return say(el.runUsage, '');
  const nodes = Object.entries(usage.by_node).map(
    ([id, n]) =>
      `${id}: ${n.provider_calls} calls, ${n.input_tokens}/${n.output_tokens} tokens, $${n.cost}, ${n.items_completed} done, ${n.items_failed} failed`,
  );
  say(
    el.runUsage,
    `Usage: ${usage.provider_calls} provider calls, ${usage.input_tokens} input / ${usage.output_tokens} output tokens · ${nodes.join(' · ')}`,
  );
}

/** The request the form describes now (problems left out: the snippet shows what is filled in). */
function currentRequest(): RunRequest | undefined {
  const contract = state.contract;
  if (!contract || !state.form) return undefined;
  const latest = state.workflows.find((w) => w.workflow_id === contract.workflow_id)?.version;
  const { metadata } = readMetadata();
  return {
    workflowId: contract.slug,
    version: contract.version === latest ? undefined : contract.version,
    inputs: state.form.read(false).inputs,
    ...(metadata ? { metadata } : {}),
    ...readControls(),
    // D36: sent only when not the default.
    ...(el.priority.value !== 'normal'
      ? { priority: el.priority.value as RunRequest['priority'] }
      : {}),
  };
}

function renderCode(): void {
  const request = currentRequest();
  const make = { curl: curlSnippet, typescript: typescriptSnippet, python: pythonSnippet }[
    state.language
  ];
  el.code.textContent = request ? make(location.origin, request) : '';
  for (const tab of el.codeTabs.querySelectorAll('button'))
    tab.setAttribute('aria-pressed', String(tab.dataset.language === state.language));
  say(el.copied, '');
}

el.codeTabs.addEventListener('click', (e) => {
  const language = (e.target as HTMLElement).closest('button')?.dataset.language;
  if (!language) return;
  state.language = language as typeof state.language;
  renderCode();
});
el.fields.addEventListener('input', () => renderCode());
el.metadata.addEventListener('input', () => {
  showMetadataProblem(undefined);
  renderCode();
});
el.fields.addEventListener('change', () => renderCode());
for (const input of [el.maxCost, el.timeoutSeconds])
  input.addEventListener('input', () => {
    showControlProblem(undefined, '');
    renderCode();
  });
el.priority.addEventListener('change', () => renderCode());
el.copy.addEventListener('click', async () => {
  renderCode();
  try {
    await navigator.clipboard.writeText(el.code.textContent ?? '');
    say(el.copied, 'Copied.');
  } catch {
    // No clipboard permission (an http:// origin other than localhost): select it for Ctrl+C instead.
    getSelection()?.selectAllChildren(el.code);
    say(el.copied, 'Selected: press Ctrl+C to copy.');
  }
});

// ---- running -------------------------------------------------------------------------------

function setStatus(status: string, detail = ''): void {
  el.runStatus.replaceChildren(
    h('span', { class: `badge ${status}` }, status),
    detail ? ` ${detail}` : '',
  );
  const live = status !== 'idle' && status !== 'deleted' && !isTerminal(status as RunStatus);
  el.cancel.disabled = !live || !state.current?.id;
  el.deleteRun.disabled = !state.current?.id || status === 'deleted';
  // D38: a finished run can be run again, whole or its failed items only.
  const ended = !!state.current?.id && isTerminal(status as RunStatus);
  el.rerunFailed.disabled = !ended;
  el.rerunAll.disabled = !ended;
  el.run.disabled = status === 'starting';
}

/**
 * The timeline shows the newest TIMELINE_MAX events: a big run streams two a row (D31), and a
 * page holding every one of a million rows' events stalls. What went before is counted, not shown.
 */
const TIMELINE_MAX = 500;
const timeline = { dropped: 0, scrollQueued: false };

function clearTimeline(): void {
  el.timeline.replaceChildren();
  timeline.dropped = 0;
}

function addEvent(text: string, kind = ''): void {
  const at = state.current
    ? ((performance.now() - state.current.startedAt) / 1000).toFixed(2)
    : '0.00';
  el.timeline.append(
    h(
      'li',
      { class: kind },
      h('span', { class: 't' }, `+${at}s`),
      h('span', { class: 'what' }, text),
    ),
  );
  if (el.timeline.childElementCount > TIMELINE_MAX + (timeline.dropped > 0 ? 1 : 0)) {
    if (timeline.dropped === 0) el.timeline.prepend(h('li', { class: 'note dropped' }));
    el.timeline.children[1].remove();
    timeline.dropped++;
    el.timeline.firstElementChild!.textContent = `${timeline.dropped} earlier events not shown`;
  }
  // One scroll a frame: setting it per event made the browser lay the list out for each.
  if (!timeline.scrollQueued) {
    timeline.scrollQueued = true;
    requestAnimationFrame(() => {
      timeline.scrollQueued = false;
      el.timeline.scrollTop = el.timeline.scrollHeight;
    });
  }
}

function describe(event: StreamEvent): [string, string] {
  switch (event.type) {
    case 'response.created':
      return [`created ${event.response.run_id}`, ''];
    case 'response.resumed':
      return [
        `attached after event ${event.sequence_number} (run ${event.response.status})`,
        'note',
      ];
    case 'response.output_item.added':
      return [`item ${event.output_index + 1} started`, ''];
    case 'response.output_item.done':
      return [`item ${event.output_index + 1} done`, 'good'];
    case 'response.completed':
      return ['completed', 'good'];
    case 'response.failed':
      return [`failed: ${event.response.error.message}`, 'bad'];
    case 'response.cancelled':
      return ['cancelled', 'bad'];
    default:
      return [(event as { type: string }).type, '']; // an event type newer than this page
  }
}

/** Items a page of an output shows, and each "Show more" adds. */
const PAGE_ITEMS = 50;

/** A page of the run's output `key` after `afterId` (D31). */
async function outputPage(runId: string, key: string, afterId?: string): Promise<OutputPage> {
  const query = new URLSearchParams({ limit: String(PAGE_ITEMS) });
  if (afterId) query.set('starting_after', afterId);
  const path = `/api/v1/runs/${encodeURIComponent(runId)}/outputs/${encodeURIComponent(key)}`;
  const page = await api<List<OutputItem>>('GET', `${path}?${query}`);
  return { items: page.data, hasMore: page.has_more };
}

/**
 * The first page of each output of the run's workflow version (its contract names them: the one
 * on screen, else the run's own, read for it). An output that cannot be read is left out.
 */
async function firstPages(run: Run): Promise<ShownOutput[]> {
  const versionId = run.published_workflow_version_id;
  let contract = state.contract?.version_id === versionId ? state.contract : undefined;
  if (!contract && run.published_workflow_id && versionId)
    contract = await api<Contract>(
      'GET',
      `/api/v1/workflows/${encodeURIComponent(run.published_workflow_id)}?version=${encodeURIComponent(versionId)}`,
    ).catch(() => undefined);
  const pages = await Promise.all(
    (contract?.outputs ?? []).map(async ({ key, label }) => {
      const page = await outputPage(run.id, key).catch(() => undefined);
      return page && { key, label, ...page };
    }),
  );
  return pages.filter((page) => page !== undefined);
}

/** Follows a run (a new one from `start`, or `runId`) on screen until it ends, then shows its record. */
async function follow(target: { start: RunRequest } | { runId: string }): Promise<void> {
  state.current?.follow.abort();
  const current = {
    id: 'runId' in target ? target.runId : undefined,
    follow: new AbortController(),
    startedAt: performance.now(),
  };
  state.current = current;
  clearTimeline();
  el.outputs.replaceChildren();
  say(el.runMetadata, '');
  say(el.runId, current.id ?? '');
  setStatus('runId' in target ? 'pending' : 'starting');
  try {
    const runId = await followRun({
      ...('runId' in target ? { runId: target.runId } : { start: { ...target.start } }),
      signal: current.follow.signal,
      onEvent(event) {
        const [text, kind] = describe(event);
        addEvent(text, kind);
        if (event.type === 'response.created') {
          current.id = event.response.run_id;
          say(el.runId, current.id!);
          void loadRuns();
        }
        const status =
          event.type === 'response.resumed'
            ? event.response.status
            : event.type.startsWith('response.output_item') || event.type === 'response.created'
              ? 'running'
              : event.type.slice('response.'.length);
        setStatus(status);
      },
      onReconnect(attempt, lastId) {
        addEvent(
          `connection lost: reconnecting (attempt ${attempt}, Last-Event-ID ${lastId ?? 'none'})`,
          'note',
        );
      },
    });
    // The terminal event (or a 204 on resume) comes as the run ends; its record may trail it
    // briefly. Read without its items: they come a page at a time below (a big run's are many).
    const read = () => api<Run>('GET', `/api/v1/runs/${runId}?include_output=false`);
    let run = await read();
    for (let i = 0; i < 30 && !isTerminal(run.status) && state.current === current; i++) {
      await new Promise((r) => setTimeout(r, 1_000));
      run = await read();
    }
    const outputs = await firstPages(run);
    if (state.current !== current) return;
    setStatus(run.status);
    showRunMetadata(run);
    showRunUsage(run);
    renderRun(el.outputs, run, outputs, {
      onCsv: (key) =>
        void downloadCsv(runId, key).catch((err: Error) =>
          addEvent(`the CSV file could not be saved: ${err.message}`, 'note'),
        ),
      more: (key, afterId) => outputPage(runId, key, afterId),
    });
    void loadRuns();
  } catch (err) {
    if (current.follow.signal.aborted) return;
    setStatus(current.id ? 'disconnected' : 'idle'); // the run itself may still go on: Recent runs can reattach it
    if (err instanceof ErrorAnswer && err.code === 'invalid_metadata')
      showMetadataProblem(err.message);
    else if (
      err instanceof ErrorAnswer &&
      showControlProblem(err.details[0]?.field, err.details[0]?.problem ?? err.message)
    ) {
      // shown beside its field
    } else if (err instanceof ErrorAnswer && err.details.length)
      state.form?.showProblems(
        new Map(
          err.details.map((d) => [d.field.replace(/^inputs\./, '').split(/[.[]/)[0], d.problem]),
        ),
      );
    say(el.formError, (err as Error).message);
  }
}

el.runForm.addEventListener('submit', (e) => {
  e.preventDefault();
  say(el.formError, '');
  const contract = state.contract;
  if (!contract || !state.form) return;
  const { problems } = state.form.read();
  const metadata = readMetadata();
  showMetadataProblem(metadata.problem);
  if (problems.size > 0 || metadata.problem) {
    say(el.formError, 'Fix the marked fields first.');
    (el.runForm.querySelector('[aria-invalid="true"]') as HTMLElement | null)?.focus();
    return;
  }
  void follow({ start: currentRequest()! });
});

el.cancel.addEventListener('click', async () => {
  const id = state.current?.id;
  if (!id) return;
  el.cancel.disabled = true;
  try {
    await api('POST', `/api/v1/runs/${id}/cancel`);
    addEvent('cancellation requested', 'note');
  } catch (err) {
    el.cancel.disabled = false;
    say(el.formError, (err as Error).message);
  }
});

/** D37: the run's metadata under its status, and D38 the run it re-runs (neither: hidden). */
function showRunMetadata(run: Run): void {
  const pairs = Object.entries(run.metadata ?? {});
  const lines = [
    pairs.length ? `Metadata: ${pairs.map(([k, v]) => `${k}=${v}`).join(' · ')}` : '',
    run.parent_run_id ? `Re-run of ${run.parent_run_id}` : '',
  ];
  say(el.runMetadata, lines.filter(Boolean).join(' — '));
}

/** D38: starts a re-run of the run on screen and follows it. */
async function rerun(items: 'failed' | 'all'): Promise<void> {
  const id = state.current?.id;
  if (!id) return;
  say(el.formError, '');
  el.rerunFailed.disabled = true;
  el.rerunAll.disabled = true;
  try {
    const started = await api<{ run_id: string }>('POST', `/api/v1/runs/${id}/rerun`, { items });
    await follow({ runId: started.run_id });
  } catch (err) {
    // Refused (nothing to re-run, no credit ...): the run on screen stays, and so do its buttons.
    el.rerunFailed.disabled = false;
    el.rerunAll.disabled = false;
    say(el.formError, (err as Error).message);
  }
}
el.rerunFailed.addEventListener('click', () => void rerun('failed'));
el.rerunAll.addEventListener('click', () => void rerun('all'));

el.deleteRun.addEventListener('click', async () => {
  const current = state.current;
  const id = current?.id;
  if (!current || !id) return;
  if (!confirm(`Delete run ${id}? Its inputs, outputs and files are removed for good.`)) return;
  el.deleteRun.disabled = true;
  try {
    await api('DELETE', `/api/v1/runs/${id}`);
    current.follow.abort();
    el.outputs.replaceChildren();
    say(el.runMetadata, '');
    say(el.runUsage, '');
    addEvent('deleted: every read of it is now 404', 'note');
    setStatus('deleted');
    void loadRuns();
  } catch (err) {
    el.deleteRun.disabled = false;
    say(el.formError, (err as Error).message);
  }
});

// ---- recent runs ----------------------------------------------------------------------------

async function loadRuns(): Promise<void> {
  try {
    const list = await api<List<Run>>('GET', '/api/v1/runs?limit=15');
    const names = new Map(state.workflows.map((w) => [w.workflow_id, w.slug]));
    el.runs.replaceChildren(
      ...list.data.map((run) => {
        const live = !isTerminal(run.status);
        const when = run.created_at ? new Date(run.created_at).toLocaleTimeString() : '';
        return h(
          'li',
          { class: run.id === state.current?.id ? 'current' : '' },
          h('span', { class: `badge ${run.status}` }, run.status),
          h(
            'span',
            { class: 'run-name' },
            names.get(run.published_workflow_id ?? '') ?? run.published_workflow_id ?? '—',
            h('span', { class: 'muted small' }, ` ${when}`),
          ),
          h(
            'button',
            {
              type: 'button',
              class: 'small',
              'aria-label': `${live ? 'Reattach to' : 'Open'} run ${run.id}`,
              onclick: () => void reopen(run),
            },
            live ? 'Reattach' : 'Open',
          ),
        );
      }),
    );
    if (list.data.length === 0) el.runs.append(h('li', { class: 'muted' }, 'No runs yet.'));
  } catch (err) {
    report(err);
  }
}

/** Shows a listed run: its workflow's version in the pickers, then its events and outputs. */
async function reopen(run: Run): Promise<void> {
  if (
    run.published_workflow_id &&
    state.workflows.some((w) => w.workflow_id === run.published_workflow_id)
  ) {
    await chooseWorkflow(
      run.published_workflow_id,
      run.published_workflow_version_id ?? undefined,
    ).catch(report);
  }
  await follow({ runId: run.id });
}

el.refreshRuns.addEventListener('click', () => void loadRuns());

setStatus('idle');
void loadWorkflows();
