// What the dashboard knows of the cluster: the hall layout (GET /api/v1/hall) and the live
// packed arrays of the stream, in the layout's GPU and link order. One instance; views listen.
import { api, apiEarly, decodeBase64 } from './api.js';
import { decodeCompactHall, hallGpuCount, hallLinkCount } from './hall_compact.js';

window.loomDecodeCompactHall = decodeCompactHall;  // tests compare it with the plain /hall

export const kNoData = 255;

export class ClusterState {
    constructor() {
        this.hall = null;           // the /hall document
        this.rackByName = new Map();
        this.gpuRack = null;        // Int32Array: GPU index -> rack index
        this.gpuIndexOf = null;     // GPU name -> index (built when first asked: see gpuIndex)
        this.nGpus = 0;             // GPUs and links of the layout (the packed arrays' lengths)
        this.nLinks = 0;
        this.arrays = {};           // topic -> Uint8Array (gpu.util, gpu.temp, gpu.health, link.*)
        this.snapshots = new Set(); // topics whose snapshot has arrived
        this.role = 'viewer';
        this.name = '';
        this.intervalMs = 1000;
        this.dataTs = 0;            // server time (ms) of the newest data frame
        this.dataAt = 0;            // our clock when it arrived
        this.clockSkew = 0;         // local - server, from data frames
        this.live = false;
        this.listeners = new Map();
        this.etag = null;
        this.hallLoading = null;
        // Utilization as a mean over a window of samples, as the console draws it (the map
        // would flicker with every job phase otherwise): a ring of the last samples and sums.
        this.utilWindow = 1;
        this.utilRing = [];
        this.utilNext = 0;
        this.utilFill = 0;
        this.utilSum = null;
        this.utilCount = null;
        this.utilMean = null;
        // Open failures by kind as loomd computes them (GET /api/v1/failures), the kind the
        // counter filters on (null: all), and when each failure was first seen (for halos).
        this.failures = null;
        this.failureFilter = null;
        this.firstSeen = new Map();
        this.failuresPrimed = false;
        this.stale = false;
    }

    on(what, fn) {
        if (!this.listeners.has(what)) this.listeners.set(what, new Set());
        this.listeners.get(what).add(fn);
        return () => this.listeners.get(what).delete(fn);
    }

    emit(what, arg) {
        const set = this.listeners.get(what);
        if (set) for (const fn of [...set]) fn(arg);
    }

    async loadHall() {
        if (this.hallLoading) return this.hallLoading;
        this.hallLoading = (async () => {
            try {
                const perf = (window.loomPerf = window.loomPerf || { ticks: [], hallComplete: null });
                const t0 = performance.now();
                // The compact form (hall_compact.js): at 98k 0.2 MB of JSON instead of 11.9 MB.
                const c = await apiEarly('hall', 'hall?format=compact', { cache: 'no-cache' });
                const t1 = performance.now();
                const h = decodeCompactHall(c);
                this.hallAt = Date.now();
                if (!perf.hallFetch) perf.hallFetch = [t0, t1, performance.now()];
                this.setHall(h);
                if (!perf.hallSet) perf.hallSet = performance.now();
            } finally {
                this.hallLoading = null;
            }
        })();
        return this.hallLoading;
    }

    // GPU name -> index of the packed GPU arrays, made when first asked (98k names are not
    // needed for the first paint).
    get gpuIndex() {
        if (!this.gpuIndexOf) {
            this.gpuIndexOf = new Map();
            if (this.hall) this.hall.gpus.forEach((g, i) => this.gpuIndexOf.set(g, i));
        }
        return this.gpuIndexOf;
    }

    // A GPU's index from its name and its rack's name (a failure item has both): a look at that
    // rack's GPUs, so that the first failure drawn does not make the hall's 98k GPU names and
    // their map (~0.2 s in Firefox, in one tick); without the rack or a match, the whole map.
    gpuIndexInRack(name, rack) {
        const r = rack != null ? this.rackByName.get(rack) : null;
        const one = this.hall && this.hall.gpuName;
        if (r && one) {
            for (let i = r.gpuOffset, end = r.gpuOffset + r.gpuCount; i < end; ++i) if (one(i) === name) return i;
        }
        return this.gpuIndex.get(name);
    }

    setHall(h) {
        const sameLayout = this.hall && this.hall.layoutVersion === h.layoutVersion &&
            this.nGpus === hallGpuCount(h);
        this.hall = h;
        this.nGpus = hallGpuCount(h);
        this.nLinks = hallLinkCount(h);
        this.rackByName = new Map();
        h.racks.forEach((r, i) => { r.index = i; this.rackByName.set(r.name, r); });
        if (!sameLayout) {
            this.gpuRack = new Int32Array(this.nGpus).fill(-1);
            h.racks.forEach((r, i) => {
                for (let k = 0; k < r.gpuCount; ++k) this.gpuRack[r.gpuOffset + k] = i;
            });
            this.gpuIndexOf = null;
            for (const t of Object.keys(this.arrays)) {
                const n = t.startsWith('gpu.') ? this.nGpus : this.nLinks;
                if (this.arrays[t].length !== n) this.arrays[t] = new Uint8Array(n).fill(kNoData);
            }
            this.resetUtilWindow();
        }
        this.scheduleFailures(0);
        this.emit('hall', { layoutChanged: !sameLayout });
        // The frames that came while the hall loaded, applied as one change per topic: each
        // would recolour the whole map (98k GPUs) once otherwise.
        const early = this.early || [];
        this.early = null;
        if (!early.length) return;
        const topics = new Set();
        this.quiet = true;
        try {
            for (const m of early) { this.data(m); topics.add(m.topic); }
        } finally {
            this.quiet = false;
        }
        // One recolour of the map for every GPU topic (it redraws from all of them).
        const gpu = [...topics].filter((t) => t.startsWith('gpu.'));
        for (const topic of topics) if (!topic.startsWith('gpu.')) this.emit('data', { topic, changed: null });
        if (gpu.length) this.emit('data', { topic: gpu.includes('gpu.health') ? 'gpu.health' : gpu[0], changed: null });
    }

    // Link name -> index of the packed link arrays (built once per layout).
    linkIndex() {
        if (!this.hall) return new Map();
        if (!this.linkIdx || this.linkIdxOf !== this.hall) {
            this.linkIdx = new Map(this.hall.links.map((n, i) => [n, i]));
            this.linkIdxOf = this.hall;
        }
        return this.linkIdx;
    }

    array(topic) {
        if (!this.arrays[topic]) {
            const n = !this.hall ? 0 : topic.startsWith('gpu.') ? this.nGpus : this.nLinks;
            this.arrays[topic] = new Uint8Array(n).fill(kNoData);
        }
        return this.arrays[topic];
    }

    // A stream message. Returns nothing; listeners hear 'data' with {topic, changed} where
    // changed is null for a whole snapshot or an array of changed indices.
    handle(msg) {
        switch (msg.type) {
            case 'hello':
                this.role = msg.role || this.role;
                this.intervalMs = msg.intervalMs || 1000;
                if (this.hall && msg.layoutVersion !== undefined && msg.layoutVersion !== this.hall.layoutVersion) {
                    this.loadHall().catch(() => {});
                }
                break;
            case 'snapshot':
            case 'delta':
                this.data(msg);
                break;
            case 'inventory':
                // A new layout is refetched at once. Rack states arrive as provisioning
                // messages already, so a new stateVersion alone refetches the (multi-MB at 24k)
                // hall at most every 10 s, to pick up what no message carried.
                if (this.hall && msg.layoutVersion !== this.hall.layoutVersion) {
                    this.loadHall().catch(() => {});
                } else if (this.hall && msg.stateVersion !== this.hall.stateVersion) {
                    clearTimeout(this.stateTimer);
                    const wait = Math.max(0, 10000 - (Date.now() - (this.hallAt || 0)));
                    this.stateTimer = setTimeout(() => this.loadHall().catch(() => {}), wait);
                }
                break;
            case 'provisioning':
                if (msg.rack && this.rackByName.has(msg.rack)) {
                    this.rackByName.get(msg.rack).state = msg.to;
                    this.emit('rack', msg.rack);
                    this.scheduleFailures();
                }
                this.emit('provisioning', msg);
                break;
            case 'phase':
            case 'phaseplan':
                this.emit('provisioning', msg);
                break;
            case 'event':
                this.emit('event', msg.event);
                this.scheduleFailures();
                break;
            case 'job':
            case 'jobsSynced':
                this.emit('job', msg);
                break;
            case 'jobHealth':
            case 'jobSuspects':
                this.emit(msg.type, msg);
                break;
            case 'degradation':
                this.emit('degradation', msg);
                break;
            case 'resync':
                this.emit('resync', msg);
                break;
            default:
                break;
        }
    }

    data(msg) {
        if (!this.hall) {
            // The stream is opened while the hall is still being fetched (the two run in
            // parallel): keep the frames and apply them once the layout is in.
            this.early = this.early || [];
            if (this.early.length < 64) this.early.push(msg);
            return;
        }
        const t0 = performance.now();
        const arr = this.array(msg.topic);
        const bytes = decodeBase64(msg.data || '');
        let changed = null;
        if (msg.type === 'snapshot') {
            arr.set(bytes.subarray(0, arr.length));
            this.snapshots.add(msg.topic);
            const perf = window.loomPerf;
            if (perf) {
                perf.snapshots = perf.snapshots || {};
                if (!perf.snapshots[msg.topic]) perf.snapshots[msg.topic] = performance.now();
            }
        } else {
            changed = [];
            const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
            for (let p = 0; p + 5 <= bytes.length; p += 5) {
                const i = dv.getUint32(p, true);
                if (i < arr.length) {
                    arr[i] = bytes[p + 4];
                    changed.push(i);
                }
            }
        }
        if (msg.ts) {
            const now = Date.now();
            if (msg.ts >= this.dataTs) {
                this.dataTs = msg.ts;
                this.dataAt = now;
                this.clockSkew = now - msg.ts;
            }
        }
        if (msg.topic === 'gpu.util' && this.utilWindow > 1) {
            const moved = this.sampleUtil();
            changed = msg.type === 'snapshot' ? null : moved;
        }
        if (msg.topic === 'gpu.health' || msg.topic === 'link.health') {
            if (changed === null || changed.length) this.scheduleFailures();
        }
        // Decoding and the utilization window count in the map's tick (hall.js takes it).
        this.dataWork = (this.dataWork || 0) + (performance.now() - t0);
        if (!this.quiet) this.emit('data', { topic: msg.topic, changed });
    }

    // Seconds since the newest data frame was built, by the server's clock (corrected for the
    // skew seen when it arrived, so a browser on a laptop with a wrong clock reads right).
    dataAgeSeconds() {
        if (!this.dataAt) return null;
        return (Date.now() - this.dataAt) / 1000;
    }

    // -- utilization window (mirrors loom-console's ClusterState::setUtilWindow) --
    setUtilWindow(samples) {
        samples = Math.max(1, Math.min(3600, Math.round(samples)));
        if (samples === this.utilWindow) return;
        this.utilWindow = samples;
        this.resetUtilWindow();
        if (this.snapshots.has('gpu.util')) this.sampleUtil();
        this.emit('data', { topic: 'gpu.util', changed: null });
    }

    resetUtilWindow() {
        const n = this.hall ? this.nGpus : 0;
        const on = this.utilWindow > 1;
        this.utilRing = on ? new Array(this.utilWindow).fill(null) : [];
        this.utilNext = this.utilFill = 0;
        this.utilSum = on ? new Uint32Array(n) : null;
        this.utilCount = on ? new Uint16Array(n) : null;
        this.utilMean = on ? new Uint8Array(n).fill(kNoData) : null;
    }

    sampleUtil() {
        if (this.utilWindow <= 1) return;
        const now = this.array('gpu.util');
        const n = now.length;
        if (!this.utilSum || this.utilSum.length !== n) this.resetUtilWindow();
        const sum = this.utilSum, cnt = this.utilCount, mean = this.utilMean;
        let slot = this.utilRing[this.utilNext];
        if (this.utilFill === this.utilRing.length && slot) {
            for (let g = 0; g < n && g < slot.length; ++g) {
                if (slot[g] <= 100) { sum[g] -= slot[g]; --cnt[g]; }
            }
        } else {
            ++this.utilFill;
        }
        if (!slot || slot.length !== n) slot = new Uint8Array(n);
        slot.set(now);
        this.utilRing[this.utilNext] = slot;
        const changed = [];
        for (let g = 0; g < n; ++g) {
            const v = now[g];
            if (v <= 100) { sum[g] += v; ++cnt[g]; }
            const m = cnt[g] === 0 ? kNoData : Math.floor((sum[g] + (cnt[g] >> 1)) / cnt[g]);
            if (m !== mean[g]) { mean[g] = m; changed.push(g); }
        }
        this.utilNext = (this.utilNext + 1) % this.utilRing.length;
        return changed;  // the GPUs whose mean moved (a smoothed map changes few cells a tick)
    }

    // What the map draws for utilization: the window's mean, or the last sample.
    utilValues() { return this.utilWindow > 1 && this.utilMean ? this.utilMean : this.array('gpu.util'); }

    // -- failures (loomd's count: never re-derived here) --
    // Signed out: no failure fetch may go out (it would be a 401) until start() again.
    stopFailures() {
        clearTimeout(this.failTimer);
        this.failTimer = null;
        this.failuresOff = true;
    }

    scheduleFailures(delayMs = 250) {
        if (this.failTimer || this.failuresOff) return;
        this.failTimer = setTimeout(() => { this.failTimer = null; this.loadFailures(); }, delayMs);
    }

    async loadFailures() {
        if (this.failuresOff) return;
        if (this.failLoading) { this.failAgain = true; return; }
        this.failLoading = true;
        try {
            const f = await api('failures');
            const now = Date.now();
            const seen = new Map();
            for (const it of f.items) {
                const key = it.kind + '|' + it.name;
                const at = this.firstSeen.get(key);
                it.firstSeen = at !== undefined ? at : (this.failuresPrimed ? now : 0);
                seen.set(key, it.firstSeen);
            }
            this.firstSeen = seen;  // forget what is gone: a failure that comes back is new
            this.failuresPrimed = true;
            this.failures = f;
            this.failuresAt = now;
            this.emit('failures', f);
        } catch (e) {
            // Kept as it was; the stale banner says why. A 401 signs out through api().
        } finally {
            this.failLoading = false;
            if (this.failAgain) { this.failAgain = false; this.scheduleFailures(); }
        }
    }

    setFailureFilter(kind) {
        this.failureFilter = kind || null;
        this.emit('filter', this.failureFilter);
    }

    setStale(stale) {
        if (stale === this.stale) return;
        this.stale = stale;
        this.emit('stale', stale);
    }

    canOperate() { return this.role === 'operator' || this.role === 'admin'; }
    isAdmin() { return this.role === 'admin'; }
}
