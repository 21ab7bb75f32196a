// The fabric: the drawn tiered map (fabric_map.js: every switch, bundles by zone and tier pair,
// a job's links with #/fabric?job=<name>) over the tiers and zones as tables (GET
// /api/v1/fabric/topology), a zone drawn as the console draws it (#/fabric/zone/<zone>,
// zone_map.js: every CTSW uplink and CTSW–RTSW link a cell in its live state), and one switch (#/switch/<name>): its bundles,
// its routing table (GET /api/v1/fabric/routes/<name>) and what its last reroute changed in its
// config, as a diff (GET /api/v1/fabric/config/<name>?previous=true).
import { el, clear, switchLink } from './dom.js';
import { api, seg } from './api.js';
import { FabricMap } from './fabric_map.js';
import { ZoneMap } from './zone_map.js';
import { css, kDegraded, kFailed, kLinkHealthNames, linkHealthColour, rampCss } from './palette.js';

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

export function fabricView(state, main, route, nav) {
    const wrap = el('div', { class: 'fabric-view' });
    const msg = el('p', { class: 'message' });
    const body = el('div', { class: 'fabric-body' });
    wrap.append(msg, body);
    main.append(wrap);
    let current = route;
    let map = null;
    let zoneMap = null;
    // The bundles' utilization: link.util while this view is open (the hall does not need it).
    if (state.stream) state.stream.addTopics(['link.util']);
    const jobNote = el('p', { class: 'job-note' });
    const showJob = async () => {
        const name = (current.params || {}).job;
        clear(jobNote);
        if (!map) return;
        if (!name) { map.setJob(null); return; }
        try {
            const job = await api('jobs/' + encodeURIComponent(name));
            if ((current.params || {}).job !== name || !map) return;
            const links = new Set((job.health && job.health.links) || []);
            map.setJob({ name, links });
            jobNote.append(`job ${name}: ${links.size.toLocaleString('en')} links crossed, outlined on the map · `,
                el('a', { href: '#/job/' + encodeURIComponent(name) }, 'detail'), ' · ',
                el('a', { href: '#/hall?job=' + encodeURIComponent(name) }, 'on the hall'), ' · ',
                el('a', { href: '#/fabric' }, 'clear'));
        } catch (e) {
            jobNote.append(el('span', { class: 'error' }, `job ${name}: ${e.message}`));
        }
    };
    const render = async (force) => {
        let t;
        try {
            t = await topology(force);
            msg.textContent = '';
        } catch (e) {
            msg.textContent = e.message;
            return;
        }
        if (map && !current.kind && body.contains(map.canvas)) {
            map.setTopology(t);  // in place: the view and its job stay
            return;
        }
        if (zoneMap && current.kind === 'zone' && zoneMap.zone === current.name && body.contains(zoneMap.canvas)) {
            zoneMap.setTopology(t);
            zoneMap.draw();  // in place: the links' states are live
            return;
        }
        clear(body);
        if (map) { map.destroy(); map = null; }
        zoneMap = null;
        if (current.kind === 'switch') return renderSwitch(body, t, current.name);
        if (current.kind === 'zone') {
            zoneMap = renderZone(body, state, current.name, nav, t);
            return;
        }
        const host = el('div', { class: 'fabric-map-host' });
        // Classes, not style attributes: the page's Content-Security-Policy refuses inline styles.
        const sw = (cls, text) => el('span', { class: 'swatch-item' }, el('span', { class: 'swatch ' + cls }), text);
        body.append(jobNote, el('p', { class: 'fabric-legend legend' },
            'Switches, by loomd\'s word for each: ', sw('sw-up', 'up'), sw('sw-some', 'up, some links down/degraded'), sw('sw-down', 'down / failed'),
            sw('sw-idle', 'drained / not in service'), ' · bundles: width by links, colour by state, when all up by mean utilization ',
            el('canvas', { class: 'ramp fabric-ramp', width: 80, height: 10 }), ' 0–100 %'), host);
        const rc = body.querySelector('.fabric-ramp').getContext('2d');
        for (let x = 0; x < 80; ++x) { rc.fillStyle = rampCss(x / 79); rc.fillRect(x, 0, 1, 10); }
        map = new FabricMap(state, host, {
            onSwitch: (n) => nav('#/switch/' + encodeURIComponent(n)),
            onZone: (z) => nav('#/fabric/zone/' + encodeURIComponent(z)),
        });
        window.loomFabric = map;  // tests and benchmarks read what it drew
        map.setTopology(t);
        showJob();
        renderTiers(body, t);
    };
    let timer = null;
    let drawTimer = null;
    const redraw = () => {
        if ((map || zoneMap) && !drawTimer) {
            drawTimer = setTimeout(() => { drawTimer = null; if (map) map.draw(); if (zoneMap) zoneMap.refresh(); }, 1000);
        }
    };
    const unsub = [
        state.on('degradation', () => { clearTimeout(timer); timer = setTimeout(() => render(true), 500); }),
        // A switch follows its rack: loomd's words for them change with rack transitions (its live
        // state reloads within a second of the transition's message).
        state.on('rack', () => { clearTimeout(timer); timer = setTimeout(() => render(true), 1500); }),
        state.on('failures', () => redraw()),
        state.on('data', (d) => { if (d.topic === 'link.util' || d.topic === 'link.health') redraw(); }),
        state.on('stale', () => { if (map) map.draw(); if (zoneMap) zoneMap.draw(); }),
        state.on('hall', () => { if (map) { map.indexLinks(); map.draw(); } if (zoneMap) zoneMap.build(); }),
    ];
    render(false);
    return {
        route(r) {
            const sameMap = !r.kind && !current.kind && map;
            current = r;
            if (sameMap) showJob();
            else render(false);
        },
        destroy() {
            unsub.forEach((u) => u());
            clearTimeout(timer); clearTimeout(drawTimer);
            if (map) map.destroy();
            if (state.stream) state.stream.dropTopics(['link.util']);
        },
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
        // loomd's word for the switch (its rack's state read as its cables): only `down` is an
        // outage; drained and not in service are states (an older loomd sends `up` alone).
        if (s.state === undefined ? !s.up : s.state === 'down') tr.down++;
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
                el('td', {}, z.startsWith('(') ? '' : el('a', { href: '#/fabric/zone/' + encodeURIComponent(z) }, 'its links, drawn')));
        })));
}

function renderZone(body, state, zone, nav, t) {
    const head = el('h2', {}, `Zone ${zone}`);
    const host = el('div', { class: 'zone-map-host' });
    const downList = el('div', { class: 'zone-down' });
    body.append(el('p', {}, el('a', { href: '#/fabric' }, '← all zones')), head,
        el('p', { class: 'legend' }, 'Each cell is one link in its live state: ',
            el('span', { class: 'swatch-item' }, el('span', { class: 'swatch sw-down' }), 'down'),
            el('span', { class: 'swatch-item' }, el('span', { class: 'swatch sw-some' }), 'degraded'),
            el('span', { class: 'swatch-item' }, el('span', { class: 'swatch sw-idle' }), 'drained / not in service'),
            ' · up by utilization ', el('canvas', { class: 'ramp zone-ramp', width: 80, height: 10 }), ' 0–100 %'), host, downList);
    const rc = body.querySelector('.zone-ramp').getContext('2d');
    for (let x = 0; x < 80; ++x) { rc.fillStyle = rampCss(x / 79); rc.fillRect(x, 0, 1, 10); }
    const zm = new ZoneMap(state, host, zone, { onSwitch: (n) => nav('#/switch/' + encodeURIComponent(n)) });
    zm.setTopology(t);
    window.loomZone = zm;  // tests read what it drew
    // The heading's counts and the list of links down, from what the map drew.
    const said = () => {
        if (!zm.ok) { head.textContent = `Zone ${zone}: no switches of this zone in the hall`; return; }
        const c = zm.counts();
        const ib = state.hall.fabric === 'infiniband';
        head.textContent = `Zone ${zone}: ${zm.uppers.length} ${ib ? 'spines' : 'CTSW'} × ${zm.lowers.length} ${ib ? 'leaves' : 'RTSW'}, ` +
            `${c.links.toLocaleString('en')} links: ${(c.links - c.down - c.degraded - c.idle).toLocaleString('en')} up` +
            (c.down ? `, ${c.down} down` : '') + (c.degraded ? `, ${c.degraded} degraded` : '') + (c.idle ? `, ${c.idle.toLocaleString('en')} not in service or drained` : '');
        clear(downList);
        const health = state.array('link.health');
        const bad = [...zm.linkCell.keys()].filter((l) => health[l] === 2 || health[l] === 1);
        if (bad.length) {
            downList.append(el('h3', {}, `Links down or degraded (${bad.length})`), el('ul', {}, bad.slice(0, 200).map((l) =>
                el('li', {}, state.hall.links[l], ' — ', kLinkHealthNames[health[l]] || String(health[l])))));
        }
    };
    zm.refresh = () => { zm.draw(); said(); };
    const build = zm.build.bind(zm);
    zm.build = () => { build(); said(); };
    said();
    return zm;
}

async function renderSwitch(body, t, name) {
    const s = t.switches.find((x) => x.name === name);
    body.append(el('p', {}, el('a', { href: s && s.zone ? '#/fabric/zone/' + encodeURIComponent(s.zone) : '#/fabric' }, '← back')),
        el('h2', { class: 'switch-name' }, name));
    if (!s) {
        body.append(el('p', { class: 'error' }, 'No switch of that name in the fabric.'));
        return;
    }
    body.append(el('p', {}, `${s.role} · tier ${s.tier} · ${s.zone || 'site'} · ${s.state || (s.up ? 'up' : 'down')}`));
    const mine = t.bundles.filter((b) => b.a === name || b.b === name);
    body.append(el('h3', {}, `Bundles (${mine.length})`), el('table', { class: 'bundles' },
        el('tr', {}, el('th', {}, 'peer'), el('th', {}, 'links up')),
        mine.slice(0, 500).map((b) => el('tr', { class: upClass(b) }, el('td', {}, switchLink(b.a === name ? b.b : b.a)), el('td', {}, `${b.up} / ${b.links}`)))));
    const pre = el('pre', { class: 'routes' }, 'loading routes…');
    const cfg = el('div', { class: 'config-diff' }, 'loading config…');
    body.append(el('h3', {}, 'Routes'), pre, el('h3', {}, 'Config: what the last reroute changed'), cfg);
    api('fabric/config/' + seg(name) + '?previous=true').then((c) => cfg.replaceWith(configDiff(c)),
        (e) => { cfg.textContent = e.message; });
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

// Lines of a and b as a list of {kind: ' ' | '-' | '+', text}: the common head and tail cut
// first (a reroute changes a few lines of a long config), the middle by longest common
// subsequence when small enough, else all of it removed and added.
export function diffLines(a, b) {
    let head = 0;
    while (head < a.length && head < b.length && a[head] === b[head]) ++head;
    let tail = 0;
    while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) ++tail;
    const x = a.slice(head, a.length - tail), y = b.slice(head, b.length - tail);
    const out = a.slice(0, head).map((text) => ({ kind: ' ', text }));
    if (x.length * y.length > 4e6) {
        out.push(...x.map((text) => ({ kind: '-', text })), ...y.map((text) => ({ kind: '+', text })));
    } else {
        const n = x.length, m = y.length;
        const L = new Uint32Array((n + 1) * (m + 1));
        for (let i = n - 1; i >= 0; --i)
            for (let j = m - 1; j >= 0; --j)
                L[i * (m + 1) + j] = x[i] === y[j] ? L[(i + 1) * (m + 1) + j + 1] + 1 : Math.max(L[(i + 1) * (m + 1) + j], L[i * (m + 1) + j + 1]);
        let i = 0, j = 0;
        while (i < n || j < m) {
            if (i < n && j < m && x[i] === y[j]) { out.push({ kind: ' ', text: x[i] }); ++i; ++j; }
            else if (i < n && (j === m || L[(i + 1) * (m + 1) + j] >= L[i * (m + 1) + j + 1])) out.push({ kind: '-', text: x[i++] });
            else out.push({ kind: '+', text: y[j++] });
        }
    }
    out.push(...a.slice(a.length - tail).map((text) => ({ kind: ' ', text })));
    return out;
}

// GET /api/v1/fabric/config/<switch>?previous=true as the console's switch panel shows it: the
// version, and what changed from the previous one, with two lines of context around each change.
function configDiff(c) {
    const box = el('div', { class: 'config-diff' });
    const version = c.version === undefined || c.version === null ? '–' : String(c.version);
    if (!c.previous || typeof c.previous.config !== 'string') {
        box.append(el('p', {}, `Config version ${version} · no earlier version of this switch's config is kept ` +
            '(unchanged since loomd built the fabric, or changed more than 16 routing versions ago)'));
        return box;
    }
    const d = diffLines(c.previous.config.split('\n'), String(c.config || '').split('\n'));
    const removed = d.filter((l) => l.kind === '-').length, added = d.filter((l) => l.kind === '+').length;
    box.append(el('p', {}, `Config version ${version} · changed from version ${c.previous.version}: ${removed} lines removed, ${added} added`));
    const keep = new Uint8Array(d.length);
    d.forEach((l, i) => { if (l.kind !== ' ') for (let k = Math.max(0, i - 2); k <= Math.min(d.length - 1, i + 2); ++k) keep[k] = 1; });
    const pre = el('pre', { class: 'diff' });
    let shown = 0, gap = false;
    for (let i = 0; i < d.length; ++i) {
        if (!keep[i]) { gap = true; continue; }
        if (gap && shown) pre.append(el('span', { class: 'dim' }, '⋯\n'));
        gap = false;
        if (++shown > 400) { pre.append(el('span', { class: 'dim' }, `… (${removed + added} changed lines in all)\n`)); break; }
        const l = d[i];
        pre.append(el('span', { class: l.kind === '-' ? 'del' : l.kind === '+' ? 'add' : '' }, `${l.kind} ${l.text}\n`));
    }
    if (!removed && !added) pre.append(el('span', { class: 'dim' }, 'no line changed\n'));
    box.append(pre);
    return box;
}
