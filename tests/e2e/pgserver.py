"""A real PostgreSQL server for the end-to-end tests, from Debian's binaries
(/usr/lib/postgresql/VERSION/bin: initdb, postgres, psql): a fresh cluster
on a temporary directory listening on a loopback port, trust authentication
for the `postgres` user, fsync off (the tests kill hubs, not the server).
Run as root, the server runs as the `postgres` user (it refuses root).

One server per test session (AGENTHUB_STORE=postgres); every hub gets its
own database from createdb(), and replicas of one hub share a database."""

import atexit
import glob
import os
import pathlib
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def bin_dir():
    """The newest /usr/lib/postgresql/*/bin holding initdb, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return pathlib.Path(found[-1]).parent if found else None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self):
        self.bin = bin_dir()
        if self.bin is None:
            raise RuntimeError("PostgreSQL server binaries not installed "
                               "(/usr/lib/postgresql/*/bin/initdb; Debian package postgresql)")
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="ah-e2e-pg-"))
        self.data = self.dir / "data"
        self.port = None
        self.proc = None
        self.dbs = 0
        self._demote = None
        if os.getuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)

            def demote(uid=pw.pw_uid, gid=pw.pw_gid):
                os.setgid(gid)
                os.setuid(uid)
            self._demote = demote

    def start(self):
        subprocess.run([str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust",
                        "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       preexec_fn=self._demote)
        self.port = _free_port()
        log = open(self.dir / "postgres.log", "wb")
        self.proc = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.dir}",
             "-c", "fsync=off", "-c", "max_connections=1000", "-c", "shared_buffers=32MB"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=self._demote, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("postgres exited at start:\n" +
                                   (self.dir / "postgres.log").read_text(errors="replace"))
            r = subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1",
                                "-p", str(self.port)])
            if r.returncode == 0:
                return self
            if time.monotonic() > deadline:
                raise RuntimeError("postgres did not come up")
            time.sleep(0.1)

    def psql(self, sql, db="postgres"):
        return subprocess.run([str(self.bin / "psql"), "-X", "-q", "-A", "-t", "-v",
                               "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port),
                               "-U", "postgres", "-d", db, "-c", sql],
                              check=True, capture_output=True, text=True).stdout

    def url(self, db):
        return f"postgres://postgres@127.0.0.1:{self.port}/{db}?sslmode=disable"

    def createdb(self):
        """A fresh database; returns its URL."""
        self.dbs += 1
        name = f"hub{self.dbs}"
        self.psql(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


_server = [None]


def server():
    """The session's server, started on first use and stopped at exit."""
    if _server[0] is None:
        s = PgServer()
        try:
            s.start()
        except BaseException:
            s.stop()
            raise
        _server[0] = s
        atexit.register(s.stop)
    return _server[0]
