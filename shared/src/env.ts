// Typed reading of environment variables for each package's config.ts: collects every problem, then fails once.
import { isIP } from 'node:net';

export type EnvSource = Record<string, string | undefined>;

export class EnvReader {
  readonly problems: string[] = [];
  constructor(private readonly env: EnvSource) {}

  string(key: string, fallback: string): string {
    const v = this.env[key];
    return v === undefined || v === '' ? fallback : v;
  }

  optional(key: string): string | undefined {
    const v = this.env[key];
    return v === undefined || v === '' ? undefined : v;
  }

  int(key: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
    const raw = this.env[key];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${key} must be an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return n;
  }

  list(key: string, fallback: string[]): string[] {
    const raw = this.env[key];
    if (raw === undefined || raw.trim() === '') return fallback;
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  }

  /** A comma-separated list of IPv4 (`family` 4) or IPv6 (6; no zone index) addresses. */
  ipList(key: string, family: 4 | 6, fallback: string[]): string[] {
    const ips = this.list(key, fallback);
    for (const ip of ips)
      if (isIP(ip) !== family || ip.includes('%'))
        this.problems.push(`${key} holds "${ip}", which is not an IPv${family} address`);
    return ips;
  }

  bool(key: string, fallback: boolean): boolean {
    const raw = this.env[key];
    if (raw === undefined || raw === '') return fallback;
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    this.problems.push(`${key} must be true or false, got "${raw}"`);
    return fallback;
  }

  /** Throws one error listing every problem found, or returns the frozen config. */
  done<T extends object>(config: T): Readonly<T> {
    if (this.problems.length > 0) {
      throw new Error(`invalid configuration:\n  ${this.problems.join('\n  ')}`);
    }
    return Object.freeze(config);
  }
}
