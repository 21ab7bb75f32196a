// The stream's packed arrays in a Web Worker (packed.js): the page posts each data frame as it
// comes and gets back the entries to apply and the utilization means that moved, so that its
// main thread neither decodes nor keeps the window (a tick there is the recolour and the draw).
import { PackedDecoder, transferables } from './packed.js';

const decoder = new PackedDecoder();
self.onmessage = (ev) => {
    const a = decoder.handle(ev.data);
    if (a) self.postMessage(a, transferables(a));
};
