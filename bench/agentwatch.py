#!/usr/bin/env python3
"""agentwatch.py: time how long N Agents take to exist and to reach a state.

Lists the Agents of one namespace, then watches them (the Kubernetes watch API,
as a controller would: one event per change, no polling), and prints to stdout

    ready                     once the watch is open (start the hosts now)
    exist_at=<epoch seconds>  when N Agents exist
    state_at=<epoch seconds>  when N Agents have status.debugInfo.state == STATE

then exits 0 (or 1 on --timeout).  Progress goes to stderr every 10 s.
Used by bench/discovery.sh; standard library only.
"""
import argparse
import http.client
import json
import ssl
import sys
import time
import urllib.parse

GROUP = "/apis/agent-install.openshift.io/v1beta1"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True, help="https://HOST:PORT")
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--cacert", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--expect", type=int, required=True)
    ap.add_argument("--state", default="known-unbound")
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()

    u = urllib.parse.urlsplit(a.server)
    token = open(a.token_file).read().strip()
    ctx = ssl.create_default_context(cafile=a.cacert)
    hdrs = {"Authorization": "Bearer " + token, "Accept": "application/json"}
    path = f"{GROUP}/namespaces/{a.namespace}/agents"
    deadline = time.monotonic() + a.timeout
    states = {}  # name -> state
    exist_at = state_at = None
    announced = False
    last_progress = time.monotonic()

    def connect():
        return http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=60)

    def note(obj, deleted=False):
        name = obj["metadata"]["name"]
        if deleted:
            states.pop(name, None)
        else:
            states[name] = ((obj.get("status") or {}).get("debugInfo") or {}).get("state", "")

    def check():
        nonlocal exist_at, state_at
        now = time.time()
        if exist_at is None and len(states) >= a.expect:
            exist_at = now
            print(f"exist_at={now:.3f}", flush=True)
        if state_at is None and sum(1 for s in states.values() if s == a.state) >= a.expect:
            state_at = now
            print(f"state_at={now:.3f}", flush=True)
        return exist_at is not None and state_at is not None

    def progress(force=False):
        nonlocal last_progress
        if force or time.monotonic() - last_progress >= 10:
            last_progress = time.monotonic()
            n = sum(1 for s in states.values() if s == a.state)
            print(f"agentwatch: {a.namespace}: {len(states)} Agents, {n} {a.state}", file=sys.stderr, flush=True)

    rv = None
    while True:
        if rv is None:
            c = connect()
            c.request("GET", path, headers=hdrs)
            r = c.getresponse()
            body = r.read()
            c.close()
            if r.status != 200:
                print(f"agentwatch: list: HTTP {r.status}: {body[:300]!r}", file=sys.stderr)
                return 1
            lst = json.loads(body)
            states.clear()
            for it in lst.get("items") or []:
                note(it)
            rv = lst["metadata"]["resourceVersion"]
            if check():
                return 0
        left = deadline - time.monotonic()
        if left <= 0:
            progress(True)
            print("agentwatch: timed out", file=sys.stderr)
            return 1
        c = connect()
        q = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true",
                                    "timeoutSeconds": str(int(min(left, 300)) + 1)})
        c.request("GET", f"{path}?{q}", headers=hdrs)
        r = c.getresponse()
        if r.status != 200:
            print(f"agentwatch: watch: HTTP {r.status}: {r.read()[:300]!r}", file=sys.stderr)
            c.close()
            rv = None
            time.sleep(1)
            continue
        if not announced:
            announced = True
            print("ready", flush=True)
        try:
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                ev = json.loads(line)
                t, obj = ev.get("type"), ev.get("object") or {}
                if t == "ERROR":  # e.g. 410 Gone: list again
                    rv = None
                    break
                rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                if t in ("ADDED", "MODIFIED"):
                    note(obj)
                elif t == "DELETED":
                    note(obj, deleted=True)
                if check():
                    progress(True)
                    return 0
                progress()
                if time.monotonic() > deadline:
                    break
        except (OSError, http.client.HTTPException) as e:
            print(f"agentwatch: watch ended: {e}", file=sys.stderr)
        finally:
            c.close()


if __name__ == "__main__":
    sys.exit(main())
