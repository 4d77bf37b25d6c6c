// The 20 rules of the wrk benchmark's "20 rules" row (nginx is configured with the same in wrk-common.sh), shared by
// wrk-setup.ts and rules-request.bench.ts.
import type { Rule } from '@platform/shared/config';
import { rule } from '../../edge-node/src/testing/harness.js';

/** The same 20 rules nginx is configured with in wrk.sh; origin_route rules send to 127.0.0.1:originPort. */
export function twentyRules(originPort: number): Rule[] {
  const rules: Rule[] = [
    rule('header', { response_headers: [{ op: 'set', name: 'x-edge', value: '1' }] }),
    rule('drop', { ip_includes: ['198.51.100.0/24', '203.0.113.7'] }),
  ];
  for (let i = 1; i <= 6; i++) rules.push(rule('redirect', { path_includes: [`/r${i}/*`], target: `/new${i}/$1` }));
  for (let i = 1; i <= 4; i++) rules.push(rule('rewrite', { path_includes: [`/w${i}/*`], path: '/internal/$1' }));
  for (let i = 1; i <= 3; i++)
    rules.push(rule('origin_route', { path_includes: [`/a${i}/*`], address: '127.0.0.1', port: originPort }));
  for (let i = 1; i <= 3; i++) rules.push(rule('cache', { path_includes: [`/s${i}/*`], edge_ttl: 300 }));
  rules.push(rule('header', { path_includes: ['/h/*'], request_headers: [{ op: 'set', name: 'x-h', value: '1' }] }));
  rules.push(rule('drop', { path_includes: ['/admin/*'], status_code: 403 }));
  return rules;
}
