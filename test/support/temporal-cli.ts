/**
 * A workflow's history as an operator dumps it with the Temporal CLI (`temporal workflow show
 * --output json`), optionally decoded through the service's codec server (D32).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { temporalBinaryPath } from '../../tools/stack';

export interface CodecAccess {
  /** e.g. `http://127.0.0.1:8080/codec` */
  endpoint: string;
  token: string;
}

/** The history's JSON text (parse it with JSON.parse), exactly as the CLI prints it. */
export async function showHistory(
  address: string,
  workflowId: string,
  codec?: CodecAccess,
): Promise<string> {
  const args = [
    'workflow',
    'show',
    '--workflow-id',
    workflowId,
    '--address',
    address,
    '--output',
    'json',
    '--disable-config-file',
  ];
  // The token goes in the CLI's environment (TEMPORAL_CODEC_AUTH), not its argv, which every local
  // user can read (D32). The CLI reads it only with environment config on, so the environment is
  // ours alone: no TEMPORAL_* of the user's reaches it either way.
  if (codec) args.push('--codec-endpoint', codec.endpoint);
  else args.push('--disable-config-env');
  const env = codec
    ? {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TEMPORAL_CODEC_AUTH: `Bearer ${codec.token}`,
      }
    : undefined;
  const { stdout } = await promisify(execFile)(temporalBinaryPath(), args, {
    maxBuffer: 64 * 1024 * 1024,
    timeout: 60_000,
    env,
  });
  return stdout;
}

/**
 * Every string of a JSON document, and for each base64-looking one its decoded text too: a
 * payload the CLI prints as base64 must not hide plaintext from a search.
 */
export function allTexts(json: string): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      out.push(v);
      if (/^[A-Za-z0-9+/]+={0,2}$/.test(v) && v.length >= 8)
        out.push(Buffer.from(v, 'base64').toString('latin1'));
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(JSON.parse(json));
  return out;
}
