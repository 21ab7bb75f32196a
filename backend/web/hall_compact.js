// GET /api/v1/hall?format=compact back into the plain /hall document (docs/api.md), so the rest
// of the dashboard reads one shape. At 98k the plain form is 11.9 MB of JSON (seconds to render
// in loomd and to parse here); the compact one carries rack and switch names, integer columns
// as runs [first, step, count, ...], states as indices into a legend, and spells out only names
// that break the rules below. tests/telemetry/hall_compact_test.cpp holds loomd to the same
// rules; tests/web checks this decoder against the plain form of a live loomd.
//   host k of rack R            R-h<k>
//   GPU k of host H             H-gpu<k>          (k: the GPU's index on its host)
//   link                        <a end>--<b end>, an end "<switch>/p<n>" or, switch -1, the
//                               NIC of GPU g: "<host of g>-nic<k of g>/p1"

function unruns(runs, n) {
    const out = new Float64Array(n);
    let p = 0;
    for (let i = 0; i + 2 < runs.length; i += 3) {
        const first = runs[i], step = runs[i + 1], count = runs[i + 2];
        for (let k = 0; k < count && p < n; ++k) out[p++] = first + k * step;
    }
    if (p !== n) throw new Error(`compact hall: a column has ${p} values, not ${n}`);
    return out;
}

function spelled(c, kind) {
    const m = new Map();
    for (const [i, name] of (c.names && c.names[kind]) || []) m.set(i, name);
    return m;
}

// The number of GPUs and links of a hall document, either form, without making names.
export const hallGpuCount = (h) => (h.gpuCount !== undefined ? h.gpuCount : h.gpus.length);
export const hallLinkCount = (h) => (h.linkCount !== undefined ? h.linkCount : h.links.length);

export function decodeCompactHall(c) {
    if (c.format !== 'compact') return c;  // already the plain form
    const zoneNames = c.zones;
    const zoneOf = (z, sp, i) => (z >= 0 ? zoneNames[z] : (sp.get(i) ?? ''));
    const h = { cluster: c.cluster, fabric: c.fabric, layoutVersion: c.layoutVersion, stateVersion: c.stateVersion };
    h.zones = zoneNames.map((name) => ({ name }));

    const nRows = c.rows.name.length;
    const rowZone = unruns(c.rows.zone, nRows), rowIndex = unruns(c.rows.index, nRows);
    const rowZoneSp = spelled(c, 'rowZone');
    h.rows = c.rows.name.map((name, i) => ({ name, zone: zoneOf(rowZone[i], rowZoneSp, i), index: rowIndex[i] }));

    const sw = c.switches, nSw = sw.name.length;
    const swRole = unruns(sw.role, nSw), swZone = unruns(sw.zone, nSw), swZoneSp = spelled(c, 'switchZone');
    h.switches = sw.name.map((name, i) => ({ name, role: c.switchRoles[swRole[i]], zone: zoneOf(swZone[i], swZoneSp, i) }));

    const r = c.racks, nRacks = r.name.length;
    const col = (k) => unruns(r[k], nRacks);
    const row = col('row'), zone = col('zone'), pos = col('position'), state = col('state'), hosts = col('hosts'),
        rtsw = col('rtsw'), gpuOffset = col('gpuOffset'), gpuCount = col('gpuCount');
    const rowSp = spelled(c, 'rackRow'), zoneSp = spelled(c, 'rackZone'), rtswSp = spelled(c, 'rackRtsw');
    const hostSp = spelled(c, 'host');
    const hostNames = [];
    h.racks = new Array(nRacks);
    for (let i = 0; i < nRacks; ++i) {
        const name = r.name[i], hs = new Array(hosts[i]);
        for (let k = 0; k < hosts[i]; ++k) {
            const n = hostSp.get(hostNames.length) ?? `${name}-h${k}`;
            hs[k] = n;
            hostNames.push(n);
        }
        h.racks[i] = {
            name, row: row[i] >= 0 ? c.rows.name[row[i]] : (rowSp.get(i) ?? ''), zone: zoneOf(zone[i], zoneSp, i),
            position: pos[i], state: c.rackStates[state[i]], hosts: hs,
            rtsw: rtsw[i] >= 0 ? sw.name[rtsw[i]] : (rtswSp.get(i) ?? ''), gpuOffset: gpuOffset[i], gpuCount: gpuCount[i],
        };
    }

    const nGpus = c.gpus.count;
    const hostGpus = unruns(c.hosts.gpus, hostNames.length), local = unruns(c.gpus.index, nGpus);
    const gpuHost = new Int32Array(nGpus);
    for (let hi = 0, g = 0; hi < hostNames.length; ++hi) for (let k = 0; k < hostGpus[hi]; ++k) gpuHost[g++] = hi;
    // The GPU and link names (320k strings at 98k, ~0.2 s to build) are made when first read:
    // the first paint needs only their counts (gpuCount, linkCount).
    const lazy = (key, make) => {
        let v = null;
        Object.defineProperty(h, key, {
            enumerable: true, configurable: true,
            get() { if (v === null) v = make(); return v; },
        });
    };
    const hidden = (key, value) => Object.defineProperty(h, key, { value, enumerable: false });
    hidden('gpuCount', nGpus);
    const gpuSp = spelled(c, 'gpu');
    const gpuName = (g) => gpuSp.get(g) ?? `${hostNames[gpuHost[g]]}-gpu${local[g]}`;
    lazy('gpus', () => {
        const out = new Array(nGpus);
        for (let g = 0; g < nGpus; ++g) out[g] = gpuName(g);
        return out;
    });
    // One GPU's name without making them all (the failure overlay looks up a few).
    hidden('gpuName', (g) => (g >= 0 && g < nGpus ? gpuName(g) : undefined));

    const L = c.links, nLinks = L.count;
    const aSw = unruns(L.aSwitch, nLinks), aPort = unruns(L.aPort, nLinks);
    const bSw = unruns(L.bSwitch, nLinks), bPort = unruns(L.bPort, nLinks);
    const end = (s, n) => (s >= 0 ? `${sw.name[s]}/p${n}` : n < 0 ? '' : `${hostNames[gpuHost[n]]}-nic${local[n]}/p1`);
    const linkSp = spelled(c, 'link');
    hidden('linkCount', nLinks);
    lazy('links', () => {
        const out = new Array(nLinks);
        for (let l = 0; l < nLinks; ++l) out[l] = linkSp.get(l) ?? `${end(aSw[l], aPort[l])}--${end(bSw[l], bPort[l])}`;
        return out;
    });
    // Each link's switches (index into h.switches, -1 for a NIC end): what the zone map draws
    // its links between. Not enumerable: the document stays the plain form's shape.
    hidden('linkSwitches', { a: Int32Array.from(aSw), b: Int32Array.from(bSw) });
    return h;
}
