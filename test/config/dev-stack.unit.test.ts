/** config/dev-stack.ts: the ports and data directory `npm start` takes from the environment. */
import assert from 'node:assert/strict';
import path from 'node:path';
import { devPorts, loadDevStackConfig } from '../../config/dev-stack';

describe('dev stack configuration (config/dev-stack.ts)', () => {
  it('defaults to the documented ports and .data in the repository', () => {
    const c = loadDevStackConfig({}, '/repo');
    assert.equal(c.dataDir, path.resolve('/repo/.data'));
    assert.deepEqual(
      devPorts(c).map((p) => `${p.variable}=${p.port}`),
      ['TEMPORAL_PORT=7233', 'TEMPORAL_UI_PORT=8233', 'MONGO_PORT=27027', 'API_PORT=8080'],
    );
  });

  it('takes every port and the data directory from the environment', () => {
    const c = loadDevStackConfig(
      {
        API_PORT: '8090',
        TEMPORAL_PORT: '7243',
        TEMPORAL_UI_PORT: '8243',
        MONGO_PORT: '27037',
        DATA_DIR: '/tmp/b',
      },
      '/repo',
    );
    assert.equal(c.dataDir, '/tmp/b');
    assert.deepEqual(
      devPorts(c).map((p) => p.port),
      [7243, 8243, 27037, 8090],
    );
  });

  it('binds no server port of its own for a Temporal or MongoDB the caller names', () => {
    const c = loadDevStackConfig(
      { TEMPORAL_ADDRESS: 'temporal:7233', MONGODB_URI: 'mongodb://db/' },
      '/repo',
    );
    assert.deepEqual(
      devPorts(c).map((p) => p.variable),
      ['API_PORT'],
    );
  });

  it('refuses a port that is not a port, naming the variable', () => {
    assert.throws(() => loadDevStackConfig({ MONGO_PORT: '70000' }, '/repo'), /MONGO_PORT/);
    assert.throws(() => loadDevStackConfig({ TEMPORAL_PORT: 'abc' }, '/repo'), /TEMPORAL_PORT/);
  });
});
