// Replica lag: writes land on the "primary" (the store, and the ground truth) at once, while reads
// answer from a replica that catches up later (field notes, "Reads lag behind writes"). Each
// record carries the instants from which reads see it and its latest join link.
import type { StoredClass } from './store.ts';

/** Whether get-class, edit-class and the listing know the class at `now`. */
export const readable = (r: StoredClass, now: number): boolean => now >= r.readableFrom;

/** The record as a read at `now` sees it: a join link enabled too recently is still "" with no token config. */
export function replicaView(r: StoredClass, now: number): StoredClass {
  if (now >= r.linkReadableFrom || r.joinMagicLink === '') return r;
  return { ...r, joinMagicLink: '', magicJoinToken: undefined };
}
