// Mocha's spec reporter plus the plain closing line CI counts: "N passed, N failed".
const Mocha = require('mocha');

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const { passes, failures } = runner.stats;
      process.stdout.write(`\n${passes} passed, ${failures} failed\n`);
    });
  }
}

module.exports = SpecWithTotals;
