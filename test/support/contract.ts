// The Kafka contract of docs/asyncapi.yaml as ajv validators: every record a test reads can be
// checked against the payload schema of its topic (and its key against the key schema).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';

export const ASYNCAPI_FILE = path.resolve(import.meta.dirname, '../../docs/asyncapi.yaml');

export type AsyncApiDoc = Record<string, any>;

export function loadAsyncApi(): AsyncApiDoc {
  return parse(readFileSync(ASYNCAPI_FILE, 'utf8')) as AsyncApiDoc;
}

export interface Contract {
  doc: AsyncApiDoc;
  schema: (name: string) => ValidateFunction;
  /**
   * Errors of one record (empty = valid): value against the channel's messages (one must match),
   * key against that message's key schema, headers against its headers schema (state topic; a
   * message without one: no headers). A null value is a Kafka tombstone.
   */
  check: (channel: 'msg' | 'schd' | 'state', key: string | null, value: string | null, headers?: Record<string, string>) => string[];
}

export function contract(doc: AsyncApiDoc = loadAsyncApi()): Contract {
  // The document's schemas are JSON Schema draft-07 (AsyncAPI's default schema format); their
  // $refs (#/components/schemas/…) resolve inside the document, registered under one id.
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addSchema({ $id: 'asyncapi', components: doc.components }, 'asyncapi');
  const schema = (name: string) => ajv.getSchema(`asyncapi#/components/schemas/${name}`)!;
  const messageNames = (channel: string) => Object.values(doc.channels[channel].messages as Record<string, { $ref: string }>).map((m) => m.$ref.split('/').pop()!);
  const validators = new Map<string, { value: ValidateFunction; key: ValidateFunction; headers: ValidateFunction | null }>();
  for (const ch of ['msg', 'schd', 'state'])
    for (const m of messageNames(ch)) {
      const msg = doc.components.messages[m];
      validators.set(m, {
        value: ajv.compile({ $ref: `asyncapi${msg.payload.$ref}` }),
        key: ajv.compile(msg.bindings.kafka.key),
        headers: msg.headers ? ajv.compile({ $ref: `asyncapi${msg.headers.$ref}` }) : null,
      });
    }
  const check = (channel: 'msg' | 'schd' | 'state', key: string | null, value: string | null, headers: Record<string, string> = {}): string[] => {
    let parsed: unknown = null;
    if (value !== null) {
      try {
        parsed = JSON.parse(value);
      } catch (e) {
        return [`not JSON: ${(e as Error).message}`];
      }
      if (JSON.stringify(parsed) !== value) return ['not compact JSON (the one value style of every topic)'];
    }
    const problems: string[] = [];
    for (const m of messageNames(channel)) {
      const v = validators.get(m)!;
      if (!v.value(parsed)) {
        problems.push(`${m}: ${ajv.errorsText(v.value.errors)}`);
        continue;
      }
      if (!v.key(key)) return [`${m} key ${JSON.stringify(key)}: ${ajv.errorsText(v.key.errors)}`];
      if (v.headers ? !v.headers(headers) : Object.keys(headers).length > 0) return [`${m} headers ${JSON.stringify(headers)}: ${v.headers ? ajv.errorsText(v.headers.errors) : 'none allowed'}`];
      return [];
    }
    return problems;
  };
  return { doc, schema, check };
}
