// Delivery of one message to one recipient by MX lookup (RFC 5321 §5.1): the destination domain's MX hosts in
// preference order (no MX: the domain itself; a null MX: refused), each host's addresses judged by the platform's
// address policy (no loopback, private, link-local… address unless ALLOWED_PRIVATE_NETWORKS lists it), then
// nodemailer's SMTP transport to the first address that answers. Shared by the mail node (forwarding) and the
// control plane (verification mail, sending).
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import nodemailer from 'nodemailer';
import type { AddressPolicy } from '@platform/shared/address-policy';

/** MX hosts tried per message, addresses tried per host: a domain with 1000 MX records costs no more than this. */
export const MAX_MX_HOSTS = 5;
export const MAX_ADDRESSES_PER_HOST = 2;

export interface DeliveryContext {
  resolver: Resolver;
  policy: AddressPolicy;
  /** 25 in production; the tests' sink listens elsewhere (MAIL_DELIVERY_PORT). */
  port: number;
  /** The name this server says in EHLO. */
  ehloName: string;
  timeoutMs: number;
}

export interface DkimSigning {
  domainName: string;
  keySelector: string;
  privateKey: string;
}

export type DeliveryResult =
  | { ok: true; response: string; host: string }
  | { ok: false; temporary: boolean; code: number; response: string; host: string };

/** A resolver over MAIL_RESOLVERS (host[:port] list), or the system's. */
export function mailResolver(servers: string[], timeoutMs = 5000): Resolver {
  const r = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) r.setServers(servers);
  return r;
}

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();

function dnsCode(err: unknown): string {
  return (err as { code?: string }).code ?? '';
}

/** The hosts to try for `domain`, in preference order; throws a permanent failure for a null MX or no such domain. */
export async function mxHosts(resolver: Resolver, domain: string): Promise<string[]> {
  try {
    const mx = await resolver.resolveMx(domain);
    if (mx.length === 1 && (mx[0]!.exchange === '' || mx[0]!.exchange === '.'))
      throw Object.assign(new Error(`${domain} accepts no mail (null MX)`), { permanent: true });
    return mx
      .sort((a, b) => a.priority - b.priority)
      .slice(0, MAX_MX_HOSTS)
      .map((m) => m.exchange.replace(/\.$/, ''));
  } catch (err) {
    const code = dnsCode(err);
    if ((err as { permanent?: boolean }).permanent) throw err;
    if (code === 'ENODATA') return [domain];
    if (code === 'ENOTFOUND')
      throw Object.assign(new Error(`${domain} does not exist (NXDOMAIN)`), { permanent: true });
    throw err;
  }
}

async function addressesOf(resolver: Resolver, host: string): Promise<string[]> {
  if (isIP(host)) return [host];
  const [v4, v6] = await Promise.all([
    resolver.resolve4(host).catch(() => [] as string[]),
    resolver.resolve6(host).catch(() => [] as string[]),
  ]);
  return [...v4, ...v6].slice(0, MAX_ADDRESSES_PER_HOST);
}

/** Delivers `raw` to `to` with the envelope sender `from`; the message is held in memory only. */
export async function deliver(
  ctx: DeliveryContext,
  message: { from: string; to: string; raw: Buffer; dkim?: DkimSigning | undefined },
): Promise<DeliveryResult> {
  const domain = domainOf(message.to);
  let hosts: string[];
  try {
    hosts = await mxHosts(ctx.resolver, domain);
  } catch (err) {
    const permanent = (err as { permanent?: boolean }).permanent === true;
    return {
      ok: false,
      temporary: !permanent,
      code: permanent ? 550 : 451,
      response: `MX lookup of ${domain}: ${(err as Error).message}`,
      host: '',
    };
  }
  let last: DeliveryResult = {
    ok: false,
    temporary: true,
    code: 451,
    response: `no MX host of ${domain} answered`,
    host: '',
  };
  let refused = 0;
  let tried = 0;
  for (const host of hosts) {
    const addresses = await addressesOf(ctx.resolver, host);
    for (const address of addresses) {
      if (ctx.policy.refusal(address, ctx.port)) {
        refused++;
        continue;
      }
      tried++;
      const transport = nodemailer.createTransport({
        host: address,
        port: ctx.port,
        name: ctx.ehloName,
        secure: false,
        connectionTimeout: ctx.timeoutMs,
        greetingTimeout: ctx.timeoutMs,
        socketTimeout: ctx.timeoutMs,
        // Opportunistic STARTTLS, as MTAs do between MX hosts: a self-signed certificate is still encryption.
        tls: { servername: isIP(host) ? undefined : host, rejectUnauthorized: false },
        ...(message.dkim ? { dkim: message.dkim } : {}),
      });
      try {
        const info = await transport.sendMail({
          envelope: { from: message.from, to: [message.to] },
          raw: message.raw,
        });
        return { ok: true, response: String(info.response ?? ''), host };
      } catch (err) {
        const e = err as { responseCode?: number; response?: string; message: string };
        if (typeof e.responseCode === 'number' && e.responseCode >= 400) {
          // An SMTP answer is the destination's decision: not retried on another host.
          return {
            ok: false,
            temporary: e.responseCode < 500,
            code: e.responseCode,
            response: (e.response ?? e.message).slice(0, 512),
            host,
          };
        }
        last = { ok: false, temporary: true, code: 451, response: `${host}: ${e.message}`.slice(0, 512), host };
      } finally {
        transport.close();
      }
    }
  }
  if (tried === 0 && refused > 0)
    return {
      ok: false,
      temporary: false,
      code: 550,
      response: `every MX address of ${domain} is an internal address the platform does not deliver to`,
      host: '',
    };
  return last;
}
