/**
 * Builds the inputs form from a contract's `inputs_schema` (D24: JSON Schema with an
 * `x-input-type` hint): text, number, boolean, enum choices, JSON, and file inputs that upload
 * through POST /api/v1/files (with progress) or take a file id or URL.
 */
import { h, say } from './dom';
import { upload, type UploadedFile } from './api';

interface PropertySchema {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  'x-input-type'?: string;
}

export interface InputsSchema {
  properties: Record<string, PropertySchema>;
  required?: string[];
}

/** A field's value, or a problem to show next to it; `undefined` leaves the input out. */
type Read = { value?: unknown; problem?: string };

export interface InputsForm {
  /** The `inputs` object, and the problems keyed by input (shown next to their fields when `show`). */
  read(show?: boolean): { inputs: Record<string, unknown>; problems: Map<string, string> };
  /** Shows server-side problems (`details[].field` is `inputs.<key>...`) next to their fields. */
  showProblems(problems: Map<string, string>): void;
}

const FILE_TYPES = new Set(['image', 'video', 'file']);
const ACCEPT: Record<string, string> = { image: 'image/*', video: 'video/*' };

/** Renders the fields into `container` (replacing what was there). */
export function buildForm(container: HTMLElement, schema: InputsSchema): InputsForm {
  container.replaceChildren();
  const readers = new Map<string, () => Read>();
  const errors = new Map<string, HTMLElement>();
  const required = new Set(schema.required ?? []);
  for (const [key, prop] of Object.entries(schema.properties)) {
    const field = buildField(key, prop, required.has(key));
    errors.set(key, field.error);
    readers.set(key, field.read);
    container.append(field.element);
  }

  const form: InputsForm = {
    read(show = true) {
      const inputs: Record<string, unknown> = {};
      const problems = new Map<string, string>();
      for (const [key, read] of readers) {
        const { value, problem } = read();
        if (problem) problems.set(key, problem);
        else if (value !== undefined) inputs[key] = value;
      }
      if (show) form.showProblems(problems);
      return { inputs, problems };
    },
    showProblems(problems) {
      for (const [key, el] of errors) {
        const problem = problems.get(key);
        el.textContent = problem ? `${schema.properties[key].title ?? key} ${problem}` : '';
        el.hidden = !problem;
        el.parentElement
          ?.querySelector('[aria-describedby]')
          ?.setAttribute('aria-invalid', problem ? 'true' : 'false');
      }
    },
  };
  return form;
}

/** The attributes every control of a field shares. */
type Common = { id: string; name: string; 'aria-describedby': string; required: boolean };
type Control = { control: HTMLElement; read: () => Read };

/** One input's field: label, hint, control and error line; its reader reports a missing required value. */
function buildField(
  key: string,
  prop: PropertySchema,
  required: boolean,
): { element: HTMLElement; error: HTMLElement; read: () => Read } {
  const id = `input-${key}`;
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const described = [prop.description ? hintId : '', errorId].filter(Boolean).join(' ');
  const error = h('p', { id: errorId, class: 'field-error', hidden: true });
  const kind = prop['x-input-type'] ?? (prop.enum ? 'enum' : (prop.type ?? 'json'));
  const label = h(
    'label',
    { for: id },
    prop.title ?? key,
    required ? h('span', { class: 'req', 'aria-hidden': 'true' }, ' *') : null,
  );
  const hint = prop.description ? h('p', { id: hintId, class: 'hint' }, prop.description) : null;
  const common: Common = { id, name: key, 'aria-describedby': described, required };
  const { control, read } = buildControl(kind, prop, common, label);
  return {
    element: h('div', { class: 'field' }, kind === 'boolean' ? null : label, hint, control, error),
    error,
    read: () => {
      const r = read();
      return r.value === undefined && !r.problem && required ? { problem: 'is required' } : r;
    },
  };
}

/** The control for the input's kind (a checkbox carries its label). */
function buildControl(
  kind: string,
  prop: PropertySchema,
  common: Common,
  label: HTMLElement,
): Control {
  if (prop.enum) return enumControl(prop.enum, prop.default, common);
  if (kind === 'boolean') return booleanControl(prop, common, label);
  if (kind === 'number') return numberControl(prop, common);
  if (kind === 'json') return jsonControl(prop, common);
  if (FILE_TYPES.has(kind)) return fileField(common.id, common, kind);
  return textControl(prop, common);
}

function enumControl(choices: unknown[], byDefault: unknown, common: Common): Control {
  const select = h(
    'select',
    common,
    ...(common.required ? [] : [h('option', { value: '' }, '—')]),
    ...choices.map((v, i) => h('option', { value: i, selected: v === byDefault }, String(v))),
  );
  return {
    control: select,
    read: () => (select.value === '' ? {} : { value: choices[Number(select.value)] }),
  };
}

function booleanControl(prop: PropertySchema, common: Common, label: HTMLElement): Control {
  const box = h('input', {
    ...common,
    type: 'checkbox',
    required: false,
    checked: prop.default === true,
  });
  return {
    control: h('div', { class: 'check' }, box, label),
    read: () => ({ value: box.checked }),
  };
}

function numberControl(prop: PropertySchema, common: Common): Control {
  const input = h('input', {
    ...common,
    type: 'number',
    step: 'any',
    inputmode: 'decimal',
    value: typeof prop.default === 'number' ? prop.default : undefined,
  });
  return {
    control: input,
    read: () =>
      input.value.trim() === ''
        ? {}
        : Number.isFinite(input.valueAsNumber)
          ? { value: input.valueAsNumber }
          : { problem: 'must be a number' },
  };
}

function jsonControl(prop: PropertySchema, common: Common): Control {
  const area = h(
    'textarea',
    {
      ...common,
      rows: 4,
      spellcheck: 'false',
      class: 'mono',
      placeholder: '{"any": "JSON value"}',
    },
    prop.default === undefined ? '' : JSON.stringify(prop.default, null, 2),
  );
  return {
    control: area,
    read: () => {
      if (area.value.trim() === '') return {};
      try {
        return { value: JSON.parse(area.value) };
      } catch (err) {
        return { problem: `is not valid JSON (${(err as Error).message})` };
      }
    },
  };
}

function textControl(prop: PropertySchema, common: Common): Control {
  const area = h(
    'textarea',
    { ...common, rows: 2 },
    typeof prop.default === 'string' ? prop.default : '',
  );
  return { control: area, read: () => (area.value === '' ? {} : { value: area.value }) };
}

/** A file picker that uploads at once (with a progress bar), or a file id / URL typed in. */
function fileField(id: string, common: Common, kind: string): Control {
  let uploaded: UploadedFile | undefined;
  let pending: { abort(): void } | undefined;
  const picker = h('input', { ...common, type: 'file', accept: ACCEPT[kind], class: 'file' });
  const progress = h('progress', {
    max: 1,
    value: 0,
    hidden: true,
    'aria-label': 'Upload progress',
  });
  const status = h('span', { class: 'upload-status', role: 'status' });
  const preview = h('div', { class: 'upload-preview' });
  const refId = `${id}-ref`;
  const ref = h('input', {
    id: refId,
    type: 'text',
    class: 'mono',
    placeholder: 'file_… or https://…',
    'aria-label': 'Or a file id or URL',
    autocomplete: 'off',
  });
  picker.addEventListener('change', () => {
    pending?.abort();
    uploaded = undefined;
    preview.replaceChildren();
    const file = picker.files?.[0];
    if (!file) return say(status, '');
    progress.hidden = false;
    progress.value = 0;
    say(status, `Uploading ${file.name}…`);
    const job = upload(file, (f) => (progress.value = f));
    pending = job;
    job.done.then(
      (f) => {
        if (pending !== job) return;
        pending = undefined;
        uploaded = f;
        progress.value = 1;
        progress.hidden = true;
        ref.value = f.id;
        say(status, `Uploaded ${f.name} (${f.mime_type}, ${formatBytes(f.size)})`);
        if (f.mime_type.startsWith('image/'))
          preview.replaceChildren(h('img', { src: f.url, alt: `Preview of ${f.name}` }));
      },
      (err: Error) => {
        if (pending !== job) return;
        pending = undefined;
        progress.hidden = true;
        say(status, err.message);
        status.classList.add('bad');
      },
    );
    status.classList.remove('bad');
  });
  const control = h(
    'div',
    { class: 'file-field' },
    picker,
    progress,
    status,
    preview,
    h('div', { class: 'or' }, h('label', { for: refId, class: 'small' }, 'or file id / URL'), ref),
  );
  const read = (): Read => {
    if (pending) return { problem: 'is still uploading' };
    const value = ref.value.trim() || uploaded?.id;
    return value ? { value } : {};
  };
  return { control, read };
}

function formatBytes(n: number): string {
  return n < 1024
    ? `${n} B`
    : n < 1024 ** 2
      ? `${(n / 1024).toFixed(1)} KB`
      : `${(n / 1024 ** 2).toFixed(1)} MB`;
}
