// Flight-domain metrics on prom-client's default registry (get-or-create: the unknown-tags
// counter is shared with other decoders, e.g. lib/requests/metrics.ts).
import client from 'prom-client';
import type { DecodeNotes } from './decode.ts';

const { Counter, register } = client;

function getOrCreate<T>(name: string, make: () => T): T {
  return (register.getSingleMetric(name) as T | undefined) ?? make();
}

export const decodeUnknownTags = getOrCreate(
  'msgx_decode_unknown_tags_total',
  () => new Counter({ name: 'msgx_decode_unknown_tags_total', help: 'Tags the rule tables do not know', labelNames: ['type', 'styp', 'tag'] }),
) as client.Counter<'type' | 'styp' | 'tag'>;

export const routePointsDropped = getOrCreate(
  'msgx_flight_route_points_dropped_total',
  () => new Counter({ name: 'msgx_flight_route_points_dropped_total', help: 'ROUT/ERUT points beyond the 4 kept locally' }),
) as client.Counter;

/** Count what the decoder noted (called once per decoded message). */
export function countDecodeNotes(type: string, styp: string, notes: DecodeNotes): void {
  for (const tag of notes.unknownTags) decodeUnknownTags.inc({ type, styp, tag });
  if (notes.droppedRoutePoints > 0) routePointsDropped.inc(notes.droppedRoutePoints);
}
