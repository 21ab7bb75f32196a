// The event list: open and recent events from GET /api/v1/events, kept live by the stream's
// event messages (an event opens, is acknowledged, closes), with filters and, for operators,
// acknowledge and close. #/events/<id> selects one event.
import { el, clear, fmtTime, rackLink } from './dom.js';
import { api } from './api.js';

export function eventsView(state, main, route) {
    const wrap = el('div', { class: 'events-view' });
    const sev = el('select', { class: 'f-severity' }, ['', 'critical', 'warning', 'info'].map((s) => el('option', { value: s }, s || 'any severity')));
    const st = el('select', { class: 'f-state' }, [['open', 'open'], ['closed', 'closed'], ['', 'open and closed']].map(([v, t]) => el('option', { value: v }, t)));
    const text = el('input', { class: 'f-text', placeholder: 'filter: location, kind, message' });
    const count = el('span', { class: 'count' });
    const list = el('table', { class: 'events' });
    const msg = el('p', { class: 'message' });
    wrap.append(el('div', { class: 'toolbar' }, sev, st, text, count), msg, list);
    main.append(wrap);
    let events = new Map();
    let selected = route.kind === 'event' ? Number(route.name) : null;

    const load = async () => {
        const q = new URLSearchParams({ limit: '500' });
        if (st.value) q.set('state', st.value);
        if (sev.value) q.set('severity', sev.value);
        try {
            const r = await api('events?' + q);
            events = new Map((r.items || []).map((e) => [e.id, e]));
            msg.textContent = '';
        } catch (e) {
            msg.textContent = e.message;
        }
        render();
    };
    const matches = (e) => {
        if (st.value === 'open' && e.state !== 'open') return false;
        if (st.value === 'closed' && e.state === 'open') return false;
        if (sev.value && e.severity !== sev.value) return false;
        const t = text.value.trim().toLowerCase();
        if (t && ![e.location, e.kind, e.message, e.rack].some((x) => (x || '').toLowerCase().includes(t))) return false;
        return true;
    };
    const act = (e, what) => async () => {
        try {
            const body = what === 'close' ? { reason: 'closed from the web dashboard' } : { comment: 'acknowledged from the web dashboard' };
            const out = await api(`events/${e.id}/${what}`, { method: 'POST', body });
            events.set(out.id, out);
            render();
        } catch (err) {
            msg.textContent = `${what} event ${e.id}: ${err.message}`;
        }
    };
    const render = () => {
        const rows = [...events.values()].filter(matches).sort((a, b) => b.id - a.id);
        count.textContent = `${rows.length} event${rows.length === 1 ? '' : 's'}`;
        clear(list).append(el('tr', {}, ['id', 'opened', 'severity', 'kind', 'location', 'message', 'state', ''].map((h) => el('th', {}, h))));
        for (const e of rows) {
            const ops = [];
            if (state.canOperate() && e.state === 'open') {
                if (!e.acknowledgedAt) ops.push(el('button', { type: 'button', class: 'ack', onclick: act(e, 'ack') }, 'Acknowledge'));
                ops.push(el('button', { type: 'button', class: 'close-event', onclick: act(e, 'close') }, 'Close'));
            }
            const tr = el('tr', { class: `sev-${e.severity}${e.id === selected ? ' selected' : ''}`, dataset: { id: String(e.id) } },
                el('td', {}, el('a', { href: '#/events/' + e.id }, String(e.id))),
                el('td', {}, fmtTime(e.openedAt)), el('td', {}, e.severity), el('td', {}, e.kind),
                el('td', {}, e.rack && e.location !== e.rack ? [e.location, ' (', rackLink(e.rack), ')'] : e.rack ? rackLink(e.rack) : e.location),
                el('td', { class: 'msg' }, e.message),
                el('td', {}, e.state + (e.acknowledgedBy ? ` · ack ${e.acknowledgedBy}` : '') + (e.closedBy ? ` · closed by ${e.closedBy}` : '')),
                el('td', {}, ops));
            list.append(tr);
        }
        if (selected !== null) {
            const tr = list.querySelector(`tr[data-id="${selected}"]`);
            if (tr) tr.scrollIntoView({ block: 'center' });
        }
    };
    sev.addEventListener('change', load);
    st.addEventListener('change', load);
    text.addEventListener('input', render);
    const unsub = state.on('event', (e) => { events.set(e.id, e); render(); });
    const unsubResync = state.on('resync', load);
    load();
    return {
        route(r) { selected = r.kind === 'event' ? Number(r.name) : null; render(); },
        destroy() { unsub(); unsubResync(); },
    };
}
