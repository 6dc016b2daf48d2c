#!/usr/bin/env python3
"""Slow ISO downloads for bench/fleetconn.sh: M concurrent HTTPS GETs of one
URL, each reading about RATE bytes per second (a small receive buffer keeps
the server from pushing far ahead), for DURATION seconds, then closing.
Prints one line: started, answered 200, answered other, failed, bytes.

usage: slowdl.py URL CAFILE M RATE DURATION
"""
import asyncio
import socket
import ssl
import sys
import urllib.parse


async def one(u, ctx, rate, until, stats):
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (u.hostname, u.port))
        reader, writer = await asyncio.open_connection(sock=sock, ssl=ctx,
                                                       server_hostname=u.hostname)
        writer.write(f"GET {u.path}?{u.query} HTTP/1.1\r\nHost: {u.hostname}\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        stats["ok" if status == 200 else "other"] += 1
        loop = asyncio.get_running_loop()
        chunk = max(256, rate // 4)
        while loop.time() < until and status == 200:
            data = await reader.read(chunk)
            if not data:
                break
            stats["bytes"] += len(data)
            await asyncio.sleep(0.25)
        writer.close()
    except Exception as e:  # counted, and the first few reported
        stats["failed"] += 1
        if stats["failed"] <= 3:
            print(f"slowdl: {type(e).__name__}: {e}", file=sys.stderr)


async def main():
    url, cafile, m, rate, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    u = urllib.parse.urlsplit(url)
    ctx = ssl.create_default_context(cafile=cafile)
    stats = {"ok": 0, "other": 0, "failed": 0, "bytes": 0}
    until = asyncio.get_running_loop().time() + duration
    tasks = []
    for _ in range(m):
        tasks.append(asyncio.create_task(one(u, ctx, rate, until, stats)))
        await asyncio.sleep(0.005)
    await asyncio.gather(*tasks)
    print(f"slowdl: started={m} ok={stats['ok']} other={stats['other']} failed={stats['failed']} "
          f"bytes={stats['bytes']}", flush=True)


asyncio.run(main())
