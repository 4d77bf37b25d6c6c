// The one ownership check of host headers sent to origins (record host_header, origin_route host_header, origin_pool
// origins[].host_header): the name must be inside this domain or another active domain of the same owner, so a
// tenant cannot present another tenant's host name to a shared origin.
import { and, eq } from 'drizzle-orm';
import type { Db, Tx } from '../db/index.js';
import { domains } from '../db/schema.js';

export class HostHeaderOwnership {
  /** Names of the owner's active domains, read once per write when a name outside the domain is met. */
  private owned: string[] | undefined;

  constructor(
    private readonly db: Db | Tx,
    private readonly domain: { name: string; ownerId: number },
  ) {}

  /** Why `host` may not be sent to an origin by this domain, or undefined when it may. */
  async problem(host: string): Promise<string | undefined> {
    const name = host.toLowerCase().replace(/\.$/, '');
    const within = (zone: string) => name === zone || name.endsWith(`.${zone}`);
    if (within(this.domain.name)) return undefined;
    this.owned ??= (
      await this.db
        .select({ name: domains.name })
        .from(domains)
        .where(and(eq(domains.ownerId, this.domain.ownerId), eq(domains.state, 'active')))
    ).map((d) => d.name);
    if (this.owned.some(within)) return undefined;
    return `${host} is not inside this domain or another active domain of the same owner`;
  }
}
