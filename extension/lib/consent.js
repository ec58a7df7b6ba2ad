// Prior consent: the owner allows a tab, for the origin it shows, from the
// popup; a restricted claim of that tab on exactly that origin is then
// granted at once, without the approval window (a reference client claims
// with a 10-second deadline and expects this). The lease is the same
// exact-origin lease an approval gives. Stop forgets every consent; a
// navigation to another origin, or closing the tab, forgets the tab's.
import { isHttp, originOf } from './gate.js';

export function createConsents() {
  const consents = new Map(); // tab ID -> origin
  return {
    // allow records consent for the tab's current HTTP(S) origin.
    allow(tab) {
      if (!isHttp(tab.url)) return false;
      consents.set(tab.id, originOf(tab.url));
      return true;
    },
    allows: (tabId, origin) => consents.get(tabId) === origin,
    origin: (tabId) => consents.get(tabId),
    // onUpdated forgets a tab's consent once it shows another origin.
    onUpdated(tabId, change) {
      if (change.url !== undefined && consents.has(tabId) && originOf(change.url) !== consents.get(tabId)) consents.delete(tabId);
    },
    onRemoved: (tabId) => consents.delete(tabId),
    clear: () => consents.clear(),
  };
}
