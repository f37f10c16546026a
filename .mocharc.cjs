// Mocha adds file arguments to `spec` instead of replacing it: without this, `npx mocha one.test.ts` ran everything.
const filesGiven = process.argv.slice(2).some((arg) => /\.test\.ts$/.test(arg));

module.exports = {
  require: ['tsx/cjs', 'test/support/hooks.ts'],
  spec: filesGiven ? [] : ['test/**/*.test.ts'],
  extension: ['ts'],
  reporter: 'test/reporter.cjs',
  timeout: 60000,
  forbidOnly: true, // a left-over .only fails instead of quietly running one test
  forbidPending: true, // a skipped test fails (no .skip, no silent gaps such as a missing browser)
  exit: true,
};
