#!/usr/bin/python3
"""loomd on a PostgreSQL replicated and failed over by Patroni (issue 38), on the real programs.

One etcd, two Patroni-managed PostgreSQL 15 instances (synchronous_mode: a commit is
acknowledged only once the standby has it), two `loomd serve` on the libpq multi-host string
(`host=a,b port=p,q target_session_attrs=read-write`), all on loopback with ports of their own.
Writers change rack labels through both loomds (each write carries the next sequence number of
its rack) and an XID open/close pair is pushed to one loomd every 100 ms, while the database
goes through, in turn:

  1. a planned switchover (`patronictl switchover`);
  2. the primary's postmaster SIGKILLed (Patroni restarts it in place, or its standby takes over);
  3. the primary's node lost: its Patroni and PostgreSQL SIGKILLed -> the standby is promoted
     once the leader key expires (ttl), the old node restarted rejoins as a standby (pg_rewind);
  4. the primary's node frozen (SIGSTOP of Patroni and every PostgreSQL process) for
     LOOM_HA_STOP_SECONDS (default 30; the issue's figure is 60) -> promotion, then SIGCONT: the
     old primary demotes itself and rejoins;
  5. LOOM_HA_FAILOVERS (default 2; the issue's figure is 10) unplanned failovers in a row: the
     primary's node lost each time (as 3), the old node rejoining as a standby before the next,
     so the primary goes back and forth; each measured as 3, loomd's RSS before and after;
  6. LOOM_HA_SWITCHOVERS (default 10) switchovers in a row, loomd's RSS before and after.

After each: write unavailability (the longest gap between two acknowledged writes across the
change; goal <= 5 s for a switchover, <= ttl + 5 s for a failover), every answer 2xx or 503 (a 503
names the database and carries Retry-After), no acknowledged write lost (each rack's stored
sequence >= the last one acknowledged), a rack action through one loomd visible in the other's
/api/v1/hall within 2 s, and never two loomds reporting `loom_leader 1` at once. At the end: every
XID pair is one closed event of its own (none lost, none merged).

Usage: ha_test.py --bin BUILD/bin --source REPO [--keep]. Exit 77 (skipped) when patroni, etcd
or PostgreSQL 15 is not installed (scripts/bootstrap installs them).
"""

import argparse
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

PG_BIN = "/usr/lib/postgresql/15/bin"
TTL, LOOP_WAIT, RETRY_TIMEOUT = 10, 2, 4
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_postgres(cmd):
    # PostgreSQL refuses to run as root; Patroni and etcd run as `postgres` like the DB files.
    return (["runuser", "-u", "postgres", "--"] + cmd) if os.geteuid() == 0 else cmd


def http(method, url, token=None, body=None, ctype="application/json", timeout=10):
    req = urllib.request.Request(url, method=method, data=body.encode() if body else None)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if body:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace"), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace"), dict(e.headers)
    except Exception as e:  # connection refused, timeout: no answer at all
        return 0, str(e), {}


def wait(pred, timeout, what, interval=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


class Node:
    """One Patroni-managed PostgreSQL."""

    def __init__(self, root, name, etcd_port, dcs):
        self.name, self.root = name, root
        self.rest, self.pg = free_port(), free_port()
        self.data = os.path.join(root, name)
        self.conf = os.path.join(root, name + ".yml")
        self.log = os.path.join(root, name + ".log")
        with open(self.conf, "w") as f:
            f.write(f"""scope: loom-ha-test
name: {name}
restapi: {{listen: "127.0.0.1:{self.rest}", connect_address: "127.0.0.1:{self.rest}"}}
{dcs}: {{hosts: "127.0.0.1:{etcd_port}"}}
bootstrap:
  dcs:
    ttl: {TTL}
    loop_wait: {LOOP_WAIT}
    retry_timeout: {RETRY_TIMEOUT}
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters: {{wal_log_hints: "on", max_connections: 100, shared_buffers: 64MB}}
  initdb: [{{encoding: UTF8}}, {{locale: C}}]
  pg_hba:
  - host replication replicator 127.0.0.1/32 trust
  - host all all 127.0.0.1/32 trust
  - local all all trust
postgresql:
  listen: "127.0.0.1:{self.pg}"
  connect_address: "127.0.0.1:{self.pg}"
  data_dir: {self.data}
  bin_dir: {PG_BIN}
  pgpass: {root}/{name}.pgpass
  authentication:
    superuser: {{username: postgres, password: pw}}
    replication: {{username: replicator, password: rep}}
    rewind: {{username: postgres, password: pw}}
  parameters: {{unix_socket_directories: "{root}", fsync: "off"}}
""")
        self.proc = None

    def start(self):
        out = open(self.log, "a")
        self.proc = subprocess.Popen(as_postgres(["patroni", self.conf]), stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def status(self):
        s, body, _ = http("GET", f"http://127.0.0.1:{self.rest}/patroni", timeout=2)
        return json.loads(body) if s in (200, 503) and body.startswith("{") else None

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def pids(self):
        """Patroni's process and every PostgreSQL process of this node."""
        pids = [self.proc.pid] if self.proc else []
        pm = self.postmaster_pid()
        if pm:
            pids.append(pm)
            out = subprocess.run(["pgrep", "-P", str(pm)], capture_output=True, text=True).stdout
            pids += [int(p) for p in out.split()]
        # runuser's child is Patroni itself
        if self.proc:
            out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                                 text=True).stdout
            pids += [int(p) for p in out.split()]
        return pids

    def signal_all(self, sig):
        for p in self.pids():
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass


class Loomd:
    def __init__(self, bin_dir, root, name, db):
        self.name = name
        self.log = os.path.join(root, name + ".log")
        out = open(self.log, "w")
        self.proc = subprocess.Popen([os.path.join(bin_dir, "loomd"), "serve", "--db", db,
                                      "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                                     stderr=out, text=True)
        self.url = None
        for line in self.proc.stdout:
            out.write(line)
            out.flush()
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
        if not self.url:
            raise RuntimeError(f"{name} did not start (see {self.log})")
        threading.Thread(target=self._drain, args=(out,), daemon=True).start()

    def _drain(self, out):
        for line in self.proc.stdout:
            out.write(line)
            out.flush()

    def rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0


class Load:
    """Writers through both loomds, XID pairs into one, and a leader watch over both."""

    RACKS = ["z1-r001", "z1-r002", "z1-r003", "z1-r004"]

    def __init__(self, loomds, token, viewer):
        self.loomds, self.token, self.viewer = loomds, token, viewer
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acks = []            # (time, rack, seq) of every 2xx
        self.last_acked = {}      # rack -> highest acknowledged seq
        self.statuses = {}
        self.bad = []
        self.xid_pairs = 0        # pairs whose two pushes were both answered 200
        self.xid_attempted = 0    # pairs begun (a push without an answer may still be applied)
        self.both_leaders = 0
        self.threads = []

    def _record(self, status, body, headers):
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status == 503:
                if "database" not in body or "Retry-After" not in headers:
                    self.bad.append(f"503 without the database named or Retry-After: {body[:200]}")
            elif not 200 <= status < 300:
                self.bad.append(f"{status}: {body[:200]}")

    def _writer(self, rack, loomd):
        seq = 0
        while not self.stop.is_set():
            seq += 1
            # A client that waits as kubectl or curl do: a request loomd holds while the
            # database fails over must still be answered, just late.
            s, body, h = http("PATCH", f"{loomd.url}/api/v1/racks/{rack}", self.token,
                              json.dumps({"labels": {"ha-seq": str(seq)}}), timeout=30)
            self._record(s, body, h)
            if 200 <= s < 300:
                with self.lock:
                    self.acks.append((time.time(), rack, seq))
                    self.last_acked[rack] = seq
            time.sleep(0.05)

    def _xids(self, loomd):
        # Ingest needs no database: both pushes of a pair are answered 200 all along.
        gpus = [(f"z1-r00{r}-h{h}", g) for r in range(1, 5) for h in range(2) for g in range(8)]
        i = 0
        while not self.stop.is_set():
            host, g = gpus[i % len(gpus)]
            with self.lock:
                self.xid_attempted += 1
            ok = True
            for v in (79, 0):
                s, body, h = http("POST", f"{loomd.url}/api/v1/telemetry", self.token,
                                  f'DCGM_FI_DEV_XID_ERRORS{{gpu="{g}",Hostname="{host}"}} {v}\n',
                                  ctype="text/plain", timeout=30)
                self._record(s, body, h)
                ok = ok and s == 200
            if ok:
                with self.lock:
                    self.xid_pairs += 1
            i += 1
            time.sleep(0.1)

    def _leaders(self):
        while not self.stop.is_set():
            n = 0
            for d in self.loomds:
                s, body, _ = http("GET", f"{d.url}/metrics", self.viewer, timeout=2)
                if s == 200 and re.search(r"^loom_leader 1$", body, re.M):
                    n += 1
            if n > 1:
                with self.lock:
                    self.both_leaders += 1
            time.sleep(0.25)

    def start(self):
        for i, rack in enumerate(self.RACKS):
            self.threads.append(threading.Thread(target=self._writer,
                                                 args=(rack, self.loomds[i % 2])))
        self.threads.append(threading.Thread(target=self._xids, args=(self.loomds[0],)))
        self.threads.append(threading.Thread(target=self._leaders))
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()

    def gap_around(self, t0, t1):
        """Longest time without an acknowledged write, over [t0 - 1 s, t1]."""
        with self.lock:
            times = sorted(a[0] for a in self.acks if t0 - 1 <= a[0])
        times = [t for t in times if t <= t1 + 30]
        if not times:
            return float("inf")
        gaps = [b - a for a, b in zip(times, times[1:]) if b >= t0]
        return max(gaps) if gaps else 0.0


def psql(port, sql, db="postgres"):
    return subprocess.run([f"{PG_BIN}/psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                           "-d", db, "-Atc", sql], capture_output=True, text=True, check=True,
                          env={**os.environ, "PGPASSWORD": "pw"}).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the directory of logs")
    args = ap.parse_args()
    for tool in ("patroni", "patronictl", "etcd"):
        if not shutil.which(tool):
            print(f"ha_test: {tool} is not installed (scripts/bootstrap); skipped")
            return 77
    if not os.path.exists(f"{PG_BIN}/postgres"):
        print("ha_test: PostgreSQL 15 is not installed; skipped")
        return 77
    stop_seconds = int(os.environ.get("LOOM_HA_STOP_SECONDS", "30"))
    switchovers = int(os.environ.get("LOOM_HA_SWITCHOVERS", "10"))
    failovers = int(os.environ.get("LOOM_HA_FAILOVERS", "2"))
    # Patroni's etcd API: `etcd` (v2, the default here) or `etcd3`. Debian 12's Patroni 3.0.2
    # renews an expired lease and then puts the leader key unconditionally (etcd3.py
    # _update_leader): a primary frozen past the ttl takes the key back from the standby
    # promoted meanwhile, and what that standby acknowledged is rewound away (docs/deploy.md).
    dcs = os.environ.get("LOOM_HA_DCS", "etcd")

    root = tempfile.mkdtemp(prefix="loom-ha-")
    os.chmod(root, 0o755)
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(root, pw.pw_uid, pw.pw_gid)
    procs = []
    nodes = []
    loomds = []
    try:
        etcd_client, etcd_peer = free_port(), free_port()
        etcd = subprocess.Popen(as_postgres([
            "etcd", "--name", "e1", "--data-dir", f"{root}/etcd",
            "--listen-client-urls", f"http://127.0.0.1:{etcd_client}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_client}",
            "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
            "--initial-cluster", f"e1=http://127.0.0.1:{etcd_peer}", "--enable-v2=true"]),
            stdout=open(f"{root}/etcd.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(etcd)
        wait(lambda: http("GET", f"http://127.0.0.1:{etcd_client}/health", timeout=1)[0] == 200,
             30, "etcd")
        nodes = [Node(root, "pg1", etcd_client, dcs), Node(root, "pg2", etcd_client, dcs)]
        if os.geteuid() == 0:
            for n in nodes:
                os.chown(n.conf, pw.pw_uid, pw.pw_gid)
        for n in nodes:
            n.start()

        def roles():
            out = {}
            for n in nodes:
                st = n.status()
                out[n.name] = (st.get("role"), st.get("state")) if st else (None, None)
            return out

        def primary():
            for n in nodes:
                st = n.status()
                if st and st.get("role") in ("master", "primary") and st.get("state") == "running":
                    return n
            return None

        def healthy():
            # a primary and a streaming synchronous standby (Patroni's /cluster)
            p = primary()
            if not p:
                return None
            s, body, _ = http("GET", f"http://127.0.0.1:{p.rest}/cluster", timeout=2)
            if s != 200:
                return None
            members = json.loads(body).get("members", [])
            sync = [m for m in members if m.get("role") == "sync_standby"
                    and m.get("state") in ("running", "streaming")]
            return p if sync else None

        p = wait(healthy, 90, "a Patroni primary and its synchronous standby")
        log(f"patroni: {p.name} primary, roles {roles()}")
        psql(p.pg, "CREATE DATABASE loom")
        # libpq tries the next host only when a connection fails, not when a server refuses it:
        # the standby must have replayed the CREATE DATABASE before loomd's first connect.
        def replayed():
            try:
                return all(psql(n.pg, "SELECT 1", db="loom") == "1" for n in nodes)
            except subprocess.CalledProcessError:
                return False
        wait(replayed, 30, "the database on every node")
        db = (f"host=127.0.0.1,127.0.0.1 port={nodes[0].pg},{nodes[1].pg} dbname=loom "
              "user=postgres password=pw target_session_attrs=read-write connect_timeout=2")
        loomd_bin = os.path.join(args.bin, "loomd")
        subprocess.run([loomd_bin, "apply", "-f",
                        os.path.join(args.source, "configs/clusters/dev-small.yaml"), "--db", db],
                       check=True, stdout=subprocess.DEVNULL)

        def token(role):
            out = subprocess.run([loomd_bin, "token", "create", "--role", role, "--name",
                                  "ha-" + role, "--db", db], check=True, capture_output=True,
                                 text=True).stdout
            return out.strip().splitlines()[-1].strip()

        admin, viewer = token("admin"), token("viewer")
        loomds = [Loomd(args.bin, root, "loomd-a", db), Loomd(args.bin, root, "loomd-b", db)]
        for d in loomds:
            wait(lambda: http("GET", d.url + "/readyz", timeout=2)[0] == 200, 60, d.name + " ready")
        # The failover guard probes (a new connection to find the primary) only when a
        # connection waits on the server or its socket closed, and every 30 s otherwise.
        def probes(d):
            s, body, _ = http("GET", d.url + "/metrics", viewer, timeout=5)
            for line in body.splitlines() if s == 200 else []:
                if line.startswith("loom_db_failover_probes_total "):
                    return int(float(line.split()[1]))
            return -1
        quiet0 = [probes(d) for d in loomds]
        time.sleep(12)
        quiet = [probes(d) - q for d, q in zip(loomds, quiet0)]
        log(f"failover guard while quiet: {quiet} probes in 12 s (loomd-a, loomd-b)")
        if any(q < 0 or q > 2 for q in quiet):
            fail(f"the failover guard probed {quiet} times in 12 quiet seconds (goal at most 2)")
        load = Load(loomds, admin, viewer)
        load.start()
        time.sleep(3)

        advanced = []

        def check_live(label):
            # A rack action through loomd-b after the change: loomd-a's /hall shows it in 2 s.
            rack = "z1-r00" + str(1 + len(advanced) % 4)
            def act():
                s, body, _ = http("POST", f"{loomds[1].url}/api/v1/racks/{rack}/advance", admin,
                                  json.dumps({"reason": "ha test " + label}))
                return (s, body) if s != 503 else None
            s, body = wait(act, 30, f"{label}: a rack action accepted")
            if s != 200:
                # a rack at the end of its lifecycle cannot advance: not what is measured here
                log(f"{label}: advance {rack}: {s} {body[:120]}")
                return
            want = json.loads(body).get("to") or json.loads(body).get("state")
            t0 = time.time()
            def seen():
                s, body, _ = http("GET", f"{loomds[0].url}/api/v1/hall", viewer, timeout=2)
                if s != 200:
                    return False
                for r in json.loads(body)["racks"]:
                    if r["name"] == rack:
                        return r["state"] == want
                return False
            try:
                wait(seen, 10, f"{rack} {want} in loomd-a's hall", interval=0.05)
                dt = time.time() - t0
                log(f"{label}: {rack} -> {want} through loomd-b, in loomd-a's hall after {dt:.2f} s")
                if dt > 2:
                    fail(f"{label}: the live map took {dt:.2f} s (goal 2 s)")
            except TimeoutError as e:
                fail(f"{label}: {e}")
            advanced.append(rack)

        def measured(label, action, goal):
            before = primary()
            t0 = time.time()
            action(before)
            new = wait(healthy, TTL * 6, f"{label}: a primary and a synchronous standby again")
            t1 = time.time()
            time.sleep(4)  # acknowledged writes after the change close the measured window
            gap = load.gap_around(t0, t1)
            log(f"{label}: primary {before.name if before else '?'} -> {new.name}, "
                f"writes unavailable {gap:.2f} s (goal {goal} s), healthy after {t1 - t0:.1f} s")
            if gap > goal:
                fail(f"{label}: writes unavailable for {gap:.2f} s (goal {goal} s)")
            check_live(label)
            return new

        def switchover(p):
            other = [n for n in nodes if n is not p][0]
            subprocess.run(["patronictl", "-c", p.conf, "switchover", "--leader", p.name,
                            "--candidate", other.name, "--force"], check=True,
                           stdout=subprocess.DEVNULL)
            wait(lambda: primary() is other, 60, "the switchover")

        def kill_postmaster(p):
            pid = p.postmaster_pid()
            os.kill(pid, signal.SIGKILL)
            # Patroni starts it again in place (or its standby takes over): wait for either,
            # so that "healthy" below is not the state from before the kill.
            wait(lambda: p.postmaster_pid() not in (None, pid) or primary() not in (None, p),
                 TTL * 4, "the postmaster restarted or replaced")

        def lose_node(p):
            p.signal_all(signal.SIGKILL)
            other = [n for n in nodes if n is not p][0]
            wait(lambda: primary() is other, TTL * 4, "the standby promoted")
            p.start()  # the machine comes back: its node rejoins as a standby

        def freeze_node(p):
            p.signal_all(signal.SIGSTOP)
            other = [n for n in nodes if n is not p][0]
            wait(lambda: primary() is other, TTL * 4, "the standby promoted")
            time.sleep(max(0, stop_seconds - TTL))
            p.signal_all(signal.SIGCONT)

        measured("switchover", switchover, 5)
        measured("postmaster SIGKILL", kill_postmaster, TTL + 5)
        measured("node lost (SIGKILL)", lose_node, TTL + 5)
        measured(f"node frozen {stop_seconds} s (SIGSTOP)", freeze_node, TTL + 5)
        # Unplanned failovers in a row: each the node-lost case above, measured the same way
        # (writes back within ttl + 5 s, the live view in 2 s), the old primary back as a standby
        # (healthy() waits for the synchronous standby) before the next one.
        rss0 = [d.rss_mb() for d in loomds]
        for i in range(failovers):
            measured(f"failover {i + 1}/{failovers} (node lost)", lose_node, TTL + 5)
        rss1 = [d.rss_mb() for d in loomds]
        log(f"{failovers} failovers: loomd RSS {rss0[0]:.0f} -> {rss1[0]:.0f} MB, "
            f"{rss0[1]:.0f} -> {rss1[1]:.0f} MB")
        for a, b in zip(rss0, rss1):
            if b - a > 32:
                fail(f"loomd RSS grew {a:.0f} -> {b:.0f} MB over {failovers} failovers")
        rss0 = [d.rss_mb() for d in loomds]
        worst = 0.0
        for i in range(switchovers):
            before = primary()
            t0 = time.time()
            switchover(before)
            wait(healthy, 60, "the synchronous standby after a switchover")
            t1 = time.time()
            time.sleep(1)
            worst = max(worst, load.gap_around(t0, t1))
        rss1 = [d.rss_mb() for d in loomds]
        log(f"failover guard: {[probes(d) for d in loomds]} probes over the whole test")
        log(f"{switchovers} switchovers: writes unavailable at most {worst:.2f} s; loomd RSS "
            f"{rss0[0]:.0f} -> {rss1[0]:.0f} MB, {rss0[1]:.0f} -> {rss1[1]:.0f} MB")
        if worst > 5:
            fail(f"{switchovers} switchovers: writes unavailable for {worst:.2f} s (goal 5 s)")
        for a, b in zip(rss0, rss1):
            if b - a > 32:
                fail(f"loomd RSS grew {a:.0f} -> {b:.0f} MB over {switchovers} switchovers")
        time.sleep(2)
        load.finish()

        # Nothing acknowledged lost, nothing but 2xx and 503, one leader at a time.
        for rack, seq in load.last_acked.items():
            s, body, _ = http("GET", f"{loomds[0].url}/api/v1/racks/{rack}", viewer)
            stored = int(json.loads(body)["labels"].get("ha-seq", "0")) if s == 200 else -1
            if stored < seq:
                fail(f"{rack}: stored ha-seq {stored} < last acknowledged {seq}")
        log(f"answers: {dict(sorted(load.statuses.items()))}; {len(load.acks)} writes acknowledged")
        for b in load.bad[:5]:
            fail("bad answer: " + b)
        if load.both_leaders:
            fail(f"two loomds reported loom_leader 1 at once in {load.both_leaders} samples")
        # Every XID pair one closed event of its own (none lost, none merged).
        pairs = load.xid_pairs
        p = primary()
        def settled():
            n = psql(p.pg, "SELECT count(*) FILTER (WHERE closed_at IS NOT NULL) || ' ' || count(*) "
                     "FROM events WHERE kind = 'gpu_xid'", db="loom").split()
            return n if n[0] == n[1] and int(n[0]) >= pairs else None
        try:
            got = wait(settled, 60, "every XID pair stored")
            log(f"XID pairs: {pairs} acknowledged ({load.xid_attempted} begun), {got[0]} closed "
                "events")
            if not pairs <= int(got[0]) <= load.xid_attempted:
                fail(f"XID pairs: {pairs} acknowledged, {load.xid_attempted} begun, {got[0]} "
                     "events (lost, merged or doubled)")
        except TimeoutError:
            fail("XID pairs: " + psql(p.pg, "SELECT count(*) || ' events, ' || count(closed_at) || "
                                      f"' closed' FROM events WHERE kind = 'gpu_xid'", db="loom")
                 + f" for {pairs} pairs")
        merged = psql(p.pg, "SELECT count(*) FROM events a JOIN events b ON a.location = b.location "
                      "AND a.id < b.id AND a.kind = 'gpu_xid' AND b.kind = 'gpu_xid' "
                      "AND b.opened_at < a.closed_at", db="loom")
        if merged != "0":
            fail(f"{merged} XID events overlap another of the same GPU")
    except Exception as e:  # a step that timed out or a program that failed: report, clean up
        fail(f"{type(e).__name__}: {e}")
    finally:
        for d in loomds:
            d.proc.terminate()
        for d in loomds:
            try:
                d.proc.wait(10)
            except subprocess.TimeoutExpired:
                d.proc.kill()
        for n in nodes:
            n.signal_all(signal.SIGCONT)
            if n.proc:
                os.killpg(n.proc.pid, signal.SIGTERM)
        time.sleep(3)
        for n in nodes:
            n.signal_all(signal.SIGKILL)
        for p in procs:
            p.terminate()
            p.wait()
        if failures or args.keep:
            print(f"ha_test: logs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("ha_test: " + ("FAILED: " + "; ".join(failures) if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
