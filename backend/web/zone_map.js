// One zone of the fabric drawn as loom-console draws its drill-down (desktop_ui/src/
// fabric_map_paint.cpp): the CTSWs' uplinks as a band of cells (a column per CTSW, a row per
// uplink), the CTSW tiles under it, then every CTSW–RTSW link as a cell (a row per CTSW, a
// column per RTSW) over the RTSW tiles, rack names under them. Each cell is one link, coloured
// by its live state from the stream (link.health, link.util): down red, degraded amber,
// drained / not in service grey (a state, never red), up by utilization. A switch tile is
// drawn by loomd's word for it (GET /api/v1/fabric/topology `state`), its failure list and its
// links' words: palette.js switchTileColour, the console's rule.
import { el } from './dom.js';
import { css, kDegraded, kFailed, kNoData, kBackground, kLinkHealthNames, linkHealthColour, rampCss, switchTileColour, switchLinksBad, failedSwitchNames } from './palette.js';

const kLeft = 70;  // the tier labels' column

export class ZoneMap {
    constructor(state, host, zone, { onSwitch } = {}) {
        this.state = state;
        this.zone = zone;
        this.onSwitch = onSwitch;
        this.canvas = el('canvas', { class: 'zone-map', 'aria-label': `zone ${zone} links` });
        this.tip = el('div', { class: 'matrix-tip' }, 'Point at a link or a switch; click it to open the switch.');
        host.append(this.tip, this.canvas);
        this.canvas.addEventListener('mousemove', (e) => {
            const h = this.hit(e.offsetX, e.offsetY);
            this.tip.textContent = h ? h.tip() : '';
        });
        this.canvas.addEventListener('click', (e) => {
            const h = this.hit(e.offsetX, e.offsetY);
            if (h && h.sw && this.onSwitch) this.onSwitch(h.sw);
        });
        this.build();
    }

    // Which switches and links are the zone's (from the hall: its switches, each link's ends).
    build() {
        const h = this.state.hall;
        this.ok = false;
        if (!h || !h.linkSwitches) return;
        const { a, b } = h.linkSwitches;
        const inZone = (i) => i >= 0 && h.switches[i].zone === this.zone;
        const role = (i) => (i >= 0 ? h.switches[i].role : '');
        const upperRole = (r) => r === 'ctsw' || r === 'spine';
        const lowerRole = (r) => r === 'rtsw' || r === 'leaf';
        const uppers = [], lowers = [];
        h.switches.forEach((s, i) => {
            if (s.zone !== this.zone) return;
            if (upperRole(s.role)) uppers.push(i);
            else if (lowerRole(s.role)) lowers.push(i);
        });
        const ui = new Map(uppers.map((s, k) => [s, k])), li = new Map(lowers.map((s, k) => [s, k]));
        // CTSW x RTSW: a row per CTSW and per parallel link between the two (dev-small cables
        // two between each pair; 24k and 98k one), a column per RTSW.
        const pairs = new Map();
        const up = uppers.map(() => []);  // each CTSW's uplinks (to a switch outside the tiers below)
        const swLinks = new Map();       // switch -> its links drawn here
        const addSw = (s, l) => { if (!swLinks.has(s)) swLinks.set(s, []); swLinks.get(s).push(l); };
        for (let l = 0; l < a.length; ++l) {
            const sa = a[l], sb = b[l];
            if (!inZone(sa) && !inZone(sb)) continue;
            let u = ui.get(sa), w = li.get(sb);
            if (u === undefined || w === undefined) { u = ui.get(sb); w = li.get(sa); }
            if (u !== undefined && w !== undefined) {
                const key = u * lowers.length + w;
                if (!pairs.has(key)) pairs.set(key, []);
                pairs.get(key).push(l);
                addSw(uppers[u], l); addSw(lowers[w], l);
                continue;
            }
            // An uplink: a CTSW of this zone to a switch of a higher tier (ATSW).
            const cu = ui.has(sa) && !lowerRole(role(sb)) ? ui.get(sa) : ui.has(sb) && !lowerRole(role(sa)) ? ui.get(sb) : undefined;
            if (cu !== undefined && sa >= 0 && sb >= 0) { up[cu].push(l); addSw(uppers[cu], l); }
        }
        const par = Math.max(1, ...[...pairs.values()].map((x) => x.length));
        const m1 = new Int32Array(uppers.length * par * lowers.length).fill(-1);
        for (const [key, links] of pairs) {
            const u = Math.floor(key / lowers.length), w = key % lowers.length;
            links.forEach((l, p) => { m1[(u * par + p) * lowers.length + w] = l; });
        }
        const m2Rows = Math.max(0, ...up.map((x) => x.length));
        this.uppers = uppers; this.lowers = lowers; this.m1 = m1; this.par = par; this.up = up; this.m2Rows = m2Rows;
        this.swLinks = swLinks;
        this.linkCell = new Map();  // link index -> {x, y, w, h} once drawn
        this.ok = uppers.length > 0 || lowers.length > 0;
        this.layout();
        this.draw();
    }

    layout() {
        const width = Math.max(600, Math.min(1800, (this.canvas.parentElement && this.canvas.parentElement.clientWidth) || 1400));
        const avail = width - kLeft - 10;
        const U = this.uppers.length, L = this.lowers.length;
        const c2 = U ? Math.max(4, Math.floor(avail / U)) : 0;
        const m2H = Math.min(160, this.m2Rows * 6);
        const c1 = L ? Math.max(2, Math.floor(avail / L)) : 0;
        const rows = U * this.par;
        const r1 = rows ? Math.max(4, Math.min(18, Math.floor(320 / rows))) : 0;
        const y2 = 24, yc = y2 + m2H + 4, y1 = yc + 18 + 26, yr = y1 + rows * r1 + 4;
        this.geo = { width, c2, m2H, c1, r1, y2, yc, y1, yr, height: yr + 18 + 40 };
        this.canvas.width = Math.max(kLeft + c2 * U, kLeft + c1 * L) + 10;
        this.canvas.height = this.geo.height;
    }

    // A link's colour as the console's cells: down red, degraded amber, drained and not in
    // service grey, up by its utilization (no utilization yet: up green), no data grey.
    linkCss(l) {
        const hb = this.state.array('link.health')[l];
        if (hb === 2) return css(...kFailed);
        if (hb === 1) return css(...kDegraded);
        if (hb === 3 || hb === 4) return css(...linkHealthColour(hb));
        if (hb === 255) return css(...kNoData);
        const u = this.state.array('link.util')[l];
        return u <= 100 ? rampCss(u / 100) : css(...linkHealthColour(0));
    }

    // loomd's words for the switches (GET /api/v1/fabric/topology), by name.
    setTopology(t) {
        this.words = new Map(t && t.switches ? t.switches.map((s) => [s.name, s.state || (s.up ? 'up' : 'down')]) : []);
    }

    // A switch's word (loomd's) and colour, by its index in the hall.
    switchWord(s) {
        return (this.words && this.words.get(this.state.hall.switches[s].name)) || '';
    }

    switchCss(s) {
        const name = this.state.hall.switches[s].name;
        return css(...switchTileColour(this.switchWord(s), this.failedSw ? this.failedSw.has(name) : false,
            this.linksBad ? this.linksBad[s] : 0));
    }

    // Counts of the links drawn, by state, for the heading.
    counts() {
        const health = this.state.array('link.health');
        const c = { links: 0, down: 0, degraded: 0, idle: 0 };
        const add = (l) => {
            if (l < 0) return;
            ++c.links;
            const hb = health[l];
            if (hb === 2) ++c.down; else if (hb === 1) ++c.degraded; else if (hb === 3 || hb === 4) ++c.idle;
        };
        this.m1.forEach(add);
        this.up.forEach((x) => x.forEach(add));
        return c;
    }

    draw() {
        if (!this.ok) return;
        const ctx = this.canvas.getContext('2d');
        const g = this.geo, h = this.state.hall;
        const U = this.uppers.length, L = this.lowers.length;
        this.linksBad = switchLinksBad(h, this.state.array('link.health'));
        this.failedSw = failedSwitchNames(this.state.failures);
        ctx.fillStyle = css(...kBackground);
        ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
        ctx.font = 'bold 12px sans-serif';
        ctx.fillStyle = '#dcdce6';
        const ib = h.fabric === 'infiniband';
        ctx.fillText('uplinks', 6, g.y2 + Math.max(12, g.m2H / 2));
        ctx.fillText(ib ? 'spine' : 'CTSW', 6, g.yc + 13);
        ctx.fillText(ib ? 'leaf' : 'RTSW', 6, g.yr + 13);
        ctx.font = '11px sans-serif';
        ctx.fillText(`${U} × ${L}${this.par > 1 ? ` × ${this.par}` : ''} links (rows: ${ib ? 'spines' : 'CTSWs'}` +
            `${this.par > 1 ? `, ${this.par} links each` : ''}, columns: ${ib ? 'leaves' : 'RTSWs'})`, kLeft, g.y1 - 6);
        this.linkCell.clear();
        // The uplinks band: a column per CTSW, a row per uplink.
        const rh2 = this.m2Rows ? g.m2H / this.m2Rows : 0;
        this.up.forEach((links, u) => links.forEach((l, k) => {
            const r = { x: kLeft + u * g.c2 + 1, y: g.y2 + k * rh2, w: Math.max(1, g.c2 - 2), h: Math.max(1, rh2 - (rh2 > 3 ? 1 : 0)) };
            ctx.fillStyle = this.linkCss(l);
            ctx.fillRect(r.x, r.y, r.w, r.h);
            this.linkCell.set(l, r);
        }));
        // CTSW tiles, named where the name fits.
        this.tiles = [];
        this.uppers.forEach((s, u) => {
            const r = { x: kLeft + u * g.c2 + 1, y: g.yc, w: Math.max(1, g.c2 - 2), h: 18, sw: h.switches[s].name, word: this.switchWord(s) };
            ctx.fillStyle = this.switchCss(s);
            ctx.fillRect(r.x, r.y, r.w, r.h);
            this.tiles.push(r);
            const name = r.sw, short = name.split('-').pop();
            const text = ctx.measureText(name).width + 4 <= r.w ? name : ctx.measureText(short).width + 4 <= r.w ? short : '';
            if (text) { ctx.fillStyle = '#0f0f12'; ctx.fillText(text, r.x + 2, r.y + 13); }
            // The row of its links in the matrix, labelled with it.
            ctx.fillStyle = '#c8c8d0';
            if (g.r1 * this.par >= 10) ctx.fillText(short, 6, g.y1 + u * this.par * g.r1 + Math.min(g.r1 * this.par, 14) - 2);
        });
        // CTSW × RTSW: a cell per link.
        for (let row = 0; row < U * this.par; ++row) {
            for (let w = 0; w < L; ++w) {
                const l = this.m1[row * L + w];
                const last = row % this.par === this.par - 1;  // a gap under each CTSW's rows
                const r = { x: kLeft + w * g.c1, y: g.y1 + row * g.r1, w: Math.max(1, g.c1 - (g.c1 > 3 ? 1 : 0)), h: Math.max(1, g.r1 - (last ? 1 : 0)) };
                ctx.fillStyle = l < 0 ? '#202228' : this.linkCss(l);
                ctx.fillRect(r.x, r.y, r.w, r.h);
                if (l >= 0) this.linkCell.set(l, r);
            }
        }
        // RTSW tiles, and every Nth rack's name under its column.
        let step = 1;
        while (g.c1 * step < ctx.measureText('z1-r000').width + 6) step *= 2;
        this.lowers.forEach((s, w) => {
            const r = { x: kLeft + w * g.c1, y: g.yr, w: Math.max(1, g.c1 - (g.c1 > 3 ? 1 : 0)), h: 18, sw: h.switches[s].name, word: this.switchWord(s) };
            ctx.fillStyle = this.switchCss(s);
            ctx.fillRect(r.x, r.y, r.w, r.h);
            this.tiles.push(r);
            if (w % step === 0) {
                ctx.fillStyle = '#c8c8d0';
                ctx.fillText(r.sw.replace(/-rtsw$/, ''), r.x, g.yr + 18 + 13);
            }
        });
        if (this.state.stale) {
            ctx.fillStyle = 'rgba(22,23,27,0.6)';
            ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
        }
    }

    hit(x, y) {
        const h = this.state.hall;
        for (const t of this.tiles || [])
            if (x >= t.x && x < t.x + t.w && y >= t.y && y < t.y + t.h) return { sw: t.sw, tip: () => `${t.sw}: ${t.word || 'state not known yet'} · click for its routes and config` };
        for (const [l, r] of this.linkCell) {
            if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h) {
                const { a, b } = h.linkSwitches;
                const lower = [a[l], b[l]].map((s) => (s >= 0 ? h.switches[s] : null)).find((s) => s && s.zone === this.zone && (s.role === 'rtsw' || s.role === 'leaf'));
                const hb = this.state.array('link.health')[l], u = this.state.array('link.util')[l];
                const word = kLinkHealthNames[hb] || String(hb);
                return { sw: lower ? lower.name : (a[l] >= 0 ? h.switches[a[l]].name : null),
                         tip: () => `${h.links[l]}: ${word}` + (u <= 100 ? ` · ${u} %` : '') };
            }
        }
        return null;
    }

    // Where a link's cell is, in page coordinates (tests read its pixel there).
    cellPoint(linkName) {
        const l = this.state.linkIndex().get(linkName);
        const r = l === undefined ? null : this.linkCell.get(l);
        if (!r) return null;
        const b = this.canvas.getBoundingClientRect();
        return { x: b.left + r.x + r.w / 2, y: b.top + r.y + r.h / 2, canvasX: r.x + r.w / 2, canvasY: r.y + r.h / 2 };
    }
}
