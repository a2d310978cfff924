// Fills Node's compile cache (the directory NODE_COMPILE_CACHE names) with every module of lib/
// and every entry of the Procfile, before scripts/start.ts starts the processes. A process whose
// TypeScript files are all in the cache never loads Node's type stripper (a WebAssembly module
// of ~17 MB resident that stays for the life of the process): docs/decisions.md "Footprint".
// The cache is keyed by the file's content and Node's version: a changed file is stripped again
// once, then cached. Run by scripts/start.ts; by hand: NODE_COMPILE_CACHE=dir node scripts/compile-cache.ts
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { flushCompileCache } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Worker-thread entries (they run on a parent port): imported here they stop at once (no parent port), after they were compiled. */
const THREAD_ENTRY = /\bparentPort\b/;

/** Every lib module (`threads`: only the worker-thread entries, or only the others). */
export function libModules(root = 'lib', threads = false): string[] {
  return (readdirSync(root, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((d) => d.isFile() && d.name.endsWith('.ts'))
    .map((d) => join(d.parentPath, d.name))
    .filter((f) => THREAD_ENTRY.test(readFileSync(f, 'utf8')) === threads)
    .sort();
}

/**
 * Warm the cache: lib's modules here, each entry file in a process of its own started with a
 * configuration it refuses at once (exit 2 before it connects anywhere), which loads its whole
 * static import graph first.
 */
export async function warmCompileCache(entries: string[]): Promise<void> {
  if (!process.env.NODE_COMPILE_CACHE) return;
  for (const f of libModules()) await import(pathToFileURL(f).href);
  // a worker-thread entry compiled now too: else the pump's first decode workers (one more for each
  // large body) load the type stripper to compile it (~17 MB and ~0.1 s each)
  for (const f of libModules('lib', true)) await import(pathToFileURL(f).href).catch(() => {});
  flushCompileCache();
  for (const entry of entries) spawnSync(process.execPath, [entry], { env: { ...process.env, MSGX_LOG_LEVEL: 'warm-the-compile-cache' }, stdio: 'ignore', timeout: 60_000 });
}

if (import.meta.main) {
  const { parseProcfile } = await import('./start.ts');
  await warmCompileCache(parseProcfile(readFileSync('Procfile', 'utf8')).map((e) => e.command.split(/\s+/).find((w) => w.endsWith('.ts'))!));
}
