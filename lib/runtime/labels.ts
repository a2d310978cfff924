// Metric label values and after-commit counts, without the metrics themselves: the handlers (and
// the pump's decode worker, which loads them to decode) name what to count here, and only the
// process that owns the metrics (lib/runtime/metrics.ts, prom-client) counts it. Pure.

/**
 * A label value taken from a message, bounded: the value when it is one of `known`, else
 * 'other'. A hostile sender must never be able to create metric series.
 */
export function boundedLabel(value: string, known: ReadonlySet<string>): string {
  return known.has(value) ? value : 'other';
}

/**
 * The `kind` label of a message's metrics, bounded by the kinds a handler registry knows
 * (`HandlerRegistry.knownKinds()`): 'TYPE/STYP' when it is one of them, 'TYPE/other' for
 * another STYP of a TYPE that has handlers, 'other' for any other TYPE.
 */
export function metricKind(type: string, styp: string, knownKinds: ReadonlySet<string>): string {
  const kind = styp ? `${type}/${styp}` : type;
  if (knownKinds.has(kind)) return kind;
  return knownKinds.has(`${type}/`) ? `${type}/other` : 'other';
}

/** Counts a handler leaves for after its business transaction committed (once per message, never per attempt). */
export interface AfterCommitCounts {
  /** msgx_decode_unknown_tags_total: unknown tags, labels already bounded (boundedLabel / metricKind). */
  unknownTags?: { type: string; styp: string; tag: string }[];
  /** msgx_flight_route_points_dropped_total: ROUT/ERUT points beyond those kept. */
  routePointsDropped?: number;
  /** msgx_requests_failed_total: requests answered by EROR, by kind (RQRD / RQFD). */
  requestsFailed?: { kind: string }[];
}
