// The stream's packed arrays off the page's main thread: base64 decoding, a delta's entries
// (u32 index + u8 value, little-endian) and the utilization window (the mean over the last N
// samples, as loom-console draws it). No DOM: packed_worker.js runs it in a Web Worker, state.js
// runs the same code inline where there is no worker, and tests/web/packed_test.mjs runs it in
// Node against a brute-force mean.
//
// The window works rack by rack and only over racks that report: a rack none of whose GPUs had
// a sample in the window and that has none now changes no sum and no mean (at 98k with 200 of
// 6,144 racks in service, 3,200 GPUs a tick instead of 98,304).

import { paintSome, cutPatch } from './hall_paint.js';

export const kNoData = 255;

// base64 -> bytes: the browser's own decoder where it has one (Firefox 133, Chromium 140), else
// by hand (Node 20, older browsers).
export function decodeBase64(s) {
    if (Uint8Array.fromBase64) {
        try { return Uint8Array.fromBase64(s); } catch { return new Uint8Array(0); }
    }
    let bin;
    try { bin = atob(s); } catch { return new Uint8Array(0); }
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; ++i) out[i] = bin.charCodeAt(i);
    return out;
}

// A delta's entries below `n`: indices and values, in the order sent.
export function decodeDelta(bytes, n) {
    const count = Math.floor(bytes.length / 5);
    const idx = new Uint32Array(count), val = new Uint8Array(count);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let k = 0;
    for (let p = 0; p + 5 <= bytes.length; p += 5) {
        const i = dv.getUint32(p, true);
        if (i < n) { idx[k] = i; val[k] = bytes[p + 4]; ++k; }
    }
    return k === count ? { idx, val } : { idx: idx.subarray(0, k), val: val.subarray(0, k) };
}

// The utilization window over `samples` samples for a hall of `gpuRack.length` GPUs (gpuRack:
// GPU -> rack index, -1 for none). `now` is the latest sample of every GPU; sample() adds it to
// the window and says which means moved (changedIdx/changedVal, the first `count` entries).
export class UtilWindow {
    constructor(gpuRack, nRacks, samples) {
        const n = gpuRack.length;
        this.n = n;
        this.samples = Math.max(1, samples | 0);
        this.gpuRack = gpuRack;
        this.now = new Uint8Array(n).fill(kNoData);
        this.mean = new Uint8Array(n).fill(kNoData);
        this.sum = new Uint32Array(n);
        this.cnt = new Uint16Array(n);
        this.ring = [];         // the window's samples, each a copy of `now` (made once per slot)
        this.next = 0;
        this.fill = 0;
        this.tick = 0;          // samples taken
        // Each rack's GPUs as one range (a rack's GPUs are consecutive in the layout).
        this.rackStart = new Int32Array(nRacks).fill(-1);
        this.rackEnd = new Int32Array(nRacks);
        for (let g = 0; g < n; ++g) {
            const r = gpuRack[g];
            if (r < 0 || r >= nRacks) continue;
            if (this.rackStart[r] < 0) this.rackStart[r] = g;
            this.rackEnd[r] = g + 1;
        }
        this.lastLive = new Float64Array(nRacks).fill(-Infinity);  // the last sample with data
        this.marked = new Uint8Array(nRacks);  // a value <= 100 came since the last sample
        this.changedIdx = new Uint32Array(Math.min(n, 4096));
        this.changedVal = new Uint8Array(this.changedIdx.length);
        this.count = 0;
        this.visited = 0;       // GPUs the last sample went through (bench and tests)
    }

    // The latest values: a whole snapshot, or a delta's entries.
    setAll(bytes) {
        this.now.set(bytes.subarray(0, this.n));
        this.marked.fill(1);
    }

    setSome(idx, val) {
        const now = this.now, gpuRack = this.gpuRack, marked = this.marked;
        for (let k = 0; k < idx.length; ++k) {
            const i = idx[k], v = val[k];
            now[i] = v;
            if (v <= 100 && gpuRack[i] >= 0) marked[gpuRack[i]] = 1;
        }
    }

    // Adds `now` to the window (dropping the oldest sample once it is full): the GPUs whose
    // mean moved are the first `count` entries of changedIdx/changedVal.
    sample() {
        const n = this.n, now = this.now, sum = this.sum, cnt = this.cnt, mean = this.mean;
        let slot = this.ring[this.next];
        const full = this.fill === this.samples;
        if (!full) ++this.fill;
        const t = this.tick++;
        this.count = 0;
        this.visited = 0;
        for (let r = 0; r < this.rackStart.length; ++r) {
            const start = this.rackStart[r];
            // A sample with data still in the window (or leaving it now), or data now: else
            // every sum of this rack is 0 and every mean no-data, and stay so.
            if (start < 0 || (this.lastLive[r] < t - this.samples && !this.marked[r])) continue;
            this.marked[r] = 0;
            let live = false;
            for (let g = start, end = this.rackEnd[r]; g < end; ++g) {
                if (full && slot) {
                    const old = slot[g];
                    if (old <= 100) { sum[g] -= old; --cnt[g]; }
                }
                const v = now[g];
                if (v <= 100) { sum[g] += v; ++cnt[g]; live = true; }
                const c = cnt[g];
                const m = c === 0 ? kNoData : Math.floor((sum[g] + (c >> 1)) / c);
                if (m !== mean[g]) { mean[g] = m; this.moved(g, m); }
            }
            this.visited += this.rackEnd[r] - start;
            if (live) this.lastLive[r] = t;
        }
        // The slot keeps this sample for when it leaves the window: a copy of every GPU's value
        // (racks not visited are no-data in it, as in `now`).
        if (!slot) slot = this.ring[this.next] = new Uint8Array(n);
        slot.set(now);
        this.next = (this.next + 1) % this.samples;
        return this.count;
    }

    moved(g, m) {
        if (this.count === this.changedIdx.length) {
            const idx = new Uint32Array(Math.min(this.n, this.count * 2)), val = new Uint8Array(idx.length);
            idx.set(this.changedIdx);
            val.set(this.changedVal);
            this.changedIdx = idx;
            this.changedVal = val;
        }
        this.changedIdx[this.count] = g;
        this.changedVal[this.count] = m;
        ++this.count;
    }
}

// A stream frame's head as loomd writes it ({"type":"snapshot"|"delta","seq":N,"ts":N,"topic":"T",
// then the packed data): read without parsing the frame, so the page's main thread hands the text
// to the worker as it came (JSON.parse of a 98k frame is the worker's). null for anything else.
const kFrameHead = /^\{"type":"(snapshot|delta)","seq":(\d+),"ts":(\d+),"topic":"([a-z.]+)"/;
export function frameHead(text) {
    if (typeof text !== 'string' || text.charCodeAt(2) !== 116 /* t */) return null;
    const m = kFrameHead.exec(text.length > 160 ? text.slice(0, 160) : text);
    return m ? { type: m[1], seq: Number(m[2]), ts: Number(m[3]), topic: m[4] } : null;
}

// What the worker (or state.js inline) does with one request; the answer is what the page
// applies. Requests, in the order the page sends them:
//   {op: 'layout', layoutEpoch, gpuRack, nRacks, samples, arrays}   a new hall: every array
//                                            reset to the page's (arrays: topic -> copy)
//   {op: 'window', samples}                  a new window length: every mean back (meanAll)
//   {op: 'frame', topic, type, raw|data|bytes, n, seq, at}   a stream frame: its text as it
//                                            came (raw), or its data; a snapshot the page
//                                            applied already comes decoded (bytes)
//   {op: 'paint', epoch, W, gpuPixel, px, P}  the hall map's image and paint parameters
//                                            (hall_paint.js); P null: no map, paint nothing
//   {op: 'rack', rack, prov, reports}        a rack's new state: its colours
// Answers carry the layoutEpoch they were made for. A frame's: {seq, topic, now} (the topic's
// whole array after it, a copy for the page to keep), {idx, val} (a delta's entries), for
// gpu.util {samples} and with a window {mean, meanIdx, meanVal} (every mean; the ones that
// moved), for gpu.health {failed} (GPUs whose health is 1-3); with a map, {epoch, painted,
// patch: {x, y, w, h, data}} (the box of cells whose colour changed, RGBA words ready for
// putImageData). `ms` is the work, `at` the frame's arrival (the page's clock) passed back.
export class PackedDecoder {
    constructor() {
        this.win = null;
        this.layoutEpoch = 0;
        this.arrays = {};
        this.paint = null;
    }

    handle(q) {
        const t0 = performance.now();
        const a = this.answer(q);
        if (a) a.ms = performance.now() - t0;
        return a;
    }

    gpuArray(topic) {
        let a = this.arrays[topic];
        if (!a || a.length !== this.gpuRack.length) a = this.arrays[topic] = new Uint8Array(this.gpuRack.length).fill(kNoData);
        return a;
    }

    // The values the map draws for utilization: the window's means, or the latest samples.
    utilDrawn() { return this.win.samples > 1 ? this.win.mean : this.win.now; }

    // Repaints `count` GPUs (of `list`, or from `from` on) on the map's image; the patch of what
    // changed goes on answer `a`.
    repaint(a, list, from, count) {
        const P = this.paint;
        if (!P) return;
        a.epoch = P.epoch;
        a.painted = true;
        if (!count) return;
        const box = paintSome(this.px, this.W, this.gpuPixel, list, from, count, this.gpuArray('gpu.health'),
                              this.gpuArray('gpu.temp'), this.utilDrawn(), this.gpuRack, P, null);
        if (box) a.patch = cutPatch(this.px, this.W, box);
    }

    answer(q) {
        if (q.op === 'layout') {
            this.layoutEpoch = q.layoutEpoch;
            this.gpuRack = q.gpuRack;
            this.nRacks = q.nRacks;
            this.win = new UtilWindow(q.gpuRack, q.nRacks, q.samples);
            this.arrays = { ...(q.arrays || {}) };
            const now = q.now || this.arrays['gpu.util'];
            if (now) this.win.setAll(now);
            this.arrays['gpu.util'] = this.win.now;
            this.paint = null;  // the map sends its image for the new layout
            this.px = null;
            return null;
        }
        if (!this.win) return null;  // no layout yet: the page sends none before one
        if (q.op === 'peek') {
            // What the worker holds, answered after every frame sent before (tests compare it
            // with the page's arrays).
            return { op: 'peek', layoutEpoch: this.layoutEpoch, id: q.id, samples: this.win.samples,
                     now: this.win.now.slice(), mean: this.win.mean.slice(), visited: this.win.visited };
        }
        if (q.op === 'paint') {
            if (!q.P || !q.px || q.gpuPixel.length !== this.gpuRack.length) {
                this.paint = null;
                this.px = null;
                return null;
            }
            this.paint = q.P;
            this.px = q.px;
            this.W = q.W;
            this.gpuPixel = q.gpuPixel;
            // The page drew its image from the arrays it had; this thread's may be newer.
            const a = { op: 'paint', layoutEpoch: this.layoutEpoch };
            this.repaint(a, null, 0, this.gpuRack.length);
            return a;
        }
        if (q.op === 'rack') {
            const P = this.paint, r = q.rack;
            if (!P || !(r >= 0 && r < P.rackProv.length)) return null;
            P.rackProv[r] = q.prov;
            P.rackReports[r] = q.reports ? 1 : 0;
            const start = this.win.rackStart[r];
            const a = { op: 'rack', layoutEpoch: this.layoutEpoch };
            if (start >= 0) this.repaint(a, null, start, this.win.rackEnd[r] - start);
            return a;
        }
        if (q.op === 'window') {
            // The latest values carry over; the new window starts from them.
            const now = this.win.now;
            this.win = new UtilWindow(this.gpuRack, this.nRacks, q.samples);
            this.win.setAll(now);
            this.arrays['gpu.util'] = this.win.now;
            if (q.samples > 1) this.win.sample();
            const a = { op: 'window', layoutEpoch: this.layoutEpoch, samples: q.samples,
                        meanAll: q.samples > 1 ? this.win.mean.slice() : null };
            if (this.paint && this.paint.mode === 'util') this.repaint(a, null, 0, this.gpuRack.length);
            return a;
        }
        const topic = q.topic, a = { op: 'frame', layoutEpoch: this.layoutEpoch, seq: q.seq, topic, type: q.type, at: q.at };
        const util = topic === 'gpu.util', gpu = topic.startsWith('gpu.');
        let arr = util ? this.win.now : this.arrays[topic];
        if (!arr || arr.length !== q.n) arr = this.arrays[topic] = new Uint8Array(q.n).fill(kNoData);
        const data = q.raw !== undefined ? frameData(q.raw) : q.data || '';
        let changed;
        if (q.type === 'snapshot') {
            const bytes = q.bytes || decodeBase64(data);
            // The entries that moved: the cells to repaint (a snapshot replaces a whole array).
            const m = Math.min(arr.length, bytes.length);
            const moved = new Uint32Array(m);
            let k = 0;
            if (gpu) for (let i = 0; i < m; ++i) if (arr[i] !== bytes[i]) moved[k++] = i;
            changed = moved.subarray(0, k);
            if (util) this.win.setAll(bytes);
            else arr.set(bytes.subarray(0, arr.length));
        } else {
            const d = decodeDelta(decodeBase64(data), q.n);
            a.idx = d.idx;
            a.val = d.val;
            changed = d.idx;
            if (util) this.win.setSome(d.idx, d.val);
            else for (let k = 0; k < d.idx.length; ++k) arr[d.idx[k]] = d.val[k];
        }
        a.now = arr.slice();
        let drawn = null, count = 0;
        if (util) {
            a.samples = this.win.samples;
            if (this.win.samples > 1) {
                count = this.win.sample();
                a.meanIdx = this.win.changedIdx.slice(0, count);
                a.meanVal = this.win.changedVal.slice(0, count);
                a.visited = this.win.visited;
                a.mean = this.win.mean.slice();
                drawn = a.meanIdx;
            } else {
                drawn = changed;
                count = changed.length;
            }
            if (this.paint && this.paint.mode !== 'util') count = 0;
        } else if (topic === 'gpu.health') {
            drawn = changed;
            count = changed.length;
            if (count) a.failed = failedGpus(arr);
        } else if (topic === 'gpu.temp') {
            drawn = changed;
            count = this.paint && this.paint.mode === 'temp' ? changed.length : 0;
        }
        if (gpu) this.repaint(a, drawn, 0, count);
        return a;
    }
}

// A frame's packed data, from its text (the only field the decoder needs).
function frameData(raw) {
    try { return JSON.parse(raw).data || ''; } catch { return ''; }
}

// GPUs whose health byte is 1-3 (warning, failed, quarantined): the map's markers.
export function failedGpus(health) {
    const out = [];
    for (let i = 0; i < health.length; ++i) if (health[i] >= 1 && health[i] <= 3) out.push(i);
    return Int32Array.from(out);
}

// The buffers of an answer, to transfer rather than copy.
export function transferables(a) {
    const out = [];
    const xs = a ? ['idx', 'val', 'meanIdx', 'meanVal', 'meanAll', 'now', 'mean', 'failed'].map((k) => a[k]) : [];
    if (a && a.patch) xs.push(a.patch.data);
    for (const x of xs)
        if (x && x.buffer && x.byteOffset === 0 && x.byteLength === x.buffer.byteLength && !out.includes(x.buffer)) out.push(x.buffer);
    return out;
}
