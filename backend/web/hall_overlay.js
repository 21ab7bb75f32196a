// The hall map's overlays (HallMap, hall.js, calls these from draw()): rack outlines, GPU
// borders and rack names by zoom; the stale veil; loomd's open failures (GET /api/v1/failures)
// as markers, link rings, rack outlines, count badges and halos sized to stay visible at Fit.
import { css, kFailed, kQuarantined, kDegraded } from './palette.js';

export const kOutlineScale = 5;     // px per cell from which racks are outlined, hosts split
export const kCellBorderScale = 8;  // ... every GPU cell has a border (a host is 8 countable cells)
export const kLabelScale = 12;      // ... rack names are written above racks
const kMinMarkerPx = 7;      // smallest failure marker (a GPU at Fit on a 24k or 98k hall)
const kBadgePx = 14;         // rack count badge diameter
const kHaloPx = 11;          // radius of the halo round a failure at Fit
const kFreshMs = 60000;      // a failure pulses for its first minute

// Rack outlines and host lines; GPU borders and rack names when zoomed in enough. Only the
// racks on screen (at these scales a few hundred at most).
export function drawRackGrid(map, ctx, L, scale, ox, oy) {
    const cw = map.canvas.clientWidth, ch = map.canvas.clientHeight;
    const racks = map.state.hall.racks;
    ctx.strokeStyle = 'rgba(12,12,14,0.95)';
    ctx.lineWidth = Math.max(1, scale / 8);
    ctx.font = `${Math.min(12, Math.max(9, scale * 0.6))}px sans-serif`;
    ctx.textBaseline = 'bottom';
    for (let i = 0; i < L.rackRect.length; ++i) {
        const rr = L.rackRect[i];
        if (!rr) continue;
        const x = ox + rr.x * scale, y = oy + rr.y * scale, w = rr.w * scale, h = rr.h * scale;
        if (x > cw || y - 14 > ch || x + w < 0 || y + h < 0) continue;
        ctx.beginPath();
        ctx.rect(x, y, w, h);
        for (let l = 1; l < rr.h; ++l) { ctx.moveTo(x, y + l * scale); ctx.lineTo(x + w, y + l * scale); }
        if (scale >= kCellBorderScale)
            for (let k = 1; k < rr.w; ++k) { ctx.moveTo(x + k * scale, y); ctx.lineTo(x + k * scale, y + h); }
        ctx.stroke();
        if (scale >= kLabelScale) {
            ctx.fillStyle = '#bebec8';
            ctx.fillText(racks[i].name, x, y - 1);
        }
    }
}

export function drawStale(ctx, w, h) {
    // Greyed: colours that are not live must not look live.
    ctx.save();
    ctx.globalCompositeOperation = 'saturation';
    ctx.fillStyle = 'rgb(128,128,128)';
    ctx.fillRect(0, 0, w, h);
    ctx.restore();
    ctx.fillStyle = 'rgba(22,23,27,0.55)';
    ctx.fillRect(0, 0, w, h);
}

export function drawStaleText(state, ctx, w, h) {
    const text = state.staleText || 'stale';
    ctx.font = 'bold 18px sans-serif';
    ctx.textBaseline = 'middle';
    const tw = ctx.measureText(text).width;
    ctx.fillStyle = 'rgba(20,20,24,0.9)';
    ctx.fillRect(w / 2 - tw / 2 - 14, h / 2 - 18, tw + 28, 36);
    ctx.fillStyle = '#ffffff';
    ctx.fillText(text, w / 2 - tw / 2, h / 2);
}

// loomd's open failures over every colour mode: markers on GPUs (from gpu.health, which
// arrives first, and from the failure list: a NIC cable down rings its GPU), rack outlines
// and count badges, halos big enough to see at Fit.
export function drawFailures(map, ctx, L, scale, ox, oy, filter) {
    const st = map.state, now = Date.now();
    const f = st.failures;
    const sameLayout = f && st.hall && f.layoutVersion === st.hall.layoutVersion;
    const items = sameLayout ? f.items.filter((it) => !filter || it.kind === filter) : [];
    const centre = (i) => {
        const p = L.gpuPixel[i];
        return p < 0 ? null : [ox + ((p % L.W) + 0.5) * scale, oy + (Math.floor(p / L.W) + 0.5) * scale];
    };
    const rackBox = (r) => {
        const rr = L.rackRect[r];
        return rr ? [ox + rr.x * scale, oy + rr.y * scale, rr.w * scale, rr.h * scale] : null;
    };
    const red = css(...kFailed), amber = css(...kDegraded), purple = css(...kQuarantined);
    let fresh = false;
    // Halos first (under the markers): every failure at Fit, pulsing while fresh.
    const halos = [];
    for (const it of items) {
        let xy = null;
        if (it.gpu != null) { const g = st.gpuIndexInRack(it.gpu, it.rack); if (g !== undefined) xy = centre(g); }
        if (!xy && it.rack != null) {
            const r = st.rackByName.get(it.rack);
            const b = r && rackBox(r.index);
            if (b) xy = [b[0] + b[2] / 2, b[1] + b[3] / 2];
        }
        if (!xy) continue;
        const age = it.firstSeen ? now - it.firstSeen : Infinity;
        if (age < kFreshMs) fresh = true;
        halos.push([xy, it.failed, age]);
    }
    // One halo per place: a failed rack's many cables would otherwise stack dozens of rings.
    const byPlace = new Map();
    for (const [xy, failed, age] of halos) {
        const key = Math.round(xy[0]) + ',' + Math.round(xy[1]);
        const h = byPlace.get(key);
        if (!h) byPlace.set(key, [xy, failed, age]);
        else { h[1] = h[1] || failed; h[2] = Math.min(h[2], age); }
    }
    for (const [[x, y], failed, age] of byPlace.values()) {
        const base = Math.max(kHaloPx, scale * 1.6);
        ctx.lineWidth = 3;
        ctx.strokeStyle = failed ? 'rgba(255,23,68,0.95)' : 'rgba(255,196,0,0.95)';
        ctx.beginPath();
        ctx.arc(x, y, base, 0, 2 * Math.PI);
        ctx.stroke();
        if (age < kFreshMs) {
            const t = (now % 1200) / 1200;
            ctx.lineWidth = 2;
            ctx.strokeStyle = failed ? `rgba(255,23,68,${(1 - t).toFixed(2)})` : `rgba(255,196,0,${(1 - t).toFixed(2)})`;
            ctx.beginPath();
            ctx.arc(x, y, base + 4 + 14 * t, 0, 2 * Math.PI);
            ctx.stroke();
        }
    }
    // GPU markers from gpu.health, each its own shape so a failure is not only a hue (colour-
    // blind readers, a grey printout): failed a square with a white edge, warning a diamond,
    // quarantined a square crossed out.
    const showGpu = !filter || filter === 'gpu' || filter === 'host';
    if (showGpu) {
        const m = Math.max(kMinMarkerPx, scale);
        const health = st.array('gpu.health');
        for (const i of map.failed) {
            const h = health[i];
            if (filter === 'gpu' && h === 3) continue;
            if (filter === 'host' && h !== 3) continue;
            const xy = centre(i);
            if (!xy) continue;
            ctx.fillStyle = h === 2 ? red : h === 3 ? purple : amber;
            ctx.strokeStyle = h === 2 ? '#ffffff' : '#16171b';
            ctx.lineWidth = 1;
            if (h === 1) {
                const r = m * 0.72;
                ctx.beginPath();
                ctx.moveTo(xy[0], xy[1] - r);
                ctx.lineTo(xy[0] + r, xy[1]);
                ctx.lineTo(xy[0], xy[1] + r);
                ctx.lineTo(xy[0] - r, xy[1]);
                ctx.closePath();
                ctx.fill();
                ctx.stroke();
                continue;
            }
            ctx.fillRect(xy[0] - m / 2, xy[1] - m / 2, m, m);
            ctx.strokeRect(xy[0] - m / 2 - 0.5, xy[1] - m / 2 - 0.5, m + 1, m + 1);
            if (h === 3) {
                ctx.beginPath();
                ctx.moveTo(xy[0] - m / 2 + 1, xy[1] - m / 2 + 1);
                ctx.lineTo(xy[0] + m / 2 - 1, xy[1] + m / 2 - 1);
                ctx.moveTo(xy[0] + m / 2 - 1, xy[1] - m / 2 + 1);
                ctx.lineTo(xy[0] - m / 2 + 1, xy[1] + m / 2 - 1);
                ctx.stroke();
            }
        }
    }
    // Links: a ring on the GPU behind a NIC cable that is down (its rack gets the badge).
    for (const it of items) {
        if (it.kind !== 'link' || it.gpu == null) continue;
        const g = st.gpuIndexInRack(it.gpu, it.rack);
        const xy = g === undefined ? null : centre(g);
        if (!xy) continue;
        const m = Math.max(kMinMarkerPx + 2, scale + 2);
        ctx.strokeStyle = it.failed ? red : amber;
        ctx.lineWidth = 2;
        ctx.strokeRect(xy[0] - m / 2, xy[1] - m / 2, m, m);
    }
    // Racks: an outline and a count badge on every rack with a failure.
    const marks = new Map();
    for (const it of items) {
        if (it.rack == null) continue;
        const m = marks.get(it.rack) || { n: 0, failed: false, rackFailed: false };
        m.n++;
        m.failed = m.failed || it.failed;
        m.rackFailed = m.rackFailed || it.kind === 'rack';
        marks.set(it.rack, m);
    }
    ctx.font = 'bold 10px sans-serif';
    ctx.textBaseline = 'middle';
    for (const [name, m] of marks) {
        const r = st.rackByName.get(name);
        const b = r && rackBox(r.index);
        if (!b) continue;
        const colour = m.failed ? red : amber;
        ctx.strokeStyle = colour;
        ctx.lineWidth = 2;
        ctx.strokeRect(b[0] - 2, b[1] - 2, b[2] + 4, b[3] + 4);
        if (m.rackFailed) {
            // A failed rack is hatched as well as outlined.
            ctx.save();
            ctx.beginPath();
            ctx.rect(b[0], b[1], b[2], b[3]);
            ctx.clip();
            ctx.strokeStyle = 'rgba(255,23,68,0.8)';
            ctx.lineWidth = 1.5;
            ctx.beginPath();
            for (let d = -b[3]; d < b[2]; d += 5) { ctx.moveTo(b[0] + d, b[1] + b[3]); ctx.lineTo(b[0] + d + b[3], b[1]); }
            ctx.stroke();
            ctx.restore();
        }
        const cx = b[0] + b[2] + 2, cy = b[1] - 2, rad = kBadgePx / 2;
        ctx.fillStyle = colour;
        ctx.beginPath();
        ctx.arc(cx, cy, rad, 0, 2 * Math.PI);
        ctx.fill();
        ctx.strokeStyle = '#ffffff';
        ctx.lineWidth = 1;
        ctx.stroke();
        const text = m.n > 99 ? '99+' : String(m.n);
        ctx.fillStyle = m.failed ? '#ffffff' : '#000000';
        ctx.fillText(text, cx - ctx.measureText(text).width / 2, cy + 0.5);
    }
    return fresh;  // a halo pulses: draw again soon
}
