// The fabric map: the tiers of the fabric (GET /api/v1/fabric/topology) by zone with the state
// of their bundles, a zone's CTSW–RTSW matrix (#/fabric/zone/<zone>: one cell per bundle,
// coloured by the share of its links up), and one switch (#/switch/<name>): its bundles and
// its routing table (GET /api/v1/fabric/routes/<name>).
import { el, clear, switchLink } from './dom.js';
import { api, seg } from './api.js';

let topologyCache = null;  // {at, data}: the topology is large at 24k; refetched on change

async function topology(force) {
    if (!force && topologyCache && Date.now() - topologyCache.at < 5000) return topologyCache.data;
    const data = await api('fabric/topology');
    topologyCache = { at: Date.now(), data };
    return data;
}

// A bundle's state as loomd counts it: links down are a failure; links drained or not yet in
// service are a state (grey), never red.
const idle = (b) => (b.notInService || 0) + (b.drained || 0);
const upClass = (b) => {
    if (b.up === b.links) return 'up';
    if (b.down === undefined) return b.up === 0 ? 'down' : 'degraded';  // an older loomd
    if (b.down === 0) return idle(b) >= b.links ? 'idle' : 'up';
    return b.up === 0 ? 'down' : 'degraded';
};

export function fabricView(state, main, route) {
    const wrap = el('div', { class: 'fabric-view' });
    const msg = el('p', { class: 'message' });
    const body = el('div', { class: 'fabric-body' });
    wrap.append(msg, body);
    main.append(wrap);
    let current = route;
    const render = async (force) => {
        let t;
        try {
            t = await topology(force);
            msg.textContent = '';
        } catch (e) {
            msg.textContent = e.message;
            return;
        }
        clear(body);
        if (current.kind === 'switch') return renderSwitch(body, t, current.name);
        if (current.kind === 'zone') return renderZone(body, t, current.name);
        return renderTiers(body, t);
    };
    let timer = null;
    const unsub = state.on('degradation', () => { clearTimeout(timer); timer = setTimeout(() => render(true), 500); });
    render(false);
    return {
        route(r) { current = r; render(false); },
        destroy() { unsub(); clearTimeout(timer); },
    };
}

function renderTiers(body, t) {
    const zones = new Map();
    const tiers = new Map();
    for (const s of t.switches) {
        const z = s.zone || '(spine of the site)';
        if (!zones.has(z)) zones.set(z, new Map());
        const m = zones.get(z);
        m.set(s.role, (m.get(s.role) || 0) + 1);
        if (!tiers.has(s.tier)) tiers.set(s.tier, { roles: new Set(), count: 0, down: 0 });
        const tr = tiers.get(s.tier);
        tr.roles.add(s.role);
        tr.count++;
        if (!s.up) tr.down++;
    }
    const zoneOf = new Map(t.switches.map((s) => [s.name, s.zone]));
    const zb = new Map();
    for (const b of t.bundles) {
        const z = zoneOf.get(b.a) || zoneOf.get(b.b) || '';
        if (!zb.has(z)) zb.set(z, { bundles: 0, links: 0, up: 0, down: 0, idle: 0 });
        const x = zb.get(z);
        x.bundles++; x.links += b.links; x.up += b.up;
        x.down += b.down === undefined ? b.links - b.up : b.down;
        x.idle += idle(b);
    }
    body.append(el('h2', {}, `${t.cluster} · ${t.fabric} fabric · ${t.switches.length} switches · ${t.bundles.length} bundles`));
    body.append(el('h3', {}, 'Tiers'), el('table', { class: 'tiers' },
        el('tr', {}, el('th', {}, 'tier'), el('th', {}, 'roles'), el('th', {}, 'switches'), el('th', {}, 'down')),
        [...tiers.entries()].sort((a, b) => b[0] - a[0]).map(([tier, x]) =>
            el('tr', {}, el('td', {}, String(tier)), el('td', {}, [...x.roles].join(', ')), el('td', {}, String(x.count)),
               el('td', { class: x.down ? 'bad' : '' }, String(x.down))))));
    body.append(el('h3', {}, 'Zones'), el('table', { class: 'zones' },
        el('tr', {}, ['zone', 'switches', 'links up', ''].map((h) => el('th', {}, h))),
        [...zones.entries()].map(([z, roles]) => {
            const x = zb.get(z) || { links: 0, up: 0, down: 0, idle: 0 };
            const note = [x.down ? `${x.down} down` : '', x.idle ? `${x.idle} not in service` : ''].filter(Boolean).join(', ');
            return el('tr', {}, el('td', {}, z),
                el('td', {}, [...roles.entries()].map(([r, n]) => `${n} ${r}`).join(', ')),
                el('td', { class: x.down ? 'bad' : x.idle ? 'dim' : '' }, `${x.up} / ${x.links}` + (note ? ` (${note})` : '')),
                el('td', {}, z.startsWith('(') ? '' : el('a', { href: '#/fabric/zone/' + encodeURIComponent(z) }, 'CTSW–RTSW matrix')));
        })));
}

function renderZone(body, t, zone) {
    const sw = t.switches.filter((s) => s.zone === zone);
    const upper = sw.filter((s) => s.role === 'ctsw' || s.role === 'spine' || s.role === 'leaf' && false);
    const lower = sw.filter((s) => s.role === 'rtsw' || s.role === 'leaf');
    const uppers = upper.length ? upper : sw.filter((s) => s.tier === Math.max(...sw.map((x) => x.tier)));
    const lowers = lower.length ? lower : sw.filter((s) => s.tier === Math.min(...sw.map((x) => x.tier)));
    const ui = new Map(uppers.map((s, i) => [s.name, i])), li = new Map(lowers.map((s, i) => [s.name, i]));
    const cells = [];
    for (const b of t.bundles) {
        let u = ui.get(b.a), l = li.get(b.b);
        if (u === undefined || l === undefined) { u = ui.get(b.b); l = li.get(b.a); }
        if (u !== undefined && l !== undefined) cells.push({ u, l, b });
    }
    body.append(el('p', {}, el('a', { href: '#/fabric' }, '← all zones')),
        el('h2', {}, `Zone ${zone}: ${uppers.length} × ${lowers.length} matrix, ${cells.length} bundles`));
    const cell = Math.max(8, Math.min(16, Math.floor(1400 / Math.max(1, lowers.length))));
    // RTSW names along the top, turned, so a cell says which two switches it joins.
    const top = Math.min(110, 8 + 7 * Math.max(...lowers.map((s) => s.name.length), 4));
    const canvas = el('canvas', { class: 'matrix', width: lowers.length * cell + 120, height: uppers.length * cell + 4 + top });
    const ctx = canvas.getContext('2d');
    ctx.fillStyle = '#16171b';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.fillStyle = '#ccc';
    ctx.font = `${Math.min(12, cell)}px sans-serif`;
    ctx.textBaseline = 'middle';
    uppers.forEach((s, i) => ctx.fillText(s.name, 2, top + i * cell + cell / 2 + 2));
    ctx.save();
    ctx.font = `${Math.min(11, cell - 1)}px sans-serif`;
    lowers.forEach((s, i) => {
        ctx.save();
        ctx.translate(120 + i * cell + cell / 2 + 3, top - 4);
        ctx.rotate(-Math.PI / 2);
        ctx.fillText(s.name, 0, 0);
        ctx.restore();
    });
    ctx.restore();
    ctx.translate(0, top);
    const colour = { up: '#2ea043', degraded: '#ffc400', down: '#ff1744', idle: '#46464f' };
    for (const { u, l, b } of cells) {
        ctx.fillStyle = colour[upClass(b)];
        ctx.fillRect(120 + l * cell, u * cell + 2, Math.max(1, cell - 1), Math.max(1, cell - 1));
    }
    const tip = el('div', { class: 'matrix-tip' }, 'Point at a cell; click it to open the lower switch.');
    const at = (e) => {
        const l = Math.floor((e.offsetX - 120) / cell), u = Math.floor((e.offsetY - 2 - top) / cell);
        return cells.find((c) => c.u === u && c.l === l);
    };
    canvas.addEventListener('mousemove', (e) => {
        const c = at(e);
        tip.textContent = c ? `${c.b.a} — ${c.b.b}: ${c.b.up} of ${c.b.links} links up` + (idle(c.b) ? `, ${idle(c.b)} not in service` : '') : '';
    });
    canvas.addEventListener('click', (e) => {
        const c = at(e);
        if (c) location.hash = '#/switch/' + encodeURIComponent(lowers[c.l].name);
    });
    body.append(tip, el('div', { class: 'matrix-wrap' }, canvas));
    const bad = cells.filter((c) => upClass(c.b) === 'down' || upClass(c.b) === 'degraded');
    if (bad.length) {
        body.append(el('h3', {}, `Bundles with links down (${bad.length})`), el('ul', {}, bad.slice(0, 200).map((c) =>
            el('li', {}, switchLink(c.b.a), ' — ', switchLink(c.b.b), `: ${c.b.up} / ${c.b.links}`))));
    }
}

async function renderSwitch(body, t, name) {
    const s = t.switches.find((x) => x.name === name);
    body.append(el('p', {}, el('a', { href: s && s.zone ? '#/fabric/zone/' + encodeURIComponent(s.zone) : '#/fabric' }, '← back')),
        el('h2', { class: 'switch-name' }, name));
    if (!s) {
        body.append(el('p', { class: 'error' }, 'No switch of that name in the fabric.'));
        return;
    }
    body.append(el('p', {}, `${s.role} · tier ${s.tier} · ${s.zone || 'site'} · ${s.up ? 'up' : 'down'}`));
    const mine = t.bundles.filter((b) => b.a === name || b.b === name);
    body.append(el('h3', {}, `Bundles (${mine.length})`), el('table', { class: 'bundles' },
        el('tr', {}, el('th', {}, 'peer'), el('th', {}, 'links up')),
        mine.slice(0, 500).map((b) => el('tr', { class: upClass(b) }, el('td', {}, switchLink(b.a === name ? b.b : b.a)), el('td', {}, `${b.up} / ${b.links}`)))));
    const pre = el('pre', { class: 'routes' }, 'loading routes…');
    body.append(el('h3', {}, 'Routes'), pre);
    try {
        const r = await api('fabric/routes/' + seg(name));
        if (r && r.routes && Array.isArray(r.groups)) {
            pre.replaceWith(routesTable(r));
            return;
        }
        const text = JSON.stringify(r, null, 1);
        pre.textContent = text.length > 200000 ? text.slice(0, 200000) + '\n… (truncated)' : text;
    } catch (e) {
        pre.textContent = e.message;
    }
}

// A RoCE switch's routing table as a network engineer reads it: each prefix with its ECMP
// next hops (interface → peer switch), groups shared by many prefixes written once per row.
function routesTable(r) {
    const box = el('div', { class: 'routes-table' });
    box.append(el('p', {}, `ASN ${r.asn} · loopback ${r.loopback || '–'} · ${Object.keys(r.routes).length} prefixes · ${r.groups.length} ECMP groups`));
    const hops = (g) => {
        const members = r.groups[g] || [];
        const peers = new Map();
        for (const m of members) {
            if (!peers.has(m.peer)) peers.set(m.peer, []);
            peers.get(m.peer).push(m.interface);
        }
        return [...peers.entries()].map(([peer, ifs], i) =>
            el('span', {}, i ? ', ' : '', switchLink(peer), ` via ${ifs.join(' ')}`));
    };
    const rows = Object.entries(r.routes).slice(0, 2000);
    box.append(el('table', { class: 'routes' },
        el('tr', {}, el('th', {}, 'prefix'), el('th', {}, 'group'), el('th', {}, 'next hops')),
        rows.map(([prefix, g]) => el('tr', {}, el('td', {}, el('code', {}, prefix)),
            el('td', {}, g === 'local' ? 'local' : String(g)),
            el('td', {}, g === 'local' ? 'directly connected' : [`${(r.groups[g] || []).length} paths: `, hops(g)])))));
    if (Object.keys(r.routes).length > rows.length) box.append(el('p', { class: 'dim' }, `… and ${Object.keys(r.routes).length - rows.length} more prefixes`));
    return box;
}
