// bench/web/browsers.mjs: the web dashboard's figures in Chromium and Firefox ESR (issue 36),
// driven by puppeteer-core from tests/web/node_modules (scripts/bootstrap; no browser download),
// against a live `loomd serve --simulate`, the way bench/web/run measures Chromium alone:
//
//   node bench/web/browsers.mjs [--build build] [--spec configs/clusters/meta-98k-roce.yaml]
//        [--browsers chromium,firefox] [--rollout all|N|0] [--seconds 60] [--minutes 0]
//        [--runs N] [--together 1] [--rss 1] [--memreport MINUTES] [--keep-reports DIR]
//   node bench/web/browsers.mjs --url http://127.0.0.1:PORT --viewer TOKEN [--operator TOKEN] ...
//
// Per browser, in the page (performance.now()): navigation -> complete hall map (goal <= 1 s),
// per-tick update + repaint p50/p99/max over --seconds (goal p99 <= 16 ms), bytes transferred by
// the first load (goal <= 2 MB compressed) and, in Chromium, the JS heap after --minutes (goal
// <= 200 MB, sampled every 5 minutes; Firefox exposes no heap figure to a page). --rollout puts that many compute racks
// into service first (7 operator advances each, 8 at a time) so the simulator feeds them.
// --runs N measures N fresh browsers each on the same loomd (one apply), --together 1 runs the
// browsers at once (an hour's heap in both in one hour), --rss 1 keeps Firefox for --minutes too
// and samples every browser's process-tree resident memory (browserRssEvery5MinMB), the one
// memory figure Firefox gives from outside the page. --memreport M keeps Firefox for --minutes
// and has it dump about:memory every M minutes (SIGRTMIN to its parent process: a unified memory
// report of every process, gzipped JSON in the temp dir): the page's process's resident and
// explicit memory, its JS (the main runtime's and its workers') and the parts that grew
// (firefoxMemory), and a last one after minimizing memory (a GC and a CC first: what the page
// holds); --keep-reports DIR keeps the reports (about:memory can load them).
// --url points the browsers at a loomd already running (bench/scale/run_196k.sh's): nothing is
// applied or started, --viewer is the page's token and --operator (needed only when --rollout is
// not 0) the advancing one; --spec then only names the cluster in the output.
// Prints one JSON line per browser and run, and the load average.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import zlib from 'node:zlib';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const a = { build: 'build', spec: 'configs/clusters/meta-24k-roce.yaml', browsers: 'chromium,firefox', rollout: 'all',
            seconds: '60', minutes: '0', runs: '1', together: '0', rss: '0', memreport: '0', 'keep-reports': '', url: '', viewer: '', operator: '' };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; ++i) if (argv[i].startsWith('--')) a[argv[i].slice(2)] = argv[++i];
const kBrowsers = {
    chromium: { exe: '/usr/bin/chromium', browser: 'chrome',
                args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--enable-precise-memory-info'] },
    firefox: { exe: '/usr/bin/firefox-esr', browser: 'firefox', args: [] },
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const port = a.url ? 0 : await new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
const url = a.url ? a.url.replace(/\/$/, '') : `http://127.0.0.1:${port}`;
const loomdBin = path.resolve(root, a.build, 'bin', 'loomd');  // --build may be absolute
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'loom-web-bench.'));
const state = path.join(work, 'state');
const env = { ...process.env, LOOM_PROVISIONING_DELAY_MS: '0' };
const run = (...x) => execFileSync(loomdBin, [...x, '--state-dir', state], { env, encoding: 'utf8' });
let proc = null;
try {
    let t = Date.now();
    let operator = a.operator, viewer = a.viewer;
    if (!a.url) {
        run('apply', '-f', path.join(root, a.spec));
        console.log(`== applied ${a.spec} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
        const token = (role) => run('token', 'create', '--role', role, '--name', 'bench-' + role).trim().split('\n').pop();
        operator = token('operator'); viewer = token('viewer');
        proc = spawn(loomdBin, ['serve', '--simulate', '--listen', `127.0.0.1:${port}`, '--state-dir', state],
                     { env, stdio: ['ignore', fs.openSync(path.join(work, 'loomd.log'), 'w'), 'inherit'] });
    }
    for (let i = 0; i < 1500; ++i) {
        try { if ((await fetch(url + '/readyz')).status === 200) break; } catch { /* not yet */ }
        await sleep(200);
    }
    const hall = await (await fetch(url + '/api/v1/hall', { headers: { Authorization: 'Bearer ' + viewer } })).json();
    const racks = hall.racks.filter((r) => r.gpuCount > 0).map((r) => r.name);
    console.log(`== loomd on ${url}: ${hall.gpus.length} GPUs, ${racks.length} compute racks`);
    const n = a.rollout === 'all' ? racks.length : Number(a.rollout);
    // With --rollout 0 (a loomd already rolled out, --url): the racks in service as loomd says.
    const inService = hall.racks.filter((r) => r.gpuCount > 0 && r.state === 'in_service').length;
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
    // Firefox's about:memory for every process, dumped on SIGRTMIN by the parent (nsMemoryInfoDumper)
    // to the temp dir; summarised for the process that holds our page (its window-objects name
    // the page's URL). Sizes in MB; `parts` are the explicit tree cut at depth 3.
    // minimize: SIGRTMIN+1, the report after a GC, a CC and freeing what can be (about:memory's
    // "Minimize memory usage"): what the page holds, not what it has yet to collect.
    const firefoxMemory = async (pid, label, minimize = false) => {
        const dir = os.tmpdir(), re = new RegExp(`^unified-memory-report-.*-${pid}\\.json\\.gz$`);
        const before = new Set(fs.readdirSync(dir).filter((f) => re.test(f)));
        process.kill(pid, minimize ? 35 : 34);  // SIGRTMIN(+1) as glibc numbers it (Node has no name for it)
        let file = null;
        for (let i = 0; i < 600 && !file; ++i) {
            await sleep(200);
            file = fs.readdirSync(dir).find((f) => re.test(f) && !before.has(f)) || null;
        }
        if (!file) return null;
        await sleep(500);  // renamed when complete; let the last write settle
        const full = path.join(dir, file);
        let rep;
        try { rep = JSON.parse(zlib.gunzipSync(fs.readFileSync(full))); } catch { return null; }
        if (a['keep-reports']) {
            fs.mkdirSync(a['keep-reports'], { recursive: true });
            fs.copyFileSync(full, path.join(a['keep-reports'], `firefox-${label}.json.gz`));
        }
        fs.rmSync(full, { force: true });
        const byProc = new Map();
        for (const r of rep.reports) {
            if (!byProc.has(r.process)) byProc.set(r.process, []);
            byProc.get(r.process).push(r);
        }
        const top = 'top(' + url.replace(/\//g, '\\');  // a report's path writes '/' in names as '\'
        const ours = [...byProc.entries()].find(([, rs]) => rs.some((r) => r.path.includes(top)));
        if (!ours) return null;
        const mb = (x) => Math.round(x / 2 ** 20 * 10) / 10;
        const sum = (f) => ours[1].filter((r) => r.units === 0 && f(r.path)).reduce((s, r) => s + r.amount, 0);
        const parts = {};
        for (const r of ours[1]) {
            if (r.units !== 0 || !r.path.startsWith('explicit/')) continue;
            const k = r.path.split('/').slice(0, 3).join('/').replace(/0x[0-9a-f]+/g, '*');
            parts[k] = (parts[k] || 0) + r.amount;
        }
        const one = (p) => { const r = ours[1].find((x) => x.path === p); return r ? mb(r.amount) : null; };
        return { process: ours[0], residentMB: one('resident'), residentUniqueMB: one('resident-unique'),
                 explicitMB: mb(sum((p) => p.startsWith('explicit/'))),
                 jsMainRuntimeMB: mb(sum((p) => p.startsWith('js-main-runtime/'))),
                 workersMB: mb(sum((p) => p.startsWith('explicit/workers/'))),
                 heapAllocatedMB: one('heap-allocated'),
                 // as about:memory computes it: the malloc heap no reporter claims
                 heapUnclassifiedMB: mb((ours[1].find((x) => x.path === 'heap-allocated') || { amount: 0 }).amount -
                                        ours[1].filter((r) => r.units === 0 && r.kind === 1 && r.path.startsWith('explicit/'))
                                            .reduce((x, r) => x + r.amount, 0)),
                 parts: Object.fromEntries(Object.entries(parts).filter(([, v]) => v >= 2 ** 20).sort((x, y) => y[1] - x[1]).map(([k, v]) => [k, mb(v)])) };
    };
    // The page's renderer: of the browser's descendants, the renderer / content process that
    // used the most CPU (Chromium's --type=renderer, Firefox's -contentproc ... tab).
    const rendererPid = (pid) => {
        const kids = new Map(), info = new Map();
        for (const d of fs.readdirSync('/proc')) {
            if (!/^\d+$/.test(d)) continue;
            try {
                const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
                const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
                const ppid = Number(f[1]);
                if (!kids.has(ppid)) kids.set(ppid, []);
                kids.get(ppid).push(Number(d));
                info.set(Number(d), { cpu: Number(f[11]) + Number(f[12]), cmd: fs.readFileSync(`/proc/${d}/cmdline`, 'utf8') });
            } catch { /* gone */ }
        }
        const out = [];
        for (const todo = [...(kids.get(pid) || [])]; todo.length;) {
            const p = todo.pop();
            todo.push(...(kids.get(p) || []));
            const i = info.get(p);
            if (!i || !(/--type=renderer/.test(i.cmd) || /-contentproc[^]*\btab\b/.test(i.cmd.replace(/\0/g, ' ')))) continue;
            if (/--extension-process/.test(i.cmd)) continue;
            out.push(p);
        }
        return out;
    };
    // Of those, the one whose main thread ran the most in the next 1.5 s (the live page's).
    const busiestRenderer = async (pid) => {
        const cpu = (p) => { try { return Number(fs.readFileSync(`/proc/${p}/schedstat`, 'utf8').split(' ')[0]); } catch { return -1; } };
        const ps = rendererPid(pid), before = ps.map(cpu);
        await sleep(1500);
        let best = null, most = -1;
        ps.forEach((p, k) => { const d = cpu(p) - before[k]; if (before[k] >= 0 && d > most) { most = d; best = p; } });
        return best;
    };
    // The page's main thread as the kernel saw it (/proc/PID/schedstat of the renderer's first
    // thread: time on a CPU, time runnable but waiting for one), every 250 ms while the ticks are
    // measured: on 2 shared cores a frame's time can be the wait for a CPU, not the page's work.
    const schedSampler = (rpid) => {
        const read = () => { try { return fs.readFileSync(`/proc/${rpid}/schedstat`, 'utf8').split(' ').map(Number); } catch { return null; } };
        const samples = [];
        let last = read(), lastT = Date.now();
        const timer = setInterval(() => {
            const now = read(), t = Date.now();
            if (now && last) samples.push([(now[0] - last[0]) / 1e6, (now[1] - last[1]) / 1e6, t - lastT, lastT, t]);
            last = now;
            lastT = t;
        }, 250);
        return () => {
            clearInterval(timer);
            if (!samples.length) return null;
            const run = samples.map((x) => x[0]), wait = samples.map((x) => x[1]), wall = samples.reduce((a2, x) => a2 + x[2], 0);
            const sorted = [...wait].sort((x, y) => x - y);
            const r1 = (x) => Math.round(x * 10) / 10;
            return { pid: rpid, intervals: samples.length, cpuMsPerS: r1(run.reduce((a2, x) => a2 + x, 0) / wall * 1000),
                     waitMsPerS: r1(wait.reduce((a2, x) => a2 + x, 0) / wall * 1000),
                     waitMsPer250msP50Max: [r1(sorted[Math.floor(sorted.length / 2)]), r1(sorted[sorted.length - 1])],
                     intervalsWaitingOver16ms: wait.filter((x) => x > 16).length,
                     // the interval holding an instant (ms since the epoch): its CPU and wait, ms
                     at: (when) => {
                         const x = samples.find((y) => y[3] <= when && when <= y[4] + 5);
                         return x ? { cpuMs: r1(x[0]), waitMs: r1(x[1]), intervalMs: Math.round(x[2]) } : null;
                     } };
        };
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
            const rpid = pid ? await busiestRenderer(pid) : null;
            const stopSched = rpid ? schedSampler(rpid) : () => null;
            await page.evaluate(() => { window.loomPerf.ticks = []; window.loomPerf.tickParts = []; window.loomPerf.workerTicks = []; window.loomPerf.endToEnd = []; });
            await sleep(Number(a.seconds) * 1000);
            const mainThread = stopSched();
            const ticks = (await page.evaluate(() => window.loomPerf.ticks)).sort((x, y) => x - y);
            // The parts of a tick, p50 and max of each: this thread's share of the frames (the
            // head read, the hand-off to the worker, its answers applied), recolour (a full one
            // on this thread: first snapshots, a new mode), putImageData (the worker's patches),
            // scaled drawImage, overlays.
            const parts = await page.evaluate(() => { const x = window.loomPerf.tickParts; window.loomPerf.tickParts = null; return x; });
            // The decoding and the utilization window in the Web Worker (packed.js), per frame:
            // not on the page's main thread, so not in the tick; p50 / p99 / max and the count.
            const wt = (await page.evaluate(() => { const x = window.loomPerf.workerTicks || []; window.loomPerf.workerTicks = null; return x; }))
                .sort((x, y) => x - y);
            const workerStats = wt.length ? [wt[Math.floor(wt.length / 2)], wt[Math.min(wt.length - 1, Math.floor(wt.length * 0.99))], wt[wt.length - 1]]
                .map((x) => Math.round(x * 10) / 10).concat([wt.length]) : null;
            const inWorker = await page.evaluate(() => !!(window.loomState && window.loomState.worker));
            // From a frame's arrival on the page (the WebSocket message) to the end of the draw
            // that painted it: the worker's parse, decode, window and paint, the patch's way back,
            // the wait for this thread and for the next animation frame, and the draw.
            const e2e = (await page.evaluate(() => { const x = window.loomPerf.endToEnd || []; window.loomPerf.endToEnd = null; return x; }))
                .sort((x, y) => x - y);
            const e2eStats = e2e.length ? [e2e[Math.floor(e2e.length / 2)], e2e[Math.min(e2e.length - 1, Math.floor(e2e.length * 0.99))], e2e[e2e.length - 1]]
                .map((x) => Math.round(x * 10) / 10).concat([e2e.length]) : null;
            const patchesPut = await page.evaluate(() => (window.loomHall && window.loomHall.patchesPut) || 0);
            // Draws that repainted only the box of cells a tick changed (hall.js), since the load.
            const partialDraws = await page.evaluate(() => (window.loomHall && window.loomHall.partialDraws) || 0);
            // Draws of the overlay canvas (failures, selection, job, stale text) since the load: a
            // tick that changed only cells does not draw it.
            const overlayDraws = await page.evaluate(() => (window.loomHall && window.loomHall.overlayDraws) || 0);
            // The slowest frame's parts, in the order above, and its total.
            const total = (x) => x.slice(0, 5).reduce((s2, v) => s2 + (v || 0), 0);
            const slowestFrame = parts.length ? parts.reduce((m, x) => (total(x) > total(m) ? x : m)) : null;
            const slowest = slowestFrame ? slowestFrame.slice(0, 5).map((v) => Math.round((v || 0) * 10) / 10) : null;
            // The kernel's view of the page's main thread in the 250 ms that held the slowest frame.
            const atSlowest = slowestFrame && mainThread && mainThread.at ? mainThread.at(slowestFrame[5]) : null;
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
            const memEvery = name === 'firefox' && pid ? Number(a.memreport) * 60 : 0;
            const memTrend = [];
            if (memEvery) memTrend.push({ min: Math.round(Number(a.seconds) / 6) / 10, ...(await firefoxMemory(pid, `${runNo}-start`)) });
            const waitFor = heapShown || a.rss === '1' || memEvery > 0;
            const t0 = Date.now();
            for (let left = waitFor ? Math.max(0, Number(a.minutes) * 60 - Number(a.seconds)) : 0; left > 0;) {
                const step = Math.min(left, memEvery || 300);
                await sleep(step * 1000);
                left -= step;
                const h = await heapNow();
                if (h !== null) heapTrend.push(Math.round(h / 2 ** 20 * 10) / 10);
                if (pid && !memEvery) rssTrend.push(treeRssMB(pid));
                if (memEvery) {
                    const m = await firefoxMemory(pid, `${runNo}-${memTrend.length}`);
                    memTrend.push({ min: Math.round((Date.now() - t0) / 6000 + Number(a.seconds) / 6) / 10, ...m });
                    console.log(JSON.stringify({ browser: name, firefoxMemory: memTrend[memTrend.length - 1] }));
                }
            }
            if (memEvery) {
                const m = await firefoxMemory(pid, `${runNo}-minimized`, true);
                memTrend.push({ min: Math.round((Date.now() - t0) / 6000 + Number(a.seconds) / 6) / 10, minimized: true, ...m });
                console.log(JSON.stringify({ browser: name, firefoxMemory: memTrend[memTrend.length - 1] }));
            }
            const heap = await heapNow();
            const pct = (p) => (ticks.length ? ticks[Math.min(ticks.length - 1, Math.floor(p * ticks.length))] : null);
            console.log(JSON.stringify({ browser: name, run: runNo, version: await browser.version(), spec: path.basename(a.spec),
                gpus: hall.gpus.length, racksInService: n || inService, navigationToCompleteHallMs: Math.round(first.complete),
                navigationToHallRequestMs: first.hallRequestAt === undefined ? null : Math.round(first.hallRequestAt),
                firstPaintBreakdownMs: first.breakdown,
                tickSamples: ticks.length, tickP50Ms: pct(0.5), tickP99Ms: pct(0.99), tickMaxMs: ticks[ticks.length - 1] ?? null,
                tickPartsP50MaxMs: Object.fromEntries(partStats),
                decodeInWorker: inWorker, workerFrameP50P99MaxMsCount: workerStats, partialDraws, overlayDraws, patchesPut,
                arrivalToPaintedP50P99MaxMsCount: e2eStats,
                slowestTickPartsMs: slowest, mainThreadSched: mainThread && { ...mainThread, at: undefined },
                mainThreadAtSlowestTick: atSlowest,
                firstLoadTransferredBytes: first.bytes, jsHeapMB: heap === null ? null : Math.round(heap / 2 ** 20 * 10) / 10,
                jsHeapEvery5MinMB: heapTrend, browserRssMB: pid ? treeRssMB(pid) : null, browserRssEvery5MinMB: rssTrend,
                firefoxMemory: memTrend.length ? memTrend : undefined,
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
