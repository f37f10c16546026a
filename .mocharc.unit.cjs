// `npm run test:unit`: the fast tier, every pure test and nothing else: the files named `*.unit.test.ts`
// under test/. Such a file needs no server (no Temporal, no FerretDB, no browser, no API process), so this
// config loads no stack hooks. `npm test` (.mocharc.cjs) runs these too, with everything else.
const filesGiven = process.argv.slice(2).some((arg) => /\.test\.ts$/.test(arg)); // see .mocharc.cjs

module.exports = {
  require: ['tsx/cjs'],
  spec: filesGiven ? [] : ['test/**/*.unit.test.ts'],
  extension: ['ts'],
  reporter: 'test/reporter.cjs',
  timeout: 10000,
  forbidOnly: true, // a left-over .only fails instead of quietly running one test
  forbidPending: true, // a skipped test fails: nothing is left out silently
  exit: true,
};
