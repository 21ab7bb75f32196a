// The hall map: every GPU of the hall as one cell of an image the size of the hall in cells
// (24,576 GPUs at 24k: a few hundred thousand pixels), recoloured in place for the entries a
// delta changed, and drawn scaled onto the visible canvas with zoom and pan. Failures (GPU
// health failed, quarantined, warning) are drawn over every colour mode, and as markers big
// enough to see when the map is zoomed out.
import { el, clear, rackLink } from './dom.js';
import { api, seg } from './api.js';
import { luts, words, kRackStates, rackReportsData, kHealthNames, kBackground, css,
         kFailed, kQuarantined, kDegraded } from './palette.js';

const kRackCols = 8;   // GPUs across a rack (a host per line of 8)
const kRackGap = 1;    // cells between racks in a row
const kRowGap = 2;     // cells between rows
const kZoneGap = 8;    // cells between zones

export const perf = (window.loomPerf = window.loomPerf || { ticks: [], hallComplete: null });

export class HallMap {
    constructor(state, host, { onSelect } = {}) {
        this.state = state;
        this.onSelect = onSelect;
        this.mode = 'util';
        this.canvas = el('canvas', { class: 'hall-canvas', 'aria-label': 'hall map' });
        this.tip = el('div', { class: 'tooltip', hidden: true });
        this.banner = el('div', { class: 'map-banner' });
        host.append(this.canvas, this.tip, this.banner);
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
        ];
        if (state.hall) this.buildLayout();
        window.loomHall = this;
    }

    destroy() {
        this.unsub.forEach((u) => u());
        this.resizeObserver.disconnect();
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
        const n = h.gpus.length;
        const gpuPixel = new Int32Array(n).fill(-1);
        const pixelGpu = new Int32Array(Math.max(1, W * H)).fill(-1);
        const pixelRack = new Int32Array(Math.max(1, W * H)).fill(-1);
        const rackRect = new Array(h.racks.length);
        zones.forEach((z, zi) => {
            z.x = (zi % best) * (zw + kZoneGap);
            z.y = Math.floor(zi / best) * (zh + kZoneGap);
            z.rows.forEach((row, line) => {
                for (const r of racksByRow.get(row.name)) {
                    const x0 = z.x + r.position * (kRackCols + kRackGap), y0 = z.y + line * (rackH + kRowGap);
                    rackRect[r.index] = { x: x0, y: y0, w: kRackCols, h: rackH };
                    for (let yy = 0; yy < rackH; ++yy)
                        for (let xx = 0; xx < kRackCols; ++xx) pixelRack[(y0 + yy) * W + x0 + xx] = r.index;
                    for (let k = 0; k < r.gpuCount; ++k) {
                        const p = (y0 + Math.floor(k / kRackCols)) * W + x0 + (k % kRackCols);
                        gpuPixel[r.gpuOffset + k] = p;
                        pixelGpu[p] = r.gpuOffset + k;
                    }
                }
            });
        });
        this.layout = { W, H, zones, gpuPixel, pixelGpu, pixelRack, rackRect };
        this.cells.width = Math.max(1, W);
        this.cells.height = Math.max(1, H);
        this.cctx = this.cells.getContext('2d');
        this.image = this.cctx.createImageData(Math.max(1, W), Math.max(1, H));
        this.px = new Uint32Array(this.image.data.buffer);
        for (let p = 0; p < W * H; ++p) if (pixelRack[p] >= 0) this.px[p] = words.floor;
        this.view.fitted = false;
        this.recolourAll();
    }

    colourOf(i) {
        const st = this.state;
        const health = st.array('gpu.health')[i];
        if (health === 2) return words.failed;
        if (health === 3) return words.quarantined;
        const rack = st.hall.racks[st.gpuRack[i]];
        if (this.mode === 'provisioning') {
            const s = kRackStates.indexOf(rack ? rack.state : '');
            if (health === 1) return words.degraded;
            return luts.provisioning.words[s < 0 ? 255 : s];
        }
        if (!rack || !rackReportsData(rack.state)) return words.noData;
        if (health === 1) return words.degraded;
        if (this.mode === 'health') return luts.health.words[health];
        if (this.mode === 'temp') return luts.temp.words[st.array('gpu.temp')[i]];
        return luts.util.words[st.array('gpu.util')[i]];
    }

    recolourAll() {
        if (!this.layout) return;
        const { gpuPixel } = this.layout;
        for (let i = 0; i < gpuPixel.length; ++i) if (gpuPixel[i] >= 0) this.px[gpuPixel[i]] = this.colourOf(i);
        this.collectFailed();
        this.dirty = true;
        this.schedule();
    }

    recolourRack(name) {
        const r = this.state.rackByName.get(name);
        if (!r || !this.layout) return;
        for (let k = 0; k < r.gpuCount; ++k) {
            const i = r.gpuOffset + k, p = this.layout.gpuPixel[i];
            if (p >= 0) this.px[p] = this.colourOf(i);
        }
        this.dirty = true;
        this.schedule();
    }

    collectFailed() {
        const health = this.state.array('gpu.health');
        const f = [];
        for (let i = 0; i < health.length; ++i) if (health[i] >= 1 && health[i] <= 3) f.push(i);
        this.failed = f;
    }

    onData({ topic, changed }) {
        if (!this.layout || !topic.startsWith('gpu.')) return;
        const t0 = performance.now();
        const { gpuPixel } = this.layout;
        if (changed === null) {
            for (let i = 0; i < gpuPixel.length; ++i) if (gpuPixel[i] >= 0) this.px[gpuPixel[i]] = this.colourOf(i);
        } else {
            for (const i of changed) if (gpuPixel[i] >= 0) this.px[gpuPixel[i]] = this.colourOf(i);
        }
        if (topic === 'gpu.health') this.collectFailed();
        this.dirty = true;
        this.pendingWork = (this.pendingWork || 0) + (performance.now() - t0);
        this.schedule();
    }

    schedule() {
        if (this.drawPending) return;
        this.drawPending = true;
        requestAnimationFrame(() => {
            this.drawPending = false;
            const t0 = performance.now();
            this.draw();
            const ms = (this.pendingWork || 0) + (performance.now() - t0);
            this.pendingWork = 0;
            if (this.complete()) {
                if (perf.hallComplete === null) perf.hallComplete = performance.now();
                perf.ticks.push(ms);
                if (perf.ticks.length > 5000) perf.ticks.splice(0, perf.ticks.length - 5000);
            }
        });
    }

    // The map is complete once the layout and the first GPU snapshots are in.
    complete() {
        const s = this.state.snapshots;
        return !!this.layout && s.has('gpu.util') && s.has('gpu.health');
    }

    resize() {
        const dpr = window.devicePixelRatio || 1;
        const w = Math.max(1, Math.round(this.canvas.clientWidth * dpr));
        const h = Math.max(1, Math.round(this.canvas.clientHeight * dpr));
        if (this.canvas.width !== w || this.canvas.height !== h) {
            this.canvas.width = w;
            this.canvas.height = h;
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
    }

    zoomToRack(name) {
        const r = this.state.rackByName.get(name);
        if (!r || !this.layout) return;
        const rr = this.layout.rackRect[r.index];
        if (!rr) return;
        const dpr = window.devicePixelRatio || 1;
        const cw = this.canvas.width / dpr, ch = this.canvas.height / dpr;
        const s = Math.max(this.view.scale, Math.min(24, Math.min(cw, ch) / 12));
        this.view.scale = s;
        this.view.ox = cw / 2 - (rr.x + rr.w / 2) * s;
        this.view.oy = ch / 2 - (rr.y + rr.h / 2) * s;
        this.view.fitted = true;
        this.view.userMoved = true;
        this.dirty = true;
        this.schedule();
    }

    select(name) {
        this.selected = name;
        this.dirty = true;
        this.schedule();
    }

    draw() {
        const c = this.canvas, ctx = c.getContext('2d');
        const dpr = window.devicePixelRatio || 1;
        ctx.setTransform(1, 0, 0, 1, 0, 0);
        ctx.fillStyle = css(...kBackground);
        ctx.fillRect(0, 0, c.width, c.height);
        if (!this.layout) {
            ctx.fillStyle = '#bbb';
            ctx.font = `${14 * dpr}px sans-serif`;
            ctx.fillText(this.state.hall ? 'The hall has no racks' : 'Loading the hall layout…', 20 * dpr, 30 * dpr);
            return;
        }
        if (!this.view.fitted) this.fit();
        const { scale, ox, oy } = this.view;
        const L = this.layout;
        this.cctx.putImageData(this.image, 0, 0);
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        ctx.imageSmoothingEnabled = false;
        ctx.drawImage(this.cells, 0, 0, L.W, L.H, ox, oy, L.W * scale, L.H * scale);
        // Zone labels.
        ctx.fillStyle = '#c8c8d0';
        ctx.font = '12px sans-serif';
        ctx.textBaseline = 'bottom';
        for (const z of L.zones) ctx.fillText(z.name, ox + z.x * scale, oy + z.y * scale - 2);
        // Failures on top, at least 5 px wide so one GPU shows on a 24k map at fit.
        if (scale < 5) {
            const m = Math.max(5, scale * 1.6);
            const health = this.state.array('gpu.health');
            for (const i of this.failed) {
                const p = L.gpuPixel[i];
                if (p < 0) continue;
                const x = ox + ((p % L.W) + 0.5) * scale, y = oy + (Math.floor(p / L.W) + 0.5) * scale;
                const h = health[i];
                ctx.fillStyle = css(...(h === 2 ? kFailed : h === 3 ? kQuarantined : kDegraded));
                ctx.fillRect(x - m / 2, y - m / 2, m, m);
            }
        }
        if (scale >= 6) {
            // Racks outlined when there is room for it.
            ctx.strokeStyle = 'rgba(12,12,14,0.9)';
            ctx.lineWidth = 1;
            for (const rr of L.rackRect) if (rr) ctx.strokeRect(ox + rr.x * scale, oy + rr.y * scale, rr.w * scale, rr.h * scale);
        }
        if (this.selected) {
            const r = this.state.rackByName.get(this.selected);
            const rr = r && L.rackRect[r.index];
            if (rr) {
                ctx.strokeStyle = 'rgb(0,229,255)';
                ctx.lineWidth = 2;
                ctx.strokeRect(ox + rr.x * scale - 2, oy + rr.y * scale - 2, rr.w * scale + 4, rr.h * scale + 4);
            }
        }
        this.dirty = false;
    }

    // Canvas (CSS px) -> {gpu, rack} under it.
    hit(x, y) {
        const L = this.layout;
        if (!L) return {};
        const cx = Math.floor((x - this.view.ox) / this.view.scale), cy = Math.floor((y - this.view.oy) / this.view.scale);
        if (cx < 0 || cy < 0 || cx >= L.W || cy >= L.H) return {};
        const p = cy * L.W + cx;
        return { gpu: L.pixelGpu[p], rack: L.pixelRack[p] };
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

// The detail of one rack beside the map: state, hosts and GPUs live, labels, open events, and
// the operator's actions (only for a token that may use them).
export class RackPanel {
    constructor(state, host) {
        this.state = state;
        this.host = host;
        this.name = null;
        this.unsub = [
            state.on('data', () => this.refreshLive()),
            state.on('rack', (n) => { if (n === this.name) this.render(); }),
        ];
        this.liveTimer = null;
    }

    destroy() { this.unsub.forEach((u) => u()); }

    async show(name) {
        if (name !== this.name) this.gpu = null;
        this.name = name;
        this.details = null;
        this.events = null;
        this.message = '';
        this.render();
        if (!name) return;
        try {
            const [details, events] = await Promise.all([
                api('racks/' + seg(name)),
                api('events?state=open&rack=' + encodeURIComponent(name) + '&limit=50'),
            ]);
            if (this.name !== name) return;
            this.details = details;
            this.events = events.items || [];
        } catch (e) {
            if (this.name !== name) return;
            this.message = e.message;
        }
        this.render();
    }

    render() {
        const h = this.host;
        clear(h);
        if (!this.name) {
            h.hidden = true;
            return;
        }
        h.hidden = false;
        const st = this.state;
        const r = st.rackByName.get(this.name);
        h.append(el('div', { class: 'panel-head' }, el('h2', { class: 'rack-name' }, this.name),
            el('a', { href: '#/hall', class: 'close', title: 'close' }, '×')));
        if (!r) {
            h.append(el('p', { class: 'error' }, 'No rack of that name in the hall.'));
            return;
        }
        h.append(el('p', {}, 'State ', el('b', { class: 'rack-state' }, r.state), ' · row ', r.row,
                    ' · position ', String(r.position), r.rtsw ? [' · ', el('a', { href: '#/switch/' + encodeURIComponent(r.rtsw) }, r.rtsw)] : null));
        if (st.canOperate()) {
            const reason = el('input', { class: 'reason', placeholder: 'reason (required to fail)' });
            const act = (action) => async () => {
                try {
                    const out = await api('racks/' + seg(this.name) + '/' + action, { method: 'POST', body: { reason: reason.value } });
                    this.message = `${out.from} → ${out.to}`;
                    r.state = out.to;
                    st.emit('rack', this.name);
                } catch (e) {
                    this.message = `${action}: ${e.message}`;
                    this.render();
                }
            };
            h.append(el('div', { class: 'actions operator-only' },
                ['advance', 'drain', 'fail', 'repair'].map((a) => el('button', { type: 'button', class: 'op-' + a, onclick: act(a) }, a)),
                reason));
        }
        if (this.message) h.append(el('p', { class: 'message' }, this.message));
        if (this.details && this.details.labels && Object.keys(this.details.labels).length) {
            h.append(el('h3', {}, 'Labels'), el('ul', { class: 'labels' },
                Object.entries(this.details.labels).map(([k, v]) => el('li', {}, el('code', {}, k), ' = ', el('span', { class: 'label-value' }, v)))));
        }
        this.gpuTable = el('table', { class: 'gpus' });
        this.gpuBox = el('div', { class: 'gpu-box' });
        h.append(el('h3', {}, 'GPUs'), this.gpuTable, this.gpuBox);
        this.refreshLive();
        if (this.gpu && this.gpu.startsWith(this.name + '-')) this.showGpu(this.gpu);
        if (this.events) {
            h.append(el('h3', {}, `Open events (${this.events.length})`));
            h.append(el('ul', { class: 'rack-events' }, this.events.map((e) =>
                el('li', { class: 'sev-' + e.severity }, el('a', { href: '#/events/' + e.id }, e.message)))));
        }
    }

    refreshLive() {
        if (!this.name || !this.gpuTable) return;
        const st = this.state, r = st.rackByName.get(this.name);
        if (!r) return;
        const u = st.array('gpu.util'), t = st.array('gpu.temp'), hh = st.array('gpu.health');
        const rows = [el('tr', {}, el('th', {}, 'GPU'), el('th', {}, 'util'), el('th', {}, 'temp'), el('th', {}, 'health'))];
        for (let k = 0; k < r.gpuCount; ++k) {
            const i = r.gpuOffset + k;
            const name = st.hall.gpus[i];
            rows.push(el('tr', { class: 'health-' + (kHealthNames[hh[i]] || 'unknown') + (name === this.gpu ? ' selected' : '') },
                el('td', {}, el('a', { href: '#/rack/' + encodeURIComponent(this.name), class: 'gpu-link',
                                       onclick: (e) => { e.preventDefault(); this.showGpu(name); } }, name)), el('td', {}, u[i] === 255 ? '–' : u[i] + ' %'),
                el('td', {}, t[i] === 255 ? '–' : t[i] + ' °C'), el('td', {}, kHealthNames[hh[i]] || String(hh[i]))));
        }
        clear(this.gpuTable).append(...rows);
    }

    // One GPU's latest sample from the telemetry hub (GET /api/v1/telemetry/gpus/<name>).
    async showGpu(name) {
        this.gpu = name;
        this.refreshLive();
        if (!this.gpuBox) return;
        clear(this.gpuBox).append(el('p', {}, 'loading ', name, '…'));
        let g;
        try {
            g = await api('telemetry/gpus/' + seg(name));
        } catch (e) {
            clear(this.gpuBox).append(el('p', { class: 'error' }, e.message));
            return;
        }
        if (this.gpu !== name) return;
        const v = (x, unit = '') => (x === null || x === undefined ? '–' : `${Math.round(x * 10) / 10}${unit}`);
        const fields = [['utilization', v(g.util, ' %')], ['temperature', v(g.temp, ' °C')],
            ['memory temperature', v(g.memTemp, ' °C')], ['power', v(g.power, ' W')],
            ['framebuffer used / free', `${v(g.fbUsedMiB)} / ${v(g.fbFreeMiB)} MiB`], ['SM clock', v(g.smClock, ' MHz')],
            ['last XID', v(g.xid)], ['ECC single / double bit', `${v(g.eccSbe)} / ${v(g.eccDbe)}`],
            ['NVLink CRC errors', v(g.nvlinkCrc)], ['PCIe replays', v(g.pcieReplay)]];
        clear(this.gpuBox).append(el('h3', { class: 'gpu-name' }, name),
            el('table', { class: 'gpu-detail' }, fields.map(([k, x]) => el('tr', {}, el('th', {}, k), el('td', {}, x)))));
    }
}

export function hallView(state, main, route, nav) {
    const wrap = el('div', { class: 'hall-view' });
    const bar = el('div', { class: 'toolbar' });
    const mapHost = el('div', { class: 'map-host' });
    const side = el('aside', { class: 'side', hidden: true });
    wrap.append(bar, el('div', { class: 'hall-body' }, mapHost, side));
    main.append(wrap);
    const map = new HallMap(state, mapHost, {
        onSelect: (name) => nav(name ? '#/rack/' + encodeURIComponent(name) : '#/hall'),
    });
    const panel = new RackPanel(state, side);
    const modes = [['util', 'Utilization'], ['temp', 'Temperature'], ['health', 'Health'], ['provisioning', 'Provisioning']];
    const select = el('select', { class: 'mode', onchange: () => map.setMode(select.value) },
        modes.map(([v, t]) => el('option', { value: v }, t)));
    bar.append(el('label', {}, 'Colour by ', select), el('button', { type: 'button', onclick: () => map.fit() }, 'Fit'),
        el('span', { class: 'legend' }, legend()));
    let current = null;
    const apply = (r) => {
        const name = r.kind === 'rack' ? r.name : null;
        if (name !== current) {
            current = name;
            map.select(name);
            panel.show(name);
            if (name) {
                if (map.layout) map.zoomToRack(name);
                else map.pendingZoom = name;
            }
        }
    };
    const unsubHall = state.on('hall', () => {
        if (map.pendingZoom && map.layout) { map.zoomToRack(map.pendingZoom); map.pendingZoom = null; }
        if (current) panel.render();
    });
    apply(route);
    return {
        route: apply,
        destroy() { unsubHall(); map.destroy(); panel.destroy(); },
        map,
    };
}

function legend() {
    return [['failed', kFailed], ['quarantined', kQuarantined], ['warning', kDegraded]].map(([t, c]) =>
        el('span', { class: 'swatch-item' }, el('span', { class: 'swatch', dataset: { c: t } }), t));
}
