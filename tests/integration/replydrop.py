#!/usr/bin/env python3
"""replydrop.py - a TCP proxy for tests that loses answers: it forwards every connection to
TARGET, and while --drop-file exists it throws away what TARGET sends back (requests still
reach TARGET and are applied; their answers never arrive), as a network or a server2 that
dies after the write and before the reply would.

Usage: replydrop.py --port P --target HOST:PORT --drop-file PATH
Logs "listening on HOST:PORT" on stderr once ready (--port 0 picks a free port), then
"dropped N bytes" for each piece of an answer it threw away.
"""
import argparse
import asyncio
import os
import sys


def log(msg):
    print(msg, file=sys.stderr, flush=True)


async def pipe(reader, writer, drop_file):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if drop_file and os.path.exists(drop_file):
                log("dropped %d bytes" % len(data))
                continue
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main():
    p = argparse.ArgumentParser(description="a TCP proxy that can lose answers")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--target", required=True)
    p.add_argument("--drop-file", required=True)
    a = p.parse_args()
    host, port = a.target.rsplit(":", 1)

    async def on_client(creader, cwriter):
        try:
            sreader, swriter = await asyncio.open_connection(host, int(port))
        except OSError as e:
            log("cannot reach %s: %s" % (a.target, e))
            cwriter.close()
            return
        await asyncio.gather(pipe(creader, swriter, None), pipe(sreader, cwriter, a.drop_file))

    server = await asyncio.start_server(on_client, "127.0.0.1", a.port)
    log("listening on 127.0.0.1:%d" % server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
