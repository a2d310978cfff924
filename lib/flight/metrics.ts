// Flight-domain metrics, created outside any registry: the pump (which decodes) exports them
// (lib/runtime/metrics.ts exportProcessMetrics). The unknown-tags counter is shared with the
// reference-data decoder (lib/requests/metrics.ts re-exports it).
import client from 'prom-client';
import type { DecodeNotes } from './decode.ts';

const { Counter } = client;

export const decodeUnknownTags = new Counter({
  registers: [],
  name: 'msgx_decode_unknown_tags_total',
  help: 'Tags the rule tables do not know',
  labelNames: ['type', 'styp', 'tag'] as const,
});

export const routePointsDropped = new Counter({ registers: [], name: 'msgx_flight_route_points_dropped_total', help: 'ROUT/ERUT points beyond the 4 kept locally' });

/** Count what the decoder noted (called once per decoded message). */
export function countDecodeNotes(type: string, styp: string, notes: DecodeNotes): void {
  for (const tag of notes.unknownTags) decodeUnknownTags.inc({ type, styp, tag });
  if (notes.droppedRoutePoints > 0) routePointsDropped.inc(notes.droppedRoutePoints);
}
