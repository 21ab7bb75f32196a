// Building DOM from data without markup: every text goes through textContent (a name like
// `<img src=x onerror=alert(1)>` is shown as those characters and never parsed as HTML).

// el('div', {class: 'x', onclick: fn, dataset: {k: 'v'}}, 'text', childNode, [more...])
export function el(tag, attrs = {}, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'dataset') Object.assign(e.dataset, v);
        else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
        else if (k === 'text') e.textContent = String(v);
        else if (v === true) e.setAttribute(k, '');
        else e.setAttribute(k, String(v));
    }
    append(e, children);
    return e;
}

function append(e, children) {
    for (const c of children) {
        if (c === undefined || c === null || c === false) continue;
        if (Array.isArray(c)) append(e, c);
        else if (c instanceof Node) e.appendChild(c);
        else e.appendChild(document.createTextNode(String(c)));
    }
}

export function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
    return e;
}

export const fmtTime = (iso) => {
    if (!iso) return '';
    const d = new Date(iso);
    return isNaN(d) ? String(iso) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
};

// A link to a dashboard URL (#/rack/z1-r001) with the name as text.
export const link = (hash, text) => el('a', { href: hash }, text);
export const rackLink = (name) => link('#/rack/' + encodeURIComponent(name), name);
export const switchLink = (name) => link('#/switch/' + encodeURIComponent(name), name);
