// Pure matchers and canonicalisation shared by the rules API (validation on write) and the edge node (matching).
export * from './host.js';
export * from './path.js';
export * from './ip.js';
export * from './password.js';
export * from './validate-rule.js';
export * from './rule-types.js';
export * from './rule-body.js';
export * from './linear-regex.js';
export * from './wildcard.js';
export * from './normalise-path.js';
export * from './expression.js';
export * from './custom-rule.js';
export * from './waf-rules.js';
