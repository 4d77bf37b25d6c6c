// Types of the geoip-country package (it ships none): only the lookup the rules API uses.
declare module 'geoip-country' {
  const geoip: { lookup(ip: string): { country: string } | null };
  export default geoip;
}
