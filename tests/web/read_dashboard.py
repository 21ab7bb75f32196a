#!/usr/bin/python3
"""tests/web/read_dashboard.py: what the web dashboard SHOWS, read from a real headless Chromium,
for a test that compares it with loom-console against the same loomd
(tests/desktop_ui/both_clients_test.cpp).

  read_dashboard.py --url URL --token TOKEN [--rack NAME ...] [--event ID ...] [--colours]
                    [--switch NAME ...] [--link NAME ...]

Signs in, waits for the hall and loomd's failures, then prints one JSON object:
  {"counts": {"gpu": n, "host": n, "link": n, "switch": n, "rack": n}, "total": n,
   "racks": {NAME: the state the rack panel shows}, "events": {ID: the event row's state cell},
   "colours": {"failed": "#rrggbb", ...} (--colours: what the page colours failures with),
   "bundles": {ZONE: [{"links", "down"} per tier pair: hosts–tier 1, tier 1–2, tier 2–3]},
   "switches": {NAME: {"fabric": {"word", "colour"}, "zone": {"word", "colour"}, "page": word}}
     (--switch: the word and the pixel of its square on the fabric map (#/fabric), of its tile on
     its zone's drawing (#/fabric/zone/<zone>), and the word its page (#/switch/<name>) says),
   "links": {NAME: {"word", "colour"}} (--link: the word its zone's list of links down says, or
     "up" when it is not listed, and the pixel of its cell on the zone's drawing)}
Exit 77 (skip) when Chromium, its driver or selenium is missing; 1 on a page that never loads.
"""
import argparse
import json
import os
import sys
import time

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def wait_for(fn, timeout, what):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # the page is still loading: try again until the deadline
            last = e
        time.sleep(0.2)
    raise TimeoutError(f"{what} within {timeout} s ({last})")


# A canvas pixel as "#rrggbb" (x, y in CSS pixels of the canvas).
PIXEL_JS = """
const [c, x, y] = arguments;
const k = c.width / (c.clientWidth || c.width);
const d = c.getContext('2d').getImageData(Math.floor(x * k), Math.floor(y * k), 1, 1).data;
return '#' + [d[0], d[1], d[2]].map((v) => v.toString(16).padStart(2, '0')).join('');"""


def read_fabric(driver, args, shown, By):
    """The switches and links as the fabric views draw and name them."""
    driver.execute_script("location.hash = '#/fabric'")
    wait_for(lambda: driver.execute_script(
        "const m = window.loomFabric; return !!(m && m.hits && m.hits.some((h) => h.sw) && "
        "window.loomState.arrays['link.health']);"), 30, "the fabric map")
    # The bundles as the map counts them: per zone, per tier pair (hosts–1, 1–2, 2–3), links and down.
    shown["bundles"] = driver.execute_script(
        "const m = window.loomFabric; const a = m.aggregate();"
        "return Object.fromEntries((m.zoneNames || []).map((z, i) => [z, a[i].map((x) => ({links: x.links, down: x.down}))]));")
    shown["switches"] = {}
    zones = {}
    for name in args.switch:
        # Drawn again now, with the failures and link words the page holds (its redraw is
        # debounced by a second).
        hit = wait_for(lambda: driver.execute_script(
            "const m = window.loomFabric; m.draw(); const h = m.hits.find((x) => x.sw === arguments[0]);"
            "return h ? {x: h.x + 1, y: h.y + 1, word: h.word, zone: (m.topo.switches.find((s) => s.name === arguments[0]) || {}).zone} : null;",
            name), 20, f"{name} on the fabric map")
        colour = driver.execute_script(PIXEL_JS, driver.execute_script("return window.loomFabric.canvas"),
                                       hit["x"], hit["y"])
        shown["switches"][name] = {"fabric": {"word": hit["word"], "colour": colour}}
        if hit.get("zone"):
            zones.setdefault(hit["zone"], []).append(name)
    if args.link and not zones:
        zones["z1"] = []
    shown["links"] = {}
    for zone, names in zones.items():
        driver.execute_script("location.hash = arguments[0]", "#/fabric/zone/" + zone)
        wait_for(lambda: driver.execute_script(
            "const z = window.loomZone; return !!(z && z.ok && z.tiles && z.tiles.length && z.zone === arguments[0]);", zone),
            30, f"zone {zone}'s drawing")
        canvas = driver.execute_script("return window.loomZone.canvas")
        for name in names:
            tile = wait_for(lambda: driver.execute_script(
                "const z = window.loomZone; z.draw(); const t = z.tiles.find((x) => x.sw === arguments[0]);"
                "return t && t.word ? {x: t.x + 1, y: t.y + 1, word: t.word} : null;", name), 20, f"{name} on zone {zone}")
            shown["switches"][name]["zone"] = {"word": tile["word"],
                                               "colour": driver.execute_script(PIXEL_JS, canvas, tile["x"], tile["y"])}
        for link in args.link:
            # The list of links down under the drawing names it once the page has its word.
            def listed():
                text = driver.execute_script("const d = document.querySelector('.zone-down'); return d ? d.innerText : '';")
                for line in text.splitlines():
                    if line.startswith(link + " — "):
                        return line.split(" — ", 1)[1].strip()
                return None
            try:
                word = wait_for(listed, 20, f"{link} in zone {zone}'s links down")
            except TimeoutError:
                word = "up"
            p = driver.execute_script("window.loomZone.draw(); return window.loomZone.cellPoint(arguments[0]);", link)
            shown["links"][link] = {"word": word, "colour": driver.execute_script(PIXEL_JS, canvas, p["canvasX"], p["canvasY"]) if p else None}
    for name in args.switch:
        driver.execute_script("location.hash = arguments[0]", "#/switch/" + name)
        wait_for(lambda: (lambda e: e and e[0].text == name)(
            driver.find_elements(By.CSS_SELECTOR, "h2.switch-name")), 20, f"{name}'s page")
        para = wait_for(lambda: driver.execute_script(
            "const h = document.querySelector('h2.switch-name'); const p = h && h.nextElementSibling;"
            "return p && p.textContent.includes(' · tier ') ? p.textContent : null;"), 20, f"{name}'s state line")
        shown["switches"][name]["page"] = para.split(" · ")[-1].strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--rack", action="append", default=[])
    ap.add_argument("--event", action="append", default=[])
    ap.add_argument("--colours", action="store_true")
    ap.add_argument("--switch", action="append", default=[])
    ap.add_argument("--link", action="append", default=[])
    args = ap.parse_args()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
    except ImportError:
        print("SKIP: python3-selenium is missing (scripts/bootstrap installs it)")
        return 77
    for exe in (CHROMEDRIVER, CHROMIUM):
        if not os.path.exists(exe):
            print(f"SKIP: {exe} is missing (scripts/bootstrap installs chromium and chromium-driver)")
            return 77
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1600,1000"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        driver.get(args.url + "/")
        driver.execute_script("sessionStorage.setItem('loom.token', arguments[0])", args.token)
        driver.get(args.url + "/?signed-in#/hall")  # a new document: it starts with the token
        # The hall loaded and loomd's failures drawn (a loomd without the simulator sends no
        # utilization, so the map's "complete" mark may never come).
        wait_for(lambda: driver.execute_script("return !!(window.loomState && window.loomState.hall && "
                                               "window.loomState.failures && window.loomState.legendsLoaded)"),
                 60, "the hall and loomd's failures")
        # The counter as drawn: each kind's button carries the count it shows.
        def counter():
            out = {}
            for b in driver.find_elements(By.CSS_SELECTOR, "#failures button.fk"):
                out[b.get_attribute("data-kind")] = int(b.get_attribute("data-count"))
            return out if "gpu" in out else None
        counts = wait_for(counter, 20, "the failure counter")
        shown = {"counts": {k: v for k, v in counts.items() if k != "all"}, "total": counts.get("all"),
                 "racks": {}, "events": {}}
        for rack in args.rack:
            driver.get(f"{args.url}/#/rack/{rack}")
            shown["racks"][rack] = wait_for(
                lambda: (lambda e: e[0].text if e and e[0].text else None)(
                    driver.find_elements(By.CSS_SELECTOR, ".rack-state")), 20, f"the rack panel of {rack}")
        for ev in args.event:
            driver.get(f"{args.url}/#/events/{ev}")
            row = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, f'table.events tr[data-id="{ev}"]'),
                           20, f"event {ev}'s row")
            shown["events"][ev] = row[0].find_elements(By.TAG_NAME, "td")[6].text
        if args.colours:
            shown["colours"] = driver.execute_script("""
                const hex = (v) => '#' + v.match(/\\d+/g).slice(0, 3).map((x) => Number(x).toString(16).padStart(2, '0')).join('');
                const css = getComputedStyle(document.documentElement);
                return { failed: hex(css.getPropertyValue('--bad')), degraded: hex(css.getPropertyValue('--warn')),
                         quarantined: hex(css.getPropertyValue('--quarantined')) };""")
        if args.switch or args.link:
            read_fabric(driver, args, shown, By)
        print(json.dumps(shown))
        return 0
    except TimeoutError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
