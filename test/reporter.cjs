// Mocha's spec reporter plus, at the end, the slowest test files (hooks included: what the
// SECONDS table of tools/scripts/test-suite.ts is kept from) and the plain closing line CI
// counts: "N passed, N failed".
const Mocha = require('mocha');

const SLOWEST = 15;

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const files = new Map(); // file → { started, ended } of its top-level suites
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
      const { passes, failures } = runner.stats;
      process.stdout.write(`\n${passes} passed, ${failures} failed\n`);
    });
  }
}

module.exports = SpecWithTotals;
