// The web dashboard in two real browsers — Debian's Chromium (over CDP) and Firefox ESR (over
// WebDriver BiDi), both driven by puppeteer-core from tests/web/node_modules (package-lock.json;
// `npm ci` in scripts/bootstrap; puppeteer-core never downloads a browser: it is given the
// system's binaries) — against a real `loomd serve --simulate` on its own embedded PostgreSQL.
//
// For each browser, at Fit on the whole hall (24k by default, --spec to change it):
//   - a failure pushed through the documented telemetry push (POST /api/v1/telemetry, DCGM text)
//     is visible: the failed GPU's halo covers >= kMinHaloPx pixels of the failure colour where
//     there were none before, and the failure counter reads loomd's count (GET /api/v1/failures);
//   - a NIC cable reported down by its switch (snmp_exporter's ifOperStatus) marks its rack with
//     a badge and rings its GPU, and the counter's "link" reads it;
//   - clicking the counter's "link" filters the map and lists the link beside it;
//   - stopping loomd greys the map (a GPU drawn green in health mode turns grey) and says stale;
//     starting it again brings the colour back;
//   - a deep link (#/rack/<name>?v=..&mode=..&f=..) restores view, mode, filter and selection
//     after a reload; moving the map writes the view into the URL;
//   - a viewer sees no action buttons and a forged action from the page gets 403.
// It prints first paint, repaint p99 and first-load bytes per browser (figures, not goals).
//
// Usage: node browsers_test.mjs --bin BUILD/bin --source REPO [--spec FILE]
//                               [--browsers chromium,firefox] [--keep]
// Exit 0 ok, 1 a check failed, 77 when no browser is installed at all (SKIP).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const kBrowsers = {
    chromium: { exe: '/usr/bin/chromium', browser: 'chrome', pkg: 'chromium',
                args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--force-device-scale-factor=1'] },
    firefox: { exe: '/usr/bin/firefox-esr', browser: 'firefox', pkg: 'firefox-esr', args: [] },
};
const kFailed = [255, 23, 68];
const kMinHaloPx = 40;    // failure-coloured pixels round one failed GPU at Fit
const kMinBadgePx = 20;   // failure-coloured pixels of a rack's badge and outline

const args = (() => {
    const a = { spec: process.env.LOOM_WEB_SPEC || 'configs/clusters/meta-24k-roce.yaml', browsers: 'chromium,firefox', keep: false };
    const v = process.argv.slice(2);
    for (let i = 0; i < v.length; ++i) {
        if (v[i] === '--keep') a.keep = true;
        else if (v[i].startsWith('--')) a[v[i].slice(2)] = v[++i];
    }
    if (!a.bin || !a.source) {
        console.error('usage: browsers_test.mjs --bin BUILD/bin --source REPO [--spec FILE] [--browsers chromium,firefox]');
        process.exit(2);
    }
    return a;
})();

const failures = [];
function check(cond, what) {
    console.log((cond ? 'ok   ' : 'FAIL ') + what);
    if (!cond) failures.push(what);
    return cond;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(fn, timeoutMs, what) {
    const deadline = Date.now() + timeoutMs;
    let last;
    while (Date.now() < deadline) {
        try {
            last = await fn();
            if (last) return last;
        } catch (e) {
            last = e;
        }
        await sleep(200);
    }
    throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what} (last: ${last})`);
}

function freePort() {
    return new Promise((resolve) => {
        const s = net.createServer();
        s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
    });
}

class Loomd {
    constructor(work) {
        this.work = work;
        this.state = path.join(work, 'state');
        this.env = { ...process.env, LOOM_PROVISIONING_DELAY_MS: '0' };
        this.proc = null;
    }
    run(...a) {
        return execFileSync(path.join(args.bin, 'loomd'), [...a, '--state-dir', this.state],
                            { env: this.env, encoding: 'utf8', timeout: 600000 });
    }
    token(role, name) { return this.run('token', 'create', '--role', role, '--name', name).trim().split('\n').pop(); }
    async start() {
        if (!this.port) this.port = await freePort();
        this.url = `http://127.0.0.1:${this.port}`;
        const log = fs.openSync(path.join(this.work, 'loomd.log'), 'a');
        this.proc = spawn(path.join(args.bin, 'loomd'),
                          ['serve', '--simulate', '--listen', `127.0.0.1:${this.port}`, '--state-dir', this.state],
                          { env: this.env, stdio: ['ignore', log, log] });
        this.exited = false;
        this.proc.on('exit', () => { this.exited = true; });
        await waitFor(async () => {
            if (this.exited) throw new Error('loomd exited; see ' + path.join(this.work, 'loomd.log'));
            try { return (await fetch(this.url + '/readyz')).status === 200; } catch { return false; }
        }, 180000, 'loomd /readyz');
    }
    async stop() {
        if (!this.proc || this.exited) return;
        const p = this.proc;
        const gone = new Promise((r) => p.once('exit', r));
        p.kill('SIGTERM');
        const t = setTimeout(() => p.kill('SIGKILL'), 30000);
        await gone;
        clearTimeout(t);
    }
    async call(method, p, token, body, ctype = 'application/json') {
        const headers = { Authorization: 'Bearer ' + token };
        if (body !== undefined) headers['Content-Type'] = ctype;
        const r = await fetch(this.url + p, { method, headers,
            body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
        const text = await r.text();
        let data = text;
        try { data = JSON.parse(text); } catch { /* text */ }
        return [r.status, data];
    }
}

// Moves a rack along its lifecycle to in_service (operator `advance`; burn-in runs in between).
async function intoService(loomd, token, rack) {
    await waitFor(async () => {
        const [, r] = await loomd.call('GET', `/api/v1/racks/${rack}`, token);
        if (r.state === 'in_service') return true;
        await loomd.call('POST', `/api/v1/racks/${rack}/advance`, token, {});
        return false;
    }, 120000, `${rack} in service`);
}

// Pixels of the failure colour (within a tolerance) in a square of the hall map: the picture
// the cell canvas and the overlay canvas over it make together (HallMap.composedPixels).
const countFailurePx = (page, x, y, r) => page.evaluate((x, y, r, c) => {
    const cv = document.querySelector('.hall-canvas');
    const d = window.devicePixelRatio || 1;
    const x0 = Math.max(0, Math.round((x - r) * d)), y0 = Math.max(0, Math.round((y - r) * d));
    const w = Math.min(cv.width - x0, Math.round(2 * r * d)), h = Math.min(cv.height - y0, Math.round(2 * r * d));
    const px = window.loomHall.composedPixels(x0, y0, w, h);
    let n = 0;
    for (let i = 0; i < px.length; i += 4)
        if (Math.abs(px[i] - c[0]) < 16 && Math.abs(px[i + 1] - c[1]) < 16 && Math.abs(px[i + 2] - c[2]) < 16) ++n;
    return n;
}, x, y, r, kFailed);

const pixelAt = (page, x, y) => page.evaluate((x, y) => {
    const d = window.devicePixelRatio || 1;
    return Array.from(window.loomHall.composedPixels(Math.round(x * d), Math.round(y * d), 1, 1).slice(0, 3));
}, x, y);
const saturation = (p) => Math.max(...p) - Math.min(...p);

async function signIn(page, token) {
    await page.waitForSelector('#token', { visible: true, timeout: 20000 });
    await page.evaluate(() => { document.getElementById('token').value = ''; });
    await page.type('#token', token);
    await page.click('#signin-form button[type=submit]');
}

async function mapReady(page, timeoutMs = 60000) {
    await page.waitForFunction(() => window.loomPerf && window.loomPerf.hallComplete && window.loomHall && window.loomHall.layout,
                               { timeout: timeoutMs, polling: 200 });
}

// Once no change waits to be drawn: how many bytes of the cell canvas differ from the image a
// full paint of the page's arrays makes now (the decoder, a Web Worker, paints the cells a frame
// changed and the page puts only that box), and how many GPU cells differ from colourOf. The
// page's own image is the canvas only after a full recolour, so it is not what is compared.
const settledMap = (page) => waitFor(() => page.evaluate(() => new Promise((done) => requestAnimationFrame(() => setTimeout(() => {
    const h = window.loomHall;
    // A frame, a patch or the decoder's answer to new colours came in between: look again.
    if (h.cellsDirty || h.patches.length || h.drawPending || h.awaitingPaint) return done(null);
    const a = h.cctx.getImageData(0, 0, h.layout.W, h.layout.H).data, b = h.referenceImage();
    let diff = 0, colours = 0;
    for (let i = 0; i < a.length; ++i) if (a[i] !== b[i]) ++diff;
    const gp = h.layout.gpuPixel, words = new Uint32Array(a.buffer);
    for (let i = 0; i < gp.length; ++i) if (gp[i] >= 0 && words[gp[i]] !== h.colourOf(i)) ++colours;
    done({ diff, colours, mode: h.mode, ticks: window.loomPerf.ticks.length, patchesPut: h.patchesPut || 0 });
}, 0)))), 10000, 'a settled hall map').catch(() => null);

async function runBrowser(name, loomd, t) {
    const puppeteer = (await import(path.join(here, 'node_modules/puppeteer-core/lib/esm/puppeteer/puppeteer-core.js'))).default;
    const b = kBrowsers[name];
    console.log(`== ${name}`);
    const browser = await puppeteer.launch({ browser: b.browser, executablePath: b.exe, headless: true, args: b.args,
                                             defaultViewport: { width: 1920, height: 1080 } });
    const errors = [];
    try {
        console.log(`   ${await browser.version()}`);
        const page = await browser.newPage();
        page.on('pageerror', (e) => errors.push(String(e)));
        // Counts the sockets a page opens: a reload with a token opens one, in boot.js, which the
        // dashboard's stream takes (the GPU snapshots are the first paint's longest wait).
        await page.evaluateOnNewDocument(() => {
            const Ws = window.WebSocket;
            window.loomSocketsOpened = 0;
            window.WebSocket = class extends Ws {
                constructor(...a) { super(...a); window.loomSocketsOpened += 1; }
            };
        });
        page.on('console', (m) => { if (m.type() === 'error' && !/40[13]/.test(m.text())) errors.push(m.text()); });

        // First load at Fit, as an operator: figures.
        await page.goto(loomd.url + '/#/hall', { waitUntil: 'load' });
        await signIn(page, t.operator);
        await mapReady(page);
        await page.waitForFunction(() => window.loomState.failures !== null, { timeout: 20000, polling: 200 });
        await sleep(4000);  // a few ticks of live data
        const perf = await page.evaluate(() => {
            const ticks = [...window.loomPerf.ticks].sort((a, b) => a - b);
            const bytes = performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
                .reduce((n, e) => n + (e.transferSize || 0), 0);
            return { firstPaintMs: Math.round(window.loomPerf.hallComplete), ticks: ticks.length,
                     p99: ticks.length ? ticks[Math.min(ticks.length - 1, Math.floor(ticks.length * 0.99))] : null,
                     bytes, scale: window.loomHall.view.scale };
        });
        console.log(`   figures: first paint ${perf.firstPaintMs} ms, repaint p99 ${perf.p99 && perf.p99.toFixed(2)} ms over ` +
                    `${perf.ticks} ticks, first load ${(perf.bytes / 1e6).toFixed(2)} MB transferred, Fit scale ${perf.scale.toFixed(2)} px/cell`);
        t.figures[name] = perf;
        // The map copies only the box of cells a tick changed into its cell canvas: after the
        // ticks above (each a delta of the racks in service) the canvas holds the whole image.
        const cellDiff = await settledMap(page);
        check(cellDiff && cellDiff.diff === 0 && cellDiff.ticks > 1 && cellDiff.patchesPut > 0,
              `${name}: after ${cellDiff && cellDiff.ticks} ticks (${cellDiff && cellDiff.patchesPut} patches painted in the worker) the cell canvas equals a full paint of the page's arrays (${cellDiff && cellDiff.diff} bytes differ)`);
        check(cellDiff && cellDiff.colours === 0 && cellDiff.mode === 'util',
              `${name}: every cell has colourOf's colour in ${cellDiff && cellDiff.mode} mode (${cellDiff && cellDiff.colours} differ)`);
        // A tick that changed only cells repaints only their box on screen (clipped), and leaves
        // the overlay canvas alone: the picture both make is the one a full draw of both makes,
        // pixel for pixel (a halo pulsing during its first minute would redraw the overlays).
        const partial = await waitFor(() => page.evaluate(() => new Promise((done) => requestAnimationFrame(() => {
            const h = window.loomHall, c = h.canvas;
            if (!h.lastClip || h.drawPending) return done(null);
            const a = h.composedPixels();
            const clip = h.lastClip;
            h.needFull = true;
            h.overlayDirty = true;
            h.draw();
            const b = h.composedPixels();
            let diff = 0;
            for (let i = 0; i < a.length; i += 4) if (a[i] !== b[i] || a[i + 1] !== b[i + 1] || a[i + 2] !== b[i + 2]) ++diff;
            done({ clip, diff, partialDraws: h.partialDraws, canvas: [c.width, c.height] });
        }))), 15000, 'a partial draw').catch(() => null);
        check(partial && partial.diff === 0 && partial.clip[2] - partial.clip[0] < partial.canvas[0],
              `${name}: a utilization tick repaints only its box of the canvas, and the picture equals a full draw's (${JSON.stringify(partial)})`);
        // Cell ticks put cells only: over 1.5 s of them the overlay canvas is not drawn again
        // (nothing it shows changed: no failure came or went, the view stayed).
        const quiet = await page.evaluate(() => new Promise((done) => {
            const h = window.loomHall, o0 = h.overlayDraws || 0, p0 = h.patchesPut || 0, k0 = h.failuresKey, f0 = h.failed;
            const t0 = performance.now();
            const look = () => {
                const patches = (h.patchesPut || 0) - p0, ms = performance.now() - t0;
                if ((ms < 1500 || patches === 0) && ms < 6000) return setTimeout(look, 250);
                done({ overlayDraws: (h.overlayDraws || 0) - o0, patches, ms: Math.round(ms),
                       failuresMoved: h.failuresKey !== k0 || h.failed !== f0, pulsing: !!h.animTimer });
            };
            look();
        }));
        check(quiet.patches > 0 && (quiet.overlayDraws === 0 || quiet.failuresMoved || quiet.pulsing),
              `${name}: ${quiet.patches} cell patches put in ${quiet.ms} ms and the overlays drawn ${quiet.overlayDraws} times (${JSON.stringify(quiet)})`);
        // The colours the worker paints are the page's (palette.js: loomd's legends) in every
        // mode: after a switch and the live ticks the worker painted since, the canvas is a full
        // paint's, cell for cell. (A steady job's 30-sample means stop moving, and health and
        // rack states seldom change: a mode may get no patch; over the four, temperature and
        // utilization do.)
        const patchesBefore = await page.evaluate(() => window.loomHall.patchesPut || 0);
        for (const mode of ['temp', 'health', 'provisioning', 'util']) {
            await page.evaluate((m) => window.loomHall.setMode(m), mode);
            await sleep(2500);
            const m = await settledMap(page);
            check(m && m.diff === 0 && m.colours === 0 && m.mode === mode,
                  `${name}: ${mode} mode: the worker's patches leave the canvas equal to a full paint of the page's colours (${JSON.stringify(m)})`);
        }
        const patchesAfter = await page.evaluate(() => ({ put: window.loomHall.patchesPut || 0, worker: !!window.loomState.worker }));
        check(patchesAfter.worker && patchesAfter.put > patchesBefore,
              `${name}: the worker painted ${patchesAfter.put - patchesBefore} patches over the four modes`);
        // The frames are decoded and the utilization window kept in a Web Worker (packed.js):
        // once it has every frame sent so far, the page's arrays are what the worker holds — the
        // latest samples and the window's means — and the window has means to draw.
        const peek = await page.evaluate(async () => {
            const p = await window.loomState.peekDecoder();
            let raw = 0, mean = 0, withData = 0;
            for (let i = 0; i < p.now.length; ++i) {
                if (p.now[i] !== p.main.util[i]) ++raw;
                if (p.mean[i] !== p.main.mean[i]) ++mean;
                if (p.mean[i] <= 100) ++withData;
            }
            return { worker: p.worker, window: p.utilWindow, samples: p.samples, raw, mean, withData, n: p.now.length };
        });
        check(peek.worker && peek.window > 1 && peek.samples === peek.window && peek.raw === 0 && peek.mean === 0 && peek.withData >= 40,
              `${name}: the worker decodes the frames and keeps the ${peek.window}-sample window; the page holds the same samples ` +
              `and means (${JSON.stringify(peek)})`);
        // Where the worker fails, the page goes on with the same code on its own thread: the
        // frames the worker had not answered decoded again, the window started afresh, the map
        // drawn from it.
        await page.evaluate(() => window.loomState.useInlineDecoder());
        await sleep(3500);
        const inline = await page.evaluate(async () => {
            const p = await window.loomState.peekDecoder();
            let raw = 0, mean = 0, withData = 0;
            for (let i = 0; i < p.now.length; ++i) {
                if (p.now[i] !== p.main.util[i]) ++raw;
                if (p.mean[i] !== p.main.mean[i]) ++mean;
                if (p.mean[i] <= 100) ++withData;
            }
            return { worker: p.worker, raw, mean, withData, inFlight: (window.loomState.inFlight || []).length };
        });
        const inlineMap = await settledMap(page);
        check(!inline.worker && inline.raw === 0 && inline.mean === 0 && inline.withData >= 40 && inline.inFlight === 0 &&
              inlineMap && inlineMap.colours === 0 && inlineMap.diff === 0,
              `${name}: without the worker the page decodes on its own thread, the same samples and means, the map drawn from them ` +
              `(${JSON.stringify(inline)}, ${JSON.stringify(inlineMap)})`);

        // The pointer finds a GPU and its rack (the maps for it are made on the first look).
        // A failure's GPU is found in its rack without making the hall's GPU names; the same
        // index as the whole map's (made here by gpuPoint).
        const hit = await page.evaluate((g, rack) => {
            const h = window.loomHall, st = h.state;
            const inRack = st.gpuIndexInRack(g, rack), namesBefore = st.gpuIndexOf !== null;
            const pt = h.gpuPoint(g), r = h.hit(pt.x, pt.y);
            return { gpu: st.hall.gpus[r.gpu], rack: r.rack >= 0 ? st.hall.racks[r.rack].name : null,
                     inRack, byName: st.gpuIndex.get(g), wrongRack: st.gpuIndexInRack(g, 'no-such-rack'), namesBefore };
        }, t.gpu, t.gpuRack);
        check(hit.gpu === t.gpu && hit.rack === t.gpuRack, `${name}: the cell under ${t.gpu} is that GPU in ${t.gpuRack}: ${JSON.stringify(hit)}`);
        check(hit.inRack === hit.byName && hit.wrongRack === hit.byName && hit.namesBefore === false,
              `${name}: ${t.gpu} found in its rack without the hall's names: ${JSON.stringify(hit)}`);

        // A failed GPU at Fit: nothing red round it before, a halo after.
        const gpuPt = await page.evaluate((g) => window.loomHall.gpuPoint(g), t.gpu);
        const before = await countFailurePx(page, gpuPt.x, gpuPt.y, 16);
        const [st] = await loomd.call('POST', '/api/v1/telemetry', t.operator,
            `DCGM_FI_DEV_XID_ERRORS{Hostname="${t.gpuHost}",gpu="${t.gpuIndex}"} 79\n`, 'text/plain; version=0.0.4');
        check(st === 200, `${name}: an XID 79 pushed on ${t.gpu} (POST /api/v1/telemetry ${st})`);
        const halo = await waitFor(async () => {
            const n = await countFailurePx(page, gpuPt.x, gpuPt.y, 16);
            return n >= kMinHaloPx ? n : 0;
        }, 20000, `the halo round ${t.gpu}`).catch(() => 0);
        check(halo >= kMinHaloPx && before < kMinHaloPx / 4,
              `${name}: at Fit (${perf.scale.toFixed(2)} px/cell) the failed GPU's marker and halo cover ${halo} px of the failure colour (>= ${kMinHaloPx}; ${before} before)`);
        const gpuCount = await waitFor(() => page.$eval('#failures button[data-kind=gpu]', (e) => Number(e.dataset.count) >= 1 && e.textContent), 20000, 'the GPU counter');
        const [, api] = await loomd.call('GET', '/api/v1/failures', t.viewer);
        check(gpuCount.startsWith(String(api.counts.gpu) + ' GPU'),
              `${name}: the counter reads loomd's count: "${gpuCount}" (GET /api/v1/failures: ${api.counts.gpu})`);

        // A NIC cable down, reported by its switch: its rack gets a badge, the counter a link.
        const rp = await page.evaluate((r) => window.loomHall.rackPoint(r), t.linkRack);
        const badgeBefore = await countFailurePx(page, rp.x, rp.y, 14);
        // The switch's exporter reports the port down at every scrape (4 Hz here): loomd's
        // simulator reports every port of the hall up once a second, and the latest report wins.
        const downText = `ifOperStatus{instance="${t.linkRack}-rtsw",ifName="swp${t.linkPort}"} 2\n`;
        const [st2] = await loomd.call('POST', '/api/v1/telemetry', t.operator, downText, 'text/plain; version=0.0.4');
        check(st2 === 200, `${name}: ${t.linkRack}-rtsw port ${t.linkPort} pushed down (${st2})`);
        const pusher = setInterval(() => {
            loomd.call('POST', '/api/v1/telemetry', t.operator, downText, 'text/plain; version=0.0.4').catch(() => {});
        }, 250);
        const linkText = await waitFor(() => page.$eval('#failures button[data-kind=link]', (e) => Number(e.dataset.count) >= 1 && e.textContent), 20000, 'the link counter').catch(() => '');
        check(linkText.startsWith('1 link'), `${name}: the counter reads the link down (or flapping): "${linkText}"`);
        const badge = await waitFor(async () => {
            const n = await countFailurePx(page, rp.x, rp.y, 14);
            return n >= kMinBadgePx ? n : 0;
        }, 10000, `${t.linkRack}'s badge`).catch(() => 0);
        check(badge >= kMinBadgePx && badgeBefore < kMinBadgePx / 2,
              `${name}: the link down marks its rack ${t.linkRack} at Fit: ${badge} px of the failure colour (${badgeBefore} before)`);

        // The counter's "link" filters the map and lists the link with its rack.
        await page.click('#failures button[data-kind=link]');
        const listed = await waitFor(() => page.$eval('.failure-list', (e) => !e.hidden && e.textContent), 10000, 'the failure list').catch(() => '');
        check(listed.includes(t.linkName) && listed.includes(t.linkRack),
              `${name}: clicking "link" lists ${t.linkName} on ${t.linkRack}`);
        await waitFor(() => page.evaluate(() => location.hash.includes('f=link')), 5000, 'f=link in the URL').catch(() => false);
        check(await page.evaluate(() => location.hash.includes('f=link')), `${name}: the filter is in the URL (${await page.evaluate(() => location.hash)})`);
        clearInterval(pusher);
        await page.click('#failures button[data-kind=all]');
        // The list beside the map closes and the map, wider again, refits: wait for it to settle.
        await page.waitForFunction(() => document.querySelector('.failure-list').hidden, { timeout: 10000, polling: 100 });
        await sleep(800);

        // Deep link: zoom with the wheel, the URL takes the view; a reload restores it.
        const cp = await page.evaluate((r) => window.loomHall.rackPoint(r), t.cleanRack);
        const box = await (await page.$('.hall-canvas')).boundingBox();
        await page.mouse.move(box.x + cp.x, box.y + cp.y);
        for (let i = 0; i < 6; ++i) { await page.mouse.wheel({ deltaY: -400 }); await sleep(60); }
        await page.select('select.mode', 'health');
        const hash = await waitFor(() => page.evaluate(() => (location.hash.includes('v=') ? location.hash : '')), 5000, 'v= in the URL').catch(() => '');
        const view1 = await page.evaluate(() => ({ ...window.loomHall.view }));
        check(hash.includes('v=') && hash.includes('mode=health') && Math.abs(view1.scale - perf.scale) > 0.5,
              `${name}: zooming writes the view into the URL (${hash}, ${view1.scale.toFixed(1)} px/cell)`);
        await page.evaluate((h) => { location.hash = h; }, hash);
        await page.reload({ waitUntil: 'load' });
        await mapReady(page);
        await sleep(500);
        const sockets = await page.evaluate(() => ({ opened: window.loomSocketsOpened, live: window.loomState.live,
                                                     early: window.loomEarly && window.loomEarly.stream,
                                                     health: window.loomState.snapshots.has('gpu.health') }));
        check(sockets.opened === 1 && sockets.live && sockets.early === null && sockets.health,
              `${name}: a reload opens one socket (boot.js's), which the stream took: ${JSON.stringify(sockets)}`);
        const view2 = await page.evaluate(() => ({ ...window.loomHall.view, mode: document.querySelector('select.mode').value }));
        check(Math.abs(view2.scale - view1.scale) / view1.scale < 0.01 && Math.abs(view2.ox - view1.ox) < 2 &&
              Math.abs(view2.oy - view1.oy) < 2 && view2.mode === 'health',
              `${name}: after a reload the view is restored (scale ${view2.scale.toFixed(2)} vs ${view1.scale.toFixed(2)}, ` +
              `offset ${view2.ox.toFixed(0)},${view2.oy.toFixed(0)} vs ${view1.ox.toFixed(0)},${view1.oy.toFixed(0)}, mode ${view2.mode})`);
        // A rack, with a view, a mode and a filter.
        const vParam = hash.match(/v=([^&]*)/)[1];
        await page.evaluate((h) => { location.hash = h; }, `#/rack/${t.cleanRack}?v=${vParam}&mode=temp&f=gpu`);
        await page.reload({ waitUntil: 'load' });
        await mapReady(page);
        await page.waitForFunction((r) => document.querySelector('.rack-name') && document.querySelector('.rack-name').textContent === r,
                                   { timeout: 15000, polling: 200 }, t.cleanRack);
        const restored = await page.evaluate(() => ({ scale: window.loomHall.view.scale, mode: document.querySelector('select.mode').value,
                                                      filter: window.loomState.failureFilter, selected: window.loomHall.selected }));
        const tempMap = await settledMap(page);
        check(tempMap && tempMap.colours === 0 && tempMap.diff === 0 && tempMap.mode === 'temp',
              `${name}: after the reload every cell has colourOf's colour in ${tempMap && tempMap.mode} mode, on the canvas too (${JSON.stringify(tempMap)})`);
        check(Math.abs(restored.scale - view1.scale) / view1.scale < 0.01 && restored.mode === 'temp' &&
              restored.filter === 'gpu' && restored.selected === t.cleanRack,
              `${name}: #/rack/${t.cleanRack}?v=..&mode=temp&f=gpu restores ${JSON.stringify(restored)}`);
        // The temperature legend is loomd's scale (GET /api/v1/legends): its ends and the
        // gpu_temp thresholds it marks, as the console's legend shows them (tests/desktop_ui).
        const [, leg] = await loomd.call('GET', '/api/v1/legends', t.viewer);
        const want = leg.scales.temperature;
        const shown = await waitFor(() => page.evaluate(() => {
            const r = document.querySelector('.legend .ramp-item');
            return r && r.dataset.thresholds ? { min: r.dataset.min, max: r.dataset.max, th: r.dataset.thresholds } : null;
        }), 10000, 'the temperature legend').catch(() => null);
        check(shown && Number(shown.min) === want.min && Number(shown.max) === want.max &&
              shown.th === want.thresholds.map((x) => x.value).join(','),
              `${name}: the temperature legend is loomd's: ${JSON.stringify(shown)} vs ${JSON.stringify(want)}`);

        // Stale: stopping loomd greys the map; starting it again brings the colour back.
        await page.evaluate((h) => { location.hash = h; }, `#/hall?v=${vParam}&mode=health`);
        await page.reload({ waitUntil: 'load' });
        await mapReady(page);
        // The GPU's place is read again at every look: the view may still be settling.
        const okPixel = async () => {
            const pt = await page.evaluate((g) => window.loomHall.gpuPoint(g), t.okGpu);
            return pixelAt(page, pt.x, pt.y);
        };
        const why = () => page.evaluate((g) => JSON.stringify({ hash: location.hash, filter: window.loomState.failureFilter,
            health: window.loomState.array('gpu.health')[window.loomState.gpuIndex.get(g)], pt: window.loomHall.gpuPoint(g),
            view: window.loomHall.view }), t.okGpu);
        const live = await waitFor(async () => { const p = await okPixel(); return saturation(p) > 60 ? p : null; },
                                   20000, `${t.okGpu} drawn live`).catch(() => null);
        check(!!live, `${name}: ${t.okGpu} is drawn in colour while live (${live || await why()})`);
        await loomd.stop();
        const grey = await waitFor(async () => {
            const banner = await page.$eval('.map-banner', (e) => e.textContent);
            const p = await okPixel();
            return banner.includes('stale') && /reconnecting in \d+\.\d s/.test(banner) && saturation(p) < 12 ? [banner, p] : null;
        }, 20000, 'the greyed map').catch(() => null);
        // As the console says it (desktop_ui/src/session.cpp): the data's age and the next attempt.
        check(!!grey, `${name}: loomd stopped: the map is greyed (${grey && grey[1]}) and says "${grey && grey[0]}" (data N s old — reconnecting in N s)`);
        await loomd.start();
        const back = await waitFor(async () => {
            const banner = await page.$eval('.map-banner', (e) => e.textContent);
            const p = await okPixel();
            return !banner.includes('stale') && saturation(p) > 60 ? [banner, p] : null;
        }, 60000, 'the map in colour again').catch(() => null);
        check(!!back, `${name}: loomd back: the map is in colour again (${back ? back[1] + ', "' + back[0] + '"' : await why()})`);

        // A viewer cannot act.
        await page.click('#signout');
        await signIn(page, t.viewer);
        await page.waitForFunction(() => document.getElementById('who').textContent.includes('(viewer)'), { timeout: 15000, polling: 200 });
        await page.evaluate((h) => { location.hash = h; }, `#/rack/${t.cleanRack}`);
        await page.waitForFunction((r) => document.querySelector('.rack-name') && document.querySelector('.rack-name').textContent === r,
                                   { timeout: 15000, polling: 200 }, t.cleanRack);
        check((await page.$$('.operator-only, .actions button')).length === 0, `${name}: a viewer sees no rack actions`);
        const forged = await page.evaluate((r) => fetch(`api/v1/racks/${r}/drain`, { method: 'POST',
            headers: { Authorization: 'Bearer ' + sessionStorage.getItem('loom.token'), 'Content-Type': 'application/json' },
            body: '{}' }).then((x) => x.status, (e) => String(e)), t.cleanRack);
        const [, rack] = await loomd.call('GET', `/api/v1/racks/${t.cleanRack}`, t.operator);
        check(forged === 403 && rack.state === 'in_service', `${name}: a forged drain with the viewer's token gets ${forged}; the rack stays ${rack.state}`);
        await page.click('#signout');
        // Requests that failed while loomd was stopped are expected; nothing else is.
        const real = errors.filter((e) => !/WebSocket|net::ERR_|NetworkError|Failed to fetch|loomd is unreachable|establish a connection|status of 503/i.test(e));
        check(real.length === 0, `${name}: no script errors in the page (${real.slice(0, 3).join(' | ')})`);
    } finally {
        await browser.close();
    }
}

async function main() {
    const want = args.browsers.split(',').filter(Boolean);
    const present = want.filter((n) => kBrowsers[n] && fs.existsSync(kBrowsers[n].exe));
    for (const n of want.filter((x) => !present.includes(x)))
        console.log(`SKIP ${n}: ${kBrowsers[n] ? kBrowsers[n].exe + ' is missing (scripts/bootstrap installs ' + kBrowsers[n].pkg + ')' : 'unknown browser'}`);
    if (!present.length) return 77;
    if (!fs.existsSync(path.join(here, 'node_modules/puppeteer-core'))) {
        console.log('FAIL tests/web/node_modules is missing: run scripts/bootstrap (it runs `npm ci` in tests/web)');
        return 1;
    }
    const t0 = Date.now();
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'loom-web-browsers.'));
    const loomd = new Loomd(work);
    try {
        let t1 = Date.now();
        loomd.run('apply', '-f', path.join(args.source, args.spec));
        console.log(`== applied ${args.spec} in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
        const t = { operator: loomd.token('operator', 'web-op'), viewer: loomd.token('viewer', 'web-viewer'), figures: {} };
        await loomd.start();
        const [, hall] = await loomd.call('GET', '/api/v1/hall', t.viewer);
        const racks = hall.racks.filter((r) => r.gpuCount > 0).map((r) => r.name);  // not storage racks
        // Three racks in service, far apart on the map: one for an XID, one for a link down, one
        // that stays clean (the deep link and the stale check look at it).
        const [gpuRack, linkRack, cleanRack] = [racks[0], racks[Math.floor(racks.length / 2)], racks[racks.length - 1]];
        t1 = Date.now();
        await Promise.all([gpuRack, linkRack, cleanRack].map((r) => intoService(loomd, t.operator, r)));
        console.log(`== ${gpuRack}, ${linkRack}, ${cleanRack} in service in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
        Object.assign(t, { gpuRack, linkRack, cleanRack, gpuHost: `${gpuRack}-h0`, gpuIndex: 3, gpu: `${gpuRack}-h0-gpu3`,
                           linkPort: 14, linkName: `${linkRack}-h1-nic5/p1--${linkRack}-rtsw/p14`, okGpu: `${cleanRack}-h1-gpu2` });
        await waitFor(async () => (await loomd.call('GET', `/api/v1/telemetry/gpus/${t.okGpu}`, t.viewer))[1].util !== null, 30000, 'the simulator reporting');
        for (const name of present) {
            // Each browser starts from a clean hall: the previous one's failures cleared.
            if (name !== present[0]) {
                await loomd.call('POST', '/api/v1/telemetry', t.operator,
                    `DCGM_FI_DEV_XID_ERRORS{Hostname="${t.gpuHost}",gpu="${t.gpuIndex}"} 0\nifOperStatus{instance="${linkRack}-rtsw",ifName="swp14"} 1\n`,
                    'text/plain; version=0.0.4');
                const [, events] = await loomd.call('GET', '/api/v1/events?state=open&limit=100', t.operator);
                for (const e of events.items || []) await loomd.call('POST', `/api/v1/events/${e.id}/close`, t.operator, { reason: 'next browser' });
                await waitFor(async () => (await loomd.call('GET', '/api/v1/failures', t.viewer))[1].total === 0, 30000, 'no open failure');
            }
            try {
                await runBrowser(name, loomd, t);
            } catch (e) {
                check(false, `${name}: ${e.message}`);
            }
        }
        console.log('== figures: ' + JSON.stringify({ spec: args.spec, load: os.loadavg().map((x) => x.toFixed(2)).join(' '), ...t.figures }));
    } catch (e) {
        check(false, e.stack || String(e));
    } finally {
        await loomd.stop();
        console.log(`web browsers test: ${((Date.now() - t0) / 1000).toFixed(1)} s, ${failures.length} failure(s)`);
        if (failures.length) {
            const log = fs.readFileSync(path.join(work, 'loomd.log'), 'utf8').split('\n');
            console.log('loomd log tail:\n' + log.slice(-20).join('\n'));
        } else if (!args.keep) {
            fs.rmSync(work, { recursive: true, force: true });
        }
    }
    return failures.length ? 1 : 0;
}

process.exit(await main());
