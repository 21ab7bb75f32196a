// bench/web/browsers.mjs: the web dashboard's figures in Chromium and Firefox ESR (issue 36),
// driven by puppeteer-core from tests/web/node_modules (scripts/bootstrap; no browser download),
// against a live `loomd serve --simulate`, the way bench/web/run measures Chromium alone:
//
//   node bench/web/browsers.mjs [--build build] [--spec configs/clusters/meta-98k-roce.yaml]
//        [--browsers chromium,firefox] [--rollout all|N|0] [--seconds 60] [--minutes 0]
//        [--runs N] [--together 1] [--rss 1]
//
// Per browser, in the page (performance.now()): navigation -> complete hall map (goal <= 1 s),
// per-tick update + repaint p50/p99/max over --seconds (goal p99 <= 16 ms), bytes transferred by
// the first load (goal <= 2 MB compressed) and, in Chromium, the JS heap after --minutes (goal
// <= 200 MB, sampled every 5 minutes; Firefox exposes no heap figure to a page). --rollout puts that many compute racks
// into service first (7 operator advances each, 8 at a time) so the simulator feeds them.
// --runs N measures N fresh browsers each on the same loomd (one apply), --together 1 runs the
// browsers at once (an hour's heap in both in one hour), --rss 1 keeps Firefox for --minutes too
// and samples every browser's process-tree resident memory (browserRssEvery5MinMB), the one
// memory figure Firefox gives from outside the page.
// Prints one JSON line per browser and run, and the load average.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const a = { build: 'build', spec: 'configs/clusters/meta-24k-roce.yaml', browsers: 'chromium,firefox', rollout: 'all',
            seconds: '60', minutes: '0', runs: '1', together: '0', rss: '0' };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; ++i) if (argv[i].startsWith('--')) a[argv[i].slice(2)] = argv[++i];
const kBrowsers = {
    chromium: { exe: '/usr/bin/chromium', browser: 'chrome',
                args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--enable-precise-memory-info'] },
    firefox: { exe: '/usr/bin/firefox-esr', browser: 'firefox', args: [] },
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const port = await new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
const url = `http://127.0.0.1:${port}`;
const loomdBin = path.resolve(root, a.build, 'bin', 'loomd');  // --build may be absolute
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'loom-web-bench.'));
const state = path.join(work, 'state');
const env = { ...process.env, LOOM_PROVISIONING_DELAY_MS: '0' };
const run = (...x) => execFileSync(loomdBin, [...x, '--state-dir', state], { env, encoding: 'utf8' });
let proc = null;
try {
    let t = Date.now();
    run('apply', '-f', path.join(root, a.spec));
    console.log(`== applied ${a.spec} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const token = (role) => run('token', 'create', '--role', role, '--name', 'bench-' + role).trim().split('\n').pop();
    const operator = token('operator'), viewer = token('viewer');
    proc = spawn(loomdBin, ['serve', '--simulate', '--listen', `127.0.0.1:${port}`, '--state-dir', state],
                 { env, stdio: ['ignore', fs.openSync(path.join(work, 'loomd.log'), 'w'), 'inherit'] });
    for (let i = 0; i < 1500; ++i) {
        try { if ((await fetch(url + '/readyz')).status === 200) break; } catch { /* not yet */ }
        await sleep(200);
    }
    const hall = await (await fetch(url + '/api/v1/hall', { headers: { Authorization: 'Bearer ' + viewer } })).json();
    const racks = hall.racks.filter((r) => r.gpuCount > 0).map((r) => r.name);
    console.log(`== loomd on ${url}: ${hall.gpus.length} GPUs, ${racks.length} compute racks`);
    const n = a.rollout === 'all' ? racks.length : Number(a.rollout);
    if (n > 0) {
        t = Date.now();
        const todo = racks.slice(0, n);
        const worker = async () => {
            for (let r; (r = todo.shift());)
                for (let k = 0; k < 7; ++k)
                    await fetch(`${url}/api/v1/racks/${r}/advance`, { method: 'POST', body: '{}',
                        headers: { Authorization: 'Bearer ' + operator, 'Content-Type': 'application/json' } });
        };
        await Promise.all(Array.from({ length: 8 }, worker));
        console.log(`== ${n} racks advanced to in_service in ${((Date.now() - t) / 1000).toFixed(1)} s`);
        await sleep(5000);
    }
    const puppeteer = (await import(path.join(root, 'tests/web/node_modules/puppeteer-core/lib/esm/puppeteer/puppeteer-core.js'))).default;
    // The resident memory of a browser's process tree (MB): the heap figure Firefox does not give
    // a page, as an upper bound (it includes the browser's own and the GPU processes).
    const treeRssMB = (pid) => {
        const kids = new Map();
        for (const d of fs.readdirSync('/proc')) {
            if (!/^\d+$/.test(d)) continue;
            try {
                const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
                const ppid = Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
                if (!kids.has(ppid)) kids.set(ppid, []);
                kids.get(ppid).push(Number(d));
            } catch { /* gone */ }
        }
        let kb = 0;
        for (const todo = [pid]; todo.length;) {
            const p = todo.pop();
            try { kb += Number((fs.readFileSync(`/proc/${p}/status`, 'utf8').match(/VmRSS:\s+(\d+)/) || [0, 0])[1]); } catch { /* gone */ }
            todo.push(...(kids.get(p) || []));
        }
        return Math.round(kb / 1024);
    };
    const measure = async (name, runNo) => {
        const b = kBrowsers[name];
        if (!b || !fs.existsSync(b.exe)) { console.log(`SKIP ${name}: not installed`); return; }
        const browser = await puppeteer.launch({ browser: b.browser, executablePath: b.exe, headless: true, args: b.args,
                                                 defaultViewport: { width: 1600, height: 1000 } });
        const pid = browser.process() ? browser.process().pid : null;
        try {
            const page = await browser.newPage();
            await page.goto(url + '/');
            await page.evaluate((tok) => sessionStorage.setItem('loom.token', tok), viewer);
            await page.goto(url + '/?bench#/hall');  // a new document, measured from its navigation
            await page.waitForFunction(() => window.loomPerf && window.loomPerf.hallComplete, { timeout: 120000, polling: 50 });
            const first = await page.evaluate(() => ({
                complete: window.loomPerf.hallComplete,
                bytes: performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
                    .reduce((s, e) => s + (e.transferSize || 0), 0),
                // When the page asked for the hall: what the module imports cost before it.
                hallRequestAt: (performance.getEntriesByType('resource').find((e) => e.name.includes('/api/v1/hall')) || {}).startTime,
                // Where the first paint goes: the hall's request, first byte, last byte (Resource
                // Timing), fetched + parsed, laid into the page's state, the GPU snapshots, drawn.
                breakdown: (() => {
                    const e = performance.getEntriesByType('resource').find((x) => x.name.includes('/api/v1/hall')) || {};
                    const p = window.loomPerf, r = (x) => (x === undefined || x === null ? null : Math.round(x));
                    return { hallStart: r(e.startTime), hallFirstByte: r(e.responseStart), hallLastByte: r(e.responseEnd),
                             hallParsed: r(p.hallFetch && p.hallFetch[1]), hallDecoded: r(p.hallFetch && p.hallFetch[2]), hallSet: r(p.hallSet),
                             wsOpen: r(p.wsOpen), snapUtil: r(p.snapshots && p.snapshots['gpu.util']), snapHealth: r(p.snapshots && p.snapshots['gpu.health']),
                             legends: r(p.legends), mapCreated: r(p.mapCreated), layoutBuilt: r(p.layoutBuilt), complete: r(p.hallComplete), cells: window.loomHall && window.loomHall.layout ? [window.loomHall.layout.W, window.loomHall.layout.H] : null,
                             hallBodyBytes: e.decodedBodySize || null, hallTransferBytes: e.transferSize || null };
                })(),
            }));
            await page.evaluate(() => { window.loomPerf.ticks = []; window.loomPerf.tickParts = []; });
            await sleep(Number(a.seconds) * 1000);
            const ticks = (await page.evaluate(() => window.loomPerf.ticks)).sort((x, y) => x - y);
            // The parts of a tick, p50 and max of each: decode, recolour, putImageData, scaled
            // drawImage, overlays.
            const parts = await page.evaluate(() => { const x = window.loomPerf.tickParts; window.loomPerf.tickParts = null; return x; });
            const partStats = ['decode', 'recolour', 'put', 'scale', 'overlays'].map((k, i) => {
                const v = parts.map((x) => x[i] || 0).sort((x, y) => x - y);
                return [k, v.length ? [Math.round(v[Math.floor(v.length / 2)] * 10) / 10, Math.round(v[v.length - 1] * 10) / 10] : null];
            });
            // The heap every 5 minutes of a long run, so growth shows as a trend, not one figure.
            const heapNow = () => page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : null));
            const heapTrend = [], rssTrend = [];
            // A browser that shows a page no heap figure (Firefox) is not kept waiting for one.
            const heapShown = (await heapNow()) !== null;
            // Firefox's figure is its processes' resident memory, so it is kept waiting only when
            // asked to (--rss).
            const waitFor = heapShown || a.rss === '1';
            for (let left = waitFor ? Math.max(0, Number(a.minutes) * 60 - Number(a.seconds)) : 0; left > 0;) {
                const step = Math.min(left, 300);
                await sleep(step * 1000);
                left -= step;
                const h = await heapNow();
                if (h !== null) heapTrend.push(Math.round(h / 2 ** 20 * 10) / 10);
                if (pid) rssTrend.push(treeRssMB(pid));
            }
            const heap = await heapNow();
            const pct = (p) => (ticks.length ? ticks[Math.min(ticks.length - 1, Math.floor(p * ticks.length))] : null);
            console.log(JSON.stringify({ browser: name, run: runNo, version: await browser.version(), spec: path.basename(a.spec),
                gpus: hall.gpus.length, racksInService: n, navigationToCompleteHallMs: Math.round(first.complete),
                navigationToHallRequestMs: first.hallRequestAt === undefined ? null : Math.round(first.hallRequestAt),
                firstPaintBreakdownMs: first.breakdown,
                tickSamples: ticks.length, tickP50Ms: pct(0.5), tickP99Ms: pct(0.99), tickMaxMs: ticks[ticks.length - 1] ?? null,
                tickPartsP50MaxMs: Object.fromEntries(partStats),
                firstLoadTransferredBytes: first.bytes, jsHeapMB: heap === null ? null : Math.round(heap / 2 ** 20 * 10) / 10,
                jsHeapEvery5MinMB: heapTrend, browserRssMB: pid ? treeRssMB(pid) : null, browserRssEvery5MinMB: rssTrend,
                minutes: Number(a.minutes), loadAverage: os.loadavg().map((x) => x.toFixed(2)).join(' ') }));
        } finally {
            await browser.close();
        }
    };
    // --runs N: N fresh browsers each (a new profile: an empty cache), the browsers' order
    // alternating so that neither is always first after the rollout. --together: every browser
    // at once (the long heap runs), each in its own tab on the same loomd.
    const names = a.browsers.split(',');
    for (let k = 1; k <= Number(a.runs); ++k) {
        const order = k % 2 ? names : [...names].reverse();
        if (a.together === '1') await Promise.all(order.map((x) => measure(x, k)));
        else for (const x of order) await measure(x, k);
    }
} finally {
    if (proc) { proc.kill('SIGTERM'); await new Promise((r) => proc.once('exit', r)); }
    fs.rmSync(work, { recursive: true, force: true });
}
