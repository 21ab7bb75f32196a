// The hall view (#/hall, #/rack/<name>): the map (hall.js), its toolbar (colour mode,
// utilization window, Fit, the legend of every mode), the rack panel (rack_panel.js) and the
// list of open failures of the kind the header's counter filters on.
import { el, clear } from './dom.js';
import { api } from './api.js';
import { HallMap } from './hall.js';
import { RackPanel } from './rack_panel.js';
import { kRackStates, css, kFailed, kQuarantined, kDegraded, kNoData, stateColour, rampCss, scales,
         kHealthColours } from './palette.js';

const kModes = [['util', 'Utilization'], ['temp', 'Temperature'], ['health', 'Health'], ['provisioning', 'Provisioning']];
const kWindows = [[1, '1 s (as sent)'], [10, 'mean 10 s'], [30, 'mean 30 s'], [60, 'mean 1 min'], [300, 'mean 5 min']];
const kFailureKindNames = { gpu: 'GPUs', host: 'hosts', link: 'links', switch: 'switches', rack: 'racks' };

// The hall view's URL: #/hall or #/rack/<name>, with the view, colour mode, utilization window
// and failure filter as parameters (#/rack/z1-r004?v=812.5,40.0,14.000&mode=health&f=link), kept
// up to date as the user moves, so a reload or a shared link shows the same picture.
export function hallView(state, main, route, nav) {
    const wrap = el('div', { class: 'hall-view' });
    const bar = el('div', { class: 'toolbar' });
    const mapHost = el('div', { class: 'map-host' });
    const side = el('aside', { class: 'side', hidden: true });
    const failSide = el('aside', { class: 'side failure-list', hidden: true });
    wrap.append(bar, el('div', { class: 'hall-body' }, mapHost, failSide, side));
    main.append(wrap);
    const params = { ...(route.params || {}) };
    let current = null;
    const writeUrl = () => {
        const path = current ? '#/rack/' + encodeURIComponent(current) : '#/hall';
        const q = new URLSearchParams();
        for (const k of ['v', 'mode', 'win', 'f', 'job']) if (params[k]) q.set(k, params[k]);
        const qs = q.toString().replace(/%2C/g, ',');  // the view's commas stay readable
        const url = path + (qs ? '?' + qs : '');
        if (location.hash !== url) history.replaceState(null, '', url);
    };
    const map = new HallMap(state, mapHost, {
        onSelect: (name) => {
            // A rack is zoomed to; a click beside the racks keeps the view where it is.
            const q = new URLSearchParams();
            for (const k of name ? ['mode', 'win', 'f', 'job'] : ['v', 'mode', 'win', 'f', 'job']) if (params[k]) q.set(k, params[k]);
            nav((name ? '#/rack/' + encodeURIComponent(name) : '#/hall') + (q.toString() ? '?' + q : ''));
        },
    });
    let urlTimer = null;
    let restoring = false;
    map.onView = (v) => {
        // A view the URL asked for (a rack zoomed to, Fit) is the URL already: only what the
        // user does to the map is written back.
        if (restoring) return;
        params.v = v || '';
        clearTimeout(urlTimer);
        urlTimer = setTimeout(writeUrl, 250);
    };
    const panel = new RackPanel(state, side);
    const select = el('select', { class: 'mode', onchange: () => { setMode(select.value); writeUrl(); } },
        kModes.map(([v, t]) => el('option', { value: v }, t)));
    const windowBox = el('select', { class: 'util-window', title: 'Utilization is the mean over this window, so the map does not flicker with every sample',
                                     onchange: () => { setWindow(Number(windowBox.value)); writeUrl(); } },
        kWindows.map(([v, t]) => el('option', { value: String(v) }, t)));
    const windowLabel = el('label', { class: 'window-label' }, windowBox);
    const legendBox = el('span', { class: 'legend' });
    bar.append(el('label', {}, 'Colour by ', select), windowLabel,
        el('button', { type: 'button', class: 'fit', onclick: () => map.fit() }, 'Fit'), legendBox);
    const setMode = (m) => {
        if (!kModes.some(([v]) => v === m)) m = 'util';
        select.value = m;
        params.mode = m === 'util' ? '' : m;
        map.setMode(m);
        windowLabel.hidden = m !== 'util';
        clear(legendBox).append(...legend(m));
    };
    // loomd's scales arrived or changed: the legend and the map's colours follow.
    const unsubLegends = state.on('legends', () => { clear(legendBox).append(...legend(select.value)); map.recolourAll(); });
    const setWindow = (secs) => {
        if (!kWindows.some(([v]) => v === secs)) secs = 30;
        windowBox.value = String(secs);
        params.win = secs === 30 ? '' : String(secs);
        try { localStorage.setItem('loom.utilWindowSeconds', String(secs)); } catch { /* private mode */ }
        state.setUtilWindow(Math.max(1, Math.round((secs * 1000) / (state.intervalMs || 1000))));
    };
    // The failure list beside the map while the counter filters on one kind.
    const renderFailureList = () => {
        const kind = state.failureFilter;
        params.f = kind || '';
        clear(failSide);
        failSide.hidden = !kind || !!current;
        if (!kind) return;
        const f = state.failures;
        const items = f ? f.items.filter((it) => it.kind === kind) : [];
        failSide.append(el('div', { class: 'panel-head' }, el('h2', {}, `Open failures: ${kindName(kind)} (${f ? f.counts[kind] : 0})`),
            el('a', { href: '#/hall', class: 'close', title: 'show every kind', onclick: (e) => { e.preventDefault(); state.setFailureFilter(null); } }, '×')));
        if (!items.length) failSide.append(el('p', { class: 'dim' }, 'None open.'));
        failSide.append(el('ul', { class: 'failure-items' }, items.slice(0, 500).map((it) =>
            el('li', { class: it.failed ? 'bad' : 'warn' }, el('b', {}, it.name), ' ', it.state,
               it.rack ? [' · ', el('a', { href: '#/rack/' + encodeURIComponent(it.rack) + (kind ? '?f=' + kind : '') }, it.rack)] : null))));
    };
    const unsubFail = [state.on('failures', renderFailureList), state.on('filter', () => { renderFailureList(); writeUrl(); })];
    let stored = 30;
    try { stored = Number(localStorage.getItem('loom.utilWindowSeconds')) || 30; } catch { /* private mode */ }
    // A job's GPUs highlighted (#/hall?job=<name>): its hosts from GET /api/v1/jobs/<name>, their
    // GPUs from the hall layout (a rack's GPUs are contiguous, its hosts by slot).
    params.job = '';
    const jobNote = el('span', { class: 'job-note' });
    bar.append(jobNote);
    const showJob = async () => {
        const name = params.job;
        clear(jobNote);
        if (!name) { map.setHighlight(null); return; }
        let job;
        try {
            job = await api('jobs/' + encodeURIComponent(name));
        } catch (e) {
            jobNote.append(el('span', { class: 'error' }, `job ${name}: ${e.message}`));
            return;
        }
        if (params.job !== name) return;
        const gpus = new Set();
        const wanted = new Set(job.hosts || []);
        for (const r of (state.hall ? state.hall.racks : [])) {
            const per = r.hosts.length ? Math.floor(r.gpuCount / r.hosts.length) : 0;
            r.hosts.forEach((h, slot) => { if (wanted.has(h)) for (let k = 0; k < per; ++k) gpus.add(r.gpuOffset + slot * per + k); });
        }
        map.setHighlight(gpus, `job ${name}: ${gpus.size} GPUs`);
        jobNote.append(`job ${name} highlighted `, el('a', { href: '#/job/' + encodeURIComponent(name) }, 'detail'), ' ',
            el('a', { href: '#/fabric?job=' + encodeURIComponent(name) }, 'on the fabric'), ' ',
            el('a', { href: '#/hall', onclick: (e) => { e.preventDefault(); params.job = ''; showJob(); writeUrl(); } }, 'clear'));
    };
    const unsubJobHall = state.on('hall', () => { if (params.job) showJob(); });
    let viewKey = null;
    const apply = (r) => {
        const p = r.params || {};
        // The rack first: every URL written from here on (a filter set below) names it.
        const name = r.kind === 'rack' ? r.name : null;
        const rackChanged = name !== current;
        current = name;
        for (const k of ['mode', 'win', 'f', 'v']) params[k] = p[k] || '';
        if ((p.job || '') !== params.job) { params.job = p.job || ''; showJob(); }
        setMode(params.mode || 'util');
        setWindow(Number(params.win) || stored);
        if ((params.f || null) !== state.failureFilter) state.setFailureFilter(params.f && kFailureKindNames[params.f] ? params.f : null);
        if (rackChanged) {
            map.select(name);
            panel.show(name);
        }
        renderFailureList();
        // The view: the one in the link, else the rack zoomed to, else Fit.
        const restore = () => {
            restoring = true;
            try {
                if (params.v && map.restoreView(params.v)) return true;
                if (name && map.layout) { map.zoomToRack(name); return true; }
                if (map.layout && !name) { map.fit(); return true; }
                return false;
            } finally {
                restoring = false;
            }
        };
        const key = (name || '') + '|' + (params.v || '');
        if (key === viewKey) return;  // only the mode, window or filter changed
        viewKey = key;
        if (!map.layout || !map.canvas.clientWidth) map.pendingView = restore;
        else restore();
    };
    const unsubHall = state.on('hall', () => {
        if (map.pendingView && map.layout) { const f = map.pendingView; map.pendingView = null; f(); }
        if (current) panel.render();
    });
    // The canvas has its size only after layout: a view restored before it would be off.
    requestAnimationFrame(() => { if (map.pendingView && map.layout) { const f = map.pendingView; map.pendingView = null; f(); } });
    apply(route);
    return {
        route: apply,
        destroy() { unsubHall(); unsubJobHall(); unsubLegends(); unsubFail.forEach((u) => u()); clearTimeout(urlTimer); map.destroy(); panel.destroy(); },
        map,
    };
}

const kindName = (k) => kFailureKindNames[k] || k;

const swatch = (rgb, text, cls) => {
    const sw = el('span', { class: 'swatch' + (cls ? ' ' + cls : '') });
    sw.style.backgroundColor = Array.isArray(rgb) ? css(...rgb) : rgb;
    return el('span', { class: 'swatch-item' }, sw, text);
};

// The legend of a colour mode, and the failure marks drawn over every mode.
function legend(mode) {
    const out = [];
    if (mode === 'util' || mode === 'temp') {
        // loomd's scale (GET /api/v1/legends): its ends, and the detection thresholds marked.
        const sc = scales[mode];
        const bar = el('canvas', { class: 'ramp', width: 120, height: 10 });
        const ctx = bar.getContext('2d');
        for (let x = 0; x < 120; ++x) { ctx.fillStyle = rampCss(x / 119); ctx.fillRect(x, 0, 1, 10); }
        const marks = [];
        for (const t of sc.thresholds) {
            const x = Math.round(((t.value - sc.min) / (sc.max - sc.min)) * 119);
            ctx.fillStyle = '#fff';
            ctx.fillRect(x - 1, 0, 3, 10);
            ctx.fillStyle = css(...(t.severity === 'critical' ? kFailed : kDegraded));
            ctx.fillRect(x, 0, 1, 10);
            marks.push(`${t.severity} ${t.value} ${sc.unit}`);
        }
        out.push(el('span', { class: 'swatch-item ramp-item', 'data-min': String(sc.min), 'data-max': String(sc.max),
                              'data-thresholds': sc.thresholds.map((t) => t.value).join(',') },
                    `${sc.min} ${sc.unit}`, bar, `${sc.max} ${sc.unit}`));
        if (marks.length) out.push(el('span', { class: 'swatch-item scale-marks', title: sc.thresholds.map((t) => t.name).join(', ') }, '| ' + marks.join(' · ')));
    } else if (mode === 'health') {
        out.push(swatch(kHealthColours[0], 'ok'), swatch(kHealthColours[1], 'warning'),
                 swatch(kHealthColours[2], 'failed'), swatch(kHealthColours[3], 'quarantined'));
    } else if (mode === 'provisioning') {
        out.push(...kRackStates.map((st) => swatch(stateColour(st), st.replace('_', ' '))));
    }
    if (mode !== 'provisioning') out.push(swatch(kNoData, 'no data / not in service'));
    out.push(el('span', { class: 'legend-sep' }, '·'),
        swatch(kFailed, 'failed', 'mark'), swatch(kQuarantined, 'quarantined', 'mark crossed'), swatch(kDegraded, 'warning', 'mark diamond'),
        el('span', { class: 'swatch-item' }, el('span', { class: 'swatch ring' }), 'link down'),
        el('span', { class: 'swatch-item' }, el('span', { class: 'swatch badge' }, 'n'), 'failures in rack'));
    return out;
}
