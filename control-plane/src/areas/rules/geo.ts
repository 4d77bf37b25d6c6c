// Country of an origin address for origin_route rules, from the offline database shipped by the geoip-country package.
import { isIP } from 'node:net';
import geoip from 'geoip-country';

/**
 * ISO 3166-1 alpha-2 code of an IP address, or '' when the address is a host name (no DNS lookup at write time)
 * or the database has no entry (private and documentation ranges).
 */
export function countryOf(address: string): string {
  if (isIP(address) === 0) return '';
  return geoip.lookup(address)?.country ?? '';
}
