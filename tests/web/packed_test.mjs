// The dashboard's packed-array decoder (backend/web/packed.js, run by the page in a Web Worker)
// in Node: the utilization window against a brute-force mean over the same samples, through
// snapshots, deltas, racks coming into and going out of service; its work only over racks that
// report; a delta's entries as loomd packs them. Exit 0 ok, 1 a check failed.
//
// Usage: node packed_test.mjs --source REPO
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const source = argv.includes('--source') ? argv[argv.indexOf('--source') + 1] : path.resolve(here, '../..');
const { UtilWindow, PackedDecoder, decodeBase64, decodeDelta, kNoData } =
    await import(pathToFileURL(path.join(source, 'backend/web/packed.js')).href);

const failures = [];
function check(cond, what) {
    console.log((cond ? 'ok   ' : 'FAIL ') + what);
    if (!cond) failures.push(what);
}

// A small deterministic generator (the same run every time).
let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);

// loomd's delta: u32 index + u8 value, little-endian, base64.
function packDelta(entries) {
    const b = Buffer.alloc(entries.length * 5);
    entries.forEach(([i, v], k) => { b.writeUInt32LE(i, k * 5); b[k * 5 + 4] = v; });
    return b.toString('base64');
}

// The mean as loom-console computes it: over the window's samples that have data, rounded half up.
function bruteMean(history, n) {
    const m = new Uint8Array(n).fill(kNoData);
    for (let g = 0; g < n; ++g) {
        let s = 0, c = 0;
        for (const h of history) if (h[g] <= 100) { s += h[g]; ++c; }
        if (c) m[g] = Math.floor((s + (c >> 1)) / c);
    }
    return m;
}

// Entries of a delta.
{
    const d = decodeDelta(decodeBase64(packDelta([[3, 40], [70000, 255], [9, 0], [500, 7]])), 1000);
    check(Array.from(d.idx).join() === '3,9,500' && Array.from(d.val).join() === '40,0,7',
          `a delta's entries below n, in order: ${Array.from(d.idx)} = ${Array.from(d.val)}`);
    check(decodeBase64('not base64!').length === 0, 'bad base64 decodes to nothing');
}

// The window over a hall of 64 racks of 16 GPUs: racks come into service and go out, the
// window is 5 samples; every sample's means equal the brute force, and the moved list is
// exactly the GPUs whose mean differs from the previous sample's.
{
    const nRacks = 64, per = 16, n = nRacks * per, W = 5;
    const gpuRack = new Int32Array(n).map((_, g) => Math.floor(g / per));
    const win = new UtilWindow(gpuRack, nRacks, W);
    const now = new Uint8Array(n).fill(kNoData);
    const history = [];
    let prev = new Uint8Array(n).fill(kNoData), bad = 0, movedBad = 0, samples = 0, maxVisited = 0;
    const live = new Set([0, 1, 2]);
    for (let t = 0; t < 60; ++t) {
        if (t === 10) live.add(40);
        if (t === 20) live.delete(1);        // out of service: its GPUs say no data from now on
        if (t === 30) for (let r = 10; r < 20; ++r) live.add(r);
        if (t === 45) for (let r = 10; r < 20; ++r) live.delete(r);
        const entries = [];
        for (let g = 0; g < n; ++g) {
            const v = live.has(gpuRack[g]) ? (rand() < 0.7 ? Math.floor(rand() * 101) : now[g] === kNoData ? 50 : now[g]) : kNoData;
            if (v !== now[g]) { entries.push([g, v]); now[g] = v; }
        }
        if (t % 17 === 0) win.setAll(now);  // a snapshot now and then
        else {
            const d = decodeDelta(decodeBase64(packDelta(entries)), n);
            win.setSome(d.idx, d.val);
        }
        const k = win.sample();
        history.push(now.slice());
        if (history.length > W) history.shift();
        const want = bruteMean(history, n);
        for (let g = 0; g < n; ++g) if (win.mean[g] !== want[g]) ++bad;
        const moved = new Set(Array.from(win.changedIdx.subarray(0, k)));
        for (let g = 0; g < n; ++g) if ((want[g] !== prev[g]) !== moved.has(g)) ++movedBad;
        prev = want;
        ++samples;
        if (t > 0 && t % 17 !== 0) maxVisited = Math.max(maxVisited, win.visited);
    }
    check(bad === 0, `the window's means equal the brute force over ${samples} samples (${bad} differ)`);
    check(movedBad === 0, `the moved list is exactly the means that changed (${movedBad} wrong)`);
    // At most the racks in service plus those whose samples are leaving the window: 15 racks.
    check(maxVisited <= 15 * per, `a sample goes through the reporting racks only: at most ${maxVisited} of ${n} GPUs`);
}

// At 98k with 200 of 6,144 racks reporting: a tick's window goes through 3,200 GPUs.
{
    const nRacks = 6144, per = 16, n = nRacks * per;
    const gpuRack = new Int32Array(n).map((_, g) => Math.floor(g / per));
    const dec = new PackedDecoder();
    const now = new Uint8Array(n).fill(kNoData);
    for (let g = 0; g < 200 * per; ++g) now[g] = 30;
    dec.handle({ op: 'layout', layoutEpoch: 1, gpuRack, nRacks, samples: 30, now });
    const snap = dec.handle({ op: 'frame', topic: 'gpu.util', type: 'snapshot', bytes: now.slice(), n, seq: 1 });
    const entries = [];
    for (let g = 0; g < 200 * per; ++g) entries.push([g, g % 101]);
    const t0 = performance.now();
    let a;
    for (let s = 0; s < 30; ++s) a = dec.handle({ op: 'frame', topic: 'gpu.util', type: 'delta', data: packDelta(entries), n, seq: 2 + s });
    const ms = (performance.now() - t0) / 30;
    check(snap.visited === n && a.visited === 200 * per,
          `98k, 200 racks reporting: a snapshot's sample goes through ${snap.visited} GPUs, a delta's through ${a.visited} (${ms.toFixed(2)} ms a frame here)`);
    check(a.idx.length === 200 * per && a.meanIdx.length > 0 && a.meanIdx.every((g) => g < 200 * per),
          `a delta answers its ${a.idx.length} entries and ${a.meanIdx.length} moved means, all in the reporting racks`);
    const w = dec.handle({ op: 'window', samples: 10 });
    check(w.meanAll.length === n && w.meanAll[5] === 5 && w.meanAll[200 * per] === kNoData,
          'a new window answers every mean from the latest samples');
}

console.log(`packed test: ${failures.length} failure(s)`);
process.exit(failures.length ? 1 : 0);
