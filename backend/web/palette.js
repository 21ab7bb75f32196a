// Colours of the maps, the same as loom-console's (desktop_ui/src/palette.cpp): a viridis-like
// ramp for utilization and temperature, fixed colours for health and rack states, and the
// failure colours drawn on top in every mode. Colours are packed as the canvas' little-endian
// RGBA words (0xAABBGGRR).

export const rgbWord = (r, g, b) => ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
export const css = (r, g, b) => `rgb(${r},${g},${b})`;

export const kNoData = [58, 58, 64];
export const kFailed = [255, 23, 68];
export const kDegraded = [255, 196, 0];
export const kQuarantined = [213, 0, 249];
export const kBackground = [22, 23, 27];
export const kFloor = [32, 34, 40];

const kStops = [[48, 18, 59], [50, 101, 194], [33, 171, 168], [120, 209, 80], [250, 220, 40], [236, 90, 30]];

function ramp(t) {
    const n = kStops.length - 1;
    t = Math.min(1, Math.max(0, t)) * n;
    const i = Math.min(Math.floor(t), n - 1);
    const f = t - i;
    const a = kStops[i], b = kStops[i + 1];
    return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f));
}

// A CSS colour of the ramp at t in [0, 1] (legends).
export const rampCss = (t) => css(...ramp(t));

// The ramps' scales are loomd's (GET /api/v1/legends, telemetry/legends.hpp): ends, labelled
// ticks and the detection thresholds marked on the legend, the same for the console. Until
// loomd answers, what it serves for its default configuration.
export const scales = {
    util: { unit: '%', min: 0, max: 100, ticks: [0, 25, 50, 75, 100], thresholds: [] },
    temp: { unit: '°C', min: 20, max: 95, ticks: [20, 35, 50, 65, 80, 95],
            thresholds: [{ name: 'gpu_temp warning', value: 85, severity: 'warning' },
                         { name: 'gpu_temp critical', value: 92, severity: 'critical' }] },
};

function lut(fn) {
    const words = new Uint32Array(256);
    const rgb = [];
    for (let v = 0; v < 256; ++v) {
        const c = fn(v) || kNoData;
        rgb.push(c);
        words[v] = rgbWord(c[0], c[1], c[2]);
    }
    return { words, rgb };
}

export const kRackStates = ['planned', 'delivered', 'racked', 'cabled', 'powered', 'burn_in',
    'validated', 'in_service', 'failed', 'repair', 'draining', 'drained', 'maintenance',
    'decommissioned'];
const kStateColours = [[70, 70, 90], [90, 90, 130], [100, 110, 170], [90, 130, 200],
    [80, 160, 220], [240, 190, 40], [150, 210, 90], [46, 160, 67], [220, 40, 40],
    [235, 110, 30], [170, 120, 200], [130, 90, 170], [110, 80, 140], [40, 40, 40]];
export const stateColour = (s) => kStateColours[kRackStates.indexOf(s)] || kNoData;

export const kHealthColours = { 0: [46, 160, 67], 1: [230, 170, 20], 2: [220, 40, 40], 3: [160, 70, 200] };
export const kHealthNames = { 0: 'ok', 1: 'warning', 2: 'failed', 3: 'quarantined', 255: 'unknown' };
export const kLinkHealthNames = { 0: 'up', 1: 'degraded', 2: 'down', 3: 'drained', 4: 'not in service', 255: 'no data' };

// The wire byte is the value (% or °C; 255 no data): the ramp runs over the scale.
const rampLut = (sc, last) => lut((v) => (v <= last ? ramp((v - sc.min) / Math.max(1e-9, sc.max - sc.min)) : null));

export const luts = {
    util: rampLut(scales.util, 100),
    temp: rampLut(scales.temp, 254),
    health: lut((v) => kHealthColours[v]),
    provisioning: lut((v) => kStateColours[v]),
    linkHealth: lut((v) => ({ 0: [46, 160, 67], 1: [230, 170, 20], 2: [220, 40, 40], 3: [120, 120, 140], 4: [70, 70, 80] })[v]),
};

// Racks in these states send no telemetry (nothing is powered).
const kDark = new Set(['planned', 'delivered', 'racked', 'cabled', 'decommissioned']);
export const rackReportsData = (state) => !!state && !kDark.has(state);

export const words = {
    noData: rgbWord(...kNoData),
    failed: rgbWord(...kFailed),
    degraded: rgbWord(...kDegraded),
    quarantined: rgbWord(...kQuarantined),
    floor: rgbWord(...kFloor),
};

// Applies loomd's answer to GET /api/v1/legends; true when a scale changed (the tables are
// refilled in place: whoever holds `luts` sees the new colours).
export function applyScales(answer) {
    let changed = false;
    for (const [key, name, last] of [['util', 'utilization', 100], ['temp', 'temperature', 254]]) {
        const o = answer && answer.scales && answer.scales[name];
        if (!o || typeof o.min !== 'number' || typeof o.max !== 'number' || !(o.max > o.min) || o.min < 0 || o.max > 254) continue;
        const next = { unit: String(o.unit || ''), min: o.min, max: o.max,
                       ticks: Array.isArray(o.ticks) && o.ticks.length ? o.ticks.map(Number) : [o.min, o.max],
                       thresholds: Array.isArray(o.thresholds) ? o.thresholds.map((t) => ({ name: String(t.name), value: Number(t.value), severity: String(t.severity) })) : [] };
        if (JSON.stringify(next) === JSON.stringify(scales[key])) continue;
        scales[key] = next;
        const fresh = rampLut(next, last);
        luts[key].words.set(fresh.words);
        luts[key].rgb.splice(0, luts[key].rgb.length, ...fresh.rgb);
        changed = true;
    }
    return changed;
}
