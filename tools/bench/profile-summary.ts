/**
 * Summarises V8 CPU profiles (`--cpu-prof`): self time by function and by where the code lives
 * (our source folders, each node_modules package, Node internals, GC/idle).
 * Usage: tsx tools/bench/profile-summary.ts <file.cpuprofile | dir> [top=25]
 */
import fs from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node:internals';
  const m =
    /\/work\/[^/]+\/([^/]+)\//.exec(url) ??
    /file:\/\/.*?\/(api|store|workflows|activities|domain|worker|config|bench)\//.exec(url);
  return m ? `ours:${m[1]}` : url;
}

export function summarizeProfile(file: string, top = 25): string {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const totalUs = profile.endTime - profile.startTime;
  // Self time per node from samples and their deltas (more exact than hitCount × mean interval).
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++)
    selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0));
  const byFn = new Map<string, number>();
  const byArea = new Map<string, number>();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (!us) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const key =
      `${functionName || '(anonymous)'} ${url ? `${url.replace(/^file:\/\//, '').replace(/.*node_modules\//, '')}:${lineNumber + 1}` : ''}`.trim();
    byFn.set(key, (byFn.get(key) ?? 0) + us);
    const a = area(url, functionName);
    byArea.set(a, (byArea.get(a) ?? 0) + us);
  }
  const pct = (us: number) => `${((us / totalUs) * 100).toFixed(1)}%`;
  const lines = [
    `${path.basename(file)}: ${(totalUs / 1e6).toFixed(1)} s profiled`,
    '',
    'by area (self time):',
  ];
  for (const [a, us] of [...byArea].sort((x, y) => y[1] - x[1]).slice(0, 15))
    lines.push(`  ${pct(us).padStart(6)}  ${a}`);
  lines.push('', `top ${top} functions (self time):`);
  for (const [f, us] of [...byFn].sort((x, y) => y[1] - x[1]).slice(0, top))
    lines.push(`  ${pct(us).padStart(6)}  ${f}`);
  return lines.join('\n');
}

if (require.main === module) {
  const target = process.argv[2];
  if (!target) {
    console.error('usage: tsx tools/bench/profile-summary.ts <file.cpuprofile | dir> [top]');
    process.exit(2);
  }
  const top = Number(process.argv[3] ?? 25);
  const files = fs.statSync(target).isDirectory()
    ? fs
        .readdirSync(target)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => path.join(target, f))
    : [target];
  for (const f of files) console.log(`${summarizeProfile(f, top)}\n`);
}
