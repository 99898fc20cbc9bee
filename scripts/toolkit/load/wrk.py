"""wrk, a native load generator nobody here wrote, as an outside check of the bench's own (Debian's `wrk` package).

One thread, one keep-alive connection per user, each sending its next ticket as soon as the last
answered (a closed loop), the users' first requests spread evenly over `ramp_s` as the bench's own
generator spreads them. A Lua script (wrk's documented `request`, `delay` and `done` hooks) varies
the tickets and prints wrk's figures as one JSON line.
"""

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from scripts.toolkit.cli import CommandError
from scripts.toolkit.running.commands import run_to_completion

MARK = "WRK_FIGURES "
SCRIPT = """
local bodies = {%(bodies)s}
local users, ramp_ms, started, sent = %(users)d, %(ramp_ms)d, 0, 0
local headers = {["Content-Type"] = "application/json"}

function request()
  sent = sent + 1
  return wrk.format("POST", "/v1/tickets", headers, bodies[sent %% #bodies + 1])
end

-- wrk asks before each request of each connection; the first one of each user waits for its turn.
function delay()
  if started < users then
    started = started + 1
    return math.floor(ramp_ms * (started - 1) / users)
  end
  return 0
end
"""
# wrk's documented `done` hook: its figures as one JSON line.
DONE = f"""
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{MARK}{{"requests": %d, "duration_us": %d, "mean_us": %f, "stdev_us": %f, ' ..
    '"p50_us": %d, "p95_us": %d, "connect_errors": %d, "read_errors": %d, "write_errors": %d, "non_2xx": %d, ' ..
    '"timeouts": %d}}\\n', summary.requests, summary.duration, latency.mean, latency.stdev, latency:percentile(50),
    latency:percentile(95), e.connect, e.read, e.write, e.status, e.timeout))
end
"""


def available() -> bool:
    """Whether wrk is installed."""
    return shutil.which("wrk") is not None


def lua_string(text: bytes) -> str:
    """A Lua string literal of these bytes: printable ASCII as it is, everything else as a decimal escape."""
    return '"' + "".join(chr(b) if 32 <= b < 127 and b not in b'"\\' else f"\\{b:03d}" for b in text) + '"'


def run_wrk(url: str, users: int, duration_s: float, ramp_s: float, bodies: list[bytes]) -> dict:
    """Run wrk for `ramp_s` + `duration_s` against POST `url`/v1/tickets; its figures (times in ms)."""
    script = SCRIPT % {"bodies": ", ".join(map(lua_string, bodies)), "users": users, "ramp_ms": ramp_s * 1000}
    return wrk_figures(url, users, ramp_s + duration_s, script + DONE)


def get(url: str, connections: int, duration_s: float, keep_alive: bool = True) -> dict:
    """Run wrk's GET of `url` from `connections` connections for `duration_s`, kept alive or a new one for each
    request (`Connection: close`); its figures (times in ms), with requests a second (rps) and its wall time."""
    headers = () if keep_alive else ("-H", "Connection: close")
    figures = wrk_figures(url, connections, duration_s, DONE, headers)
    return {**figures, "rps": figures["requests"] / figures["seconds"], "wall_s": figures["seconds"]}


def wrk_figures(url: str, connections: int, duration_s: float, script: str, options: tuple[str, ...] = ()) -> dict:
    """wrk, one thread, for `duration_s` (whole seconds) with a Lua script that prints DONE's line; its figures."""
    with tempfile.TemporaryDirectory(prefix="lab-wrk-") as folder:
        path = Path(folder) / "script.lua"
        path.write_text(script)
        seconds = max(1, round(duration_s))
        argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "60s", "-s", str(path), *options, url]
        try:
            result = run_to_completion(argv, timeout_s=seconds + 90)
        except subprocess.TimeoutExpired:
            raise CommandError(f"wrk did not end within {seconds + 90} s") from None
    line = next((line for line in result.stdout.splitlines() if line.startswith(MARK)), None)
    if result.returncode != 0 or line is None:
        raise CommandError(f"wrk failed (exit code {result.returncode}): {result.stderr.strip()[-300:]}")
    figures = json.loads(line.removeprefix(MARK))
    errors = sum(figures[name] for name in ("connect_errors", "read_errors", "write_errors", "timeouts"))
    return {
        "requests": figures["requests"],
        "failed": figures["non_2xx"] + errors,
        "seconds": figures["duration_us"] / 1e6,
        **{f"{name}_ms": figures[f"{name}_us"] / 1000 for name in ("mean", "stdev", "p50", "p95")},
    }
