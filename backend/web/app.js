// The Loom web dashboard: sign-in, the views behind hash URLs (#/hall, #/rack/z1-r001,
// #/fabric, #/fabric/zone/z1, #/switch/z1-ctsw01, #/provisioning, #/events, #/events/17,
// #/jobs, #/job/llama-70b), and the one live stream that feeds them.
import { api, apiEarly, token, setToken, clearToken, onUnauthorized, Stream, dropEarlyStream } from './api.js';
import { ClusterState } from './state.js';
import { hallView } from './hall_view.js';
import { eventsView } from './events.js';
import { provisioningView } from './provisioning.js';
import { fabricView } from './fabric.js';
import { jobsView } from './jobs.js';
import { networksView } from './networks.js';
import { el, clear } from './dom.js';
import { applyLegends } from './palette.js';

const $ = (id) => document.getElementById(id);
const state = new ClusterState();
window.loomState = state;
let stream = null;
let current = null;  // {view, instance}
let staleTimer = null;
let failTimer = null;

// The failure counter: loomd's open failures by kind (GET /api/v1/failures), each a button
// that shows only that kind on the hall map (and lists them beside it); "all" shows every kind.
const kKinds = [['gpu', 'GPU', 'GPUs'], ['host', 'host', 'hosts'], ['link', 'link', 'links'],
    ['switch', 'switch', 'switches'], ['rack', 'rack', 'racks']];
// The buttons are made once and updated in place: the counter refreshes on every health delta,
// and a button rebuilt under the pointer would swallow the click.
let failureButtons = null;
function renderFailures() {
    const box = $('failures');
    const f = state.failures;
    if (!f) { clear(box); failureButtons = null; return; }
    const filter = state.failureFilter;
    if (!failureButtons) {
        const pick = (kind) => () => {
            const cur = state.failureFilter;
            const next = kind === 'all' || cur === kind ? null : kind;
            if (parseRoute(location.hash).view !== 'hall') navigate('#/hall' + (next ? '?f=' + next : ''));
            else state.setFailureFilter(next);
        };
        failureButtons = new Map();
        clear(box).append(el('span', { class: 'failures-title' }, 'Open failures:'));
        for (const k of ['all', ...kKinds.map(([x]) => x)]) {
            const meta = kKinds.find(([x]) => x === k);
            const b = el('button', { type: 'button', class: 'fk', dataset: { kind: k },
                                     title: k === 'all' ? 'Show every kind of failure on the map'
                                                        : `Show only ${meta[2]} on the map and list them (click again for all)`,
                                     onclick: pick(k) });
            failureButtons.set(k, b);
            box.append(b);
        }
    }
    for (const [k, b] of failureButtons) {
        const n = k === 'all' ? f.total : f.counts[k] || 0;
        const meta = kKinds.find(([x]) => x === k);
        const text = k === 'all' ? `all ${n}` : `${n} ${n === 1 ? meta[1] : meta[2]}`;
        if (b.textContent !== text) b.textContent = text;
        b.dataset.count = String(n);
        b.className = 'fk' + ((k === 'all' ? !filter : filter === k) ? ' on' : '') + (n ? ' bad' : '');
    }
}
state.on('failures', renderFailures);
state.on('filter', renderFailures);

const views = { hall: hallView, fabric: fabricView, networks: networksView, provisioning: provisioningView, events: eventsView, jobs: jobsView };

// '#/rack/z1-r001?mode=health' -> {view: 'hall', kind: 'rack', name: 'z1-r001', params: {mode: 'health'}}
function parseRoute(hash) {
    const r = parsePath(hash.split('?')[0]);
    const q = hash.includes('?') ? hash.slice(hash.indexOf('?') + 1) : '';
    r.params = Object.fromEntries(new URLSearchParams(q));
    return r;
}

function parsePath(hash) {
    const parts = hash.replace(/^#\/?/, '').split('/').map((p) => { try { return decodeURIComponent(p); } catch { return p; } });
    const [a, b, c] = parts;
    switch (a) {
        case 'rack': return { view: 'hall', kind: 'rack', name: b };
        case 'switch': return { view: 'fabric', kind: 'switch', name: b };
        case 'fabric': return b === 'zone' ? { view: 'fabric', kind: 'zone', name: c } : { view: 'fabric' };
        case 'events': return b ? { view: 'events', kind: 'event', name: b } : { view: 'events' };
        case 'event': return { view: 'events', kind: 'event', name: b };
        case 'job': return { view: 'jobs', kind: 'job', name: b };
        case 'networks': return { view: 'networks', kind: b ? 'switch' : undefined, name: b };
        case 'jobs': case 'provisioning': case 'hall': return { view: a };
        default: return { view: 'hall' };
    }
}

function navigate(hash) {
    if (location.hash !== hash) location.hash = hash;
}

function route() {
    if (!stream) return;
    const r = parseRoute(location.hash);
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === r.view);
    if (current && current.view === r.view) {
        current.instance.route(r);
        return;
    }
    if (current) current.instance.destroy();
    const main = $('main');
    while (main.firstChild) main.removeChild(main.firstChild);
    current = { view: r.view, instance: views[r.view](state, main, r, navigate) };
    document.title = `Loom · ${r.view}`;
}

function showSignIn(message) {
    $('signin').hidden = false;
    $('signin-error').textContent = message || '';
    $('token').value = '';
    $('token').focus();
}

function stop() {
    if (stream) stream.stop();
    stream = null;
    if (current) current.instance.destroy();
    current = null;
    clearInterval(staleTimer);
    clearInterval(failTimer);
    state.stopFailures();
}

function signOut(message) {
    stop();
    dropEarlyStream();
    clearToken();
    $('who').textContent = '';
    $('signout').hidden = true;
    showSignIn(message);
}

function setConn(text, cls) {
    const c = $('conn');
    c.textContent = text;
    c.className = 'conn ' + cls;
}

// "data 0.4 s old" on the map and in the header; "stale" when the stream is down or the data
// stopped coming for longer than three intervals.
function updateAge() {
    const age = state.dataAgeSeconds();
    const banner = document.querySelector('.map-banner');
    const limit = Math.max(3, (3 * state.intervalMs) / 1000);
    const stale = !state.live || (age !== null && age > limit);
    let text;
    if (!state.live) {
        // As the console says it: how old the data is and when the next attempt comes.
        const retry = stream && stream.reconnectInSeconds();
        text = (age === null ? 'stale: not connected to loomd' : `stale: loomd unreachable, data ${age.toFixed(0)} s old`) +
            (retry === null || retry === undefined ? ' — reconnecting' : ` — reconnecting in ${retry.toFixed(1)} s`);
    }
    else if (age === null) text = 'waiting for data';
    else text = `data ${age < 10 ? age.toFixed(1) : age.toFixed(0)} s old` + (stale ? ' (stale)' : '');
    document.body.classList.toggle('stale', stale);
    state.setStale(stale);
    const moved = stale && state.staleText !== text;
    state.staleText = text;
    if (moved) state.emit('staleText');  // the map writes it over the greyed hall
    if (banner) {
        banner.textContent = text;
        banner.classList.toggle('stale', stale);
    }
}

// loomd's colours and scales (GET /api/v1/legends); the maps count as drawn once they are in.
function loadLegends() {
    return apiEarly('legends', 'legends').then((a) => {
        state.legendsLoaded = true;
        const perf = (window.loomPerf = window.loomPerf || { ticks: [], hallComplete: null });
        if (perf.legends === undefined) perf.legends = performance.now();
        if (applyLegends(a)) state.emit('legends');
    }).catch(() => {});
}

async function start() {
    let me;
    // The hall (the largest answer) is fetched beside whoami and the stream, not after them;
    // so are loomd's colours, which the maps wait for before they draw.
    const hall = state.loadHall();
    hall.catch(() => {});
    const legends = loadLegends();
    try {
        me = await api('whoami');
    } catch (e) {
        if (e.status === 401) { signOut('This token was refused: ' + e.message); return; }
        showSignIn('loomd is unreachable: ' + e.message);
        return;
    }
    $('signin').hidden = true;
    state.failuresOff = false;
    state.role = me.role;
    state.name = me.name;
    $('who').textContent = `${me.name} (${me.role})`;
    document.body.dataset.role = me.role;
    $('signout').hidden = false;
    // Snapshots come in this order: health and utilization first (the map is complete with
    // them). boot.js opened the socket with the same list.
    stream = new Stream(['gpu.health', 'gpu.util', 'link.health', 'gpu.temp', 'events', 'provisioning', 'inventory', 'jobs'], {
        onMessage: (msg) => {
            state.handle(msg);
            if (msg.type === 'resync') state.loadHall().catch(() => {});
        },
        // An event message was missed (issue 39): the event list, the job views and the
        // failure counter re-read what loomd holds.
        onEventsGap: (reason) => {
            state.gaps = (state.gaps || 0) + 1;
            state.emit('resync', { reason });
            state.scheduleFailures(0);
        },
        onState: (s, hello) => {
            state.live = s === 'live';
            if (s === 'live') {
                setConn('live', 'live');
                if (hello && hello.role) state.role = hello.role;
                if (!state.hall) state.loadHall().catch(() => {});
                // A reconnect (issue 39): what loomd closed, acknowledged or opened while this
                // page was away is not replayed after a restart; the views that hold events
                // re-read them and replace what they held.
                else state.emit('resync', { reason: 'reconnect' });
                state.scheduleFailures(0);  // what changed while we were away
                // The legends' colours, scales and thresholds are loomd's (GET /api/v1/legends).
                loadLegends();
            } else if (s === 'unauthorized') {
                signOut('The stream refused this token (revoked?). Sign in again.');
            } else {
                setConn(s === 'down' ? 'reconnecting' : 'connecting', 'down');
            }
            updateAge();
        },
    });
    state.stream = stream;  // views add topics they need while open (the fabric's link.util)
    stream.start();
    await legends;
    route();
    staleTimer = setInterval(updateAge, 500);
    // Deltas, rack and event messages refresh the failures at once; this catches the rest
    // (an event closed by time, a switch event) every 5 s.
    failTimer = setInterval(() => { if (state.live) state.scheduleFailures(0); }, 5000);
    try {
        await hall;
        const c = $('cluster');
        c.textContent = `${state.hall.cluster} · ${state.nGpus.toLocaleString('en')} GPUs`;
    } catch (e) {
        if (e.status !== 401 && !state.hall) state.loadHall().catch(() => {});
    }
}

onUnauthorized((message) => { if (stream) signOut('Token refused: ' + message); });

$('signin-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const t = $('token').value.trim();
    if (!t) return;
    setToken(t);
    try {
        await api('whoami');
    } catch (err) {
        clearToken();
        $('signin-error').textContent = err.status === 401 ? 'This token was refused: ' + err.message : err.message;
        return;
    }
    start();
});
$('signout').addEventListener('click', () => signOut(''));
window.addEventListener('hashchange', route);

if (token()) start();
else showSignIn('');
