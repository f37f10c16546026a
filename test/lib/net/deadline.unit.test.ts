/** lib/net/deadline.ts: a call's time limit that a garbage collection cannot lose. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import v8 from 'node:v8';
import vm from 'node:vm';
import { deadline } from '../../../lib/net/deadline';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

describe('deadline', () => {
  it('aborts after its time with a TimeoutError, a garbage collection in between', async () => {
    const { signal } = deadline(150);
    gc(); // AbortSignal.any([AbortSignal.timeout(…)]) could lose its timer here (Node 20)
    await once(signal, 'abort');
    assert.equal((signal.reason as Error).name, 'TimeoutError');
  });

  it('aborts with another signal’s reason, at once when it is already aborted', async () => {
    const cancel = new AbortController();
    const { signal, done } = deadline(60_000, undefined, cancel.signal);
    cancel.abort(new Error('cancelled'));
    assert.equal(signal.aborted, true);
    assert.equal((signal.reason as Error).message, 'cancelled');
    done();
    const late = deadline(60_000, AbortSignal.abort(new Error('before')));
    assert.equal((late.signal.reason as Error).message, 'before');
    late.done();
  });

  it('done() ends the timer: the signal never aborts', async () => {
    const { signal, done } = deadline(20);
    done();
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(signal.aborted, false);
  });
});
