// Mocha's spec reporter plus, at the end, the slowest test files (hooks included: what the
// SECONDS table of tools/scripts/test-suite.ts is kept from), a line per failed test ("failed:
// <file> › <title>: <message, on one line>", which test-suite.ts repeats at the very end, where a
// CI log cut to its tail still shows them) and the plain closing line CI counts: "N passed, N failed".
const Mocha = require('mocha');

const SLOWEST = 15;

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const files = new Map(); // file → { started, ended } of its top-level suites
    const failed = []; // "file › title: message" of each failure, hooks' included
    runner.on(Mocha.Runner.constants.EVENT_TEST_FAIL, (test, err) => {
      const file = test.file ? require('node:path').relative(process.cwd(), test.file) : '?';
      const message = String(err?.message ?? err)
        .replace(/\s+/g, ' ')
        .trim()
        .slice(0, 240);
      failed.push(`${file} › ${test.fullTitle()}: ${message}`);
    });
    runner.on(Mocha.Runner.constants.EVENT_SUITE_BEGIN, (suite) => {
      if (!suite.file || !suite.parent?.root) return;
      const seen = files.get(suite.file);
      if (!seen) files.set(suite.file, { started: Date.now(), ended: Date.now() });
    });
    runner.on(Mocha.Runner.constants.EVENT_SUITE_END, (suite) => {
      const seen = suite.file && suite.parent?.root ? files.get(suite.file) : undefined;
      if (seen) seen.ended = Date.now();
    });
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const slowest = [...files]
        .map(([file, t]) => [
          require('node:path').relative(process.cwd(), file),
          t.ended - t.started,
        ])
        .sort((a, b) => b[1] - a[1])
        .slice(0, SLOWEST);
      if (slowest.length > 1) {
        process.stdout.write(`\nslowest files (s, hooks included):\n`);
        for (const [file, ms] of slowest)
          process.stdout.write(`${(ms / 1000).toFixed(1).padStart(7)} ${file}\n`);
      }
      if (failed.length > 0) process.stdout.write('\n');
      for (const line of failed) process.stdout.write(`failed: ${line}\n`);
      const { passes, failures } = runner.stats;
      process.stdout.write(`\n${passes} passed, ${failures} failed\n`);
    });
  }
}

module.exports = SpecWithTotals;
