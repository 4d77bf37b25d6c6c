// The mail node: an SMTP server (smtp-server) that accepts mail for the enabled custom addresses (and catch-alls) of
// routed domains, evaluates SPF, DKIM and DMARC (mailauth), ARC-seals and DKIM-signs with the domain's key, rewrites
// the envelope sender (SRS) and forwards the message to its verified destination by MX lookup, during the SMTP
// transaction: the message is held in memory only (never on disk) and the sender gets the destination's answer
// (250, or 4xx so its MTA retries, or 5xx so its MTA bounces). The control plane decides routes, keys and daily
// limits (internal API, node token) and keeps the activity log (metadata only).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { authenticate } from 'mailauth';
import { openCertificateKey } from '@platform/shared/config';
import { ensureNodeToken, ensureSecret } from '@platform/shared/node-token';
import { AddressPolicy } from '@platform/shared/address-policy';
import { componentLogger } from '@platform/shared';
import { defaultCertificate } from '../../edge-node/src/tls/default-cert.js';
import type { MailNodeConfig } from './config.js';
import { deliver, mailResolver, type DeliveryContext, type DeliveryResult } from './deliver.js';
import { srsForward } from './srs.js';
import { sniCertificates } from './tls.js';
import type { HeldMessage, NodeActivity, RecipientRoute } from './contract.js';

export const log = componentLogger('mail-node');

/** Received headers beyond this: a mail loop (RFC 5321 §6.3), refused with 554. */
export const MAX_RECEIVED_HEADERS = 30;
/** The header block read for loop detection and the Message-ID: the first 256 KiB at most. */
const HEADER_SCAN_BYTES = 256 * 1024;

interface DkimKey {
  selector: string;
  privateKey: string;
  at: number;
}

type Route = RecipientRoute;
type Session = SMTPServerSession & { routes?: Route[] };

export interface MailNode {
  port: number;
  close(): Promise<void>;
  /** Messages currently held in memory (for the bench and tests). */
  inFlight(): number;
  /** SMTP connections open now. */
  connections(): number;
}

function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

export async function startMailNode(config: Readonly<MailNodeConfig>): Promise<MailNode> {
  const token = ensureNodeToken(config.dataDir, config.nodeToken);
  const srsSecret = ensureSecret(config.dataDir, 'srs-key', config.srsSecret);
  const resolver = mailResolver(config.resolvers);
  const policy = new AddressPolicy(config.allowedPrivateNetworks, [{ address: config.host, port: config.port }]);
  const ctx: DeliveryContext = {
    resolver,
    policy,
    port: config.deliveryPort,
    ehloName: config.ehloName,
    timeoutMs: config.deliveryTimeoutMs,
  };
  const routeCache = new Map<string, { route: Route; at: number }>();
  const dkimCache = new Map<string, DkimKey>();
  let held = 0;

  async function api<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${config.controlPlaneUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) throw new Error(`control plane ${method} ${path}: ${res.status} ${(await res.text()).slice(0, 200)}`);
    return (await res.json()) as T;
  }

  // STARTTLS: the recipient domain's certificate by SNI (tls.ts), else the default one below.
  const sni = sniCertificates({
    nodeToken: token,
    ttlMs: Math.max(config.lookupCacheMs, 60_000),
    onError: (err, servername) => log.warn({ err, servername }, 'certificate lookup failed: default certificate'),
    lookup: async (path) => {
      const res = await fetch(`${config.controlPlaneUrl}${path}`, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(5_000),
      });
      if (res.status === 404 || res.status === 400) return undefined;
      if (!res.ok) throw new Error(`control plane GET ${path}: ${res.status}`);
      return (await res.json()) as { domain: string; certificate_pem: string; private_key_sealed: string };
    },
  });

  async function routeOf(address: string, from: string): Promise<Route> {
    const key = address.toLowerCase();
    const hit = routeCache.get(key);
    if (hit && Date.now() - hit.at < config.lookupCacheMs) return hit.route;
    const route = await api<Route>('POST', '/internal/email/recipient', { address: key, from });
    if (config.lookupCacheMs > 0) {
      if (routeCache.size > 10_000) routeCache.clear();
      routeCache.set(key, { route, at: Date.now() });
    }
    return route;
  }

  async function dkimOf(domain: string): Promise<DkimKey | undefined> {
    const hit = dkimCache.get(domain);
    if (hit && Date.now() - hit.at < 300_000) return hit;
    try {
      const k = await api<{ selector: string; public_key: string; private_key_sealed: string }>(
        'GET',
        `/internal/email/dkim/${encodeURIComponent(domain)}`,
      );
      const privateKey = openCertificateKey(token, domain, k.public_key, Buffer.from(k.private_key_sealed, 'base64'));
      const key = { selector: k.selector, privateKey, at: Date.now() };
      if (dkimCache.size > 10_000) dkimCache.clear();
      dkimCache.set(domain, key);
      return key;
    } catch (err) {
      log.warn({ err, domain }, 'no DKIM key for the domain: forwarding unsigned');
      return undefined;
    }
  }

  // Activity entries go to the control plane in batches (at most 100, every 200 ms): one request per batch, not
  // per message. A batch that cannot be delivered is dropped (logged): the log never holds mail back.
  const pending: NodeActivity[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  function flush(): Promise<void> {
    flushTimer = undefined;
    const entries = pending.splice(0, 100);
    if (pending.length > 0) flushTimer = setTimeout(flush, 0);
    if (entries.length === 0) return Promise.resolve();
    return api('POST', '/internal/email/activity', { entries }).then(
      () => undefined,
      (err: unknown) => log.warn({ err, entries: entries.length }, 'could not record email activity'),
    );
  }
  function record(entry: NodeActivity): void {
    if (pending.length >= 10_000) return;
    pending.push(entry);
    flushTimer ??= setTimeout(flush, pending.length >= 100 ? 0 : 200);
  }

  const tls = defaultCertificate(join(config.dataDir, 'mail-tls'), {
    certFile: config.tlsCertFile,
    keyFile: config.tlsKeyFile,
  });

  async function forward(session: Session, raw: Buffer): Promise<{ code: number; message: string }> {
    const route = session.routes![0]!;
    const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const rcpt = session.envelope.rcptTo[0]!.address;
    const headerEnd = raw.subarray(0, HEADER_SCAN_BYTES).indexOf('\r\n\r\n');
    const head = raw
      .subarray(0, headerEnd < 0 ? Math.min(raw.length, HEADER_SCAN_BYTES) : headerEnd)
      .toString('latin1');
    const received = head.match(/^received:/gim)?.length ?? 0;
    const messageId = (/^message-id:\s*(.{1,300})$/im.exec(head)?.[1] ?? '').trim();
    const base = {
      domain: route.domain!,
      mail_from: mailFrom,
      rcpt_to: rcpt,
      destination: '',
      message_id: messageId,
      size: raw.length,
    };
    if (received > MAX_RECEIVED_HEADERS) {
      const reason = `mail loop: ${received} Received headers`;
      record({ ...base, spf: '', dkim: '', dmarc: '', action: 'refused', reason, smtp_response: '' });
      return { code: 554, message: `5.4.6 ${reason}` };
    }
    const key = route.action === 'forward' ? await dkimOf(route.domain!) : undefined;
    const auth = await authenticate(raw, {
      ip: session.remoteAddress,
      helo: session.hostNameAppearsAs,
      sender: mailFrom,
      mta: config.ehloName,
      disableBimi: true,
      resolver: (name: string, rr: string) => resolver.resolve(name, rr as 'TXT') as Promise<never>,
      ...(key ? { seal: { signingDomain: route.domain!, selector: key.selector, privateKey: key.privateKey } } : {}),
    });
    const spf = String((auth.spf && auth.spf.status?.result) || 'none');
    const dkim = String(auth.dkim?.results?.[0]?.status?.result ?? 'none');
    const dmarc = String((auth.dmarc && auth.dmarc.status?.result) || 'none');
    const verdicts = { ...base, spf, dkim, dmarc };
    if (
      dmarc === 'fail' &&
      route.dmarc_policy !== 'ignore' &&
      (auth.dmarc as { policy?: string })?.policy === 'reject'
    ) {
      const reason = 'DMARC failed and the sender domain asks to reject (p=reject)';
      record({ ...verdicts, action: 'refused', reason, smtp_response: '' });
      return { code: 550, message: `5.7.1 ${reason}` };
    }
    if (route.action === 'drop') {
      record({ ...verdicts, action: 'dropped', reason: route.reason, smtp_response: '' });
      return { code: 250, message: '2.0.0 accepted' };
    }
    const destination = route.destination!;
    const taken = await api<{ ok: boolean; limit: number }>('POST', '/internal/email/forwards/take', {
      domain: route.domain,
    });
    if (!taken.ok) {
      const reason = `daily forward limit reached (${taken.limit} a day, max_email_forwards_per_day)`;
      record({ ...verdicts, destination, action: 'deferred', reason, smtp_response: '' });
      return { code: 451, message: `4.7.1 ${reason}; try again later` };
    }
    const sealed = Buffer.concat([Buffer.from(String(auth.headers ?? '')), raw]);
    const envelopeFrom = srsForward(srsSecret, mailFrom, route.domain!);
    let result: DeliveryResult;
    try {
      result = await deliver(ctx, {
        from: envelopeFrom,
        to: destination,
        raw: sealed,
        dkim: key ? { domainName: route.domain!, keySelector: key.selector, privateKey: key.privateKey } : undefined,
      });
    } catch (err) {
      result = { ok: false, temporary: true, code: 451, response: (err as Error).message.slice(0, 300), host: '' };
    }
    const response = result.response.replace(/[\r\n]+/g, ' ').slice(0, 400);
    // A temporary failure: the control plane holds the message (sealed) and a workflow retries it; we accept it.
    // Not held (workflows off, too big, the domain's hold full, the control plane unreachable): 451 as before.
    if (!result.ok && result.temporary) {
      const held: HeldMessage = {
        domain: verdicts.domain,
        mail_from: verdicts.mail_from,
        envelope_from: envelopeFrom,
        rcpt_to: verdicts.rcpt_to,
        destination,
        message_id: verdicts.message_id,
        spf,
        dkim,
        dmarc,
        smtp_response: response,
        raw: sealed.toString('base64'),
      };
      const hold = await api<{ held: boolean }>('POST', '/internal/email/held', held).catch((err: unknown) => {
        log.warn({ err }, 'could not hold a deferred message: the sender retries');
        return { held: false };
      });
      if (hold.held) return { code: 250, message: '2.0.0 accepted; the destination deferred it, held for retry' };
    }
    if (!result.ok)
      await api('POST', '/internal/email/forwards/give-back', { domain: route.domain }).catch(() => undefined);
    if (result.ok) {
      record({ ...verdicts, destination, action: 'forwarded', reason: route.reason, smtp_response: response });
      return { code: 250, message: '2.0.0 forwarded' };
    }
    if (result.temporary) {
      record({
        ...verdicts,
        destination,
        action: 'deferred',
        reason: 'the destination answered with a temporary failure; the sender retries',
        smtp_response: response,
      });
      return { code: 451, message: `4.4.0 destination temporarily refused: ${response}`.slice(0, 480) };
    }
    record({
      ...verdicts,
      destination,
      action: 'bounced',
      reason: 'the destination refused the message; the sender’s MTA returns it',
      smtp_response: response,
    });
    return { code: 550, message: `5.0.0 destination refused: ${response}`.slice(0, 480) };
  }

  const server = new SMTPServer({
    name: config.ehloName,
    banner: 'email routing',
    size: config.maxMessageBytes,
    authOptional: true,
    disabledCommands: ['AUTH'],
    maxClients: config.maxConnections,
    socketTimeout: config.socketTimeoutMs,
    closeTimeout: 5000,
    logger: false,
    ...(tls
      ? { key: readFileSync(tls.keyFile), cert: readFileSync(tls.certFile), SNICallback: sni.callback }
      : { hideSTARTTLS: true }),
    onMailFrom(address, _session, callback) {
      if (address.address.length > 320) return callback(smtpError(553, '5.1.7 sender address too long'));
      callback();
    },
    onRcptTo(address, session: Session, callback) {
      if (session.envelope.rcptTo.length >= 1)
        return callback(smtpError(452, '4.5.3 one recipient per message: send the others in a new transaction'));
      if (address.address.length > 254) return callback(smtpError(550, '5.1.3 recipient address too long'));
      const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
      routeOf(address.address, from).then(
        (route) => {
          if (!route.accept)
            return callback(
              smtpError(route.code, `${route.code >= 500 ? '5.1.1' : '4.3.0'} <${address.address}>: ${route.reason}`),
            );
          session.routes = [route];
          callback();
        },
        (err: unknown) => {
          log.warn({ err }, 'recipient lookup failed');
          callback(smtpError(451, '4.3.0 temporary lookup failure; try again later'));
        },
      );
    },
    onData(stream: SMTPServerDataStream, session: Session, callback) {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= config.maxMessageBytes) chunks.push(chunk);
      });
      stream.on('end', () => {
        if (stream.sizeExceeded || size > config.maxMessageBytes) {
          chunks.length = 0;
          return callback(smtpError(552, `5.3.4 message larger than ${config.maxMessageBytes} bytes`));
        }
        const raw = Buffer.concat(chunks, size);
        chunks.length = 0;
        held++;
        forward(session, raw).then(
          ({ code, message }) => {
            held--;
            callback(code >= 400 ? smtpError(code, message) : null, message);
          },
          (err: unknown) => {
            held--;
            log.error({ err }, 'forwarding failed');
            callback(smtpError(451, '4.3.0 temporary failure; try again later'));
          },
        );
      });
    },
  });
  server.on('error', (err) => log.warn({ err }, 'smtp server error'));

  await new Promise<void>((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolvePromise();
    });
  });
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  policy.addOwn({ address: config.host, port });
  return {
    port,
    inFlight: () => held,
    connections: () => (server as unknown as { connections: Set<unknown> }).connections.size,
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      if (flushTimer) clearTimeout(flushTimer);
      while (pending.length > 0) await flush();
    },
  };
}
