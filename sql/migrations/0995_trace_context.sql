-- Up Migration
-- A message's W3C trace context (docs/operations.md "Tracing"), travelling with the data so that
-- any process, after any restart, continues the message's trace: `traceparent`, then a space and
-- `tracestate` when there is one. NULL: tracing was off when the row was written.
--   proc_state: written by intake as it takes the message (the root span of its trace);
--   msg_event: the context of the message that made the row (msg: its MSG_ID; schd and state, one
--              row per flight: the message that made the flight's version, i.e. the latest one),
--              copied from proc_state by flight.write_batch while the pump's session traces.
ALTER TABLE proc_state ADD COLUMN trace_context text;
ALTER TABLE msg_event ADD COLUMN trace_context text;

-- Down Migration
ALTER TABLE msg_event DROP COLUMN trace_context;
ALTER TABLE proc_state DROP COLUMN trace_context;
