// The hall map's cell colours, with no DOM: one GPU's colour from its health, temperature and
// utilization (or the window's mean) and its rack, as hall.js draws it. The page's main thread
// (hall.js, a full recolour) and the Web Worker (packed.js, every tick) run this same code, so
// the cells a tick repaints in the worker are the cells a full redraw would draw.
//
// Paint parameters (plain data, so they cross to the worker): mode ('util', 'temp', 'health',
// 'provisioning'); the mark words failed, quarantined, degraded, noData; the lookup tables
// util, temp, health (Uint32Array(256) of canvas words, 0xAABBGGRR); per rack its provisioning
// colour (rackProv) and whether it reports telemetry (rackReports); provNone, the provisioning
// colour of a GPU without a rack; highlight: a Uint8Array (1 = the job's GPU) or null.

// A job's veil: a third of the colour over the floor, so the job's GPUs stand out.
export function veil(w) {
    const r = w & 255, g = (w >> 8) & 255, b = (w >> 16) & 255;
    return ((255 << 24) | (Math.round(b * 0.3 + 22 * 0.7) << 16) | (Math.round(g * 0.3 + 23 * 0.7) << 8) |
            Math.round(r * 0.3 + 22 * 0.7)) >>> 0;
}

// GPU i's colour word.
export function cellColour(i, health, temp, util, gpuRack, P) {
    const h = health[i], r = gpuRack[i];
    let w;
    if (h === 2) w = P.failed;
    else if (h === 3) w = P.quarantined;
    else if (P.mode === 'provisioning') w = h === 1 ? P.degraded : r >= 0 ? P.rackProv[r] : P.provNone;
    else if (r < 0 || !P.rackReports[r]) w = P.noData;
    else if (h === 1) w = P.degraded;
    else if (P.mode === 'health') w = P.health[h];
    else if (P.mode === 'temp') w = P.temp[temp[i]];
    else w = P.util[util[i]];
    return P.highlight && !P.highlight[i] ? veil(w) : w;
}

// Every GPU's cell (gpuPixel: GPU -> cell, -1 for none): cellColour's choice with the mode's
// part of it made once (a full recolour of 98k cells on the page's thread). Returns how many
// cells changed colour.
export function paintAll(px, gpuPixel, health, temp, util, gpuRack, P) {
    const { failed, quarantined, degraded, noData, provNone, rackProv, rackReports, highlight } = P;
    const prov = P.mode === 'provisioning';
    const lut = P.mode === 'health' ? P.health : P.mode === 'temp' ? P.temp : P.util;
    const vals = P.mode === 'health' ? health : P.mode === 'temp' ? temp : util;
    let moved = 0;
    for (let i = 0; i < gpuPixel.length; ++i) {
        const p = gpuPixel[i];
        if (p < 0) continue;
        const h = health[i], r = gpuRack[i];
        let w = h === 2 ? failed : h === 3 ? quarantined
            : prov ? (h === 1 ? degraded : r >= 0 ? rackProv[r] : provNone)
            : r < 0 || !rackReports[r] ? noData : h === 1 ? degraded : lut[vals[i]];
        if (highlight && !highlight[i]) w = veil(w);
        if (px[p] !== w) { px[p] = w; ++moved; }
    }
    return moved;
}

// The cells of `count` GPUs of `list` (or of a rack's range when list is null: from..from+count),
// widening `box` ([x0, y0, x1, y1], or null) to each cell whose colour changed. Returns the box.
export function paintSome(px, W, gpuPixel, list, from, count, health, temp, util, gpuRack, P, box) {
    for (let k = 0; k < count; ++k) {
        const i = list ? list[k] : from + k, p = gpuPixel[i];
        if (p === undefined || p < 0) continue;
        const w = cellColour(i, health, temp, util, gpuRack, P);
        if (px[p] === w) continue;
        px[p] = w;
        const x = p % W, y = (p - x) / W;
        if (!box) { box = [x, y, x, y]; continue; }
        if (x < box[0]) box[0] = x;
        if (y < box[1]) box[1] = y;
        if (x > box[2]) box[2] = x;
        if (y > box[3]) box[3] = y;
    }
    return box;
}

// The box of the image as its own RGBA buffer (to transfer to the page): {x, y, w, h, data}.
export function cutPatch(px, W, box) {
    const [x0, y0, x1, y1] = box, w = x1 - x0 + 1, h = y1 - y0 + 1;
    const data = new Uint32Array(w * h);
    for (let y = 0; y < h; ++y) data.set(px.subarray((y0 + y) * W + x0, (y0 + y) * W + x0 + w), y * w);
    return { x: x0, y: y0, w, h, data };
}
