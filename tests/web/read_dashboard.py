#!/usr/bin/python3
"""tests/web/read_dashboard.py: what the web dashboard SHOWS, read from a real headless Chromium,
for a test that compares it with loom-console against the same loomd
(tests/desktop_ui/both_clients_test.cpp).

  read_dashboard.py --url URL --token TOKEN [--rack NAME ...] [--event ID ...] [--colours]

Signs in, waits for the hall and loomd's failures, then prints one JSON object:
  {"counts": {"gpu": n, "host": n, "link": n, "switch": n, "rack": n}, "total": n,
   "racks": {NAME: the state the rack panel shows}, "events": {ID: the event row's state cell},
   "colours": {"failed": "#rrggbb", ...} (--colours: what the page colours failures with)}
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--rack", action="append", default=[])
    ap.add_argument("--event", action="append", default=[])
    ap.add_argument("--colours", action="store_true")
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
        print(json.dumps(shown))
        return 0
    except TimeoutError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
