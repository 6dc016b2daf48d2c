#!/usr/bin/env python3
"""Idle keep-alive connections for bench/fleetconn.sh: N TLS connections to
HOST:PORT, each sends one GET /readyz (so the connection is a served,
keep-alive one, like an agent between polls), then all stay open and silent
for HOLD seconds.  Prints "idleconns: open=K failed=F" once all are up, and
again at the end.

usage: idleconns.py HOST PORT CAFILE N HOLD
"""
import asyncio
import ssl
import sys


async def one(host, port, ctx, stats, hold_until, sem):
    try:
        async with sem:  # bounded handshakes in flight
            reader, writer = await asyncio.open_connection(host, port, ssl=ctx, server_hostname=host)
            writer.write(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            if b" 200 " not in head.split(b"\r\n", 1)[0]:
                raise RuntimeError(head[:60])
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    await reader.readexactly(int(line.split(b":")[1]))
            stats["open"] += 1
        await hold_until.wait()
        writer.close()
    except Exception as e:
        stats["failed"] += 1
        if stats["failed"] <= 3:
            print(f"idleconns: {type(e).__name__}: {e}", file=sys.stderr)


async def main():
    host, port, cafile, n, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    ctx = ssl.create_default_context(cafile=cafile)
    stats = {"open": 0, "failed": 0}
    hold_until = asyncio.Event()
    sem = asyncio.Semaphore(32)
    tasks = [asyncio.create_task(one(host, port, ctx, stats, hold_until, sem)) for _ in range(n)]
    while stats["open"] + stats["failed"] < n:
        await asyncio.sleep(0.2)
    print(f"idleconns: open={stats['open']} failed={stats['failed']}", flush=True)
    await asyncio.sleep(hold)
    hold_until.set()
    await asyncio.gather(*tasks)
    print(f"idleconns: done open={stats['open']} failed={stats['failed']}", flush=True)


asyncio.run(main())
