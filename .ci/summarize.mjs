// Prints CI's closing line "N passed, N failed" from cargo test's output and vitest's JSON report.
// Usage: node .ci/summarize.mjs <test.log> <vitest.json> <npm test exit status> <extra failures>
import { existsSync, readFileSync } from 'node:fs';

const [logPath, jsonPath, statusArg, extraArg] = process.argv.slice(2);
let passed = 0;
let failed = Number(extraArg ?? 0);

const log = existsSync(logPath) ? readFileSync(logPath, 'utf8') : '';
for (const m of log.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
  passed += Number(m[1]);
  failed += Number(m[2]);
}
if (existsSync(jsonPath)) {
  const report = JSON.parse(readFileSync(jsonPath, 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  // A suite that failed to load has no failed tests but must still fail CI.
  failed += report.testResults.filter((r) => r.status === 'failed' && r.assertionResults.length === 0).length;
}
// npm test failing outside any counted test (typecheck, build) still counts as a failure.
if (Number(statusArg) !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
