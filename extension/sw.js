// The service worker: the provider with the real chrome API. Connecting at
// start keeps the worker alive while the broker is reachable.
import { createExtension } from './lib/extension.js';
import { createSnug } from './lib/snug.js';

const ext = createExtension(chrome);
ext.start();
// Snug hosting: the runner tabs' own native port (provider kind "snug").
createSnug(chrome, { askOwner: ext.askOwner, identity: ext.identity }).start();
