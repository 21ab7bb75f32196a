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

// The temperature ramp's ends, in °C (the console's: palette.cpp).
export const kTempMin = 20, kTempMax = 95;

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

export const luts = {
    util: lut((v) => (v <= 100 ? ramp(v / 100) : null)),
    temp: lut((v) => (v < 255 ? ramp((v - kTempMin) / (kTempMax - kTempMin)) : null)),
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
