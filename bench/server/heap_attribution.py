#!/usr/bin/env python3
# bench/server/heap_attribution.py STACKS... : attributes heaptrack's peak stacks (heaptrack_print --flamegraph-cost-type peak -F FILE) to
# loomd's consumers, one column per file (a Markdown table, MB); the first rule whose every key occurs in a stack takes its bytes.
import re,collections,sys
rules=[
 ('straggler finder index', ['StragglerFinder']),
 ('simulator: whole-cluster page per step', ['Simulator::step']),
 ('simulator: model', ['Simulator::Simulator']),
 ('fabric state (api_fabric): routing, topology, link index', ['api_fabric.cpp']),
 ('jobs view: routing, topology, link index', ['jobs_']),
 ('live state: inventory snapshot', ['refreshStates']),
 ('live state: inventory snapshot', ['loadSnapshot']),
 ('live state: hall layout', ['HallLayout']),
 ('live state: link owners, link index', ['LinkOwners']),
 ('live state: link owners, link index', ['LinkNameIndex']),
 ('telemetry hub: history', ['HubHistory']),
 ('telemetry hub: state arrays (x2 while a new layout is taken)', ['TelemetryHub']),
 ('HTTP requests in flight', ['http_session.cpp']),
]
cols=[]
for f in sys.argv[1:]:
    agg=collections.Counter()
    for line in open(f):
        line=line.rstrip('\n'); i=line.rfind(' '); n=int(line[i+1:]); s=line[:i]
        for name,keys in rules:
            if all(k in s for k in keys): agg[name]+=n; break
        else: agg['other']+=n
    cols.append(agg)
names=[]
for n,_ in rules+[('other',0)]:
    if n not in names: names.append(n)
for n in names: print(f"| {n} | " + " | ".join(f"{c[n]/1048576:,.0f}" for c in cols)+" |")
print("| total at the peak | " + " | ".join(f"{sum(c.values())/1048576:,.0f}" for c in cols)+" |")
