// The dashboard's only door to loomd: the REST API and the WebSocket stream, both on relative
// URLs (so the page works behind a reverse proxy on a sub-path) with the signed-in token.
// The token lives in this tab's sessionStorage and travels in the Authorization header (REST)
// or as a Sec-WebSocket-Protocol entry (the stream: a browser cannot set headers there), never
// in a URL, a cookie or a log.

import { frameHead } from './packed.js';

const kTokenKey = 'loom.token';

export function token() { return sessionStorage.getItem(kTokenKey) || ''; }
export function setToken(t) { sessionStorage.setItem(kTokenKey, t); }
export function clearToken() { sessionStorage.removeItem(kTokenKey); }

export class ApiError extends Error {
    constructor(status, message, path) {
        super(message);
        this.status = status;
        this.path = path;
    }
}

// Listeners told when loomd answers 401 (the token is gone or revoked): the page asks again.
const unauthorized = new Set();
export function onUnauthorized(fn) { unauthorized.add(fn); }

export async function api(path, { method = 'GET', body, signal, cache = 'no-store' } = {}) {
    const headers = { 'Accept': 'application/json' };
    const t = token();
    if (t) headers['Authorization'] = 'Bearer ' + t;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    return answer(fetch('api/v1/' + path, {
        method, headers, signal, cache, credentials: 'omit',
        body: body === undefined ? undefined : JSON.stringify(body),
    }));
}

// A GET that boot.js started before the modules loaded (window.loomEarly[key]), taken once;
// otherwise the same request made now.
export function apiEarly(key, path, options) {
    const early = window.loomEarly && window.loomEarly[key];
    if (early && token()) {
        window.loomEarly[key] = null;
        return answer(early);
    }
    return api(path, options);
}

// A fetch's answer as api() gives it: the JSON body, or an ApiError (401 signs out).
async function answer(request) {
    let res;
    try {
        res = await request;
    } catch (e) {
        if (e.name === 'AbortError') throw e;
        throw new ApiError(0, 'loomd is unreachable');
    }
    let data = null;
    const text = await res.text();
    if (text) {
        try { data = JSON.parse(text); } catch { data = null; }
    }
    if (!res.ok) {
        const err = data && data.error ? data.error : {};
        if (res.status === 401) unauthorized.forEach((fn) => fn(err.message || 'unauthorized'));
        throw new ApiError(res.status, err.message || res.statusText || 'HTTP ' + res.status, err.path);
    }
    return data;
}

// Encodes one name as a path segment (names of ports and links hold '/').
export const seg = (name) => encodeURIComponent(name);

// The socket boot.js opened (window.loomEarly.stream), taken once, while it is open or opening
// and this tab still has a token; otherwise closed and forgotten.
function takeEarlyStream() {
    const e = window.loomEarly && window.loomEarly.stream;
    if (!e) return null;
    window.loomEarly.stream = null;
    if (e.ws.readyState <= 1 && token()) return e;
    try { e.ws.close(); } catch { /* closed */ }
    return null;
}

// Sign-out before the dashboard took boot.js's socket: it is closed, not kept.
export function dropEarlyStream() {
    const e = window.loomEarly && window.loomEarly.stream;
    if (!e) return;
    window.loomEarly.stream = null;
    try { e.ws.close(); } catch { /* closed */ }
}

// The live stream (/api/v1/stream): hello, snapshots and deltas of packed arrays, events,
// provisioning and inventory messages. Reconnects with backoff and resumes from the last seq it
// saw; a resync or a new snapshot replaces what it had. `handlers.onMessage(msg)` sees every
// message, `handlers.onState(state, detail)` the connection: 'connecting', 'live', 'down',
// 'unauthorized'; `handlers.onEventsGap(reason)` an event message missed (issue 39): the
// events topic's `eventSeq` skipped a number (hello gives the start), so the views that hold
// events re-read them.
export class Stream {
    constructor(topics, handlers) {
        this.topics = topics;
        this.handlers = handlers;
        this.lastSeq = null;
        this.eventSeq = null;  // the last events-topic number seen on this connection
        this.backoff = 500;
        this.ws = null;
        this.stopped = false;
        this.timer = null;
    }

    url() {
        const u = new URL('api/v1/stream', document.baseURI);
        u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
        return u.href;
    }

    start() {
        this.stopped = false;
        this.connect();
    }

    stop() {
        this.stopped = true;
        clearTimeout(this.timer);
        if (this.ws) this.ws.close(1000, 'bye');
        this.ws = null;
    }

    connect() {
        if (this.stopped) return;
        this.handlers.onState('connecting');
        let opened = false;
        let ws;
        const early = takeEarlyStream();
        if (early) {
            ws = early.ws;
        } else {
            try {
                ws = new WebSocket(this.url(), ['loom.v1', 'loom.bearer.' + token()]);
            } catch (e) {
                this.retry();
                return;
            }
        }
        this.ws = ws;
        const subscribed = () => {
            opened = true;
            this.backoff = 500;
            const perf = window.loomPerf;
            if (perf && !perf.wsOpen) perf.wsOpen = (early && early.openedAt) || performance.now();
        };
        ws.onopen = () => {
            subscribed();
            const sub = { op: 'subscribe', topics: this.topics };
            if (this.lastSeq !== null) sub.resumeFrom = this.lastSeq;
            ws.send(JSON.stringify(sub));
        };
        ws.onmessage = (ev) => this.receive(ev.data);
        ws.onclose = () => {
            if (this.ws !== ws) return;
            this.ws = null;
            if (this.stopped) return;
            if (!opened) {
                // A refused handshake looks like any network failure to a page: ask loomd
                // whether it is the token.
                api('whoami').then(() => this.retry(), (e) => {
                    if (e.status === 401) this.handlers.onState('unauthorized');
                    else this.retry();
                });
            } else {
                this.retry();
            }
        };
        ws.onerror = () => {};
        if (early && ws.readyState === 1) {
            // boot.js's socket is open: it subscribed its topics; subscribe what it did not,
            // drop what this stream does not want, then take what came so far, in order.
            subscribed();
            if (!early.subscribed) {
                ws.send(JSON.stringify({ op: 'subscribe', topics: this.topics }));
            } else {
                const add = this.topics.filter((t) => !early.topics.includes(t));
                const drop = early.topics.filter((t) => !this.topics.includes(t));
                if (add.length) ws.send(JSON.stringify({ op: 'subscribe', topics: add }));
                if (drop.length) ws.send(JSON.stringify({ op: 'unsubscribe', topics: drop }));
            }
        }
        // Still opening: the onopen above subscribes as for a socket of its own.
        if (early) {
            const kept = early.messages;
            early.messages = [];  // not held for the socket's life (at 98k ~0.5 MB of snapshots)
            for (const m of kept) if (this.ws === ws) this.receive(m);
        }
    }

    receive(data) {
        // A data frame (at 98k a whole array in base64) is not parsed here: its head says what
        // it is, and its text goes on as it came (state.js hands it to the worker). `at` is when
        // it arrived, for the latency to the painted map (bench/web).
        const t0 = performance.now();
        let msg = frameHead(data);
        if (msg) {
            msg.raw = data;
            msg.at = t0;
        } else {
            try { msg = JSON.parse(data); } catch { return; }
        }
        if (typeof msg.seq === 'number' && (this.lastSeq === null || msg.seq > this.lastSeq)) {
            this.lastSeq = msg.seq;
        }
        if (msg.type === 'hello') {
            this.eventSeq = typeof msg.eventSeq === 'number' ? msg.eventSeq : null;
            this.handlers.onState('live', msg);
        } else if (typeof msg.eventSeq === 'number') {
            // Below or at the last: a replayed message this page has. Above by more than
            // one: one was missed (or published before the subscription took).
            if (this.eventSeq !== null && msg.eventSeq > this.eventSeq + 1 && this.handlers.onEventsGap) {
                this.handlers.onEventsGap(`eventSeq ${this.eventSeq} -> ${msg.eventSeq}`);
            }
            if (this.eventSeq === null || msg.eventSeq > this.eventSeq) this.eventSeq = msg.eventSeq;
        }
        if (msg.raw !== undefined) {
            // This thread's share of a tick: the map's tick counts it (hall.js).
            const perf = window.loomPerf;
            if (perf) perf.receiveWork = (perf.receiveWork || 0) + (performance.now() - t0);
        }
        this.handlers.onMessage(msg);
    }

    // Topics a view wants while it is open (the fabric map's link.util): subscribed now and
    // on every reconnect until dropped.
    addTopics(topics) {
        const add = topics.filter((t) => !this.topics.includes(t));
        if (!add.length) return;
        this.topics = [...this.topics, ...add];
        if (this.ws && this.ws.readyState === 1) this.ws.send(JSON.stringify({ op: 'subscribe', topics: add }));
    }

    dropTopics(topics) {
        const drop = topics.filter((t) => this.topics.includes(t));
        if (!drop.length) return;
        this.topics = this.topics.filter((t) => !drop.includes(t));
        if (this.ws && this.ws.readyState === 1) this.ws.send(JSON.stringify({ op: 'unsubscribe', topics: drop }));
    }

    // Seconds until the next attempt to connect, null while one is under way (or live).
    reconnectInSeconds() {
        return this.retryAt ? Math.max(0, (this.retryAt - performance.now()) / 1000) : null;
    }

    retry() {
        if (this.stopped) return;
        this.handlers.onState('down');
        clearTimeout(this.timer);
        this.retryAt = performance.now() + this.backoff;  // for "reconnecting in N s"
        this.timer = setTimeout(() => { this.retryAt = null; this.connect(); }, this.backoff);
        this.backoff = Math.min(this.backoff * 2, 5000);
    }
}
