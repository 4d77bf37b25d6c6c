// Loaded (--import) into every test file's process by scripts/run-tests.mjs. In a file that scripts/test-stages.mjs
// classified as not using the test database, TEST_DATABASE_URL names a server that does not exist: if the file (or a
// process or worker it starts, which inherit the variable) opens a test database after all, it fails in every stage,
// so the classification cannot leave a database test out of CI's Postgres stage unnoticed.
import { resolve } from 'node:path';
import { NO_DATABASE_FILES_ENV, NO_DATABASE_URL } from './test-stages.mjs';

const list = process.env[NO_DATABASE_FILES_ENV];
if (list && process.argv[1]) {
  const file = resolve(process.argv[1]);
  if (list.split('\n').includes(file)) process.env.TEST_DATABASE_URL = NO_DATABASE_URL;
}
// The list stays in the environment: the runner's own process (scripts/test-main.mjs) passes it to the test files'.
