// The provisioning board: the active plan's phases with progress (GET /api/v1/phases), racks by
// lifecycle state (from the hall, live from the stream's provisioning messages), filters, and for
// admins the phase controls (start, pause, resume, abort; loomd refuses them to other roles).
import { el, clear, rackLink } from './dom.js';
import { api, seg } from './api.js';
import { kRackStates, stateColour } from './palette.js';

export function provisioningView(state, main, route) {
    const wrap = el('div', { class: 'provisioning-view' });
    const msg = el('p', { class: 'message' });
    const phasesBox = el('div', { class: 'phases' });
    const stateFilter = el('select', { class: 'f-state' }, el('option', { value: '' }, 'every state'),
        kRackStates.map((s) => el('option', { value: s }, s)));
    const text = el('input', { class: 'f-text', placeholder: 'rack name contains' });
    const board = el('div', { class: 'board' });
    wrap.append(msg, el('h2', {}, 'Phases'), phasesBox, el('h2', {}, 'Racks by state'),
        el('div', { class: 'toolbar' }, stateFilter, text), board);
    main.append(wrap);
    let phases = null;

    const load = async () => {
        try {
            phases = await api('phases');
            msg.textContent = '';
        } catch (e) {
            phases = null;
            msg.textContent = e.status === 404 ? 'No phase plan applied yet (loomctl phase apply -f PLAN).' : e.message;
        }
        renderPhases();
    };
    const op = (p, what) => async () => {
        try {
            await api(`phases/${seg(p.name)}/${what}`, { method: 'POST', body: {} });
            await load();
        } catch (e) {
            msg.textContent = `${what} ${p.name}: ${e.message}`;
        }
    };
    const renderPhases = () => {
        clear(phasesBox);
        if (!phases || !phases.phases) return;
        phasesBox.append(el('p', {}, 'Plan ', el('b', {}, phases.plan || '')));
        for (const p of phases.phases) {
            const pr = p.progress || {};
            const pct = Math.round(pr.inServicePercent || 0);
            const bar = el('div', { class: 'bar' }, el('div', { class: 'fill' }));
            bar.firstChild.style.width = pct + '%';
            const controls = [];
            if (state.isAdmin()) {
                const allowed = { pending: ['start'], running: ['pause', 'abort'], paused: ['resume', 'abort'], halted: ['resume', 'abort'] }[p.status] || [];
                for (const a of allowed) controls.push(el('button', { type: 'button', class: 'phase-' + a, onclick: op(p, a) }, a));
            }
            phasesBox.append(el('div', { class: 'phase status-' + p.status, dataset: { phase: p.name } },
                el('div', { class: 'phase-head' }, el('b', {}, p.name), ` · ${p.status}`,
                   ` · ${pr.inService || 0}/${pr.total || 0} in service, ${pr.inFlight || 0} in flight, ${pr.failed || 0} failed, ${pr.drained || 0} drained`,
                   el('span', { class: 'controls' }, controls)),
                bar, p.message ? el('div', { class: 'phase-msg' }, p.message) : null));
        }
    };
    const renderBoard = () => {
        clear(board);
        if (!state.hall) return;
        const t = text.value.trim().toLowerCase();
        const by = new Map(kRackStates.map((s) => [s, []]));
        for (const r of state.hall.racks) {
            if (stateFilter.value && r.state !== stateFilter.value) continue;
            if (t && !r.name.toLowerCase().includes(t)) continue;
            if (!by.has(r.state)) by.set(r.state, []);
            by.get(r.state).push(r);
        }
        for (const [s, racks] of by) {
            if (!racks.length) continue;
            const col = el('div', { class: 'column', dataset: { state: s } }, el('h3', {}, `${s} (${racks.length})`));
            const chip = el('span', { class: 'chip' });
            chip.style.background = `rgb(${stateColour(s).join(',')})`;
            col.firstChild.prepend(chip);
            const list = el('div', { class: 'racks' });
            // A column of 1,536 links is fine; beyond that it is the filter's job.
            racks.slice(0, 2000).forEach((r) => list.append(rackLink(r.name), ' '));
            if (racks.length > 2000) list.append(`… ${racks.length - 2000} more`);
            col.append(list);
            board.append(col);
        }
    };
    stateFilter.addEventListener('change', renderBoard);
    text.addEventListener('input', renderBoard);
    let timer = null, boardTimer = null;
    const unsub = [
        state.on('provisioning', () => { clearTimeout(timer); timer = setTimeout(load, 700); clearTimeout(boardTimer); boardTimer = setTimeout(renderBoard, 300); }),
        state.on('hall', renderBoard),
    ];
    load();
    renderBoard();
    return { route() {}, destroy() { unsub.forEach((u) => u()); clearTimeout(timer); clearTimeout(boardTimer); } };
}
