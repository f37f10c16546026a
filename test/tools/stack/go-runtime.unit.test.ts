/** tools/stack/go-runtime.ts: the embedded Go servers get a tuned collector unless the operator chose one. */
import assert from 'node:assert/strict';
import { goServerEnv } from '../../../tools/stack/go-runtime';

describe('goServerEnv', function () {
  const saved = { GOGC: process.env.GOGC, GOMEMLIMIT: process.env.GOMEMLIMIT };
  afterEach(function () {
    for (const [name, value] of Object.entries(saved))
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  });

  it('sets GOGC=400 and a 2 GiB soft limit, keeps the rest of the environment and adds `extra`', function () {
    delete process.env.GOGC;
    delete process.env.GOMEMLIMIT;
    const env = goServerEnv({ DO_NOT_TRACK: '1' });
    assert.equal(env.GOGC, '400');
    assert.equal(env.GOMEMLIMIT, '2GiB');
    assert.equal(env.DO_NOT_TRACK, '1');
    assert.equal(env.PATH, process.env.PATH);
  });

  it("keeps an operator's own GOGC and GOMEMLIMIT", function () {
    process.env.GOGC = '150';
    process.env.GOMEMLIMIT = '512MiB';
    const env = goServerEnv();
    assert.equal(env.GOGC, '150');
    assert.equal(env.GOMEMLIMIT, '512MiB');
  });
});
