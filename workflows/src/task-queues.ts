// Task queue names; the control plane repeats DOMAIN_LIFECYCLE as a literal (it may not import this package at runtime).
export const DOMAIN_LIFECYCLE = 'domain-lifecycle';
