// Colours of the maps: loomd's (GET /api/v1/legends, telemetry/legends.hpp), the same answer
// loom-console colours with — the ramp's stops, the health, link-health and rack-state swatches,
// the failure marks and the ramps' scales. Nothing here is a colour of its own: until loomd
// answers (the page asks before it draws) every table is the neutral grey below. Colours are
// packed as the canvas' little-endian RGBA words (0xAABBGGRR).

export const rgbWord = (r, g, b) => ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
export const css = (r, g, b) => `rgb(${r},${g},${b})`;

const kGrey = [58, 58, 64];  // what is drawn before loomd's colours arrive
// The mark colours: arrays filled in place, so whoever imported them sees loomd's.
export const kNoData = [...kGrey];
export const kFailed = [...kGrey];
export const kDegraded = [...kGrey];
export const kQuarantined = [...kGrey];
export const kBackground = [22, 23, 27];
export const kFloor = [...kGrey];
export const kJobHighlight = [...kGrey];

const stops = [kGrey, kGrey];

function ramp(t) {
    const n = stops.length - 1;
    t = Math.min(1, Math.max(0, t)) * n;
    const i = Math.min(Math.floor(t), n - 1);
    const f = t - i;
    const a = stops[i], b = stops[i + 1];
    return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f));
}

// A CSS colour of the ramp at t in [0, 1] (legends).
export const rampCss = (t) => css(...ramp(t));

// The ramps' scales (ends, labelled ticks, detection thresholds marked on the legend).
export const scales = {
    util: { unit: '%', min: 0, max: 100, ticks: [0, 100], thresholds: [] },
    temp: { unit: '°C', min: 20, max: 95, ticks: [20, 95], thresholds: [] },
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

// Rack lifecycle states in lifecycle order (their index is the provisioning LUT's byte), the
// health words by wire byte, and what each colour is: all from loomd.
export const kRackStates = [];
const stateRgb = new Map();
const reports = new Map();  // state -> whether its racks report telemetry
export const stateColour = (s) => stateRgb.get(s) || kNoData;
export const kHealthColours = {};
export const kHealthNames = { 255: 'unknown' };
export const kLinkHealthNames = { 255: 'no data' };
const linkHealthRgb = {};
// A link health byte's colour (0 up, 1 degraded, 2 down, 3 drained, 4 not in service).
export const linkHealthColour = (v) => linkHealthRgb[v] || kNoData;

// A switch tile's colour, by the rule loom-console draws with (desktop_ui palette.hpp
// switchTileColor; docs/api.md, "A switch on the maps"): loomd's word for the switch first (GET
// /api/v1/fabric/topology `state`, its rack's state read as its cables are) — down red, drained
// and not in service their link-health swatches (states, never red) —; an up switch (or one
// loomd has not named) is red when loomd's failure list has it failed, amber when any of its
// links' link.health is down or degraded (linksBad), else up green. An [r, g, b].
export function switchTileColour(word, failed, linksBad) {
    if (word === 'down') return kFailed;
    // Drained, not in service: the swatch of the link-health byte loomd names with the same word
    // (kLinkHealthNames, from GET /api/v1/legends), as the console finds it: no copy of the list.
    if (word && word !== 'up') {
        for (const v of Object.keys(kLinkHealthNames)) {
            if (kLinkHealthNames[v] === word) return linkHealthColour(Number(v));
        }
    }
    if (failed) return kFailed;
    if (linksBad > 0) return kDegraded;
    return linkHealthColour(0);
}

// Per switch of the hall (its index in hall.switches): how many of its links loomd's link.health
// says down or degraded, over every link of it (NIC cables too), as the console counts.
export function switchLinksBad(hall, health) {
    const n = hall && hall.switches ? hall.switches.length : 0;
    const bad = new Int32Array(n);
    if (!hall || !hall.linkSwitches || !health) return bad;
    const { a, b } = hall.linkSwitches;
    for (let l = 0; l < a.length && l < health.length; ++l) {
        const v = health[l];
        if (v !== 1 && v !== 2) continue;
        if (a[l] >= 0) ++bad[a[l]];
        if (b[l] >= 0 && b[l] !== a[l]) ++bad[b[l]];
    }
    return bad;
}

// The switches loomd's failure list (GET /api/v1/failures) has failed, by name.
export function failedSwitchNames(failures) {
    const out = new Set();
    for (const it of (failures && failures.items) || []) if (it.kind === 'switch' && it.failed) out.add(it.name);
    return out;
}

// The wire byte is the value (% or °C; 255 no data): the ramp runs over the scale.
const rampLut = (sc, last) => lut((v) => (v <= last ? ramp((v - sc.min) / Math.max(1e-9, sc.max - sc.min)) : null));

export const luts = {
    util: rampLut(scales.util, 100),
    temp: rampLut(scales.temp, 254),
    health: lut((v) => kHealthColours[v]),
    provisioning: lut((v) => stateRgb.get(kRackStates[v])),
    linkHealth: lut((v) => linkHealthRgb[v]),
};

// Racks in states loomd marks `reportsData: false` send no telemetry (nothing is powered).
export const rackReportsData = (state) => reports.get(state) === true;

export const words = {};
function refreshWords() {
    words.noData = rgbWord(...kNoData);
    words.failed = rgbWord(...kFailed);
    words.degraded = rgbWord(...kDegraded);
    words.quarantined = rgbWord(...kQuarantined);
    words.floor = rgbWord(...kFloor);
}
refreshWords();

const hex = (s) => {
    const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(String(s || ''));
    return m ? [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)] : null;
};
const refill = (key, fresh) => {
    luts[key].words.set(fresh.words);
    luts[key].rgb.splice(0, luts[key].rgb.length, ...fresh.rgb);
};

// Applies loomd's colours (the `colours` of GET /api/v1/legends); true when any changed.
function applyColours(c) {
    if (!c || typeof c !== 'object') return false;
    const before = JSON.stringify(c);
    if (before === applyColours.last) return false;
    applyColours.last = before;
    const ramp = (c.ramp || []).map(hex).filter(Boolean);
    if (ramp.length >= 2) stops.splice(0, stops.length, ...ramp);
    const m = c.marks || {};
    for (const [arr, key] of [[kNoData, 'noData'], [kFailed, 'failed'], [kDegraded, 'degraded'],
        [kQuarantined, 'quarantined'], [kFloor, 'floor'], [kBackground, 'background'], [kJobHighlight, 'jobHighlight']]) {
        const rgb = hex(m[key]);
        if (rgb) arr.splice(0, 3, ...rgb);
    }
    refreshWords();
    for (const w of c.health || []) {
        kHealthColours[w.value] = hex(w.colour) || kNoData;
        kHealthNames[w.value] = String(w.name);
    }
    for (const w of c.linkHealth || []) {
        linkHealthRgb[w.value] = hex(w.colour) || kNoData;
        kLinkHealthNames[w.value] = String(w.name);
    }
    const states = [...(c.rackStates || [])].sort((a, b) => a.value - b.value);
    kRackStates.splice(0, kRackStates.length, ...states.map((w) => String(w.name)));
    stateRgb.clear();
    reports.clear();
    for (const w of states) {
        stateRgb.set(String(w.name), hex(w.colour) || kNoData);
        reports.set(String(w.name), w.reportsData !== false);
    }
    // The page's own state colours (style.css' variables: swatches, table rows) are these too.
    const root = typeof document !== 'undefined' && document.documentElement;
    if (root) {
        for (const [v, rgb] of [['--bad', kFailed], ['--warn', kDegraded], ['--ok', linkHealthColour(0)],
            ['--idle', linkHealthColour(4)], ['--quarantined', kQuarantined]]) root.style.setProperty(v, css(...rgb));
    }
    refill('health', lut((v) => kHealthColours[v]));
    refill('linkHealth', lut((v) => linkHealthRgb[v]));
    refill('provisioning', lut((v) => stateRgb.get(kRackStates[v])));
    refill('util', rampLut(scales.util, 100));
    refill('temp', rampLut(scales.temp, 254));
    return true;
}

// Applies loomd's answer to GET /api/v1/legends (scales and colours); true when anything
// changed (the tables are refilled in place: whoever holds `luts` sees the new colours).
export function applyLegends(answer) {
    let changed = applyColours(answer && answer.colours);
    for (const [key, name, last] of [['util', 'utilization', 100], ['temp', 'temperature', 254]]) {
        const o = answer && answer.scales && answer.scales[name];
        if (!o || typeof o.min !== 'number' || typeof o.max !== 'number' || !(o.max > o.min) || o.min < 0 || o.max > 254) continue;
        const next = { unit: String(o.unit || ''), min: o.min, max: o.max,
                       ticks: Array.isArray(o.ticks) && o.ticks.length ? o.ticks.map(Number) : [o.min, o.max],
                       thresholds: Array.isArray(o.thresholds) ? o.thresholds.map((t) => ({ name: String(t.name), value: Number(t.value), severity: String(t.severity) })) : [] };
        if (JSON.stringify(next) === JSON.stringify(scales[key]) && !changed) continue;
        scales[key] = next;
        refill(key, rampLut(next, last));
        changed = true;
    }
    return changed;
}
