// What the dashboard knows of the cluster: the hall layout (GET /api/v1/hall) and the live
// packed arrays of the stream, in the layout's GPU and link order. One instance; views listen.
import { api, apiEarly } from './api.js';
import { decodeBase64, PackedDecoder } from './packed.js';

// A frame's data field from its text (the first snapshot of a topic, applied on this thread).
const frameDataOf = (raw) => { try { return JSON.parse(raw).data || ''; } catch { return ''; } };
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
        // would flicker with every job phase otherwise). The window, and the decoding of every
        // delta frame, run in a Web Worker (packed.js): this thread applies what it answers.
        this.utilWindow = 1;
        this.utilMean = null;       // the window's means, as the worker last said them
        this.utilSent = 0;          // gpu.util frames sent since the window started
        this.layoutEpoch = 0;       // answers made for another layout are dropped
        this.frameSeq = 0;
        this.snapSeq = {};          // topic -> seq of its latest snapshot (older deltas are moot)
        this.startDecoder();
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
        if (set) for (const fn of set) fn(arg);  // no copy: a tick allocates nothing here
    }

    // The decoder: a Web Worker (packed_worker.js), or the same code on this thread where a
    // worker cannot start (then a tick decodes here, as before).
    startDecoder() {
        this.worker = null;
        this.decoder = null;
        try {
            const w = new Worker(new URL('./packed_worker.js', import.meta.url), { type: 'module' });
            w.onmessage = (ev) => this.applyAnswer(ev.data);
            w.onerror = (e) => {
                if (e && e.preventDefault) e.preventDefault();
                if (this.worker !== w) return;
                this.useInlineDecoder();
            };
            this.worker = w;
        } catch (e) {
            this.useInlineDecoder();
        }
    }

    // The worker failed (its script refused or broken): the same code here from now on. The
    // delta frames it had not answered are decoded again, on the layout this thread holds.
    useInlineDecoder() {
        if (this.worker) { try { this.worker.terminate(); } catch { /* gone */ } }
        this.worker = null;
        this.decoder = new PackedDecoder();
        const pending = this.inFlight || [];
        this.inFlight = [];
        if (!this.hall) return;
        ++this.layoutEpoch;
        this.sendLayout();
        for (const q of pending) {
            // A snapshot applied here is in this thread's arrays already (sendLayout gave them);
            // one that went as text is decoded again, as a delta is; a frame older than its
            // topic's latest snapshot applied here is moot.
            if (q.op === 'frame' && (q.type === 'delta' || q.raw !== undefined) && (this.snapSeq[q.topic] || 0) < q.seq) this.send(q);
        }
        this.emit('data', { topic: 'gpu.util', changed: null });  // the window restarted
        this.emit('decoder');  // the map sends its image and colours to the new decoder
    }

    send(q, transfer) {
        if (this.worker) {
            // Kept until answered (at most a few frames), to be decoded here if the worker fails.
            if (q.op === 'frame' && (q.type === 'delta' || q.raw !== undefined)) {
                const fl = (this.inFlight = this.inFlight || []);
                // A worker that stopped answering: bounded (frames come as text now, at 98k a
                // snapshot is 131 KB: 128 of them 17 MB).
                if (fl.push(q) > 128) fl.shift();
            }
            this.worker.postMessage(q, transfer || []);
        } else {
            this.applyAnswer(this.decoder.handle(q));
        }
    }

    // A new layout for the worker: its window starts empty from this thread's latest samples
    // (the means are no-data until the next sample, as the console's after a new layout), and
    // every other array from this thread's.
    sendLayout() {
        this.utilSent = 0;
        this.utilMean = this.utilWindow > 1 ? new Uint8Array(this.nGpus).fill(kNoData) : null;
        this.array('gpu.util');
        const arrays = {};
        for (const [t, a] of Object.entries(this.arrays)) arrays[t] = a.slice();
        this.send({ op: 'layout', layoutEpoch: this.layoutEpoch, gpuRack: this.gpuRack,
                    nRacks: this.hall ? this.hall.racks.length : 0, samples: this.utilWindow, arrays },
                  Object.values(arrays).map((a) => a.buffer));
    }

    // The hall map's image and colours for the decoder, which from then on repaints the cells
    // each frame changes and answers the patch (hall.js applies it); null P: no map.
    sendPaint(q, transfer) {
        if (this.hall) this.send({ op: 'paint', ...q }, transfer);
    }

    // What the worker holds once it has every frame sent so far, with this thread's arrays at
    // that moment (the browser tests compare them): {now, mean, main: {util, mean}}.
    peekDecoder() {
        this.peeks = this.peeks || new Map();
        const id = (this.peekId = (this.peekId || 0) + 1);
        return new Promise((resolve) => {
            this.peeks.set(id, (a) => resolve({ ...a, worker: !!this.worker, utilWindow: this.utilWindow,
                main: { util: this.array('gpu.util').slice(), mean: this.utilMean ? this.utilMean.slice() : null } }));
            this.send({ op: 'peek', id });
        });
    }

    // The worker's answer to a frame or a new window, applied to this thread's arrays: each
    // array the worker sends is a copy to keep as it is (no loop over the hall here), and the
    // map's cells come painted (a patch, hall.js).
    applyAnswer(a) {
        const fl = this.inFlight;
        if (a && a.op === 'frame' && fl && fl.length) {
            let k = 0;
            while (k < fl.length && fl[k].seq <= a.seq) ++k;
            if (k) fl.splice(0, k);
        }
        if (!a || a.layoutEpoch !== this.layoutEpoch || !this.hall) return;
        const t0 = performance.now();
        const perf = window.loomPerf;
        if (a.op === 'peek') {
            const done = this.peeks && this.peeks.get(a.id);
            if (done) { this.peeks.delete(a.id); done(a); }
            return;
        }
        if (a.op === 'paint' || a.op === 'rack') {
            this.emit('patch', a);
            return;
        }
        if (a.op === 'window') {
            if (a.samples !== this.utilWindow) return;  // another window was asked for since
            if (a.meanAll && this.utilMean) this.utilMean = a.meanAll;
            this.emit('patch', a);
            this.emit('data', { topic: 'gpu.util', changed: null, painted: !!a.patch });
            return;
        }
        if (perf && perf.workerTicks && perf.workerTicks.length < 5000) perf.workerTicks.push(a.ms);

        // A frame older than the topic's latest snapshot applied here: that snapshot has its
        // values (and its own answer follows).
        if (a.now && (this.snapSeq[a.topic] || 0) <= a.seq && a.now.length === this.array(a.topic).length) {
            this.arrays[a.topic] = a.now;
        }
        if (a.mean && this.utilWindow > 1 && a.samples === this.utilWindow && this.utilMean &&
            a.mean.length === this.utilMean.length) this.utilMean = a.mean;
        if (a.type === 'snapshot' && !a.patch && !a.failed && this.snapSeq[a.topic] === a.seq) return;  // drawn when it came
        if (a.topic === 'gpu.health' || a.topic === 'link.health') {
            if (a.type === 'snapshot' || (a.idx && a.idx.length)) this.scheduleFailures();
        }
        if (a.patch || a.painted) this.emit('patch', a);
        this.dataWork = (this.dataWork || 0) + (performance.now() - t0);
        // changed: undefined — the map was painted by the decoder (or repaints when it sends
        // its image); other views read the arrays.
        this.emit('data', { topic: a.topic, changed: a.topic.startsWith('gpu.') ? undefined : a.idx || null,
                            failed: a.failed || null, answer: true });
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
            // Answers still coming for the old layout are dropped; the worker starts afresh.
            ++this.layoutEpoch;
            this.snapSeq = {};
            this.inFlight = [];
            this.sendLayout();
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
        const topic = msg.topic, arr = this.array(topic), seq = ++this.frameSeq;
        const util = topic === 'gpu.util';
        // A topic's first snapshot is applied here at once (one native decode): the first
        // paint waits for no worker. Every later frame, snapshot or delta, goes to the worker as
        // the text it came in (api.js did not parse it): decoded, the window moved and the map's
        // cells painted there; this thread applies the answer.
        const here = msg.type === 'snapshot' && (!this.snapshots.has(topic) || this.quiet);
        if (here) {
            const bytes = decodeBase64(msg.raw !== undefined ? frameDataOf(msg.raw) : msg.data || '');
            arr.set(bytes.subarray(0, arr.length));
            this.snapSeq[topic] = seq;
            this.snapshots.add(topic);
            const perf = window.loomPerf;
            if (perf) {
                perf.snapshots = perf.snapshots || {};
                if (!perf.snapshots[topic]) perf.snapshots[topic] = performance.now();
            }
            if (util) {
                // An empty window's mean is the sample itself: drawn now; the worker's answer
                // will say the same. A window with samples waits for the worker's means.
                if (this.utilMean && this.utilSent === 0) {
                    const m = this.utilMean;
                    for (let i = 0; i < arr.length; ++i) m[i] = arr[i] <= 100 ? arr[i] : kNoData;
                }
                ++this.utilSent;
            }
            const copy = arr.slice();
            this.send({ op: 'frame', topic, type: 'snapshot', bytes: copy, n: arr.length, seq, at: msg.at }, [copy.buffer]);
        } else {
            if (util) ++this.utilSent;
            const q = { op: 'frame', topic, type: msg.type, n: arr.length, seq, at: msg.at };
            if (msg.raw !== undefined) q.raw = msg.raw;
            else q.data = msg.data || '';
            this.send(q);
        }
        if (msg.ts) {
            const now = Date.now();
            if (msg.ts >= this.dataTs) {
                this.dataTs = msg.ts;
                this.dataAt = now;
                this.clockSkew = now - msg.ts;
            }
        }
        if (here) {
            if (topic === 'gpu.health' || topic === 'link.health') this.scheduleFailures();
            // Decoding counts in the map's tick (hall.js takes it).
            this.dataWork = (this.dataWork || 0) + (performance.now() - t0);
            if (!this.quiet) this.emit('data', { topic, changed: null });
        } else {
            this.dataWork = (this.dataWork || 0) + (performance.now() - t0);
        }
    }

    // Seconds since the newest data frame was built, by the server's clock (corrected for the
    // skew seen when it arrived, so a browser on a laptop with a wrong clock reads right).
    dataAgeSeconds() {
        if (!this.dataAt) return null;
        return (Date.now() - this.dataAt) / 1000;
    }

    // -- utilization window (mirrors loom-console's ClusterState::setUtilWindow) --
    // The worker keeps the window (packed.js UtilWindow) and answers every mean once the new
    // window has its first sample; until then the map keeps the means it has (or, coming from
    // no window, the latest samples, which are that first sample's means).
    setUtilWindow(samples) {
        samples = Math.max(1, Math.min(3600, Math.round(samples)));
        if (samples === this.utilWindow) return;
        const from = this.utilWindow;
        this.utilWindow = samples;
        this.resetUtilWindow(from);
        if (this.hall) this.send({ op: 'window', samples });
        this.emit('data', { topic: 'gpu.util', changed: null });
    }

    resetUtilWindow(from) {
        const n = this.hall ? this.nGpus : 0;
        if (this.utilWindow <= 1) { this.utilMean = null; return; }
        if (this.utilMean && this.utilMean.length === n && from > 1) return;
        this.utilMean = new Uint8Array(n).fill(kNoData);
        const now = this.arrays['gpu.util'];
        if (now && now.length === n) for (let i = 0; i < n; ++i) this.utilMean[i] = now[i] <= 100 ? now[i] : kNoData;
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
