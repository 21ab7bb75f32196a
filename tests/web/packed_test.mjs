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
const { UtilWindow, PackedDecoder, decodeBase64, decodeDelta, kNoData, frameHead } =
    await import(pathToFileURL(path.join(source, 'backend/web/packed.js')).href);
const { paintAll, cellColour } = await import(pathToFileURL(path.join(source, 'backend/web/hall_paint.js')).href);

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

// A stream frame's head read without parsing it (the page's main thread hands the text on).
{
    const snap = '{"type":"snapshot","seq":12,"ts":1700000000123,"topic":"gpu.util","encoding":"u8","count":3,"data":"AQID"}';
    const delta = '{"type":"delta","seq":13,"ts":1700000000124,"topic":"link.health","encoding":"u8pairs","data":""}';
    const h1 = frameHead(snap), h2 = frameHead(delta);
    check(h1 && h1.type === 'snapshot' && h1.seq === 12 && h1.ts === 1700000000123 && h1.topic === 'gpu.util' &&
          h2 && h2.type === 'delta' && h2.seq === 13 && h2.topic === 'link.health',
          `a frame's head without JSON.parse: ${JSON.stringify(h1)} ${JSON.stringify(h2)}`);
    check(frameHead('{"type":"event","seq":3}') === null && frameHead('{"type":"hello"}') === null && frameHead('x') === null,
          'any other message is parsed as before');
    const dec = new PackedDecoder();
    const gpuRack = new Int32Array([0, 0, 0]);
    dec.handle({ op: 'layout', layoutEpoch: 1, gpuRack, nRacks: 1, samples: 1 });
    const a = dec.handle({ op: 'frame', topic: 'gpu.util', type: 'snapshot', raw: snap, n: 3, seq: 1 });
    check(Array.from(a.now).join() === '1,2,3', `the decoder parses the frame's text itself: ${Array.from(a.now)}`);
}

// The decoder paints the map's cells (hall_paint.js): after snapshots, deltas, a rack's new state
// and a window, in every colour mode (and with a job's veil), the image it holds — the page's
// canvas is the page's image with every patch it answered put in — is the image a full paint
// from the same arrays makes; a patch covers only cells whose colour changed.
{
    const nRacks = 12, per = 16, n = nRacks * per, W = 40;
    const gpuRack = new Int32Array(n).map((_, g) => Math.floor(g / per));
    // racks 4 across, 10 cells apart; a rack's 16 GPUs in 2 lines of 8
    const gpuPixel = new Int32Array(n).map((_, g) => { const r = gpuRack[g], k = g % per; return (Math.floor(r / 4) * 3 + Math.floor(k / 8)) * W + (r % 4) * 10 + (k % 8); });
    const lut = (f) => Uint32Array.from({ length: 256 }, (_, v) => f(v) >>> 0);
    const base = { failed: 0xff0000ff, quarantined: 0xffff00ff, degraded: 0xff00ffff, noData: 0xff404040, provNone: 0xff101010,
                   util: lut((v) => (v <= 100 ? 0xff000000 | (v * 2) : 0xff404040)), temp: lut((v) => 0xff000000 | (v << 8)),
                   health: lut((v) => 0xff000000 | (v << 16) | 7), rackProv: Uint32Array.from({ length: nRacks }, (_, r) => 0xff000000 | (r * 9)),
                   rackReports: Uint8Array.from({ length: nRacks }, (_, r) => (r < 9 ? 1 : 0)), highlight: null };
    const modes = [['util', 1], ['util', 5], ['temp', 1], ['health', 1], ['provisioning', 1], ['util-veiled', 5]];
    let bad = [];
    for (const [m, samples] of modes) {
        const mode = m.replace('-veiled', '');
        const P = { ...base, mode, rackProv: base.rackProv.slice(), rackReports: base.rackReports.slice(),
                    highlight: m.endsWith('veiled') ? Uint8Array.from({ length: n }, (_, g) => g % 3 === 0) : null };
        const dec = new PackedDecoder();
        dec.handle({ op: 'layout', layoutEpoch: 1, gpuRack, nRacks, samples });
        const page = new Uint32Array(W * 9).fill(0xff202020);  // the page's image: floor
        const arrays = { 'gpu.util': new Uint8Array(n).fill(kNoData), 'gpu.temp': new Uint8Array(n).fill(kNoData), 'gpu.health': new Uint8Array(n).fill(kNoData) };
        let mean = arrays['gpu.util'];
        paintAll(page, gpuPixel, arrays['gpu.health'], arrays['gpu.temp'], mean, gpuRack, P);
        const put = (a) => {
            if (a.now) arrays[a.topic] = a.now;
            if (a.mean) mean = a.mean; else if (a.topic === 'gpu.util') mean = a.now;
            const p = a.patch;
            if (!p) return 0;
            for (let y = 0; y < p.h; ++y) page.set(p.data.subarray(y * p.w, (y + 1) * p.w), (p.y + y) * W + p.x);
            return p.w * p.h;
        };
        put(dec.handle({ op: 'paint', epoch: 1, W, gpuPixel, px: page.slice(), P: { ...P, rackProv: P.rackProv.slice(), rackReports: P.rackReports.slice() } }));
        let seq = 0, patched = 0;
        for (const topic of ['gpu.util', 'gpu.temp', 'gpu.health']) {
            const b = Uint8Array.from({ length: n }, () => (topic === 'gpu.health' ? Math.floor(rand() * 5) % 4 : Math.floor(rand() * 90)));
            patched += put(dec.handle({ op: 'frame', topic, type: 'snapshot', raw: JSON.stringify({ data: Buffer.from(b).toString('base64') }), n, seq: ++seq }));
        }
        for (let t = 0; t < 8; ++t) {
            for (const topic of ['gpu.util', 'gpu.temp', 'gpu.health']) {
                const e = [];
                for (let k = 0; k < 20; ++k) e.push([Math.floor(rand() * n), topic === 'gpu.health' ? Math.floor(rand() * 4) : Math.floor(rand() * 90)]);
                patched += put(dec.handle({ op: 'frame', topic, type: 'delta', data: packDelta(e), n, seq: ++seq }));
            }
            if (t === 3) { P.rackProv[4] = 0xff00aa00; P.rackReports[4] = 0; put(dec.handle({ op: 'rack', rack: 4, prov: 0xff00aa00, reports: 0 })); }
        }
        if (samples > 1) { const w = dec.handle({ op: 'window', samples: 3 }); if (w.meanAll) mean = w.meanAll; put(w); }
        const ref = page.slice();
        paintAll(ref, gpuPixel, arrays['gpu.health'], arrays['gpu.temp'], mean, gpuRack, P);
        let diff = 0, cells = 0;
        for (let i = 0; i < ref.length; ++i) if (ref[i] !== page[i]) ++diff;
        for (let g = 0; g < n; ++g) if (page[gpuPixel[g]] !== cellColour(g, arrays['gpu.health'], arrays['gpu.temp'], mean, gpuRack, P)) ++cells;
        if (diff || cells || !patched) bad.push(`${m}/${samples}: ${diff} cells differ from a full paint, ${cells} from cellColour, ${patched} patched`);
    }
    check(bad.length === 0, `the decoder's painted image equals a full paint in every mode (${bad.join('; ') || modes.map((x) => x.join('/')).join(', ')})`);
}

console.log(`packed test: ${failures.length} failure(s)`);
process.exit(failures.length ? 1 : 0);
