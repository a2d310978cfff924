// startWorker refuses a dispatcher without a topic of the test's own: it would create and write the
// installation's default topic on the machine's broker (test/support/processes.ts).
import { describe, expect, it } from 'vitest';
import { startWorker } from '../../support/processes.ts';

describe('startWorker and the topics of a test', () => {
  it.each(['msg', 'schd', 'state'])('%s-dispatch without its topic is refused before anything starts', (target) => {
    expect(() => startWorker(`${target}-dispatch`, {})).toThrow(`startWorker: ${target}-dispatch needs a topic of the test's own (MSGX_KAFKA_${target.toUpperCase()}_TOPIC)`);
  });

  it("another target's topic (here by its spec key, msgx.kafka.msg-topic) does not count", () => {
    expect(() => startWorker('schd-dispatch', { 'msgx.kafka.msg-topic': 'x.msg' })).toThrow('MSGX_KAFKA_SCHD_TOPIC');
  });
});
