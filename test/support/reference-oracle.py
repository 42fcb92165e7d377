#!/usr/bin/env python3
"""Long-running differential-testing oracle around the reference (PyPI loopx).

Protocol: JSON lines. One request object per stdin line, exactly one response
object per line on stdout, in request order, flushed after each. The process
never exits because of a bad request: every failure becomes an error response.
If the request carries an "id", the response echoes it. See README.md beside
this file for the list of operations.

Run it with the interpreter of the reference venv
(scripts/setup-reference.sh prints its path).
"""

from __future__ import annotations

import argparse
import atexit
import base64
import io
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from contextlib import redirect_stdout
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

# --- protocol channel -------------------------------------------------------
# Keep a private handle on the real stdout for responses and send anything the
# reference (or Python) might print to stderr, so stray output can never
# desynchronize the protocol.
_PROTOCOL_FD = os.dup(1)
os.dup2(2, 1)
_protocol = os.fdopen(_PROTOCOL_FD, "wb")
sys.stdout = sys.stderr

from loopx import cli_runtime  # noqa: E402
from loopx.capabilities.reward_memory import cli as rm_cli  # noqa: E402
from loopx.capabilities.reward_memory.memory_utility import (  # noqa: E402
    _observation_id,
    build_reward_memory_utility_observation,
    reward_memory_application_receipt_id,
    validate_reward_memory_utility_observation,
)
from loopx.capabilities.reward_memory.utility_reducer import (  # noqa: E402
    validate_reward_memory_utility_projection,
)

try:
    from importlib.metadata import version as _dist_version

    LOOPX_VERSION = _dist_version("loopx")
except Exception:  # pragma: no cover - diagnostics only
    LOOPX_VERSION = "unknown"


def _canonical(value: Any, *, allow_nan: bool = True) -> str:
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=allow_nan,
    )


def _exc_type(exc: BaseException) -> str:
    return type(exc).__name__


def _node_utf8(text: str) -> bytes:
    """Encode like Node's Buffer.from(text, "utf8"): lone surrogates -> U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed.encode("utf-8")


# --- the real CLI branch, in-process -----------------------------------------
_TMPDIR = tempfile.mkdtemp(prefix="mufold-oracle-")
atexit.register(shutil.rmtree, _TMPDIR, True)
_INPUT_PATH = Path(_TMPDIR) / "input.json"
_REGISTRY_PATH = Path(_TMPDIR) / "registry.json"  # never read by utility-project


def _run_cli(data: bytes) -> dict[str, Any]:
    _INPUT_PATH.write_bytes(data)
    captured: list[dict[str, Any]] = []
    cli_out = io.StringIO()

    def print_payload(
        payload: dict[str, Any], fmt: str, renderer: Callable[[dict[str, Any]], str]
    ) -> None:
        captured.append(payload)
        # Also reproduce the exact text the real CLI prints (insertion order).
        with redirect_stdout(cli_out):
            cli_runtime.print_payload(payload, fmt, renderer)

    args = argparse.Namespace(
        command="reward-memory",
        reward_memory_command="utility-project",
        input=str(_INPUT_PATH),
        subcommand_format="json",
        format="json",
    )
    try:
        code = rm_cli.handle_reward_memory_command(
            args,
            registry_path=_REGISTRY_PATH,
            output_format=cli_runtime.output_format,
            print_payload=print_payload,
        )
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the real CLI would die with a traceback
        return {"exit": 1, "crash": f"{_exc_type(exc)}: {exc}"}
    if not captured:
        return {"exit": code if isinstance(code, int) else 1, "crash": "no payload printed"}
    return {
        "exit": code,
        "stdout": _canonical(captured[-1]),
        "cli_stdout": cli_out.getvalue(),
    }


def _project_bytes(req: dict[str, Any]) -> bytes:
    if "input_b64" in req:
        return base64.b64decode(req["input_b64"], validate=True)
    text = req["input"]
    if not isinstance(text, str):
        raise TypeError("input must be a string of JSON text")
    return _node_utf8(text)


# --- operations --------------------------------------------------------------
def op_project(req: dict[str, Any]) -> dict[str, Any]:
    result = _run_cli(_project_bytes(req))
    if not req.get("cli_stdout"):
        result.pop("cli_stdout", None)
    return result


def op_time_project(req: dict[str, Any]) -> dict[str, Any]:
    data = _project_bytes(req)
    repeat = int(req.get("repeat", 1))
    if repeat < 1:
        raise ValueError("repeat must be >= 1")
    start = time.perf_counter()
    last: dict[str, Any] = {}
    for _ in range(repeat):
        last = _run_cli(data)
    elapsed = time.perf_counter() - start
    return {"seconds_per_run": elapsed / repeat, "repeat": repeat, "exit": last.get("exit")}


def op_validate(req: dict[str, Any]) -> dict[str, Any]:
    try:
        packet = json.loads(req["packet"])
        validate_reward_memory_utility_projection(packet)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {"ok": False, "error": str(exc), "type": _exc_type(exc)}
    return {"ok": True}


def op_observation(req: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(req["observation"])
        normalized = validate_reward_memory_utility_observation(value)
        out = _canonical(normalized, allow_nan=False)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {
            "ok": False,
            "error": str(exc),
            "reason_code": getattr(exc, "reason_code", None),
            "type": _exc_type(exc),
        }
    return {"ok": True, "normalized": out}


def op_build(req: dict[str, Any]) -> dict[str, Any]:
    try:
        args = json.loads(req["args"])
        if not isinstance(args, list) or len(args) != 5:
            raise ValueError(
                "args must be [receipt, verified_outcome, attribution_context, "
                "evaluator_proposal, created_at]"
            )
        receipt, outcome, context, proposal, created_at = args
        observation = build_reward_memory_utility_observation(
            receipt, outcome, context, proposal, created_at=created_at
        )
        out = _canonical(observation, allow_nan=False)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {"ok": False, "error": str(exc), "type": _exc_type(exc)}
    return {"ok": True, "observation": out}


def op_receipt_id(req: dict[str, Any]) -> dict[str, Any]:
    try:
        rid = reward_memory_application_receipt_id(json.loads(req["receipt"]))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {"ok": False, "error": str(exc), "type": _exc_type(exc)}
    return {"ok": True, "id": rid}


def op_observation_id(req: dict[str, Any]) -> dict[str, Any]:
    """_observation_id over the given dict as-is (caller passes normalized data)."""
    try:
        oid = _observation_id(json.loads(req["observation"]))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {"ok": False, "error": str(exc), "type": _exc_type(exc)}
    return {"ok": True, "id": oid}


def op_canonical(req: dict[str, Any]) -> dict[str, Any]:
    try:
        out = _canonical(json.loads(req["text"]), allow_nan=False)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {"ok": False, "error": str(exc), "type": _exc_type(exc)}
    return {"ok": True, "out": out}


def _offset_us(d: datetime) -> int | None:
    off = d.utcoffset()
    if off is None:
        return None
    return (off.days * 86400 + off.seconds) * 1_000_000 + off.microseconds


def op_fromisoformat(req: dict[str, Any]) -> dict[str, Any]:
    text = req["text"]
    try:
        if not isinstance(text, str):
            raise TypeError("text must be a string")
        d = datetime.fromisoformat(text)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {"ok": False, "error": str(exc), "type": _exc_type(exc)}
    return {
        "ok": True,
        "fields": [d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond],
        "offset_us": _offset_us(d),
    }


def op_order(req: dict[str, Any]) -> dict[str, Any]:
    try:
        stamps = req["timestamps"]
        if not isinstance(stamps, list) or not all(isinstance(s, str) for s in stamps):
            raise TypeError("timestamps must be a list of strings")
        ordered = sorted(
            stamps, key=lambda s: (datetime.fromisoformat(s.replace("Z", "+00:00")), s)
        )
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {"ok": False, "error": str(exc), "type": _exc_type(exc)}
    return {"ok": True, "sorted": ordered}


def op_pystr(req: dict[str, Any]) -> dict[str, Any]:
    try:
        out = str(json.loads(req["value"]) or "").strip()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {"ok": False, "error": str(exc), "type": _exc_type(exc)}
    return {"ok": True, "out": out}


def op_round6(req: dict[str, Any]) -> dict[str, Any]:
    try:
        x = req["x"]
        if isinstance(x, str):  # a JSON number lexeme, to keep it exact
            x = json.loads(x)
        if isinstance(x, bool):
            raise TypeError("x must be a number")
        out = repr(round(float(x), 6))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return {"ok": False, "error": str(exc), "type": _exc_type(exc)}
    return {"ok": True, "out": out}


def op_ping(req: dict[str, Any]) -> dict[str, Any]:
    return {
        "ok": True,
        "loopx": LOOPX_VERSION,
        "python": sys.version.split()[0],
    }


OPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "project": op_project,
    "time_project": op_time_project,
    "validate": op_validate,
    "observation": op_observation,
    "build": op_build,
    "receipt_id": op_receipt_id,
    "observation_id": op_observation_id,
    "canonical": op_canonical,
    "fromisoformat": op_fromisoformat,
    "order": op_order,
    "pystr": op_pystr,
    "round6": op_round6,
    "ping": op_ping,
}


def _handle(line: bytes) -> dict[str, Any]:
    req_id: Any = None
    try:
        req = json.loads(line.decode("utf-8"))
        if not isinstance(req, dict):
            raise ValueError("request must be a JSON object")
        req_id = req.get("id")
        op = OPS.get(req.get("op"))  # type: ignore[arg-type]
        if op is None:
            raise ValueError(f"unknown op: {req.get('op')!r}")
        resp = op(req)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        resp = {
            "ok": False,
            "error": f"bad request: {_exc_type(exc)}: {exc}",
            "type": _exc_type(exc),
            "protocol_error": True,
        }
        if os.environ.get("MUFOLD_ORACLE_DEBUG"):
            traceback.print_exc(file=sys.stderr)
    if req_id is not None:
        resp["id"] = req_id
    return resp


def _send(resp: dict[str, Any]) -> None:
    try:
        data = json.dumps(resp, ensure_ascii=True, separators=(",", ":"))
    except BaseException as exc:  # e.g. a value that cannot be encoded
        data = json.dumps(
            {"ok": False, "error": f"unencodable response: {exc}", "protocol_error": True,
             **({"id": resp["id"]} if "id" in resp else {})},
            ensure_ascii=True,
        )
    _protocol.write(data.encode("ascii") + b"\n")
    _protocol.flush()


def main() -> int:
    stdin = sys.stdin.buffer
    while True:
        try:
            line = stdin.readline()
        except KeyboardInterrupt:
            return 0
        if not line:
            return 0
        try:
            _send(_handle(line.rstrip(b"\r\n")))
        except BrokenPipeError:
            return 0
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
