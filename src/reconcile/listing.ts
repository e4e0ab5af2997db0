// The institute listing, indexed once so that classifying 100k mappings is one pass: by id, and by
// name for what ids cannot decide (listings whose items carry no `_id`, classes no batch maps to).
// Names are matched with the sync's own rule (src/sync/matching.ts): the index only finds the few
// listed names that could match, and `matchName` decides, so both always agree.
import type { InstituteListing, ListItem } from '../classroom/schemas.ts';
import { type NameMatch, type NameRules, comparable, listedKeys, matchName, skeleton } from '../sync/matching.ts';
import { LISTS, type ListName } from '../sync/resolve.ts';

export interface Listed {
  item: ListItem;
  list: ListName;
  /** Set once a mapping without an id match has taken this id-less item as its class. */
  claimed: boolean;
}

export interface NameHit {
  listed: Listed;
  match: NameMatch;
}

/** Listed classes by name, to answer "which of these could be named `name`?" without a full scan. */
export class NameIndex {
  private readonly byCut = new Map<string, Listed[]>();
  private readonly byLoose = new Map<string, Listed[]>();

  constructor(private readonly rules: NameRules) {}

  add(listed: Listed): void {
    const keys = listedKeys(listed.item.name);
    for (const key of keys.cut) push(this.byCut, key, listed);
    if (keys.loose) push(this.byLoose, keys.loose, listed);
  }

  /** Every indexed class whose name matches `name` (strongest match first), at most `accept` kinds. */
  candidates(name: string, accept: ReadonlySet<NameMatch> = ALL): NameHit[] {
    const seen = new Set<Listed>();
    const hits: NameHit[] = [];
    for (const listed of this.lookups(name)) {
      if (seen.has(listed)) continue;
      seen.add(listed);
      const match = matchName(name, listed.item.name, this.rules);
      if (match && accept.has(match)) hits.push({ listed, match });
    }
    return hits.sort((a, b) => RANK[a.match] - RANK[b.match]);
  }

  /** Everything a match could be filed under: the whole name, and each prefix long enough to be a cut. */
  private *lookups(name: string): Iterable<Listed> {
    const mine = comparable(name);
    yield* this.byCut.get(mine) ?? [];
    yield* prefixHits(this.byCut, mine);
    const loose = skeleton(name);
    yield* this.byLoose.get(loose) ?? [];
    yield* prefixHits(this.byLoose, loose);
  }
}

const ALL: ReadonlySet<NameMatch> = new Set(['same', 'cut', 'similar']);
export const STRONG: ReadonlySet<NameMatch> = new Set(['same', 'cut']);
export const SAME: ReadonlySet<NameMatch> = new Set(['same']);
const RANK: Record<NameMatch, number> = { same: 0, cut: 1, similar: 2 };

function* prefixHits(map: Map<string, Listed[]>, whole: string): Iterable<Listed> {
  for (let k = 1; k < whole.length; k++) yield* map.get(whole.slice(0, k)) ?? [];
}

export class ListingIndex {
  readonly byId = new Map<string, Listed>();
  private readonly idless: NameIndex;
  readonly all: Listed[] = [];
  itemsWithoutId = 0;

  constructor(
    listing: InstituteListing,
    private readonly rules: NameRules,
  ) {
    this.idless = new NameIndex(rules);
    // Visible lists first, so a name-only match prefers a class that is not hidden.
    for (const list of LISTS) {
      for (const item of listing[list]) {
        const listed: Listed = { item, list, claimed: false };
        this.all.push(listed);
        if (typeof item._id === 'string' && item._id !== '') {
          this.byId.set(item._id, listed);
        } else {
          this.itemsWithoutId += 1;
          this.idless.add(listed);
        }
      }
    }
  }

  /**
   * Takes one not-yet-claimed id-less item for a mapped class: by the name the remote kept when we
   * know it (exactly, after normalising), else by the name we sent (equal or a cut of it).
   */
  claimByName(sentName: string, keptName: string | null | undefined): Listed | undefined {
    const hits = keptName ? this.idless.candidates(keptName, SAME) : this.idless.candidates(sentName, STRONG);
    const found = hits.find((h) => !h.listed.claimed)?.listed;
    if (found) found.claimed = true;
    return found;
  }

  /**
   * Listed classes no mapping accounts for: ids mapped to no batch, and id-less items no mapping
   * claimed. Call after every mapping has had its chance to claim.
   */
  unaccounted(mappedIds: ReadonlySet<string>): { index: NameIndex; items: Listed[] } {
    const index = new NameIndex(this.rules);
    const items: Listed[] = [];
    for (const listed of this.all) {
      const id = listed.item._id;
      const accounted = id ? mappedIds.has(id) : listed.claimed;
      if (accounted) continue;
      index.add(listed);
      items.push(listed);
    }
    return { index, items };
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const bucket = map.get(key);
  if (bucket) bucket.push(value);
  else map.set(key, [value]);
}
