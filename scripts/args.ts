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
