"""Drive GTK programs under Xvfb from tests and benchmarks: the WebKitGTK host
(bridge/hosts/gtk/host.py) and the native renderer (bench/native/gtk_renderer.py).

`Xvfb` starts a virtual X server on a free display and returns once it accepts
clients (`-displayfd`: the server writes its display number when it is ready, so
nothing sleeps). `GtkProcess` is the one driver of such a program: run with Debian's
system Python (PyGObject is there, not in the virtualenv), spoken to in JSON lines on
its stdin, its JSON-line events read on a thread, its stderr kept, closed politely and
then killed. `WebKitHost` is the host on it, standing in for a native app: `send` is
the app's `evaluateJavaScript("window.firsttoken.post(…)")`, `wait_for` watches what
the page posted to `window.webkit.messageHandlers.firsttoken`.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Self

ROOT = Path(__file__).resolve().parents[1]
HOST = ROOT / "bridge" / "hosts" / "gtk" / "host.py"
SYSTEM_PYTHON = os.environ.get("FIRSTTOKEN_GTK_PYTHON", "/usr/bin/python3")


def webkit_available() -> str | None:
    """None when the host can run here, else why not (for a skip message)."""
    probe = "import gi; gi.require_version('WebKit', '6.0'); gi.require_version('Gtk', '4.0'); from gi.repository import WebKit"
    try:
        done = subprocess.run([SYSTEM_PYTHON, "-c", probe], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{SYSTEM_PYTHON}: {exc}"
    if done.returncode:
        return f"WebKitGTK 6.0 is not importable ({done.stderr.strip().splitlines()[-1:]}); run `make webkit`"
    if not any((Path(d) / "Xvfb").exists() for d in os.environ.get("PATH", "/usr/bin").split(os.pathsep)):
        return "Xvfb is not installed; run `make webkit`"
    return None


class Xvfb:
    """A virtual X server on a display it picks itself; `display` is e.g. ':3'."""

    def __init__(self, size: str = "1280x800x24") -> None:
        read, write = os.pipe()
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write), "-screen", "0", size, "-nolisten", "tcp"],
            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(write)
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()  # written once the server accepts clients
        if not number:
            self.close()
            raise RuntimeError("Xvfb exited before it was ready")
        self.display = f":{number}"

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "Xvfb":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class HostError(RuntimeError):
    pass


def gtk_env(display: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a GTK program on `display` (an Xvfb's)."""
    return {
        **os.environ,
        "DISPLAY": display,
        "GDK_BACKEND": "x11",
        # No accessibility bus here; GTK and WebKit would only warn about it.
        "GTK_A11Y": "none", "NO_AT_BRIDGE": "1",
        **(extra or {}),
    }


class GtkProcess:
    """`script` (with `args`) run by Debian's Python on `display`, driven over JSON lines.

    Each line the program prints is parsed and handed to `on_event` on a reader thread
    (a line that is not JSON as `{"event": "garbage", "line": …}`), and its end as
    `{"event": "exit"}`; what it writes to stderr is kept in `stderr`."""

    def __init__(self, script: Path, args: list[str], *, display: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [SYSTEM_PYTHON, str(script), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
            env=gtk_env(display, env),
        )
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def on_event(self, event: dict[str, Any]) -> None:
        """One event the program printed (on the reader thread)."""
        raise NotImplementedError

    # A reader may outlive `close`'s join: WebKit's helper processes inherit the pipes and
    # can hold them open after the host itself has exited, so `close` closes them under
    # the reader. Reading a pipe closed that way is the end of its lines, not an error.
    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                try:
                    event = json.loads(line)
                except ValueError:
                    event = {"event": "garbage", "line": line}
                self.on_event(event)
        except (ValueError, OSError):
            if not self.proc.stdout.closed:
                raise
        self.on_event({"event": "exit"})

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        try:
            for line in self.proc.stderr:
                self.stderr.append(line.rstrip("\n"))
        except (ValueError, OSError):
            if not self.proc.stderr.closed:
                raise

    def command(self, cmd: dict[str, Any]) -> None:
        """Write one command line to the program."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        """Ask the program to close (`{"cmd": "close"}`), kill it if it does not."""
        if self.proc.poll() is None:
            try:
                self.command({"cmd": "close"})
                self.proc.wait(timeout=15)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WebKitHost(GtkProcess):
    """One WebKitGTK web view on `url`, driven over the host's JSON lines.

    `messages` holds every protocol message the page posted, parsed, in order;
    `console` every error or warning the page printed (`level`, `text`).
    `profile`: a directory kept between hosts (a warm boot); None: ephemeral.
    `bundle`: a `make bundle` folder the host serves at firsttoken://app/ (no page server).
    `storage`: False turns web storage and IndexedDB off in the view, as an app may.
    """

    def __init__(self, url: str, *, display: str, profile: Path | None = None, bundle: Path | None = None,
                 env: dict[str, str] | None = None, started_timeout: float = 60, storage: bool = True) -> None:
        args = ["--url", url]
        if not storage:
            args.append("--no-storage")
        if profile is not None:
            args += ["--profile", str(profile)]
        if bundle is not None:
            args += ["--bundle", str(bundle)]
        self.events: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.console: list[dict[str, Any]] = []
        self._ended: dict[str, Any] | None = None  # the host's exit or crash, once it came
        self._changed = threading.Condition()
        self._eval_id = 0
        super().__init__(HOST, args, display=display, env=env)
        started = self.wait_event(lambda e: e["event"] == "started", started_timeout)
        self.webkit_version: str = started["webkit"]

    # ---- reading -------------------------------------------------------------
    def on_event(self, event: dict[str, Any]) -> None:
        with self._changed:
            self.events.append(event)
            if event["event"] == "message":
                text = event.get("text")
                try:
                    msg = json.loads(text) if isinstance(text, str) else {"type": None, "value": event.get("value")}
                except ValueError:
                    msg = {"type": None, "text": text}
                msg["_received"] = time.perf_counter()
                self.messages.append(msg)
            elif event["event"] == "console":
                self.console.append(event)
            elif event["event"] in ("exit", "crashed"):
                self._ended = event
            self._changed.notify_all()

    def _wait(self, seen: list[dict[str, Any]], what: str, predicate: Callable[[dict[str, Any]], bool],
              timeout: float, start: int) -> dict[str, Any]:
        """The first item of `seen` (from index `start`) for which `predicate` holds,
        waiting up to `timeout` seconds for it; a host that ended first is an error."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for item in seen[start:]:
                    if predicate(item):
                        return item
                if self._ended is not None:
                    raise HostError(f"the host ended: {self._ended}\n" + "\n".join(self.stderr[-30:]))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {what} matched in {timeout} s; last: {seen[-5:]}")
                self._changed.wait(left)

    def wait_event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float, start: int = 0) -> dict[str, Any]:
        """The first host event (from index `start`) for which `predicate` holds."""
        return self._wait(self.events, "host event", predicate, timeout, start)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30, start: int = 0) -> dict[str, Any]:
        """The first protocol message from the page (from index `start` of `messages`)
        for which `predicate` holds; waits up to `timeout` seconds for it."""
        return self._wait(self.messages, "message", predicate, timeout, start)

    # ---- writing -------------------------------------------------------------
    def send(self, msg: dict[str, Any] | str) -> None:
        """Post a protocol message to the page (a dict is sent as its JSON text)."""
        self.command({"cmd": "post", "text": msg if isinstance(msg, str) else json.dumps(msg)})

    def eval(self, js: str, timeout: float = 30) -> Any:
        """Evaluate a JavaScript expression in the page (promises awaited); its JSON value."""
        self._eval_id += 1
        request = self._eval_id
        self.command({"cmd": "eval", "id": request, "js": js})
        event = self.wait_event(lambda e: e["event"] == "eval" and e["id"] == request, timeout)
        if "error" in event:
            raise HostError(f"{js[:80]}: {event['error']}")
        return event["value"]

    def ping_loop(self, n: int, timeout: float = 300, kind: str = "ping") -> list[float]:
        """`n` round trips timed inside the host, one after another; their durations in
        ms. `ping`: native → page → Python → page → native; `hello` (answered with the
        replayed `ready` by the page itself): native → page → native."""
        start = len(self.events)
        self.command({"cmd": "ping-loop", "n": n, "type": kind})
        return self.wait_event(lambda e: e["event"] == "ping-loop", timeout, start)["ms"]

    def load(self, url: str) -> int:
        """Navigate; returns the index in `events` to wait from."""
        start = len(self.events)
        self.command({"cmd": "load", "url": url})
        return start
