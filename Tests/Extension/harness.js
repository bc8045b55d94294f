// The extension tests' harness (node, no packages): check(name, body) prints PASS/FAIL per
// check; finish(label) prints "label: N passed, N failed" (what scripts/test counts) and exits.
'use strict';

let passed = 0;
let failed = 0;

function check(name, body) {
  try {
    body();
    passed++;
    console.log(`PASS  ${name}`);
  } catch (error) {
    failed++;
    console.log(`FAIL  ${name}: ${error.message}`);
  }
}

function finish(label) {
  console.log(`${label}: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

module.exports = { check, finish };
