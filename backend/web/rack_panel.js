// The rack panel beside the hall map (#/rack/<name>): the rack's state, live GPUs, labels, open
// events, the operator's actions, and one GPU's detail (latest sample, NIC cable and peer,
// its XID explained from loomd's catalogue, its last hour as sparklines).
import { el, clear, switchLink } from './dom.js';
import { api, seg } from './api.js';
import { kHealthNames } from './palette.js';

// The detail of one rack beside the map: state, hosts and GPUs live, labels, open events, and
// the operator's actions (only for a token that may use them).
export class RackPanel {
    constructor(state, host) {
        this.state = state;
        this.host = host;
        this.name = null;
        this.unsub = [
            state.on('data', () => this.refreshLive()),
            state.on('rack', (n) => { if (n === this.name) this.render(); }),
            // loomd's count and list again after a missed event message or a reconnect, and
            // when an event of this rack opens or closes (issue 39: one count).
            state.on('resync', () => this.reloadSoon()),
            state.on('event', (e) => { if (this.name && e.rack === this.name) this.reloadSoon(); }),
        ];
        this.liveTimer = null;
    }

    destroy() { this.unsub.forEach((u) => u()); clearTimeout(this.reloadTimer); }

    reloadSoon() {
        clearTimeout(this.reloadTimer);
        this.reloadTimer = setTimeout(() => this.reload(), 300);
    }

    // The rack and its open events again, in place (no blank panel meanwhile).
    async reload() {
        const name = this.name;
        if (!name || !this.details) return;
        try {
            const [details, events] = await Promise.all([
                api('racks/' + seg(name)),
                api('events?state=open&rack=' + encodeURIComponent(name) + '&limit=50'),
            ]);
            if (this.name !== name) return;
            this.details = details;
            this.events = events.items || [];
            this.render();
        } catch (e) { /* the next change or reconnect tries again */ }
    }

    async show(name) {
        if (name !== this.name) this.gpu = null;
        this.name = name;
        this.details = null;
        this.events = null;
        this.lemons = null;
        this.message = '';
        this.render();
        if (!name) return;
        try {
            const [details, events, lemons] = await Promise.all([
                api('racks/' + seg(name)),
                api('events?state=open&rack=' + encodeURIComponent(name) + '&limit=50'),
                api('lemons?rack=' + encodeURIComponent(name)).catch(() => null),
            ]);
            if (this.name !== name) return;
            this.details = details;
            this.events = events.items || [];
            this.lemons = lemons ? lemons.items || [] : null;
        } catch (e) {
            if (this.name !== name) return;
            this.message = e.message;
        }
        this.render();
    }

    render() {
        const h = this.host;
        clear(h);
        if (!this.name) {
            h.hidden = true;
            return;
        }
        h.hidden = false;
        const st = this.state;
        const r = st.rackByName.get(this.name);
        h.append(el('div', { class: 'panel-head' }, el('h2', { class: 'rack-name' }, this.name),
            el('a', { href: '#/hall', class: 'close', title: 'close' }, '×')));
        if (!r) {
            h.append(el('p', { class: 'error' }, 'No rack of that name in the hall.'));
            return;
        }
        h.append(el('p', {}, 'State ', el('b', { class: 'rack-state' }, r.state), ' · row ', r.row,
                    ' · position ', String(r.position), r.rtsw ? [' · ', el('a', { href: '#/switch/' + encodeURIComponent(r.rtsw) }, r.rtsw)] : null));
        if (st.canOperate()) {
            const reason = el('input', { class: 'reason', placeholder: 'reason (required to fail)' });
            const act = (action) => async () => {
                try {
                    const out = await api('racks/' + seg(this.name) + '/' + action, { method: 'POST', body: { reason: reason.value } });
                    this.message = `${out.from} → ${out.to}`;
                    r.state = out.to;
                    st.emit('rack', this.name);
                } catch (e) {
                    this.message = `${action}: ${e.message}`;
                    this.render();
                }
            };
            h.append(el('div', { class: 'actions operator-only' },
                ['advance', 'drain', 'fail', 'repair'].map((a) => el('button', { type: 'button', class: 'op-' + a, onclick: act(a) }, a)),
                reason));
        }
        if (this.message) h.append(el('p', { class: 'message' }, this.message));
        if (this.details && this.details.labels && Object.keys(this.details.labels).length) {
            h.append(el('h3', {}, 'Labels'), el('ul', { class: 'labels' },
                Object.entries(this.details.labels).map(([k, v]) => el('li', {}, el('code', {}, k), ' = ', el('span', { class: 'label-value' }, v)))));
        }
        this.gpuTable = el('table', { class: 'gpus' });
        this.gpuBox = el('div', { class: 'gpu-box' });
        h.append(el('h3', {}, 'GPUs'), this.gpuTable, this.gpuBox);
        this.refreshLive();
        if (this.gpu && this.gpu.startsWith(this.name + '-')) this.showGpu(this.gpu);
        if (this.lemons) {
            // Lemons (issue 34): the suspect or a failure in several jobs within loomd's window.
            h.append(el('h3', {}, `Lemon strikes (${this.lemons.length})`));
            if (this.lemons.length) {
                h.append(el('ul', { class: 'rack-lemons' }, this.lemons.map((l) =>
                    el('li', { class: l.lemon ? 'sev-warning' : '' }, el('b', {}, l.name), l.lemon ? ' lemon: ' : ': ',
                       `${l.jobs} job${l.jobs === 1 ? '' : 's'} (${(l.strikes || []).join(', ')})`))));
            } else {
                h.append(el('p', { class: 'dim' }, 'none: no host or GPU of the rack was the suspect or failed in a job this week'));
            }
        }
        if (this.events) {
            // loomd's count (the rack's openEvents); the list is its newest 50.
            const total = typeof this.details?.openEvents === 'number' ? this.details.openEvents : this.events.length;
            h.append(el('h3', {}, `Open events (${total})` + (total > this.events.length ? ` — newest ${this.events.length}` : '')));
            h.append(el('ul', { class: 'rack-events' }, this.events.map((e) =>
                el('li', { class: 'sev-' + e.severity }, el('a', { href: '#/events/' + e.id }, e.message)))));
        }
    }

    refreshLive() {
        if (!this.name || !this.gpuTable) return;
        const st = this.state, r = st.rackByName.get(this.name);
        if (!r) return;
        const u = st.array('gpu.util'), t = st.array('gpu.temp'), hh = st.array('gpu.health');
        const rows = [el('tr', {}, el('th', {}, 'GPU'), el('th', {}, 'util'), el('th', {}, 'temp'), el('th', {}, 'health'))];
        for (let k = 0; k < r.gpuCount; ++k) {
            const i = r.gpuOffset + k;
            const name = st.hall.gpus[i];
            rows.push(el('tr', { class: 'health-' + (kHealthNames[hh[i]] || 'unknown') + (name === this.gpu ? ' selected' : '') },
                el('td', {}, el('a', { href: '#/rack/' + encodeURIComponent(this.name), class: 'gpu-link',
                                       onclick: (e) => { e.preventDefault(); this.showGpu(name); } }, name)), el('td', {}, u[i] === 255 ? '–' : u[i] + ' %'),
                el('td', {}, t[i] === 255 ? '–' : t[i] + ' °C'), el('td', {}, kHealthNames[hh[i]] || String(hh[i]))));
        }
        clear(this.gpuTable).append(...rows);
    }

    // One GPU: its latest sample from the telemetry hub (GET /api/v1/telemetry/gpus/<name>),
    // its NIC cable and peer port, its last XID explained from loomd's catalogue, and its last
    // hour as sparklines (GET /api/v1/telemetry/rollups?scope=gpu, the console's source).
    async showGpu(name) {
        this.gpu = name;
        this.refreshLive();
        if (!this.gpuBox) return;
        clear(this.gpuBox).append(el('p', {}, 'loading ', name, '…'));
        let g, hist = null;
        try {
            [g, hist] = await Promise.all([
                api('telemetry/gpus/' + seg(name)),
                api('telemetry/rollups?scope=gpu&name=' + encodeURIComponent(name)).catch(() => null),
            ]);
        } catch (e) {
            clear(this.gpuBox).append(el('p', { class: 'error' }, e.message));
            return;
        }
        if (this.gpu !== name) return;
        const v = (x, unit = '') => (x === null || x === undefined ? '–' : `${Math.round(x * 10) / 10}${unit}`);
        const fields = [['utilization', v(g.util, ' %')], ['temperature', v(g.temp, ' °C')],
            ['memory temperature', v(g.memTemp, ' °C')], ['power', v(g.power, ' W')],
            ['framebuffer used / free', `${v(g.fbUsedMiB)} / ${v(g.fbFreeMiB)} MiB`], ['SM clock', v(g.smClock, ' MHz')],
            ['last XID', v(g.xid)], ['ECC single / double bit', `${v(g.eccSbe)} / ${v(g.eccDbe)}`],
            ['NVLink CRC errors', v(g.nvlinkCrc)], ['PCIe replays', v(g.pcieReplay)]];
        if (g.job) fields.unshift(['job', g.job]);
        const box = clear(this.gpuBox);
        box.append(el('h3', { class: 'gpu-name' }, name),
            el('table', { class: 'gpu-detail' }, fields.map(([k, x]) => el('tr', {}, el('th', {}, k), el('td', {}, x)))));
        if (g.nicLink) {
            const n = g.nicLink;
            box.append(el('p', { class: 'nic-link' + (n.health === 'down' ? ' bad' : n.health === 'degraded' ? ' warn' : '') },
                'NIC cable ', el('code', {}, n.link), ' → ', n.peer ? switchPortLink(n.peer) : '–', ': ', el('b', {}, n.health)));
        }
        if (g.xid) {
            const cat = await xidCatalog();
            const x = cat.get(Math.round(g.xid));
            box.append(el('p', { class: 'xid-explained' }, el('b', {}, `XID ${Math.round(g.xid)}: `),
                x ? [x.meaning, el('br'), el('i', {}, 'What to do: '), x.action] : 'not in loomd\'s catalogue; see NVIDIA\'s XID list'));
        }
        if (hist && hist.items && hist.items.length) {
            const items = hist.items;
            box.append(el('h4', {}, `Last hour (${items.length} min)`),
                sparkline(items.map((m) => m.utilAvg), 'utilization %', 0, 100),
                sparkline(items.map((m) => m.tempMax), 'temperature max °C', 20, 95),
                sparkline(items.map((m) => m.powerAvgW), 'power W', 0, null),
                sparkline(items.map((m) => m.fbUsedPct), 'memory used %', 0, 100));
        } else {
            box.append(el('p', { class: 'dim' }, 'No history yet (a minute a point, kept by loomd for an hour).'));
        }
    }
}

// loomd's XID catalogue (GET /api/v1/catalog/xid), fetched once.
let xidCache = null;
function xidCatalog() {
    if (!xidCache) {
        xidCache = api('catalog/xid').then((r) => new Map(r.items.map((x) => [x.code, x])), () => {
            xidCache = null;
            return new Map();
        });
    }
    return xidCache;
}

// "z1-r001-rtsw/p4" as a link to its switch.
const switchPortLink = (port) => {
    const sw = port.split('/')[0];
    return el('span', {}, switchLink(sw), port.slice(sw.length));
};

// A small line chart of a minute series (nulls are gaps), with its last value.
function sparkline(values, label, lo, hi) {
    const w = 220, h = 34;
    const c = el('canvas', { class: 'spark', width: w, height: h });
    const ctx = c.getContext('2d');
    const vals = values.filter((x) => x !== null && x !== undefined);
    const max = hi !== null ? hi : Math.max(1, ...vals) * 1.1;
    ctx.fillStyle = '#111216';
    ctx.fillRect(0, 0, w, h);
    ctx.strokeStyle = '#21aba8';
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let pen = false;
    values.forEach((x, i) => {
        if (x === null || x === undefined) { pen = false; return; }
        const px = values.length === 1 ? w / 2 : (i / (values.length - 1)) * (w - 2) + 1;
        const py = h - 2 - ((Math.min(max, Math.max(lo, x)) - lo) / (max - lo || 1)) * (h - 4);
        if (pen) ctx.lineTo(px, py); else ctx.moveTo(px, py);
        pen = true;
    });
    ctx.stroke();
    const last = vals.length ? vals[vals.length - 1] : null;
    return el('div', { class: 'spark-row' }, c, el('span', { class: 'dim' }, ` ${label}: ${last === null ? '–' : Math.round(last * 10) / 10}`));
}
