// The hall map: every GPU of the hall as one cell of an image the size of the hall in cells
// (24,576 GPUs at 24k: a few hundred thousand pixels), recoloured in place for the entries a
// delta changed, and drawn scaled onto the visible canvas with zoom and pan. Failures (GPU
// health failed, quarantined, warning) are drawn over every colour mode, and as markers big
// enough to see when the map is zoomed out. On top of every mode: loomd's open failures
// (GET /api/v1/failures) — a marker on each GPU (a NIC cable down rings its GPU), an outline
// and a count badge on each rack with a failure, a halo that stays visible at Fit (pulsing
// for the first minute of a failure); a stale map is greyed with its age written on it.
import { el, clear } from './dom.js';
import { drawRackGrid, drawStale, drawStaleText, drawFailures, kOutlineScale } from './hall_overlay.js';
import { luts, words, kRackStates, rackReportsData, kHealthNames, kBackground, css } from './palette.js';
import { cellColour, paintAll } from './hall_paint.js';

const kRackCols = 8;   // GPUs across a rack (a host per line of 8)
const kRackGap = 1;    // cells between racks in a row
const kRowGap = 2;     // cells between rows
const kZoneGap = 8;    // cells between zones

export const perf = (window.loomPerf = window.loomPerf || { ticks: [], hallComplete: null });
let paintEpochs = 0;  // every map's paint parameters get a new number: old patches are dropped

// Two lists of ints equal (the failed GPUs: an unchanged list leaves the overlays alone).
function sameInts(a, b) {
    if (a === b) return true;
    if (!a || !b || a.length !== b.length) return false;
    for (let i = 0; i < a.length; ++i) if (a[i] !== b[i]) return false;
    return true;
}

export class HallMap {
    constructor(state, host, { onSelect } = {}) {
        this.state = state;
        this.onSelect = onSelect;
        this.mode = 'util';
        this.canvas = el('canvas', { class: 'hall-canvas', 'aria-label': 'hall map' });
        // The overlays (failures, selection, job outline, stale text) on their own canvas over
        // the cells, redrawn only when what they show or the view changes: a tick puts cells.
        this.overlay = el('canvas', { class: 'hall-overlay', 'aria-hidden': 'true' });
        this.tip = el('div', { class: 'tooltip', hidden: true });
        this.banner = el('div', { class: 'map-banner' });
        host.append(this.canvas, this.overlay, this.tip, this.banner);
        this.cells = document.createElement('canvas');
        this.view = { scale: 1, ox: 0, oy: 0, fitted: false };
        this.selected = null;
        this.dirty = true;
        this.failed = [];
        this.layout = null;
        this.drawPending = false;
        this.installInput();
        this.resizeObserver = new ResizeObserver(() => this.resize());
        this.resizeObserver.observe(this.canvas);
        this.unsub = [
            state.on('hall', (e) => { if (e.layoutChanged || !this.layout) this.buildLayout(); else this.recolourAll(); }),
            state.on('data', (d) => this.onData(d)),
            state.on('rack', (name) => this.recolourRack(name)),
            state.on('failures', (f) => this.onFailures(f)),
            state.on('filter', () => this.schedule()),
            state.on('stale', () => this.schedule()),
            state.on('staleText', () => this.schedule(false, true)),
            // The decoder (a Web Worker) repaints the cells a frame changed and answers the box
            // of them; a new decoder (the worker failed) gets this map's image and colours.
            state.on('patch', (a) => this.onPatch(a)),
            state.on('decoder', () => this.recolourAll()),
        ];
        this.patches = [];       // patches answered since the last draw, in order
        this.patchBox = null;    // the cells they cover
        this.patchAt = null;     // the earliest arrival of a frame they paint (performance.now())
        if (perf.mapCreated === undefined) perf.mapCreated = performance.now();
        if (state.hall) this.buildLayout();
        window.loomHall = this;
    }

    destroy() {
        clearTimeout(this.animTimer);
        this.unsub.forEach((u) => u());
        this.resizeObserver.disconnect();
        this.state.sendPaint({ P: null });  // no map: the decoder paints nothing
        if (window.loomHall === this) window.loomHall = null;
    }

    setMode(mode) {
        this.mode = mode;
        this.recolourAll();
    }

    // Geometry: zones in a grid, a zone's rows stacked, racks along a row by position, a rack
    // kRackCols cells wide and one line per 8 GPUs.
    buildLayout() {
        const h = this.state.hall;
        if (!h) return;
        let maxGpus = kRackCols;
        for (const r of h.racks) maxGpus = Math.max(maxGpus, r.gpuCount);
        const rackH = Math.ceil(maxGpus / kRackCols);
        const rowsByZone = new Map(h.zones.map((z) => [z.name, []]));
        const rowByName = new Map();
        for (const r of h.rows) {
            if (!rowsByZone.has(r.zone)) rowsByZone.set(r.zone, []);
            rowsByZone.get(r.zone).push(r);
            rowByName.set(r.name, r);
        }
        const racksByRow = new Map();
        for (const r of h.racks) {
            if (!racksByRow.has(r.row)) racksByRow.set(r.row, []);
            racksByRow.get(r.row).push(r);
        }
        const zones = [];
        for (const [name, rows] of rowsByZone) {
            const withRacks = rows.filter((r) => racksByRow.has(r.name)).sort((a, b) => a.index - b.index);
            if (!withRacks.length) continue;
            let maxPos = 0;
            for (const r of withRacks) for (const k of racksByRow.get(r.name)) maxPos = Math.max(maxPos, k.position);
            zones.push({ name, rows: withRacks, w: (maxPos + 1) * (kRackCols + kRackGap) - kRackGap,
                         h: withRacks.length * (rackH + kRowGap) - kRowGap });
        }
        // Columns of zones: the grid whose shape is closest to the canvas'.
        const aspect = Math.max(0.3, (this.canvas.clientWidth || 1200) / (this.canvas.clientHeight || 700));
        let best = 1, bestErr = Infinity;
        for (let cols = 1; cols <= Math.max(1, zones.length); ++cols) {
            const rowsN = Math.ceil(zones.length / cols);
            const zw = Math.max(...zones.map((z) => z.w), 1), zh = Math.max(...zones.map((z) => z.h), 1);
            const w = cols * (zw + kZoneGap), hh = rowsN * (zh + kZoneGap);
            const err = Math.abs(Math.log(w / hh / aspect));
            if (err < bestErr) { bestErr = err; best = cols; }
        }
        const zw = Math.max(...zones.map((z) => z.w), 1), zh = Math.max(...zones.map((z) => z.h), 1);
        const W = best * (zw + kZoneGap) - kZoneGap;
        const H = Math.ceil(zones.length / best) * (zh + kZoneGap) - kZoneGap;
        const n = this.state.nGpus;
        const gpuPixel = new Int32Array(n).fill(-1);
        const rackRect = new Array(h.racks.length);
        this.cells.width = Math.max(1, W);
        this.cells.height = Math.max(1, H);
        this.cctx = this.cells.getContext('2d');
        this.image = this.cctx.createImageData(Math.max(1, W), Math.max(1, H));
        this.px = new Uint32Array(this.image.data.buffer);
        const px = this.px, floor = words.floor;
        // Work per rack and GPU, not per cell: the 98k hall is 0.77 M cells, most of them gaps.
        // The cell -> GPU and cell -> rack maps for the pointer are made when first needed.
        zones.forEach((z, zi) => {
            z.x = (zi % best) * (zw + kZoneGap);
            z.y = Math.floor(zi / best) * (zh + kZoneGap);
            z.rows.forEach((row, line) => {
                for (const r of racksByRow.get(row.name)) {
                    const x0 = z.x + r.position * (kRackCols + kRackGap), y0 = z.y + line * (rackH + kRowGap);
                    rackRect[r.index] = { x: x0, y: y0, w: kRackCols, h: rackH };
                    for (let yy = 0; yy < rackH; ++yy) px.fill(floor, (y0 + yy) * W + x0, (y0 + yy) * W + x0 + kRackCols);
                    for (let k = 0; k < r.gpuCount; ++k)
                        gpuPixel[r.gpuOffset + k] = (y0 + Math.floor(k / kRackCols)) * W + x0 + (k % kRackCols);
                }
            });
        });
        this.layout = { W, H, zones, gpuPixel, rackRect, pixelGpu: null, pixelRack: null };
        this.view.fitted = false;
        if (perf.layoutBuilt === undefined) perf.layoutBuilt = performance.now();
        this.recolourAll();
    }

    // A job's GPUs to pick out (every other cell veiled, its racks outlined); null clears it.
    setHighlight(gpus, label) {
        this.highlight = gpus && gpus.size ? gpus : null;
        this.highlightLabel = this.highlight ? label : '';
        const racks = new Set();
        if (this.highlight) for (const g of this.highlight) racks.add(this.state.gpuRack[g]);
        this.highlightRacks = racks;
        this.recolourAll();
    }

    // The paint parameters (hall_paint.js) from loomd's colours (palette.js) and the racks'
    // states, made once per full recolour; the decoder gets a copy.
    makeParams() {
        const st = this.state, racks = st.hall.racks;
        const rackProv = new Uint32Array(racks.length), rackReports = new Uint8Array(racks.length);
        racks.forEach((r, k) => { rackProv[k] = this.provWord(r.state); rackReports[k] = rackReportsData(r.state) ? 1 : 0; });
        let highlight = null;
        if (this.highlight) {
            highlight = new Uint8Array(st.nGpus);
            for (const g of this.highlight) if (g >= 0 && g < highlight.length) highlight[g] = 1;
        }
        return { mode: this.mode, failed: words.failed, quarantined: words.quarantined, degraded: words.degraded,
                 noData: words.noData, provNone: luts.provisioning.words[255], util: luts.util.words,
                 temp: luts.temp.words, health: luts.health.words, rackProv, rackReports, highlight };
    }

    provWord(state) {
        const s = kRackStates.indexOf(state || '');
        return luts.provisioning.words[s < 0 ? 255 : s];
    }

    colourOf(i) {
        const st = this.state;
        if (!this.P) this.P = this.makeParams();
        return cellColour(i, st.array('gpu.health'), st.array('gpu.temp'), st.utilValues(), st.gpuRack, this.P);
    }

    // Every cell from this thread's arrays (hall_paint.js, the code the decoder paints with).
    recolourCells() {
        const st = this.state;
        if (!this.P) this.P = this.makeParams();
        paintAll(this.px, this.layout.gpuPixel, st.array('gpu.health'), st.array('gpu.temp'), st.utilValues(), st.gpuRack, this.P);
    }

    // The image a full redraw makes now, as RGBA bytes (tests: the canvas must equal it).
    referenceImage() {
        const st = this.state, px = this.px.slice();
        paintAll(px, this.layout.gpuPixel, st.array('gpu.health'), st.array('gpu.temp'), st.utilValues(), st.gpuRack, this.makeParams());
        return new Uint8ClampedArray(px.buffer);
    }

    // The decoder gets this map's image and parameters (copies: the lookup tables are refilled
    // in place when loomd's colours change) and repaints from its own, maybe newer, arrays.
    sendPaint() {
        const P = this.P, L = this.layout;
        this.paintEpoch = ++paintEpochs;
        this.patches = [];
        this.patchBox = null;
        this.awaitingPaint = true;
        const px = this.px.slice();
        this.state.sendPaint({ epoch: this.paintEpoch, W: L.W, gpuPixel: L.gpuPixel, px,
                               P: { ...P, epoch: this.paintEpoch, util: P.util.slice(), temp: P.temp.slice(), health: P.health.slice(),
                                    rackProv: P.rackProv.slice(), rackReports: P.rackReports.slice() } }, [px.buffer]);
    }

    // A patch of cells the decoder painted: put in the cell canvas at the next draw.
    onPatch(a) {
        if (a.epoch !== this.paintEpoch || !this.layout) return;
        if (a.op === 'paint') this.awaitingPaint = false;
        const p = a.patch;
        if (!p) return;
        this.patches.push(p);
        const b = this.patchBox;
        if (!b) this.patchBox = [p.x, p.y, p.x + p.w - 1, p.y + p.h - 1];
        else {
            b[0] = Math.min(b[0], p.x); b[1] = Math.min(b[1], p.y);
            b[2] = Math.max(b[2], p.x + p.w - 1); b[3] = Math.max(b[3], p.y + p.h - 1);
        }
        if (a.at !== undefined && (this.patchAt === null || a.at < this.patchAt)) this.patchAt = a.at;
        this.schedule(a.op === 'paint', false);
    }

    recolourAll() {
        if (!this.layout) return;
        this.P = this.makeParams();
        this.recolourCells();
        this.sendPaint();
        this.collectFailed();
        this.dirty = true;
        this.markCells(-1);
        this.schedule();
    }

    // A rack's new state: the decoder repaints its cells (this thread's image is not the
    // canvas' between full recolours, so no box of it is copied here).
    recolourRack(name) {
        const r = this.state.rackByName.get(name);
        if (!r || !this.layout || !this.P) return;
        const prov = this.provWord(r.state), reports = rackReportsData(r.state) ? 1 : 0;
        this.P.rackProv[r.index] = prov;
        this.P.rackReports[r.index] = reports;
        this.state.send({ op: 'rack', rack: r.index, prov, reports });
    }

    collectFailed() {
        const health = this.state.array('gpu.health');
        const f = [];
        for (let i = 0; i < health.length; ++i) if (health[i] >= 1 && health[i] <= 3) f.push(i);
        const moved = !sameInts(f, this.failed);
        this.failed = f;
        if (moved) this.overlayDirty = true;
        return moved;
    }

    // loomd's failure list, polled on events: the overlays are redrawn when it says otherwise.
    onFailures(f) {
        const key = f ? f.layoutVersion + JSON.stringify(f.items) : '';
        if (key === this.failuresKey) return;
        this.failuresKey = key;
        this.schedule(false, true);
    }

    onData({ topic, changed, failed, painted }) {
        if (!this.layout || !topic.startsWith('gpu.')) return;
        // The decoder's answer: the cells come as a patch (onPatch); health moves the markers.
        if (changed === undefined) {
            if (failed && !sameInts(failed, this.failed)) { this.failed = failed; this.schedule(false, true); }
            return;
        }
        if (painted) return;
        // A topic this mode does not draw changes no cell (colourOf reads utilization only in
        // util mode, temperature only in temp mode): at 98k each is ~3,000 cells a tick.
        if ((topic === 'gpu.temp' && this.mode !== 'temp') || (topic === 'gpu.util' && this.mode !== 'util')) return;
        const t0 = performance.now();
        const { gpuPixel } = this.layout;
        if (changed === null) {
            this.recolourCells();
            this.markCells(-1);
        } else {
            for (let k = 0; k < changed.length; ++k) {
                const i = changed[k], p = gpuPixel[i];
                if (p >= 0) { this.px[p] = this.colourOf(i); this.markCells(p); }
            }
        }
        const markers = topic === 'gpu.health' && this.collectFailed();
        this.dirty = true;
        this.pendingWork = (this.pendingWork || 0) + (performance.now() - t0);
        // Utilization and temperature change cells only: the next draw may redraw just their
        // box. Health moves the failure markers too (drawn bigger than a cell at Fit).
        this.schedule(topic === 'gpu.health', markers);
    }

    // The cells changed since the last draw, as one box (-1: all of them): draw() copies only
    // that box of the image into the cell canvas (at 98k the image is ~0.8 M cells, 3 MB).
    markCells(p) {
        if (p < 0) { this.cellsDirty = true; this.cellBox = null; return; }
        const W = this.layout.W, x = p % W, y = (p - x) / W;
        if (this.cellsDirty && !this.cellBox) return;  // everything already
        const b = this.cellBox;
        if (!this.cellsDirty) { this.cellsDirty = true; this.cellBox = [x, y, x, y]; return; }
        if (x < b[0]) b[0] = x;
        if (y < b[1]) b[1] = y;
        if (x > b[2]) b[2] = x;
        if (y > b[3]) b[3] = y;
    }

    // A draw at the next frame. `full` false: only cells changed since the last draw (a tick of
    // utilization or temperature), so draw() may repaint only the box of screen they cover.
    // `overlay`: what the overlay canvas shows changed (a view change redraws it anyway).
    schedule(full = true, overlay = full) {
        if (full) this.needFull = true;
        if (overlay) this.overlayDirty = true;
        if (this.drawPending) return;
        this.drawPending = true;
        requestAnimationFrame(() => {
            this.drawPending = false;
            const t0 = performance.now();
            this.draw();
            // The tick: the stream frames' decoding (state.js), the cells recoloured, the draw.
            const end = performance.now();
            const recv = perf.receiveWork || 0;
            perf.receiveWork = 0;
            const ms = recv + (this.state.dataWork || 0) + (this.pendingWork || 0) + (end - t0);
            this.state.lastDataWork = recv + (this.state.dataWork || 0);
            // From the arrival of the oldest frame this draw painted to the end of the draw: the
            // decoder's time in the worker and the wait for this thread and the frame included.
            const at = this.patchAt;
            this.patchAt = null;
            this.lastWork = this.pendingWork;
            this.pendingWork = 0;
            this.state.dataWork = 0;
            if (this.complete()) {
                if (perf.hallComplete === null) perf.hallComplete = performance.now();
                perf.ticks.push(ms);
                if (perf.ticks.length > 5000) perf.ticks.splice(0, perf.ticks.length - 5000);
                if (at !== null) {
                    perf.endToEnd = perf.endToEnd || [];
                    if (perf.endToEnd.push(end - at) > 5000) perf.endToEnd.splice(0, perf.endToEnd.length - 5000);
                }
                // Where a tick goes (bench/web): decoding, recolouring, then draw()'s parts.
                // The last entry is when the frame ended (ms since the epoch), for the bench to
                // set beside the kernel's view of the thread.
                if (perf.tickParts && perf.tickParts.length < 5000) perf.tickParts.push([this.state.lastDataWork || 0, this.lastWork || 0, ...(this.drawParts || [0, 0, 0]), performance.timeOrigin + performance.now()]);
            }
        });
    }

    // The map is complete once the layout and the first GPU snapshots are in.
    complete() {
        const s = this.state.snapshots;
        return !!this.layout && s.has('gpu.util') && s.has('gpu.health') && !!this.state.legendsLoaded;
    }

    resize() {
        const dpr = window.devicePixelRatio || 1;
        const w = Math.max(1, Math.round(this.canvas.clientWidth * dpr));
        const h = Math.max(1, Math.round(this.canvas.clientHeight * dpr));
        if (this.canvas.width !== w || this.canvas.height !== h) {
            this.canvas.width = w;
            this.canvas.height = h;
            this.overlay.width = w;
            this.overlay.height = h;
            if (!this.view.userMoved) this.view.fitted = false;
            this.dirty = true;
            this.schedule();
        }
    }

    fit() {
        if (!this.layout) return;
        const dpr = window.devicePixelRatio || 1;
        const cw = this.canvas.width / dpr, ch = this.canvas.height / dpr;
        const pad = 12;
        const s = Math.max(0.05, Math.min((cw - 2 * pad) / this.layout.W, (ch - 2 * pad - 14) / this.layout.H));
        this.view.scale = s;
        this.view.ox = (cw - this.layout.W * s) / 2;
        this.view.oy = (ch - this.layout.H * s) / 2 + 7;
        this.view.fitted = true;
        this.view.userMoved = false;
        this.dirty = true;
        this.schedule();
        this.viewChanged();
    }

    viewChanged() {
        if (this.onView) this.onView(this.viewParam());
    }

    // The view as a URL parameter: the world point at the canvas centre and the scale
    // ("fit" when the map is fitted), so a reload or a shared link shows the same picture.
    viewParam() {
        if (!this.layout || !this.view.userMoved) return null;
        const cw = this.canvas.clientWidth, ch = this.canvas.clientHeight;
        const cx = (cw / 2 - this.view.ox) / this.view.scale, cy = (ch / 2 - this.view.oy) / this.view.scale;
        return `${cx.toFixed(2)},${cy.toFixed(2)},${this.view.scale.toFixed(4)}`;
    }

    // Restores viewParam(); false when the layout is not there yet or the text is not a view.
    restoreView(text) {
        if (!this.layout || !text) return false;
        const [cx, cy, sc] = String(text).split(',').map(Number);
        if (![cx, cy, sc].every(Number.isFinite) || sc <= 0) return false;
        const cw = this.canvas.clientWidth, ch = this.canvas.clientHeight;
        const s = Math.min(64, Math.max(0.05, sc));
        this.view.scale = s;
        this.view.ox = cw / 2 - cx * s;
        this.view.oy = ch / 2 - cy * s;
        this.view.fitted = true;
        this.view.userMoved = true;
        this.dirty = true;
        this.schedule();
        return true;
    }

    zoomToRack(name) {
        const r = this.state.rackByName.get(name);
        if (!r || !this.layout) return;
        const rr = this.layout.rackRect[r.index];
        if (!rr) return;
        const cw = this.canvas.clientWidth, ch = this.canvas.clientHeight;
        const s = Math.max(this.view.scale, Math.min(24, Math.min(cw, ch) / 12));
        this.view.scale = s;
        this.view.ox = cw / 2 - (rr.x + rr.w / 2) * s;
        this.view.oy = ch / 2 - (rr.y + rr.h / 2) * s;
        this.view.fitted = true;
        this.view.userMoved = true;
        this.dirty = true;
        this.schedule();
        this.viewChanged();
    }

    select(name) {
        this.selected = name;
        this.dirty = true;
        this.schedule(false, true);
    }

    draw() {
        const c = this.canvas, ctx = c.getContext('2d');
        const dpr = window.devicePixelRatio || 1;
        if (!this.layout) {
            ctx.setTransform(1, 0, 0, 1, 0, 0);
            ctx.fillStyle = css(...kBackground);
            ctx.fillRect(0, 0, c.width, c.height);
            ctx.fillStyle = '#bbb';
            ctx.font = `${14 * dpr}px sans-serif`;
            ctx.fillText(this.state.hall ? 'The hall has no racks' : 'Loading the hall layout…', 20 * dpr, 30 * dpr);
            this.overlay.getContext('2d').clearRect(0, 0, this.overlay.width, this.overlay.height);
            return;
        }
        if (!this.view.fitted) this.fit();
        const { scale, ox, oy } = this.view;
        const L = this.layout;
        // Only cells changed, in one box, and the view is the last draw's: everything is drawn
        // as always but clipped to that box on screen, so the rest of the canvas (the last
        // draw's pixels, which nothing changed) is not painted again. In Firefox the scaled
        // drawImage of the whole 98k hall was most of a tick (rasterised on the page's thread).
        let b = this.cellsDirty !== false ? this.cellBox : null;
        const all = this.cellsDirty && !this.cellBox;
        if (this.patchBox && !all) {
            const q = this.patchBox;
            b = b ? [Math.min(b[0], q[0]), Math.min(b[1], q[1]), Math.max(b[2], q[2]), Math.max(b[3], q[3])] : q;
        }
        const same = this.lastView && this.lastView[0] === scale && this.lastView[1] === ox && this.lastView[2] === oy &&
            this.lastView[3] === c.width && this.lastView[4] === c.height;
        // Nothing of the cells to draw (a halo's pulse, a selection, new failures): only the
        // overlay canvas is drawn.
        if (same && !this.needFull && !this.cellsDirty && !b) {
            this.drawParts = [0, 0, this.overlayDirty ? this.drawOverlay(dpr, scale, ox, oy, L) : 0];
            return;
        }
        const clip = !this.needFull && same && b ? [Math.floor((ox + b[0] * scale) * dpr) - 1, Math.floor((oy + b[1] * scale) * dpr) - 1,
            Math.ceil((ox + (b[2] + 1) * scale) * dpr) + 1, Math.ceil((oy + (b[3] + 1) * scale) * dpr) + 1] : null;
        this.needFull = false;
        this.lastView = [scale, ox, oy, c.width, c.height];
        this.lastClip = clip;  // tests and bench: the last draw's box (device px), null for all
        if (clip) this.partialDraws = (this.partialDraws || 0) + 1;
        ctx.save();
        if (clip) {
            ctx.setTransform(1, 0, 0, 1, 0, 0);
            ctx.beginPath();
            ctx.rect(clip[0], clip[1], clip[2] - clip[0], clip[3] - clip[1]);
            ctx.clip();
        }
        this.drawInside(ctx, c, dpr, scale, ox, oy, L);
        ctx.restore();
        if (this.overlayDirty || !same) this.drawParts[2] += this.drawOverlay(dpr, scale, ox, oy, L);
    }

    // The overlay canvas, whole: loomd's failures, the selected rack, the job's racks and name,
    // the stale text. Returns the ms it took.
    drawOverlay(dpr, scale, ox, oy, L) {
        const t0 = performance.now();
        const c = this.overlay, ctx = c.getContext('2d');
        ctx.setTransform(1, 0, 0, 1, 0, 0);
        ctx.clearRect(0, 0, c.width, c.height);
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        this.drawFailures(ctx, L, scale, ox, oy, this.state.failureFilter);
        if (this.selected) {
            const r = this.state.rackByName.get(this.selected);
            const rr = r && L.rackRect[r.index];
            if (rr) {
                ctx.strokeStyle = 'rgb(0,229,255)';
                ctx.lineWidth = 2;
                ctx.strokeRect(ox + rr.x * scale - 2, oy + rr.y * scale - 2, rr.w * scale + 4, rr.h * scale + 4);
            }
        }
        if (this.highlight) {
            ctx.strokeStyle = 'rgb(0,229,255)';
            ctx.lineWidth = 2;
            for (const r of this.highlightRacks) {
                const rr = L.rackRect[r];
                if (rr) ctx.strokeRect(ox + rr.x * scale - 1.5, oy + rr.y * scale - 1.5, rr.w * scale + 3, rr.h * scale + 3);
            }
            ctx.font = 'bold 13px sans-serif';
            ctx.textBaseline = 'bottom';
            const tw = ctx.measureText(this.highlightLabel).width;
            const cw = c.width / dpr, ch = c.height / dpr;
            ctx.fillStyle = 'rgba(20,20,26,0.88)';
            ctx.fillRect(cw - tw - 24, ch - 30, tw + 16, 24);
            ctx.fillStyle = 'rgb(0,229,255)';
            ctx.fillText(this.highlightLabel, cw - tw - 16, ch - 11);
        }
        if (this.state.stale) this.drawStaleText(ctx, c.width / dpr, c.height / dpr);
        this.overlayDirty = false;
        this.overlayDraws = (this.overlayDraws || 0) + 1;
        return performance.now() - t0;
    }

    drawInside(ctx, c, dpr, scale, ox, oy, L) {
        ctx.setTransform(1, 0, 0, 1, 0, 0);
        ctx.fillStyle = css(...kBackground);
        ctx.fillRect(0, 0, c.width, c.height);
        const t0 = performance.now();
        if (this.cellsDirty !== false) {
            // Only when cells changed (not for a pulse), and only the box that did.
            const b = this.cellBox;
            if (b) this.cctx.putImageData(this.image, 0, 0, b[0], b[1], b[2] - b[0] + 1, b[3] - b[1] + 1);
            else this.cctx.putImageData(this.image, 0, 0);
            this.cellsDirty = false;
            this.cellBox = null;
        }
        // Then the decoder's patches, in the order painted (newer than this thread's image).
        for (const p of this.patches) {
            this.cctx.putImageData(new ImageData(new Uint8ClampedArray(p.data.buffer, p.data.byteOffset, p.w * p.h * 4), p.w, p.h), p.x, p.y);
        }
        if (this.patches.length) this.patchesPut = (this.patchesPut || 0) + this.patches.length;
        this.patches = [];
        this.patchBox = null;
        const t1 = performance.now();
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        ctx.imageSmoothingEnabled = false;
        ctx.drawImage(this.cells, 0, 0, L.W, L.H, ox, oy, L.W * scale, L.H * scale);
        const t2 = performance.now();
        if (scale >= kOutlineScale) this.drawRackGrid(ctx, L, scale, ox, oy);
        // Zone labels.
        ctx.fillStyle = '#c8c8d0';
        ctx.font = 'bold 12px sans-serif';
        ctx.textBaseline = 'bottom';
        for (const z of L.zones) ctx.fillText(z.name, ox + z.x * scale, oy + z.y * scale - 2);
        const filter = this.state.failureFilter;
        if (filter) {
            // Only one kind shown: everything else steps back.
            ctx.fillStyle = 'rgba(0,0,0,0.55)';
            ctx.fillRect(0, 0, c.width / dpr, c.height / dpr);
        }
        if (this.state.stale) this.drawStale(ctx, c.width / dpr, c.height / dpr);
        this.dirty = false;
        this.drawParts = [t1 - t0, t2 - t1, performance.now() - t2];  // put, scale, overlays
    }

    drawRackGrid(ctx, L, scale, ox, oy) { drawRackGrid(this, ctx, L, scale, ox, oy); }
    drawStale(ctx, w, h) { drawStale(ctx, w, h); }
    drawStaleText(ctx, w, h) { drawStaleText(this.state, ctx, w, h); }
    drawFailures(ctx, L, scale, ox, oy, filter) { if (drawFailures(this, ctx, L, scale, ox, oy, filter)) this.animate(); }

    // Keeps redrawing at ~15 fps while a halo pulses.
    animate() {
        if (this.animTimer) return;
        this.animTimer = setTimeout(() => { this.animTimer = null; this.schedule(false, true); }, 66);
    }

    // Canvas (CSS px) -> {gpu, rack} under it.
    hit(x, y) {
        const L = this.layout;
        if (!L) return {};
        const cx = Math.floor((x - this.view.ox) / this.view.scale), cy = Math.floor((y - this.view.oy) / this.view.scale);
        if (cx < 0 || cy < 0 || cx >= L.W || cy >= L.H) return {};
        const p = cy * L.W + cx;
        if (!L.pixelRack) this.buildHitMaps();
        return { gpu: L.pixelGpu[p], rack: L.pixelRack[p] };
    }

    // Cell -> GPU and cell -> rack (-1 for a gap), for the pointer.
    buildHitMaps() {
        const L = this.layout, W = L.W;
        L.pixelGpu = new Int32Array(Math.max(1, W * L.H)).fill(-1);
        L.pixelRack = new Int32Array(Math.max(1, W * L.H)).fill(-1);
        L.rackRect.forEach((rr, i) => {
            if (!rr) return;
            for (let yy = 0; yy < rr.h; ++yy) L.pixelRack.fill(i, (rr.y + yy) * W + rr.x, (rr.y + yy) * W + rr.x + rr.w);
        });
        L.gpuPixel.forEach((p, i) => { if (p >= 0) L.pixelGpu[p] = i; });
    }

    // The picture both canvases make together (the cells under the overlays), as RGBA bytes of
    // a box in device px: what the tests read, as a screen shows it.
    composedPixels(x0 = 0, y0 = 0, w = this.canvas.width, h = this.canvas.height) {
        const o = document.createElement('canvas');
        o.width = Math.max(1, w);
        o.height = Math.max(1, h);
        const ctx = o.getContext('2d');
        ctx.drawImage(this.canvas, -x0, -y0);
        ctx.drawImage(this.overlay, -x0, -y0);
        return ctx.getImageData(0, 0, o.width, o.height).data;
    }

    // Where a GPU / rack is drawn, in CSS px from the canvas' top left (tests and benchmarks).
    gpuPoint(name) {
        const i = this.state.gpuIndex.get(name);
        if (i === undefined || !this.layout) return null;
        const p = this.layout.gpuPixel[i];
        return { x: this.view.ox + ((p % this.layout.W) + 0.5) * this.view.scale,
                 y: this.view.oy + (Math.floor(p / this.layout.W) + 0.5) * this.view.scale };
    }
    rackPoint(name) {
        const r = this.state.rackByName.get(name);
        const rr = r && this.layout && this.layout.rackRect[r.index];
        if (!rr) return null;
        return { x: this.view.ox + (rr.x + rr.w / 2) * this.view.scale, y: this.view.oy + (rr.y + rr.h / 2) * this.view.scale };
    }

    installInput() {
        const c = this.canvas;
        let drag = null;
        c.addEventListener('wheel', (e) => {
            e.preventDefault();
            const f = Math.exp(-e.deltaY * 0.0015);
            const s = Math.min(64, Math.max(0.05, this.view.scale * f));
            const k = s / this.view.scale;
            this.view.ox = e.offsetX - (e.offsetX - this.view.ox) * k;
            this.view.oy = e.offsetY - (e.offsetY - this.view.oy) * k;
            this.view.scale = s;
            this.view.userMoved = true;
            this.schedule();
            this.viewChanged();
        }, { passive: false });
        c.addEventListener('pointerdown', (e) => {
            drag = { x: e.clientX, y: e.clientY, ox: this.view.ox, oy: this.view.oy, moved: false };
            c.setPointerCapture(e.pointerId);
        });
        c.addEventListener('pointermove', (e) => {
            if (drag && (e.buttons & 1)) {
                const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
                if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
                if (drag.moved) {
                    this.view.ox = drag.ox + dx;
                    this.view.oy = drag.oy + dy;
                    this.view.userMoved = true;
                    this.schedule();
                }
                return;
            }
            this.hover(e.offsetX, e.offsetY);
        });
        c.addEventListener('pointerup', (e) => {
            const d = drag;
            drag = null;
            if (d && d.moved) this.viewChanged();
            if (d && !d.moved) {
                const { rack } = this.hit(e.offsetX, e.offsetY);
                if (this.onSelect) this.onSelect(rack >= 0 && rack !== undefined ? this.state.hall.racks[rack].name : null);
            }
        });
        c.addEventListener('pointerleave', () => { this.tip.hidden = true; });
    }

    hover(x, y) {
        const { gpu, rack } = this.hit(x, y);
        const st = this.state;
        if (rack === undefined || rack < 0) {
            this.tip.hidden = true;
            return;
        }
        const r = st.hall.racks[rack];
        clear(this.tip);
        this.tip.append(el('b', {}, r.name), ' ', r.state);
        if (gpu >= 0) {
            const u = st.array('gpu.util')[gpu], t = st.array('gpu.temp')[gpu], h = st.array('gpu.health')[gpu];
            this.tip.append(el('br'), st.hall.gpus[gpu], el('br'),
                `util ${u === 255 ? '–' : u + ' %'} · temp ${t === 255 ? '–' : t + ' °C'} · ${kHealthNames[h] || h}`);
        }
        this.tip.style.left = Math.min(x + 14, this.canvas.clientWidth - 220) + 'px';
        this.tip.style.top = (y + 14) + 'px';
        this.tip.hidden = false;
    }
}
