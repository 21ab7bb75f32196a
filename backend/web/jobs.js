// Training jobs (GET /api/v1/jobs), live from the stream's jobs topic: each running job's
// expected bus bandwidth and health (the `jobHealth` pushes move a row in place), and for the
// selected one (#/job/<name>) the detail of GET /api/v1/jobs/<name>: the links down under it,
// the bottlenecks, its GPUs that are not ok, its open events and straggler suspects, each
// location a link to the map.
import { el, clear, fmtTime, link, rackLink } from './dom.js';
import { api } from './api.js';

// The job's health in one word, loomd's (the same word as loomctl's HEALTH column).
export function healthWord(j) {
    const h = j.health;
    if (!h) return j.state === 'running' ? '…' : '';
    // loomd's word (health.status, jobs::jobHealthStatus): the rule is loomd's alone.
    return h.status || 'unknown';
}

const severityOf = (word) => ({ degraded: 'bad', 'gpu-failed': 'bad', unknown: 'warn', 'links-down': 'warn', 'gpu-warning': 'warn' })[word] || '';
const pct = (v) => (typeof v === 'number' ? v.toFixed(1) + ' %' : '');
const rackOf = (name) => (name.match(/^(.*?-r\d+)(-|$)/) || [])[1];
const switchOf = (port) => port.split('/')[0];

function busBwText(h) {
    if (!h) return '';
    return h.degraded && h.healthyBusBw > h.busBw ? `${pct(h.busBw)} (was ${pct(h.healthyBusBw)})` : pct(h.busBw);
}

// A link name "a/p1--b/p2" as links to its two ends (a switch, or a host's rack).
function linkCell(name) {
    const ends = name.split('--');
    const to = (port) => {
        const dev = switchOf(port);
        return /-(rtsw|ctsw|atsw|fsw|fcsw|ssw|leaf|spine|core)\d*$/.test(dev)
            ? link('#/switch/' + encodeURIComponent(dev), port)
            : rackOf(dev) ? link('#/rack/' + encodeURIComponent(rackOf(dev)), port) : port;
    };
    return ends.length === 2 ? [to(ends[0]), ' — ', to(ends[1])] : [name];
}

function detailOf(job) {
    const h = job.health;
    const parts = [el('h3', {}, job.name), el('p', {}, `${job.owner || ''} · ${job.state} · ${job.hostCount} hosts, ${job.gpus} GPUs · ${job.pattern}`), el('p', {}, el('code', {}, job.nodelist || '')),
        el('p', {}, el('a', { class: 'job-on-map', href: '#/hall?job=' + encodeURIComponent(job.name) }, 'Show its GPUs on the hall map'), ' · ',
            el('a', { class: 'job-on-fabric', href: '#/fabric?job=' + encodeURIComponent(job.name) }, 'its links on the fabric map'))];
    if (!h) {
        parts.push(el('p', { class: 'dim' }, job.state === 'running' ? 'health: being computed' : 'health is kept for running jobs only'));
        return parts;
    }
    const word = healthWord(job);
    parts.push(el('p', { class: 'job-health ' + severityOf(word) }, `health ${word} · busbw ${busBwText(h)} of the NIC rate · ${h.linksCrossed} links crossed`));
    if (h.error) parts.push(el('p', { class: 'bad' }, h.error));
    const down = h.linksDown || [];
    parts.push(el('h4', {}, `Links down under the job (${down.length})`));
    if (down.length) parts.push(el('ul', { class: 'job-links-down' }, down.slice(0, 200).map((l) => el('li', {}, linkCell(l)))));
    if ((h.bottlenecks || []).length) {
        parts.push(el('h4', {}, 'Bottlenecks'));
        parts.push(el('ul', {}, h.bottlenecks.map((b) => el('li', {}, linkCell(b.link), ` ${b.direction}: ${b.flows} flows, ${b.gbpsPerFlow} Gb/s each`))));
    }
    const gpus = h.gpusNotOk || [];
    parts.push(el('h4', {}, `GPUs not ok (${gpus.length} of ${h.gpus ? h.gpus.total : 0})`));
    if (gpus.length) parts.push(el('ul', {}, gpus.map((g) => el('li', {}, rackOf(g.name) ? rackLink(rackOf(g.name)) : '', ' ', g.name, ': ', g.health))));
    const events = h.events || [];
    parts.push(el('h4', {}, `Open events (${events.length})`));
    if (events.length) parts.push(el('ul', { class: 'rack-events' }, events.map((e) => el('li', { class: 'sev-' + e.severity }, `${fmtTime(e.openedAt)} ${e.severity} ${e.kind} `, el('a', { href: '#/events' }, e.message)))));
    const suspects = job.suspects || [];
    // One open straggler event per suspect location (issue 34), highest score first.
    const open = job.stragglers || (job.straggler ? [job.straggler] : []);
    parts.push(el('h4', { class: open.length ? 'bad job-stragglers' : 'job-stragglers' }, `Open straggler events (${open.length})`));
    if (open.length) parts.push(el('ul', { class: 'job-straggler-list' }, open.map((s) => el('li', { class: 'bad' }, `${s.location} (${s.cause}, score ${s.score ?? '–'}) since ${fmtTime(s.openedAt)}: ${s.evidence || ''}`))));
    else parts.push(el('p', { class: 'dim' }, 'none: no rank or uplink holds the job back'));
    // Its hosts and GPUs that are lemons (issue 34): the suspect or a failure in several jobs.
    const lemons = job.lemons || [];
    parts.push(el('h4', { class: lemons.length ? 'bad job-lemons' : 'job-lemons' }, `Lemons among its hosts and GPUs (${lemons.length})`));
    if (lemons.length) parts.push(el('ul', { class: 'job-lemon-list' }, lemons.map((l) => el('li', { class: 'bad' }, `${l.name} (${l.kind}): ${l.jobs} jobs — ${(l.strikes || []).join(', ')}`))));
    if (suspects.length) {
        parts.push(el('h4', {}, `Straggler suspects (${suspects.length})`));
        parts.push(el('ul', {}, suspects.map((s) => el('li', {}, `${s.location} (${s.cause}, score ${s.score}): ${s.evidence || ''}`))));
    }
    parts.push(el('details', {}, el('summary', {}, `hosts (${job.hostCount})`), el('pre', { class: 'job-hosts' }, (job.hosts || []).join(' '))));
    return parts;
}

export function jobsView(state, main, route) {
    const wrap = el('div', { class: 'jobs-view' });
    const text = el('input', { class: 'f-text', placeholder: 'filter: name, owner, state, health' });
    const count = el('span', { class: 'count' });
    const table = el('table', { class: 'jobs' });
    const msg = el('p', { class: 'message' });
    const detail = el('div', { class: 'job-detail', hidden: true });
    wrap.append(el('div', { class: 'toolbar' }, text, count), msg, table, detail);
    main.append(wrap);
    let jobs = [];
    let selected = route.kind === 'job' ? route.name : null;
    let shown = null;  // the selected job's GET answer
    let detailSeq = 0;
    const loadDetail = async () => {
        const seq = ++detailSeq;
        if (!selected) { shown = null; renderDetail(); return; }
        try {
            const j = await api('jobs/' + encodeURIComponent(selected));
            if (seq === detailSeq) shown = j;
        } catch (e) {
            if (seq === detailSeq) shown = { name: selected, error: e.message };
        }
        if (seq === detailSeq) renderDetail();
    };
    const renderDetail = () => {
        detail.hidden = !shown;
        if (!shown) return;
        clear(detail).append(...(shown.error && !shown.state ? [el('p', { class: 'bad' }, `${shown.name}: ${shown.error}`)] : detailOf(shown)));
    };
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
        const rows = jobs.filter((j) => !t || [j.name, j.owner, j.state, healthWord(j)].some((x) => (x || '').toLowerCase().includes(t)));
        count.textContent = `${rows.length} job${rows.length === 1 ? '' : 's'}`;
        clear(table).append(el('tr', {}, ['name', 'owner', 'state', 'busbw', 'health', 'links down', 'hosts', 'GPUs', 'pattern', 'nodelist', 'updated'].map((h) => el('th', {}, h))));
        for (const j of rows) {
            const word = healthWord(j);
            table.append(el('tr', { class: j.name === selected ? 'selected' : '', dataset: { job: j.name } },
                el('td', {}, el('a', { href: '#/job/' + encodeURIComponent(j.name) }, j.name)),
                el('td', { class: 'owner' }, j.owner), el('td', {}, j.state),
                el('td', { class: 'busbw ' + (j.health && j.health.degraded ? 'bad' : '') }, busBwText(j.health)),
                el('td', { class: 'health ' + severityOf(word) }, word),
                el('td', {}, j.health ? String((j.health.linksDown || []).length) : ''),
                el('td', {}, String(j.hostCount)),
                el('td', {}, String(j.gpus)), el('td', {}, j.pattern), el('td', {}, el('code', {}, j.nodelist)),
                el('td', {}, fmtTime(j.updatedAt))));
        }
    };
    text.addEventListener('input', render);
    let timer = null;
    let detailTimer = null;
    const detailSoon = () => { clearTimeout(detailTimer); detailTimer = setTimeout(loadDetail, 200); };
    const unsubJob = state.on('job', (m) => {
        clearTimeout(timer);
        timer = setTimeout(load, 300);
        if (m && (m.name === selected || (m.job && m.job.name === selected))) detailSoon();
    });
    // A jobHealth push carries the new summary: the row moves on the next frame (a failure under
    // many jobs pushes one message per job: one table render for the burst); the detail is
    // refetched.
    let frame = 0;
    const renderSoon = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; render(); }); };
    const unsubHealth = state.on('jobHealth', (m) => {
        const j = jobs.find((x) => x.name === m.name);
        if (j) { j.health = m.health; renderSoon(); }
        if (m.name === selected) detailSoon();
    });
    const unsubSuspects = state.on('jobSuspects', (m) => { if (m.name === selected) detailSoon(); });
    // After a resync (the stream lost messages) the list and the detail are fetched again.
    const unsubResync = state.on('resync', () => { load(); loadDetail(); });
    load();
    loadDetail();
    return {
        route(r) { selected = r.kind === 'job' ? r.name : null; render(); loadDetail(); },
        destroy() { unsubJob(); unsubHealth(); unsubSuspects(); unsubResync(); clearTimeout(timer); clearTimeout(detailTimer); cancelAnimationFrame(frame); },
    };
}
