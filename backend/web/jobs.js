// Training jobs (GET /api/v1/jobs), live from the stream's jobs topic. #/job/<name> selects one.
import { el, clear, fmtTime } from './dom.js';
import { api } from './api.js';

export function jobsView(state, main, route) {
    const wrap = el('div', { class: 'jobs-view' });
    const text = el('input', { class: 'f-text', placeholder: 'filter: name, owner, state' });
    const count = el('span', { class: 'count' });
    const table = el('table', { class: 'jobs' });
    const msg = el('p', { class: 'message' });
    const detail = el('pre', { class: 'job-hosts', hidden: true });
    wrap.append(el('div', { class: 'toolbar' }, text, count), msg, table, detail);
    main.append(wrap);
    let jobs = [];
    let selected = route.kind === 'job' ? route.name : null;
    const load = async () => {
        try {
            const items = [];
            let cursor = '';
            for (let page = 0; page < 20; ++page) {
                const r = await api('jobs?limit=500' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
                items.push(...(r.items || []));
                if (!r.nextCursor) break;
                cursor = r.nextCursor;
            }
            jobs = items;
            msg.textContent = jobs.length ? '' : 'No jobs. Jobs come from `kind: Job` documents (loomctl apply) or a Slurm sync.';
        } catch (e) {
            msg.textContent = e.message;
        }
        render();
    };
    const render = () => {
        const t = text.value.trim().toLowerCase();
        const rows = jobs.filter((j) => !t || [j.name, j.owner, j.state].some((x) => (x || '').toLowerCase().includes(t)));
        count.textContent = `${rows.length} job${rows.length === 1 ? '' : 's'}`;
        clear(table).append(el('tr', {}, ['name', 'owner', 'state', 'hosts', 'GPUs', 'pattern', 'nodelist', 'updated'].map((h) => el('th', {}, h))));
        for (const j of rows) {
            table.append(el('tr', { class: j.name === selected ? 'selected' : '' },
                el('td', {}, el('a', { href: '#/job/' + encodeURIComponent(j.name) }, j.name)),
                el('td', { class: 'owner' }, j.owner), el('td', {}, j.state), el('td', {}, String(j.hostCount)),
                el('td', {}, String(j.gpus)), el('td', {}, j.pattern), el('td', {}, el('code', {}, j.nodelist)),
                el('td', {}, fmtTime(j.updatedAt))));
        }
        const sel = jobs.find((j) => j.name === selected);
        detail.hidden = !sel;
        if (sel) detail.textContent = `${sel.name}: ${sel.hostCount} hosts\n${(sel.hosts || []).join(' ')}`;
    };
    text.addEventListener('input', render);
    let timer = null;
    const unsub = state.on('job', () => { clearTimeout(timer); timer = setTimeout(load, 300); });
    load();
    return {
        route(r) { selected = r.kind === 'job' ? r.name : null; render(); },
        destroy() { unsub(); clearTimeout(timer); },
    };
}
