// The frontend and storage networks (#/networks): the FCSW spine, a zone's FSWs and the storage
// SSWs, each with its cables counted by the state and health loomd stores for them (these
// networks have no per-link telemetry), from GET /api/v1/switches and /api/v1/links. A switch
// (#/networks/<switch>) lists its cables with the peer at the other end.
import { el, clear, rackLink } from './dom.js';
import { api } from './api.js';

// Every page of a list (keyset cursor).
async function all(path) {
    const out = [];
    let cursor = '';
    for (let i = 0; i < 200; ++i) {
        const r = await api(path + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
        out.push(...(r.items || []));
        if (!r.nextCursor) break;
        cursor = r.nextCursor;
    }
    return out;
}

let cache = null;  // {at, data}: refetched after 10 s
async function load(force) {
    if (!force && cache && Date.now() - cache.at < 10000) return cache.data;
    const [fcsw, fsw, ssw, front, storage] = await Promise.all([
        all('switches?role=fcsw&limit=5000'), all('switches?role=fsw&limit=5000'), all('switches?role=ssw&limit=5000'),
        all('links?network=frontend&limit=5000'), all('links?network=storage&limit=5000')]);
    const data = { switches: [...fcsw, ...ssw, ...fsw], links: [...front, ...storage] };
    cache = { at: Date.now(), data };
    return data;
}

const device = (port) => String(port || '').split('/')[0];
// A cable by loomd's health word (docs/api.md "Link health": its stored state and open events),
// as loom-console's networks view classes it (NetworkModel::code): up, degraded, down, else
// (drained, not in service, no data) a state, grey, never red. An older loomd sends no health:
// its stored state then.
const cableClass = (l) => {
    const h = l.health;
    if (h === undefined || h === null || h === '')
        return l.state === 'down' || l.state === 'failed' ? 'down' : l.state === 'active' ? 'up' : 'idle';
    return h === 'down' ? 'down' : h === 'degraded' ? 'degraded' : h === 'up' ? 'up' : 'idle';
};

export function networksView(state, main, route) {
    const wrap = el('div', { class: 'networks-view' });
    const msg = el('p', { class: 'message' });
    const body = el('div', {});
    wrap.append(msg, body);
    main.append(wrap);
    let current = route;
    const render = async (force) => {
        let d;
        try {
            d = await load(force);
            msg.textContent = '';
        } catch (e) {
            msg.textContent = e.message;
            return;
        }
        const bySwitch = new Map(d.switches.map((s) => [s.name, { s, cables: [] }]));
        for (const l of d.links)
            for (const end of [device(l.aPort), device(l.bPort)]) if (bySwitch.has(end)) bySwitch.get(end).cables.push(l);
        clear(body);
        if (current.name) return renderSwitch(body, bySwitch.get(current.name), current.name);
        const count = (cables) => {
            const c = { up: 0, degraded: 0, down: 0, idle: 0 };
            for (const l of cables) c[cableClass(l)]++;
            return c;
        };
        body.append(el('h2', {}, `Frontend and storage: ${d.switches.length} switches, ${d.links.length} cables`));
        for (const [role, title] of [['fcsw', 'Frontend spine (FCSW)'], ['ssw', 'Storage (SSW)'], ['fsw', 'Rack frontend switches (FSW)']]) {
            const rows = [...bySwitch.values()].filter((x) => x.s.role === role);
            if (!rows.length) continue;
            const shown = rows.slice(0, 400);
            body.append(el('h3', {}, `${title} (${rows.length})`), el('table', { class: 'net-switches' },
                el('tr', {}, ['switch', 'zone', 'rack', 'state', 'health', 'cables up', 'down', 'degraded', 'not in service'].map((h) => el('th', {}, h))),
                shown.map(({ s, cables }) => {
                    const c = count(cables);
                    return el('tr', { class: c.down ? 'down' : c.degraded ? 'degraded' : '' },
                        el('td', {}, el('a', { href: '#/networks/' + encodeURIComponent(s.name) }, s.name)), el('td', {}, s.zone || ''),
                        el('td', {}, s.rack ? rackLink(s.rack) : ''), el('td', { class: s.state === 'in_service' ? '' : 'dim' }, s.state),
                        el('td', { class: s.health === 'ok' ? '' : 'bad' }, s.health || ''),
                        el('td', {}, String(c.up)), el('td', { class: c.down ? 'bad' : '' }, String(c.down)),
                        el('td', { class: c.degraded ? 'warn' : '' }, String(c.degraded)), el('td', { class: 'dim' }, String(c.idle)));
                })));
            if (rows.length > shown.length) body.append(el('p', { class: 'dim' }, `… ${rows.length - shown.length} more (open one by name: #/networks/<switch>)`));
        }
    };
    const unsub = state.on('rack', () => { cache = null; });
    render(false);
    return { route(r) { current = r; render(false); }, destroy() { unsub(); } };
}

function renderSwitch(body, x, name) {
    body.append(el('p', {}, el('a', { href: '#/networks' }, '← frontend and storage')), el('h2', { class: 'switch-name' }, name));
    if (!x) {
        body.append(el('p', { class: 'error' }, 'No frontend or storage switch of that name.'));
        return;
    }
    const s = x.s;
    body.append(el('p', {}, `${s.role} · ${s.model || ''} · ${s.zone || 'site'} · state ${s.state} · health ${s.health || '–'}`));
    body.append(el('table', { class: 'net-cables' },
        el('tr', {}, ['port', 'peer', 'network', 'state', 'health', 'medium'].map((h) => el('th', {}, h))),
        x.cables.map((l) => {
            const mine = device(l.aPort) === name;
            const peer = mine ? l.bPort : l.aPort;
            return el('tr', { class: cableClass(l) }, el('td', {}, mine ? l.aPort : l.bPort), el('td', {}, peer),
                el('td', {}, l.network), el('td', {}, l.state), el('td', {}, l.health || ''), el('td', {}, l.medium || ''));
        })));
}
