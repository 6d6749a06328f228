// jest reporter used by .ci/run: writes the run's totals to $FLANNEL_TEST_SUMMARY as JSON.
const { writeFileSync } = require('node:fs');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const file = process.env.FLANNEL_TEST_SUMMARY;
    if (!file) return;
    writeFileSync(
      file,
      JSON.stringify({
        passed: results.numPassedTests,
        failed: results.numFailedTests + results.numRuntimeErrorTestSuites,
        skipped: results.numPendingTests + results.numTodoTests,
        suitesFailed: results.numFailedTestSuites,
      }),
    );
  }
}
module.exports = SummaryReporter;
