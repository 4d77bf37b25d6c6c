// The webhook signature (spec Events): `sha256=` + hex HMAC-SHA256 of `<timestamp>.<raw body>`, keyed with the
// domain's signing secret.
import { createHmac } from 'node:crypto';

export const WEBHOOK_USER_AGENT = 'Service-Uptime-Webhook/1';

export function webhookSignature(secret: string, timestamp: number, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')}`;
}
