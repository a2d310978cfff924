// Tiny argument parser shared by the operator CLIs: positional message ids, --opt value, --flag.
export function parseOperatorArgs(argv: string[], valued: string[], flags: string[]) {
  const out = { ids: [] as number[], options: {} as Record<string, string>, flags: new Set<string>() };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (valued.includes(a)) {
      if (argv[i + 1] === undefined) throw new Error(`${a} needs a value`);
      out.options[a] = argv[++i];
    } else if (flags.includes(a)) out.flags.add(a);
    else if (/^\d+$/.test(a)) out.ids.push(Number(a));
    else throw new Error(`unknown argument ${a}`);
  }
  return out;
}

/** What an action answers: its result line, lines explaining what it left untouched (stderr), success. */
export interface CliOutcome {
  out: string;
  notes?: string[];
  ok?: boolean;
}

/**
 * The frame of every operator CLI: config and one Postgres connection, the action, one line of
 * result (plus, on stderr, why matched things were left), exit code 1 when the action did not do
 * what was asked (nothing done, or a named id left), 2 with the command's name on any error
 * (bad arguments included).
 */
export async function runOperatorCli(name: string, action: (db: import('../lib/db/postgres.ts').Db) => Promise<string | CliOutcome>): Promise<void> {
  const { loadConfig } = await import('../lib/core/config.ts');
  const { createDb, createPool } = await import('../lib/db/postgres.ts');
  const config = loadConfig();
  const pool = createPool(config.DATABASE_URL, { max: 1 });
  try {
    const r = await action(createDb(pool));
    const o: CliOutcome = typeof r === 'string' ? { out: r } : r;
    console.log(o.out);
    for (const n of o.notes ?? []) console.error(`${name}: ${n}`);
    if (o.ok === false) process.exitCode = 1;
  } catch (e) {
    console.error(`${name}: ${(e as Error).message}`);
    process.exitCode = 2;
  } finally {
    await pool.end();
  }
}

/** "replayed 2 event(s): 14 15" */
export const listed = (verb: string, what: string, ids: number[]) => `${verb} ${ids.length} ${what}${ids.length ? ': ' + ids.join(' ') : ''}`;

/** The selection of dispatch-replay / dispatch-skip: `<eventId…> | --flid FLID | --all [--target msg|schd]`. */
export function dispatchSelection(argv: string[]) {
  const a = parseOperatorArgs(argv, ['--flid', '--target'], ['--all']);
  return {
    eventIds: a.ids.length ? a.ids : undefined,
    flid: a.options['--flid'],
    all: a.flags.has('--all') || undefined,
    target: a.options['--target'] as 'msg' | 'schd' | undefined,
  };
}
