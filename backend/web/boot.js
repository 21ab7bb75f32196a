// The first thing the page runs (no imports): with a token in this tab it asks for what the
// first paint waits for — the compact hall, loomd's legends and the stream's GPU snapshots —
// while the dashboard's other modules are still being fetched and compiled (Firefox spent
// ~0.3 s on them before the hall request went out). state.js and app.js take each promise
// once; api.js's Stream takes the socket and the messages that came before it.
const t = sessionStorage.getItem('loom.token');
if (t) {
    const get = (path) => fetch('api/v1/' + path, {
        headers: { Accept: 'application/json', Authorization: 'Bearer ' + t },
        cache: 'no-cache', credentials: 'omit',
    });
    window.loomEarly = { hall: get('hall?format=compact'), legends: get('legends') };
    // Not the dashboard's to handle if the page never asks (a refused token): no unhandled
    // rejection in the console.
    window.loomEarly.hall.catch(() => {});
    window.loomEarly.legends.catch(() => {});
    // The stream, opened now: the snapshots come only once the socket is open and subscribed,
    // and at 98k they were the longest wait of the first paint (they went out after whoami).
    // Health and utilization first: the map is complete with those two. At most 256 messages
    // are kept; past that (the dashboard never took the socket) it is closed.
    try {
        const u = new URL('api/v1/stream', document.baseURI);
        u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
        const ws = new WebSocket(u.href, ['loom.v1', 'loom.bearer.' + t]);
        const topics = ['gpu.health', 'gpu.util', 'link.health', 'gpu.temp', 'events', 'provisioning', 'inventory', 'jobs'];
        const early = { ws, topics, messages: [], subscribed: false };
        ws.onopen = () => {
            ws.send(JSON.stringify({ op: 'subscribe', topics }));
            early.subscribed = true;
            early.openedAt = performance.now();
        };
        ws.onmessage = (ev) => {
            if (early.messages.push(ev.data) > 256) ws.close(1000, 'not taken');
        };
        ws.onerror = () => {};
        window.loomEarly.stream = early;
    } catch (e) {
        // No early socket: the dashboard opens its own.
    }
}
