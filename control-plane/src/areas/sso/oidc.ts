// oidc-provider, loaded without its start-up "Unsupported runtime" warning: version 9 asks for a Node LTS named Jod
// (22) or later and says so on stderr at import, while it runs (and is tested here) on Node 20, the project's engine.
// Only that one line is dropped; every other warning of the library is printed as usual.
const UNSUPPORTED_RUNTIME = 'oidc-provider WARNING: Unsupported runtime.';

const warn = console.warn;
console.warn = (...args: unknown[]) => {
  if (typeof args[0] === 'string' && args[0].includes(UNSUPPORTED_RUNTIME)) return;
  warn(...args);
};
const oidc = await import('oidc-provider').finally(() => {
  console.warn = warn;
});

export const Provider = oidc.default;
export const errors = oidc.errors;
