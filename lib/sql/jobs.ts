// SQL of graphile-worker's job queue (wake-ups, queue reads). Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/requests/outbound.ts

/** Queues task $1 with payload {id: $2} (the `request` job of a new request, in its transaction). */
export const addRequestJob = pgStatement<[task: string, id: number]>('jobs.add_request_job', `select graphile_worker.add_job($1::text, json_build_object('id', $2::bigint))`);
