// The first thing the page runs (no imports): with a token in this tab it asks for the two
// answers the first paint waits for — the compact hall and loomd's legends — while the
// dashboard's other modules are still being fetched and compiled (Firefox spent ~0.3 s on them
// before the hall request went out). state.js and app.js take each promise once.
const t = sessionStorage.getItem('loom.token');
if (t) {
    const get = (path) => fetch('api/v1/' + path, {
        headers: { Accept: 'application/json', Authorization: 'Bearer ' + t },
        cache: 'no-cache', credentials: 'omit',
    });
    window.loomEarly = { hall: get('hall?format=compact'), legends: get('legends') };
    // Not the dashboard's to handle if the page never asks (a refused token): no unhandled
    // rejection in the console.
    window.loomEarly.hall.catch(() => {});
    window.loomEarly.legends.catch(() => {});
}
