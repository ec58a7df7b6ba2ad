// The service worker: the provider with the real chrome API. Connecting at
// start keeps the worker alive while the broker is reachable.
import { createExtension } from './lib/extension.js';

createExtension(chrome).start();
