// `npm run test:unit`: the fast tier, no servers (no Temporal, no FerretDB, no browser), under a
// minute. Files named `*.unit.test.ts` anywhere under test/, plus the folders and files below,
// which test pure code. `npm test` (.mocharc.cjs) runs all of these too, with everything else.
const filesGiven = process.argv.slice(2).some((arg) => /\.test\.ts$/.test(arg)); // see .mocharc.cjs

module.exports = {
  require: ['tsx/cjs'],
  spec: [
    'test/**/*.unit.test.ts',
    'test/domain/**/*.test.ts',
    'test/lib/net/ssrf.test.ts',
    'test/api/middleware/error-handler.test.ts',
    'test/api/services/finished-run-cache.test.ts',
  ].filter(() => !filesGiven),
  extension: ['ts'],
  reporter: 'test/reporter.cjs',
  timeout: 10000,
  exit: true,
};
