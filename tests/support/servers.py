"""Process management for the servers the test-suite talks to.

Two kinds of server are managed here:

* :class:`SplitstreamServer` -- our own server, run as a real subprocess
  (``python -m splitstream serve ...``) so tests exercise the same code path as a user
  would, including crash/restart on the same data directory.
* :class:`Postgres15` -- a throwaway, real PostgreSQL 15 used as the oracle for
  differential tests. PostgreSQL refuses to run as root, so when we are root the
  cluster is created and started as the ``postgres`` OS user, in a directory
  under ``/tmp`` that user can traverse.

Nothing here depends on psycopg so that it can be imported by any tool
(benchmarks, scripts) without the test extras.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping, Sequence
from urllib.parse import quote

REPO_ROOT = Path(__file__).resolve().parents[2]
PG15_BIN = Path("/usr/lib/postgresql/15/bin")
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """Return a TCP port on loopback that is free right now.

    The kernel picks it (bind to port 0), which avoids collisions between
    parallel test sessions far better than a fixed port would. There is an
    unavoidable race until the server binds it; callers retry on failure.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def port_accepts(host: str, port: int, timeout: float = 0.2) -> bool:
    """True if a TCP connect to (host, port) succeeds: our readiness signal."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _conninfo_quote(value: str) -> str:
    """Quote a value for a libpq keyword/value connection string."""
    if value and not any(c in value for c in " '\\"):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _tail(path: Path, max_bytes: int = 8000) -> str:
    """Last bytes of a log file, for failure messages that explain themselves."""
    try:
        data = path.read_bytes()
    except OSError:
        return "<no log>"
    return data[-max_bytes:].decode("utf-8", "replace")


class SplitstreamServer:
    """One splitstream server subprocess on a fixed port and data directory.

    The port is chosen once and kept across :meth:`restart`, so connection
    strings handed out before a crash stay valid after it -- durability tests
    rely on that. The log file is appended to across restarts so a failure
    message shows the whole history.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        password: str | None = None,
        tls_cert: Path | str | None = None,
        tls_key: Path | str | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        self._data_dir = Path(data_dir)
        self.password = password
        self.tls_cert = Path(tls_cert) if tls_cert is not None else None
        self.tls_key = Path(tls_key) if tls_key is not None else None
        self.extra_args = tuple(extra_args)
        self.env = dict(env or {})
        self._port = port if port is not None else free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self.log_path = self._data_dir.parent / f"{self._data_dir.name}.server.log"

    # -- properties -----------------------------------------------------------
    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def port(self) -> int:
        return self._port

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def dsn(self) -> str:
        """libpq keyword/value string, usable by psycopg and psql."""
        parts = [f"host={self.host}", f"port={self.port}", "user=postgres", "dbname=postgres"]
        if self.password is not None:
            parts.append(f"password={_conninfo_quote(self.password)}")
        return " ".join(parts)

    @property
    def url(self) -> str:
        """postgresql:// URL, for SQLAlchemy, asyncpg and JDBC-style clients."""
        auth = "postgres"
        if self.password is not None:
            auth += ":" + quote(self.password, safe="")
        return f"postgresql://{auth}@{self.host}:{self.port}/postgres"

    def command(self) -> list[str]:
        """The argv used to start the server (exposed for debugging output)."""
        argv = [
            sys.executable, "-m", "splitstream", "serve",
            "--host", self.host, "--port", str(self.port),
            "--data-dir", str(self._data_dir),
        ]
        if self.password is not None:
            argv += ["--password", self.password]
        if self.tls_cert is not None:
            argv += ["--tls-cert", str(self.tls_cert)]
        if self.tls_key is not None:
            argv += ["--tls-key", str(self.tls_key)]
        argv += list(self.extra_args)
        return argv

    def log_text(self) -> str:
        """Everything the server wrote to stdout/stderr so far."""
        try:
            return self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""

    # -- lifecycle ------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> "SplitstreamServer":
        """Spawn the server and block until its port accepts connections.

        Raises RuntimeError with the log tail if the process exits first or
        the timeout elapses, so a broken server shows why in the test output.
        """
        if self.running:
            raise RuntimeError(f"splitstream server already running (pid {self.pid})")
        self._data_dir.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.update(self.env)
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== start {time.strftime('%H:%M:%S')}: {shlex.join(self.command())}\n".encode())
            log.flush()
            # A new session lets kill() take down any helper processes the server
            # forks, which is what a real crash (or OOM kill) would do.
            self._proc = subprocess.Popen(
                self.command(), cwd=REPO_ROOT, env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                self._proc = None
                raise RuntimeError(
                    f"splitstream server exited with code {code} during startup\n"
                    f"--- log tail ({self.log_path}) ---\n{_tail(self.log_path)}"
                )
            if port_accepts(self.host, self.port):
                return self
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(
                    f"splitstream server did not accept connections on port {self.port} "
                    f"within {timeout}s\n--- log tail ({self.log_path}) ---\n{_tail(self.log_path)}"
                )
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> int | None:
        """Graceful shutdown: SIGTERM, wait, SIGKILL if it ignores us.

        Returns the exit code (None if it was not running).
        """
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._kill_group(proc)
                proc.wait()
        self._kill_group(proc)  # stray helpers left behind by the leader
        self._proc = None
        return proc.returncode

    def kill(self) -> None:
        """Simulate a crash: SIGKILL the server (and its helpers) and reap it."""
        proc = self._proc
        if proc is None:
            return
        self._kill_group(proc)
        proc.wait()
        self._proc = None

    def restart(self, *, crash: bool = False, timeout: float = 30.0) -> "SplitstreamServer":
        """Stop (or, with crash=True, SIGKILL) and start again on the same port and data dir."""
        if crash:
            self.kill()
        else:
            self.stop()
        return self.start(timeout=timeout)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        # The process group id equals the leader's pid (start_new_session=True),
        # so this only ever touches processes this object started.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> "SplitstreamServer":
        return self.start() if not self.running else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"SplitstreamServer(port={self.port}, data_dir={str(self._data_dir)!r}, running={self.running})"


# ---------------------------------------------------------------------------
# PostgreSQL 15, the differential-testing oracle
# ---------------------------------------------------------------------------

def _is_root() -> bool:
    return os.geteuid() == 0


def _postgres_user() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        return None


def postgres15_available() -> bool:
    """True if we can run a private PostgreSQL 15 on this machine.

    Needs the binaries, and -- when we are root -- a ``postgres`` OS user to
    run them as, plus runuser or su to switch to it.
    """
    if not all((PG15_BIN / b).is_file() for b in ("initdb", "pg_ctl", "postgres")):
        return False
    if _is_root():
        return _postgres_user() is not None and bool(shutil.which("runuser") or shutil.which("su"))
    return True


class Postgres15:
    """A private PostgreSQL 15 cluster in a temp dir, on a free loopback port.

    Settings are chosen for deterministic text output (UTC, ISO dates, C
    locale, UTF8) so results compare byte-for-byte with splitstream, and for
    speed (no fsync): the data is thrown away afterwards.
    """

    SETTINGS: Mapping[str, str] = {
        "listen_addresses": "'127.0.0.1'",
        "timezone": "'UTC'",
        "log_timezone": "'UTC'",
        "datestyle": "'ISO, MDY'",
        "intervalstyle": "'postgres'",
        "extra_float_digits": "1",
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "max_connections": "200",
        "shared_buffers": "'128MB'",
        "lc_messages": "'C'",
    }

    def __init__(self, *, settings: Mapping[str, str] | None = None) -> None:
        self._settings = {**self.SETTINGS, **(settings or {})}
        self._dir: Path | None = None
        self._port: int | None = None
        self._started = False

    # -- properties -----------------------------------------------------------
    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("Postgres15 not started")
        return self._port

    @property
    def base_dir(self) -> Path:
        if self._dir is None:
            raise RuntimeError("Postgres15 not started")
        return self._dir

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "postgres.log"

    @property
    def dsn(self) -> str:
        return f"host={self.host} port={self.port} user=postgres dbname=postgres"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/postgres"

    @property
    def running(self) -> bool:
        return self._started

    def log_text(self) -> str:
        try:
            return self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""

    # -- running commands as the postgres user --------------------------------
    def _run(self, argv: Sequence[str], *, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL binary, as the postgres user if we are root."""
        argv = list(argv)
        if _is_root():
            if shutil.which("runuser"):
                argv = ["runuser", "-u", "postgres", "--", *argv]
            else:
                argv = ["su", "postgres", "-s", "/bin/bash", "-c", shlex.join(argv)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update({"LC_ALL": "C", "LANG": "C"})
        return subprocess.run(
            argv, cwd=self._dir, env=env, capture_output=True, text=True, timeout=timeout
        )

    def _check(self, what: str, res: subprocess.CompletedProcess[str]) -> None:
        if res.returncode != 0:
            raise RuntimeError(
                f"{what} failed ({res.returncode})\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}\n"
                f"--- server log tail ---\n{_tail(self.log_path) if self._dir else ''}"
            )

    # -- lifecycle ------------------------------------------------------------
    def start(self, *, attempts: int = 3) -> "Postgres15":
        """initdb + pg_ctl start; retries with a new port if the port got taken."""
        if not postgres15_available():
            raise RuntimeError("PostgreSQL 15 binaries (or the postgres user) are not available")
        # Under /tmp and 0755 so that the postgres user can traverse to it even
        # when pytest's own tmp dirs live under root's private home.
        self._dir = Path(tempfile.mkdtemp(prefix="splitstream-pg15-", dir="/tmp"))
        os.chmod(self._dir, 0o755)
        if _is_root():
            pg = _postgres_user()
            assert pg is not None
            os.chown(self._dir, pg.pw_uid, pg.pw_gid)
        try:
            res = self._run([
                str(PG15_BIN / "initdb"), "-D", str(self.data_dir), "-A", "trust",
                "-U", "postgres", "--encoding=UTF8", "--locale=C", "--no-sync",
            ])
            self._check("initdb", res)
            self._write_conf()
            last: Exception | None = None
            for _ in range(attempts):
                self._port = free_port()
                res = self._run([
                    str(PG15_BIN / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log_path),
                    "-o", f"-p {self._port} -k {self._dir}", "-w", "-t", "60", "start",
                ], timeout=90)
                if res.returncode == 0:
                    self._started = True
                    return self
                last = RuntimeError(f"pg_ctl start failed: {res.stdout}{res.stderr}\n{_tail(self.log_path)}")
            raise last or RuntimeError("pg_ctl start failed")
        except BaseException:
            self._cleanup()
            raise

    def _write_conf(self) -> None:
        conf = self.data_dir / "postgresql.conf"
        lines = ["", "# splitstream differential-test settings"]
        lines += [f"{k} = {v}" for k, v in self._settings.items()]
        # Appending as root keeps the file's owner (postgres) unchanged.
        with open(conf, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")

    def stop(self) -> None:
        """Fast shutdown and removal of the cluster directory. Idempotent."""
        if self._dir is None:
            return
        if self._started:
            res = self._run([str(PG15_BIN / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"])
            if res.returncode != 0:
                self._run([str(PG15_BIN / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "-w", "stop"])
            self._started = False
        self._cleanup()

    def _cleanup(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> "Postgres15":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"Postgres15(port={self._port}, dir={str(self._dir)!r}, running={self._started})"
