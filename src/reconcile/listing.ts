// The institute listing, indexed once so that classifying 100k mappings is one pass: by id, and by
// class name for what ids cannot settle (listings whose items carry no `_id`, same-named classes).
import type { InstituteListing, ListItem } from '../classroom/schemas.ts';
import type { ListName } from '../sync/resolve.ts';

export interface Listed {
  item: ListItem;
  list: ListName;
  /** Set once a mapping without an id match has taken this id-less item as its class. */
  claimed: boolean;
}

/** Visible lists first, so a name-only match prefers a class that is not hidden. */
const LISTS: ListName[] = ['classes', 'pendingClasses', 'hiddenClasses'];

/** Same rule as `findByName` in src/sync/resolve.ts: names compare after trimming. */
export const nameKey = (name: string) => name.trim();

export class ListingIndex {
  readonly byId = new Map<string, Listed>();
  private readonly idlessByName = new Map<string, Listed[]>();
  readonly all: Listed[] = [];
  itemsWithoutId = 0;

  constructor(listing: InstituteListing) {
    for (const list of LISTS) {
      for (const item of listing[list]) {
        const listed: Listed = { item, list, claimed: false };
        this.all.push(listed);
        if (typeof item._id === 'string' && item._id !== '') {
          this.byId.set(item._id, listed);
        } else {
          this.itemsWithoutId += 1;
          push(this.idlessByName, nameKey(item.name), listed);
        }
      }
    }
  }

  /** Takes one not-yet-claimed id-less item with this name (a mapped class found by name only). */
  claimByName(className: string): Listed | undefined {
    const found = this.idlessByName.get(nameKey(className))?.find((l) => !l.claimed);
    if (found) found.claimed = true;
    return found;
  }

  /**
   * Listed classes no mapping accounts for, by name: ids mapped to no batch, and id-less items no
   * mapping claimed. Call after every mapping has had its chance to claim.
   */
  unaccountedByName(mappedIds: ReadonlySet<string>): Map<string, Listed[]> {
    const result = new Map<string, Listed[]>();
    for (const listed of this.all) {
      const id = listed.item._id;
      const accounted = id ? mappedIds.has(id) : listed.claimed;
      if (!accounted) push(result, nameKey(listed.item.name), listed);
    }
    return result;
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const bucket = map.get(key);
  if (bucket) bucket.push(value);
  else map.set(key, [value]);
}
