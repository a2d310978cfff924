// docs/asyncapi.yaml is a valid AsyncAPI 3.0 document, its FlightState schema is the rule table
// of lib/flight/rules.ts, its examples and the values lib/contract/kafka.ts builds satisfy it, and it
// rejects what the contract forbids. (Real records: test/integration/e2e-consumer.test.ts.)
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { msgDeleted, msgTombstone, msgUpsert, msgValue, schdRecord, stateRecord, traceHeaders } from '../../lib/contract/kafka.ts';
import { COLLECTIONS, SCALAR_KEYS, STATUS_KEYS } from '../../lib/flight/rules.ts';
import { contract, loadAsyncApi } from '../support/contract.ts';

const doc = loadAsyncApi();
const c = contract(doc);

describe('docs/asyncapi.yaml', () => {
  it('is valid against the official AsyncAPI 3.0.0 JSON Schema (@asyncapi/specs)', () => {
    const specs = createRequire(import.meta.url)('@asyncapi/specs') as { schemasWithoutId: Record<string, object> };
    // formats (uri, email) are not checked: the document uses none that matter
    const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false, logger: false });
    const validate = ajv.compile(specs.schemasWithoutId['3.0.0']);
    validate(doc);
    expect(validate.errors ?? []).toEqual([]);
    expect(doc.asyncapi).toBe('3.0.0');
    // and it does reject a broken document
    expect(validate({ ...doc, channels: { msg: { address: 42 } } })).toBe(false);
  });

  it('describes the three topics with their default names, keys and every value shape', () => {
    expect(doc.channels.msg.address).toBe('msgx.flight.msg');
    expect(doc.channels.schd.address).toBe('msgx.flight.schd');
    expect(doc.channels.state.address).toBe('msgx.flight.state');
    expect(Object.keys(doc.channels.state.messages)).toEqual(['state', 'tombstone']);
    expect(doc.channels.state.bindings.kafka.topicConfiguration['cleanup.policy']).toEqual(['compact']);
    expect(doc.components.messages.CurrentState.payload.$ref).toBe('#/components/schemas/FlightState'); // the GET /flights/:flid JSON
    expect(Object.keys(doc.channels.msg.messages)).toEqual(['upsert', 'tombstone']);
    expect(Object.keys(doc.channels.schd.messages)).toEqual(['batch']);
    expect(doc.components.messages.SchdBatch.bindings.kafka.key).toEqual({ type: 'string', const: 'schd' });
    expect(doc.components.messages.FlightUpsert.bindings.kafka.key.pattern).toBe(doc.components.schemas.Flid.pattern);
    expect(doc.components.messages.FlightTombstone.bindings.kafka.key.pattern).toBe(doc.components.schemas.Flid.pattern);
    for (const ch of ['msg', 'schd', 'state']) expect(doc.channels[ch].description).toMatch(/\*\*Ordering\*\*[\s\S]*\*\*Dedupe\*\*/);
  });

  it('FlightState lists exactly the keys of the rule table, in JSON order, with collection fields', () => {
    const props = doc.components.schemas.FlightState.properties;
    expect(Object.keys(props)).toEqual([
      'FLID',
      'STATE',
      'STATE_VERSION',
      'OPERATION_DAY',
      'UPDATED_AT',
      'LAST_MSG_ID',
      ...STATUS_KEYS,
      ...SCALAR_KEYS.map((s) => s.key),
      ...COLLECTIONS.map((col) => col.tag),
      'MAFL',
    ]);
    for (const col of COLLECTIONS) {
      if (col.raw) continue;
      const fields = Object.keys(props[col.tag].items.properties);
      expect({ [col.tag]: fields }).toEqual({ [col.tag]: [...(col.keyAttr ? [col.keyAttr] : []), ...col.fields.map((f) => f.name)] });
    }
    for (const s of SCALAR_KEYS.filter((k) => k.values)) expect(props[s.key].enum).toEqual(s.values);
  });

  it('every example in the document satisfies its message schema', () => {
    const examples = Object.entries(doc.components.messages as Record<string, { payload: { $ref: string }; headers?: { $ref: string }; examples: { payload: unknown; headers?: unknown }[] }>);
    expect(examples.length).toBe(5);
    for (const [name, m] of examples) {
      const v = c.schema(m.payload.$ref.split('/').pop()!);
      for (const ex of m.examples) expect({ name, ok: v(ex.payload), errors: v.errors ?? null }).toEqual({ name, ok: true, errors: null });
      if (!m.headers) continue;
      const h = c.schema(m.headers.$ref.split('/').pop()!);
      for (const ex of m.examples) expect({ name, ok: h(ex.headers), errors: h.errors ?? null }).toEqual({ name, ok: true, errors: null });
    }
  });

  it('values as lib/contract/kafka.ts builds them pass; what the contract forbids fails', () => {
    // the outbox adds EVENT_ID to the built payload on insert (lib/flight/store.ts insertMsgEvents)
    const at = '2026-12-01T08:00:03+08:00';
    const upsert = { ...msgUpsert({ flid: '15', stateVersion: 4, updatedAt: at, msgId: 7, type: 'FLOP', styp: 'STND', changed: ['STND'] }), EVENT_ID: 3 };
    const fdel = { ...msgDeleted({ flid: '15', stateVersion: 5, updatedAt: at, msgId: 8 }), EVENT_ID: 4 };
    const purge = { ...msgTombstone({ flid: '16', stateVersion: 9, updatedAt: at }), EVENT_ID: 5 };
    expect(upsert).toStrictEqual({ EVENT_ID: 3, FLID: '15', STATE_VERSION: 4, UPDATED_AT: at, OP: 'UPSERT', MSG_ID: 7, TYPE: 'FLOP', STYP: 'STND', CHANGED: ['STND'] });
    expect(fdel).toStrictEqual({ EVENT_ID: 4, FLID: '15', DELETED: true, STATE_VERSION: 5, UPDATED_AT: at, MSG_ID: 8 });
    expect(purge).toStrictEqual({ EVENT_ID: 5, FLID: '16', DELETED: true, STATE_VERSION: 9, UPDATED_AT: at, PURGED: true });
    for (const p of [upsert, fdel, purge]) expect(c.check('msg', p.FLID, msgValue(p))).toEqual([]);
    const state = { FLID: '15', STATE: 'ACTIVE', STATE_VERSION: 4, UPDATED_AT: '2026-12-01T08:00:03+08:00', CANCELLED: false, BOARDING: false, LAST_CALL: false, GTDT: [{ GTNO: 1, GATE: 'A1' }] };
    expect(c.check('schd', 'schd', schdRecord([JSON.stringify(state)]))).toEqual([]);
    const live = stateRecord({ flid: '15', eventId: 6, stateVersion: 4, state: JSON.stringify(state) });
    const gone = stateRecord({ flid: '15', eventId: 7, stateVersion: 5, state: null });
    expect(gone).toStrictEqual({ key: '15', value: null, headers: { EVENT_ID: '7', STATE_VERSION: '5' } });
    for (const r of [live, gone]) expect(c.check('state', r.key, r.value, r.headers)).toEqual([]);

    // Postgres jsonb text (the old msg style) is refused
    expect(c.check('msg', '15', JSON.stringify(upsert, null, 1))).toEqual(['not compact JSON (the one value style of every topic)']);
    expect(c.check('msg', 'x', msgValue(upsert))[0]).toMatch(/key "x"/);
    expect(c.check('msg', '15', msgValue({ ...upsert, EXTRA: 1 })).join()).toMatch(/additional properties/);
    expect(c.check('msg', '15', msgValue({ ...fdel, PURGED: true })).join()).toMatch(/FlightTombstone/); // both MSG_ID and PURGED
    expect(c.check('msg', '15', msgValue({ ...upsert, UPDATED_AT: '2026-12-01T00:00:03Z' }))).not.toEqual([]);
    expect(c.check('schd', 'schd', schdRecord([JSON.stringify({ ...state, STND: null })]))).not.toEqual([]); // cleared = absent, never null
    expect(c.check('schd', 'schd', schdRecord([JSON.stringify({ ...state, STATE: 'DELETED' })]))).not.toEqual([]);
    expect(c.check('schd', 'schd', schdRecord([JSON.stringify({ ...state, NOPE: 'x' })]))).not.toEqual([]);
    expect(c.check('schd', 'other', schdRecord([JSON.stringify(state)]))[0]).toMatch(/key "other"/);
    expect(c.check('state', live.key, live.value, {})[0]).toMatch(/headers/); // headers are part of the state contract
    expect(c.check('state', live.key, live.value, { ...live.headers, STATE_VERSION: 'four' })[0]).toMatch(/headers/);
    expect(c.check('state', gone.key, JSON.stringify({ ...state, STATE: 'DELETED' }), gone.headers)).not.toEqual([]); // deleted = null, never a DELETED state
    expect(c.check('msg', '15', msgValue(upsert), { EVENT_ID: '3' })[0]).toMatch(/headers/); // msg records carry trace headers only
    // the trace headers (tracing on) on every topic, as lib/contract/kafka.ts builds them
    const trace = traceHeaders('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 vendor=x');
    expect(trace).toEqual({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'vendor=x' });
    expect(c.check('msg', '15', msgValue(upsert), trace)).toEqual([]);
    expect(c.check('schd', 'schd', schdRecord([JSON.stringify(state)]), trace)).toEqual([]);
    expect(c.check('state', live.key, live.value, { ...live.headers, ...trace })).toEqual([]);
    expect(c.check('msg', '15', msgValue(upsert), { traceparent: 'not-a-trace' })[0]).toMatch(/headers/);
  });
});
