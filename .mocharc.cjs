module.exports = {
  require: ['tsx/cjs', 'test/support/hooks.ts'],
  spec: ['test/**/*.test.ts'],
  extension: ['ts'],
  reporter: 'test/reporter.cjs',
  timeout: 60000,
  exit: true,
};
