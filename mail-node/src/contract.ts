// What the mail node and the control plane's /internal/email/… routes exchange (control-plane/src/areas/email).

/** Where mail to one recipient goes, as POST /internal/email/recipient answers. */
export interface RecipientRoute {
  accept: boolean;
  /** SMTP reply code for a refusal: 550 (no such address), 451 (try later). */
  code: number;
  reason: string;
  domain?: string;
  action?: 'forward' | 'drop';
  destination?: string;
  dmarc_policy?: 'honor' | 'ignore';
}

/** One activity entry the mail node reports (metadata only: never content). */
export interface NodeActivity {
  domain: string;
  mail_from: string;
  rcpt_to: string;
  destination: string;
  message_id: string;
  size: number;
  spf: string;
  dkim: string;
  dmarc: string;
  action: 'forwarded' | 'refused' | 'deferred' | 'bounced' | 'dropped';
  reason: string;
  smtp_response: string;
}

/**
 * A message the destination deferred (4xx), handed to the control plane to hold and retry (POST
 * /internal/email/held): the envelope as the retries use it (SRS sender), the verdicts for the activity log, and the
 * ARC-sealed message (base64; DKIM-signed again at each attempt). The control plane seals it before storing it.
 */
export interface HeldMessage {
  domain: string;
  mail_from: string;
  envelope_from: string;
  rcpt_to: string;
  destination: string;
  message_id: string;
  spf: string;
  dkim: string;
  dmarc: string;
  smtp_response: string;
  raw: string;
}
