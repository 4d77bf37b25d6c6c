// Judges a delegation: every answering resolver must see exactly one accepted nameserver set, in full, unmixed.

export interface Observation {
  resolver: string;
  values: string[];
  error?: string;
}

export interface NsJudgement {
  ok: boolean;
  nameservers: string[];
  matchedSet: number | null;
  error?: string;
}

const norm = (ns: string) => ns.trim().toLowerCase().replace(/\.$/, '');

/** Which accepted set `seen` equals, or why it does not (missing, mixed or foreign nameservers). */
export function matchNsSet(
  seen: string[],
  sets: readonly (readonly string[])[],
): { index: number | null; error?: string } {
  const have = [...new Set(seen.map(norm))].sort();
  if (have.length === 0) return { index: null, error: 'no NS records found for the domain' };
  for (let i = 0; i < sets.length; i++) {
    const want = [...new Set(sets[i].map(norm))].sort();
    if (want.length === have.length && want.every((ns, j) => ns === have[j])) return { index: i };
  }
  const touched = sets
    .map((set, i) => ({ i, hits: set.map(norm).filter((ns) => have.includes(ns)) }))
    .filter((s) => s.hits.length > 0);
  const ours = new Set(sets.flat().map(norm));
  const foreign = have.filter((ns) => !ours.has(ns));
  if (touched.length > 1)
    return { index: null, error: `nameservers mix accepted sets (${have.join(', ')}); use exactly one set` };
  if (touched.length === 1 && foreign.length === 0) {
    const missing = sets[touched[0].i].map(norm).filter((ns) => !have.includes(ns));
    return { index: null, error: `delegation is incomplete: missing ${missing.join(', ')}` };
  }
  if (touched.length === 1)
    return { index: null, error: `delegation also lists nameservers outside the set: ${foreign.join(', ')}` };
  return { index: null, error: `domain is delegated to ${have.join(', ')}, not to an accepted nameserver set` };
}

/** All resolvers that answered must agree on one matching set; none answering is a failure too. */
export function judgeDelegation(observations: Observation[], sets: readonly (readonly string[])[]): NsJudgement {
  const answered = observations.filter((o) => !o.error);
  if (answered.length === 0) {
    const why = observations.map((o) => `${o.resolver}: ${o.error ?? 'no answer'}`).join('; ');
    return {
      ok: false,
      nameservers: [],
      matchedSet: null,
      error: `no resolver answered for the NS records (${why || 'no resolvers configured'})`,
    };
  }
  const nameservers = [...new Set(answered.flatMap((o) => o.values.map(norm)))].sort();
  const results = answered.map((o) => matchNsSet(o.values, sets));
  const first = results[0];
  if (first.index !== null && results.every((r) => r.index === first.index))
    return { ok: true, nameservers, matchedSet: first.index };
  const failed = results.find((r) => r.index === null);
  if (failed) return { ok: false, nameservers, matchedSet: null, error: failed.error };
  return {
    ok: false,
    nameservers,
    matchedSet: null,
    error: 'resolvers disagree on the delegation; the change has not propagated yet',
  };
}
