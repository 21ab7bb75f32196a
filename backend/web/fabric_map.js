// The drawn fabric map (#/fabric), the console's FabricMapWidget in the browser: the backend Clos
// as tiers — the site's spine (ATSW or core) across the top, each zone a column with its
// tier-2 (CTSW or spine) and tier-1 (RTSW or leaf) switches and its hosts below — every switch
// a square coloured by loomd's word for it (GET /api/v1/fabric/topology `state`: down red,
// drained and not in service grey) and, while up, by loomd's failure list and its links' words
// (palette.js switchTileColour, the console's rule), and between the tiers of a zone one bundle
// per tier pair, drawn as wide as its link count, coloured by its state and, while every link
// of it is up, by its mean utilization (the stream's link.util, subscribed while the map is
// open), labelled with its links, down and mean utilization. A job (#/fabric?job=<name>)
// outlines the switches its links cross and dims the rest; each bundle says how many of its
// links are the job's. Stale data greys the map. A click on a switch opens it, on a zone its
// CTSW–RTSW matrix.
import { css, kFailed, kDegraded, kNoData, kJobHighlight, linkHealthColour, rampCss, switchTileColour, switchLinksBad, failedSwitchNames } from './palette.js';

const kHostTier = 0;

// The two devices of a link name "a/p1--b/p2" (a NIC end names its host).
export function linkEnds(name) {
    const i = name.indexOf('--');
    if (i < 0) return null;
    const dev = (s) => s.split('/')[0].replace(/-nic\d+$/, '');
    return [dev(name.slice(0, i)), dev(name.slice(i + 2))];
}

const pairName = ['hosts – tier 1', 'tier 1 – tier 2', 'tier 2 – tier 3'];

export class FabricMap {
    constructor(state, host, { onSwitch, onZone }) {
        this.state = state;
        this.canvas = document.createElement('canvas');
        this.canvas.className = 'fabric-map';
        this.tip = document.createElement('div');
        this.tip.className = 'matrix-tip';
        host.append(this.canvas, this.tip);
        this.onSwitch = onSwitch;
        this.onZone = onZone;
        this.topo = null;
        this.job = null;  // {name, links: Set of link names}
        this.hits = [];   // [{x, y, w, h, sw?, zone?}]
        this.canvas.addEventListener('mousemove', (e) => { const h = this.hit(e); this.tip.textContent = h ? h.tip : ''; this.canvas.style.cursor = h ? 'pointer' : ''; });
        this.canvas.addEventListener('click', (e) => {
            const h = this.hit(e);
            if (h && h.sw) this.onSwitch(h.sw);
            else if (h && h.zone) this.onZone(h.zone);
        });
        this.resize = () => this.draw();
        window.addEventListener('resize', this.resize);
    }

    destroy() { window.removeEventListener('resize', this.resize); }

    hit(e) {
        const r = this.canvas.getBoundingClientRect();
        const x = e.clientX - r.left, y = e.clientY - r.top;
        // Switches first (drawn over their zone's column).
        let zone = null;
        for (const h of this.hits) {
            if (x < h.x || y < h.y || x >= h.x + h.w || y >= h.y + h.h) continue;
            if (h.sw) return h;
            zone = zone || h;
        }
        return zone;
    }

    setTopology(t) {
        this.topo = t;
        const sw = new Map(t.switches.map((s) => [s.name, { ...s, links: 0, up: 0, down: 0, idle: 0 }]));
        for (const b of t.bundles) {
            const idle = (b.notInService || 0) + (b.drained || 0);
            const down = b.down === undefined ? b.links - b.up : b.down;
            for (const n of [b.a, b.b]) {
                const s = sw.get(n);
                if (!s) continue;
                s.links += b.links; s.up += b.up; s.down += down; s.idle += idle;
            }
        }
        this.sw = sw;
        this.indexLinks();
        this.draw();
    }

    // Link index -> (zone, tier pair) of its bundle, from the hall's link names and the
    // topology's switches; hosts count as tier 0 in their RTSW's zone.
    indexLinks() {
        const h = this.state.hall;
        this.hallIndex = new Map(h && h.switches ? h.switches.map((s, i) => [s.name, i]) : []);
        if (!h || !this.sw) { this.linkPair = null; return; }
        const zones = [...new Set(this.topo.switches.map((s) => s.zone || ''))].sort();
        this.zoneNames = zones;
        const zi = new Map(zones.map((z, i) => [z, i]));
        const pair = new Int16Array(h.links.length).fill(-1);
        for (let j = 0; j < h.links.length; ++j) {
            const ends = linkEnds(h.links[j]);
            if (!ends) continue;
            const a = this.sw.get(ends[0]), b = this.sw.get(ends[1]);
            const ta = a ? a.tier : kHostTier, tb = b ? b.tier : kHostTier;
            const lo = Math.min(ta, tb);
            const zone = (a && a.zone) || (b && b.zone) || '';
            if (lo > 2) continue;
            pair[j] = zi.get(zone) * 3 + lo;
        }
        this.linkPair = pair;
    }

    setJob(job) { this.job = job; this.draw(); }

    // Per zone and tier pair: links, up, down, idle (loomd's link.health words, or the topology's
    // bundle counts before the stream's), the mean of link.util over links with data, and the
    // job's links.
    aggregate() {
        const zones = this.zoneNames || [];
        const agg = zones.map(() => [0, 1, 2].map(() => ({ links: 0, up: 0, down: 0, idle: 0, util: 0, utilN: 0, job: 0 })));
        const zi = new Map(zones.map((z, i) => [z, i]));
        // Every tier pair by loomd's live word for each link (the stream's link.health, as the
        // console's bundles count them): a cable telemetry says is down is down here too, though
        // its stored state (the topology's bundle counts) is still active. Without the stream's
        // words yet, the topology's counts.
        const health = this.state.arrays['link.health'];
        const live = !!(this.linkPair && health && health.length === this.linkPair.length);
        for (const b of live ? [] : this.topo.bundles) {
            const a = this.sw.get(b.a), c = this.sw.get(b.b);
            const ta = a ? a.tier : kHostTier, tc = c ? c.tier : kHostTier;
            const lo = Math.min(ta, tc);
            const z = zi.get((a && a.zone) || (c && c.zone) || '');
            if (z === undefined || lo > 2) continue;
            const x = agg[z][lo];
            x.links += b.links; x.up += b.up; x.down += b.down === undefined ? b.links - b.up : b.down;
            x.idle += (b.notInService || 0) + (b.drained || 0);
        }
        // With the stream's words, every link of every tier pair (NIC cables too, which are no
        // switch bundles of the topology).
        for (let j = 0; live && j < health.length; ++j) {
            const p = this.linkPair[j];
            if (p < 0) continue;
            const x = agg[Math.floor(p / 3)][p % 3];
            const v = health[j];
            x.links++;
            if (v <= 1) x.up++;
            else if (v === 2) x.down++;
            else x.idle++;  // drained, not in service, no data
        }
        const util = this.state.arrays['link.util'];
        if (this.linkPair && util && util.length === this.linkPair.length) {
            for (let j = 0; j < util.length; ++j) {
                const p = this.linkPair[j];
                if (p < 0 || util[j] > 100) continue;
                const x = agg[Math.floor(p / 3)][p % 3];
                x.util += util[j]; x.utilN++;
            }
        }
        if (this.job && this.linkPair) {
            const idx = this.state.linkIndex();
            for (const n of this.job.links) {
                const j = idx.get(n);
                const p = j === undefined ? -1 : this.linkPair[j];
                if (p >= 0) agg[Math.floor(p / 3)][p % 3].job++;
            }
        }
        return agg;
    }

    // Per hall switch: {links, up, down, idle} by the stream's link.health (up or degraded carry
    // traffic, down, else drained / not in service / no data); null before the stream's words.
    liveSwitchCounts() {
        const h = this.state.hall, health = this.state.arrays['link.health'];
        if (!h || !h.linkSwitches || !health || health.length !== h.linkSwitches.a.length) return null;
        const out = h.switches.map(() => ({ links: 0, up: 0, down: 0, idle: 0 }));
        const { a, b } = h.linkSwitches;
        for (let l = 0; l < health.length; ++l) {
            const v = health[l];
            for (const sw of [a[l], b[l]]) {
                if (sw < 0) continue;
                const c = out[sw];
                c.links++;
                if (v <= 1) c.up++; else if (v === 2) c.down++; else c.idle++;
            }
        }
        return out;
    }

    // What a switch square is drawn in, and the word it is labelled with: loomd's (tests read both).
    switchColour(s) {
        const i = this.hallIndex ? this.hallIndex.get(s.name) : undefined;
        const bad = i === undefined || !this.linksBad ? 0 : this.linksBad[i];
        return switchTileColour(s.state, this.failedSw ? this.failedSw.has(s.name) : false, bad);
    }

    switchWord(s) {
        return s.state || (s.up ? 'up' : 'down');  // an older loomd sends `up` alone
    }

    bundleColour(x) {
        if (x.links === 0 || x.idle >= x.links) return css(...linkHealthColour(4));
        if (x.down > 0) return css(...(x.down >= x.links - x.idle ? kFailed : kDegraded));
        return x.utilN ? rampCss(x.util / x.utilN / 100) : css(...linkHealthColour(0));
    }

    draw() {
        const t = this.topo;
        if (!t) return;
        const cw = Math.max(600, (this.canvas.parentElement ? this.canvas.parentElement.clientWidth : 1200) - 8);
        const zones = (this.zoneNames || []).filter((z) => z);
        const site = t.switches.filter((s) => !s.zone);
        const tiers = [...new Set(t.switches.filter((s) => s.zone).map((s) => s.tier))].sort((a, b) => b - a);
        const colW = (cw - 20) / Math.max(1, zones.length);
        const pad = 6;
        // The square size: the biggest tier of a zone fits its column in at most 8 rows.
        const most = Math.max(1, ...zones.map((z) => Math.max(...tiers.map((k) => t.switches.filter((s) => s.zone === z && s.tier === k).length))));
        const sq = Math.max(3, Math.min(14, Math.floor(Math.sqrt(((colW - 2 * pad) * 8 * 14) / most / 1.6))));
        const perRow = Math.max(1, Math.floor((colW - 2 * pad) / (sq + 1)));
        const bandH = (n) => Math.ceil(n / perRow) * (sq + 1);
        const siteRow = Math.max(1, Math.floor((cw - 2 * pad) / (sq + 1)));
        const siteH = site.length ? Math.ceil(site.length / siteRow) * (sq + 1) + 22 : 0;
        const gap = 64;
        const tierH = tiers.map((k) => Math.max(...zones.map((z) => bandH(t.switches.filter((s) => s.zone === z && s.tier === k).length)), sq) + 18);
        const hostsH = 26;
        const ch = 30 + siteH + (site.length ? gap : 0) + tierH.reduce((a, b) => a + b + gap, 0) + hostsH + 40;
        const dpr = window.devicePixelRatio || 1;
        const c = this.canvas;
        c.width = Math.round(cw * dpr); c.height = Math.round(ch * dpr);
        c.style.width = cw + 'px'; c.style.height = ch + 'px';
        const ctx = c.getContext('2d');
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        ctx.fillStyle = '#16171b';
        ctx.fillRect(0, 0, cw, ch);
        ctx.font = '12px sans-serif';
        ctx.textBaseline = 'middle';
        this.hits = [];
        const agg = this.aggregate();
        this.linksBad = switchLinksBad(this.state.hall, this.state.arrays['link.health']);
        this.failedSw = failedSwitchNames(this.state.failures);
        // Each switch's links by loomd's live words (the console's tooltip counts the same), or
        // the topology's bundle counts before the stream's words.
        const liveCounts = this.liveSwitchCounts();
        const zi = new Map((this.zoneNames || []).map((z, i) => [z, i]));
        const jobSw = new Set();
        if (this.job) for (const n of this.job.links) { const e = linkEnds(n); if (e) { jobSw.add(e[0]); jobSw.add(e[1]); } }
        const drawSwitch = (s, x, y) => {
            const i = this.hallIndex ? this.hallIndex.get(s.name) : undefined;
            const st = liveCounts && i !== undefined ? { ...this.sw.get(s.name), ...liveCounts[i] } : this.sw.get(s.name);
            ctx.fillStyle = css(...this.switchColour(st));
            ctx.fillRect(x, y, sq, sq);
            if (this.job && !jobSw.has(s.name)) { ctx.fillStyle = 'rgba(22,23,27,0.7)'; ctx.fillRect(x, y, sq, sq); }
            if (this.job && jobSw.has(s.name)) { ctx.strokeStyle = css(...kJobHighlight); ctx.lineWidth = 2; ctx.strokeRect(x - 1, y - 1, sq + 2, sq + 2); }
            this.hits.push({ x, y, w: sq + 1, h: sq + 1, sw: s.name,
                word: this.switchWord(st), colour: this.switchColour(st),
                tip: `${s.name} (${s.role}, tier ${s.tier}${s.zone ? ', ' + s.zone : ''}): ${this.switchWord(st)}` +
                     (this.failedSw.has(s.name) ? ' (failed: loomd\'s failure list)' : '') + ` · ${st.up} of ${st.links} links up` +
                     (st.down ? `, ${st.down} down` : '') + (st.idle ? `, ${st.idle} not in service or drained` : '') +
                     ' · click to open' });
        };
        let y = 10;
        ctx.fillStyle = '#ccc';
        ctx.fillText(`${t.cluster} · ${t.fabric} fabric · ${t.switches.length.toLocaleString('en')} switches · ${t.bundles.length.toLocaleString('en')} bundles`, pad, y + 4);
        y += 20;
        let siteTop = null;
        if (site.length) {
            ctx.fillStyle = '#aaa';
            ctx.fillText(`site spine: ${site.length} ${[...new Set(site.map((s) => s.role))].join(', ')}`, pad, y + 4);
            y += 14;
            siteTop = y;
            site.forEach((s, i) => drawSwitch(s, pad + (i % siteRow) * (sq + 1), y + Math.floor(i / siteRow) * (sq + 1)));
            y += siteH - 14;
        }
        const siteBottom = y;
        if (site.length) y += gap;
        // Each zone's tier bands; remember the band boxes for the bundles.
        const bands = zones.map(() => ({}));
        tiers.forEach((k, ti) => {
            zones.forEach((z, i) => {
                const x0 = 10 + i * colW + pad;
                const list = t.switches.filter((s) => s.zone === z && s.tier === k);
                if (ti === 0 || k === tiers[0]) { ctx.fillStyle = '#ccc'; }
                const roles = [...new Set(list.map((s) => s.role))].join(', ');
                ctx.fillStyle = '#999';
                ctx.fillText(`${list.length} ${roles}`, x0, y + 6);
                list.forEach((s, n) => drawSwitch(s, x0 + (n % perRow) * (sq + 1), y + 14 + Math.floor(n / perRow) * (sq + 1)));
                bands[i][k] = { x: x0, y: y + 14, w: Math.min(list.length, perRow) * (sq + 1), h: bandH(list.length) };
            });
            y += tierH[ti] + gap;
        });
        // Hosts: one box per zone.
        zones.forEach((z, i) => {
            const x0 = 10 + i * colW + pad;
            const racks = this.state.hall ? this.state.hall.racks.filter((r) => r.name.startsWith(z + '-')) : [];
            const gpus = racks.reduce((a, r) => a + r.gpuCount, 0);
            ctx.fillStyle = '#2a2c33';
            ctx.fillRect(x0, y, colW - 2 * pad, hostsH - 6);
            ctx.fillStyle = '#bbb';
            ctx.fillText(gpus ? `${z}: ${gpus.toLocaleString('en')} GPUs` : z, x0 + 4, y + (hostsH - 6) / 2);
            bands[i][kHostTier] = { x: x0, y, w: colW - 2 * pad, h: hostsH - 6 };
            this.hits.push({ x: 10 + i * colW, y: 0, w: colW, h: ch, zone: z, tip: `zone ${z} · click for its links` });
        });
        // Bundles: per zone, from each tier's band to the next one up (hosts to tier 1, tier 1
        // to 2, tier 2 to the site's spine).
        const bundle = (x1, y1, x2, y2, a, label, colX) => {
            const w = Math.max(2, Math.min(colW / 6, 1.5 * Math.log2(1 + a.links)));
            // A light rim under it: the ramp's low end is dark, like the floor.
            ctx.globalAlpha = this.job && !a.job ? 0.35 : 1;
            ctx.strokeStyle = '#5a5c66';
            ctx.lineWidth = w + 2;
            ctx.beginPath(); ctx.moveTo(x1, y1); ctx.lineTo(x2, y2); ctx.stroke();
            ctx.strokeStyle = this.bundleColour(a);
            ctx.lineWidth = w;
            ctx.globalAlpha = this.job && !a.job ? 0.35 : 1;
            ctx.beginPath(); ctx.moveTo(x1, y1); ctx.lineTo(x2, y2); ctx.stroke();
            if (this.job && a.job) { ctx.strokeStyle = css(...kJobHighlight); ctx.lineWidth = 2; ctx.beginPath(); ctx.moveTo(x1 + w, y1); ctx.lineTo(x2 + w, y2); ctx.stroke(); }
            ctx.globalAlpha = 1;
            const parts = [`${a.links.toLocaleString('en')} links`];
            if (a.down) parts.push(`${a.down} down`);
            if (a.idle) parts.push(a.idle >= a.links ? 'not in service' : `${a.idle} idle`);
            if (a.utilN) parts.push(`${Math.round(a.util / a.utilN)} %`);
            if (this.job && a.job) parts.push(`job ${a.job}`);
            // Narrow columns (many zones): the label is in the zone's tooltip instead.
            if (colW >= 140) {
                // What fits beside the bundle in its column, most important first.
                const tx = (x1 + x2) / 2 + w / 2 + 4;
                const room = colX + colW - tx - 6;
                const shown = parts.slice();
                while (shown.length > 1 && ctx.measureText(shown.join(' · ')).width > room) shown.pop();
                ctx.fillStyle = a.down ? css(...kFailed) : '#ddd';
                ctx.fillText(shown.join(' · '), tx, (y1 + y2) / 2);
            }
            return `${label}: ${parts.join(', ')}`;
        };
        const levels = [kHostTier, ...tiers.slice().reverse()];
        const zoneHit = new Map(this.hits.filter((h) => h.zone).map((h) => [h.zone, h]));
        zones.forEach((z, i) => {
            const zIdx = zi.get(z);
            const said = [];
            for (let l = 0; l + 1 < levels.length; ++l) {
                const lo = bands[i][levels[l]], hi = bands[i][levels[l + 1]];
                const a = agg[zIdx] && agg[zIdx][levels[l]];
                if (!lo || !hi || !a || !a.links) continue;
                said.push(bundle(lo.x + 10, lo.y - 2, hi.x + 10, hi.y + hi.h + 2, a, pairName[levels[l]], 10 + i * colW));
            }
            const top = bands[i][tiers[0]];
            const a = agg[zIdx] && agg[zIdx][tiers[0]];
            if (site.length && top && a && a.links) said.push(bundle(top.x + 10, top.y - 18, top.x + 10 + colW / 4, siteBottom + 2, a, 'tier 2 – tier 3', 10 + i * colW));
            const h = zoneHit.get(z);
            if (h) h.tip = `zone ${z}: ${said.join('; ')} · click for its links`;
        });
        this.bundles = agg;  // tests read what the bundles said
        if (this.job) {
            ctx.fillStyle = css(...kJobHighlight);
            ctx.fillText(`job ${this.job.name}: ${this.job.links.size.toLocaleString('en')} links crossed (outlined; the rest dimmed)`, pad, ch - 26);
        }
        // Stale: greyed, and says so, as on the hall.
        if (this.state.stale) {
            ctx.fillStyle = 'rgba(22,23,27,0.6)';
            ctx.fillRect(0, 0, cw, ch);
            ctx.fillStyle = css(...kNoData);
            ctx.fillText('stale: loomd is not answering — the map shows the last state it sent', pad, ch - 10);
        }
        this.siteTop = siteTop;
    }
}
