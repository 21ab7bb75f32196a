#!/usr/bin/python3
"""Moves compute racks into service the way an operator does: 7 `advance` calls each
(planned -> delivered -> ... -> validated -> in_service), over 8 connections.

    bench/server/advance_racks.py URL TOKEN [LIMIT] [TIMEOUT]

LIMIT: only the first LIMIT compute racks of /api/v1/hall (0: all). TIMEOUT: seconds per
request (default 120). Prints how many racks moved and how many calls were refused.
Used by bench/server/run_scale_live.sh and bench/scale/run_196k.sh."""
import concurrent.futures
import http.client
import json
import sys
import time
import urllib.parse
import urllib.request

url, token = sys.argv[1], sys.argv[2]
limit = int(sys.argv[3]) if len(sys.argv) > 3 else 0
timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 120
req = urllib.request.Request(url + "/api/v1/hall", headers={"Authorization": "Bearer " + token})
racks = [r["name"] for r in json.load(urllib.request.urlopen(req))["racks"] if r["gpuCount"] > 0]
if limit:
    racks = racks[:limit]
port = urllib.parse.urlparse(url).port


def advance(chunk):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    bad = 0
    for name in chunk:
        for _ in range(7):
            c.request("POST", f"/api/v1/racks/{name}/advance", body="{}",
                      headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            bad += r.status != 200
    return bad


t = time.time()
with concurrent.futures.ThreadPoolExecutor(8) as ex:
    bad = sum(ex.map(advance, [racks[i::8] for i in range(8)]))
print(f"{len(racks)} racks advanced to in_service in {time.time() - t:.1f} s ({bad} refused)", flush=True)
