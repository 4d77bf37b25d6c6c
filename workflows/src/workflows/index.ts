// Every workflow the worker runs; the control plane starts them by these names.
export { watchDelegation } from './watch-delegation.js';
export { checkNameservers } from './check-nameservers.js';
export { awaitVerification } from './await-verification.js';
export { verifyDomain } from './verify-domain.js';
export { checkSslDelegation } from './check-ssl-delegation.js';
export { expireDeveloperMode, extendDeveloperModeSignal, stopDeveloperModeSignal } from './expire-developer-mode.js';
export { scanAndImportZone } from './scan-zone.js';
export { deliverUptimeWebhook } from '../uptime/deliver-webhook.js';
export { manageCertificates, issueCertificateSignal } from './manage-certificates.js';
export { uptimeIncident, resolveIncidentSignal } from '../uptime/incident.js';
export { subscriptionLifecycle, subscriptionChangedSignal } from './subscription-lifecycle.js';
export { rollDnssecKeys } from './roll-dnssec-keys.js';
export { retryHeldEmail } from './retry-held-email.js';
export { scanImportSession, lookupProxiedHostnames } from './import-scan.js';
export { savedQueryAlert, savedQueryChangedSignal } from './saved-query-alert.js';
