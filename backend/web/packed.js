// The stream's packed arrays off the page's main thread: base64 decoding, a delta's entries
// (u32 index + u8 value, little-endian) and the utilization window (the mean over the last N
// samples, as loom-console draws it). No DOM: packed_worker.js runs it in a Web Worker, state.js
// runs the same code inline where there is no worker, and tests/web/packed_test.mjs runs it in
// Node against a brute-force mean.
//
// The window works rack by rack and only over racks that report: a rack none of whose GPUs had
// a sample in the window and that has none now changes no sum and no mean (at 98k with 200 of
// 6,144 racks in service, 3,200 GPUs a tick instead of 98,304).

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

// What the worker (or state.js inline) does with one request; the answer is what the page
// applies. Requests, in the order the page sends them:
//   {op: 'layout', layoutEpoch, gpuRack, nRacks, samples}   a new hall: every array reset
//   {op: 'window', samples}                  a new window length: every mean back (meanAll)
//   {op: 'frame', topic, type, data|bytes, n, seq}   a stream frame; a snapshot comes decoded
//                                            (bytes: the page applied it already)
// Answers carry the layoutEpoch they were made for; a frame's: {seq, topic, idx, val} (a
// delta's entries) and for gpu.util with a window {meanIdx, meanVal} (the means that moved);
// `ms` is the work.
export class PackedDecoder {
    constructor() {
        this.win = null;
        this.layoutEpoch = 0;
    }

    handle(q) {
        const t0 = performance.now();
        const a = this.answer(q);
        if (a) a.ms = performance.now() - t0;
        return a;
    }

    answer(q) {
        if (q.op === 'layout') {
            this.layoutEpoch = q.layoutEpoch;
            this.gpuRack = q.gpuRack;
            this.nRacks = q.nRacks;
            this.win = new UtilWindow(q.gpuRack, q.nRacks, q.samples);
            if (q.now) this.win.setAll(q.now);
            return null;
        }
        if (!this.win) return null;  // no layout yet: the page sends none before one
        if (q.op === 'peek') {
            // What the worker holds, answered after every frame sent before (tests compare it
            // with the page's arrays).
            return { op: 'peek', layoutEpoch: this.layoutEpoch, id: q.id, samples: this.win.samples,
                     now: this.win.now.slice(), mean: this.win.mean.slice(), visited: this.win.visited };
        }
        if (q.op === 'window') {
            // The latest values carry over; the new window starts from them.
            const now = this.win.now;
            this.win = new UtilWindow(this.gpuRack, this.nRacks, q.samples);
            this.win.setAll(now);
            if (q.samples > 1) this.win.sample();
            return { op: 'window', layoutEpoch: this.layoutEpoch, samples: q.samples,
                     meanAll: q.samples > 1 ? this.win.mean.slice() : null };
        }
        const a = { op: 'frame', layoutEpoch: this.layoutEpoch, seq: q.seq, topic: q.topic, type: q.type };
        const util = q.topic === 'gpu.util';
        if (q.type === 'snapshot') {
            if (util) this.win.setAll(q.bytes);
        } else {
            const d = decodeDelta(decodeBase64(q.data || ''), q.n);
            a.idx = d.idx;
            a.val = d.val;
            if (util) this.win.setSome(d.idx, d.val);
        }
        if (util && this.win.samples > 1) {
            const k = this.win.sample();
            a.meanIdx = this.win.changedIdx.slice(0, k);
            a.meanVal = this.win.changedVal.slice(0, k);
            a.visited = this.win.visited;
        }
        return a;
    }
}

// The buffers of an answer, to transfer rather than copy.
export function transferables(a) {
    const out = [];
    for (const k of ['idx', 'val', 'meanIdx', 'meanVal', 'meanAll']) {
        const x = a && a[k];
        if (x && x.buffer && x.byteOffset === 0 && x.byteLength === x.buffer.byteLength) out.push(x.buffer);
    }
    return out;
}
