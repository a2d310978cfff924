import { corpusMessages } from './refdata-corpus.ts';
import { decodeEnvelope, payload } from '../../lib/sis/envelope.ts';
const msgs = corpusMessages();
console.log('total', msgs.length);
const struct = new Map<string, Set<string>>();
for (const m of msgs) {
  try {
    const e = decodeEnvelope(m.xml);
    if (['FLOP', 'SCHD'].includes(e.type)) continue;
    const p = payload(e);
    const recs = p.find((c) => c.tag === 'RECS')?.text;
    const records = p.filter((c) => c.tag !== 'RECS');
    const desc = records.map((r) => r.tag + '{' + r.children.map((c) => c.tag + (Object.keys(c.attrs).length ? '@' + Object.keys(c.attrs).join('@') : '') + (c.children.length ? '[' + c.children.map((x) => x.tag).join(',') + ']' : '')).join(' ') + '}');
    console.log(`${m.file}#${m.index} ${e.type}/${e.styp} RECS=${recs} n=${records.length} ${desc.join(' | ').slice(0, 600)}`);
  } catch (err) {
    console.log(`${m.file}#${m.index} ERR ${(err as Error).message}`);
  }
}
