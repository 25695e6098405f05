"""A real gateway in development mode and the four example hospitals' node agents, started
once for the test session: the SDK is tested against the product, not a mock."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[3]
HOSPITALS = ["cleveland", "hungarian", "switzerland", "va"]


def _binary() -> Path:
    path = Path(os.environ.get("EHDS_GATEWAY_BIN", REPO / "target" / "debug" / "ehds-gateway"))
    if not path.is_file():
        pytest.fail(f"no gateway binary at {path} (build it, or set EHDS_GATEWAY_BIN)")
    return path


def _node_binary() -> Path:
    path = Path(os.environ.get("EHDS_NODE_BIN", REPO / "target" / "debug" / "ehds-node"))
    if not path.is_file():
        pytest.fail(f"no node binary at {path} (build it, or set EHDS_NODE_BIN)")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class LiveGateway:
    def __init__(self, work: Path):
        self.bin = _binary()
        self.node_bin = _node_binary()
        self.work = work
        self.data_dir = work / "data"
        self.data_dir.mkdir()
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.env = {
            **os.environ,
            "EHDS_DATABASE_URL": f"sqlite://{self.data_dir / 'gateway.db'}?mode=rwc",
            "EHDS_DATA_DIR": str(self.data_dir),
            "EHDS_LISTEN": f"127.0.0.1:{port}",
            # rounds advance on a short tick so a two-round study takes seconds
            "EHDS_FEDERATION__TICK_MILLIS": "100",
            "RUST_LOG": "info",
        }
        self.processes: list[subprocess.Popen] = []
        self.log = work / "gateway.log"
        self._spawn(["serve", "--dev"], self.log)
        until = time.monotonic() + 60
        while time.monotonic() < until:
            if self.processes[0].poll() is not None:
                raise RuntimeError(f"the gateway exited:\n{_tail(self.log)}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError(f"the gateway did not become ready:\n{_tail(self.log)}")

    def _spawn(self, args: list[str], log: Path, program: Path | None = None) -> None:
        with open(log, "ab") as out:
            self.processes.append(
                subprocess.Popen(
                    [str(program or self.bin), *args],
                    env=self.env,
                    cwd=REPO,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )

    def token(self, sub: str, role: str, org: str) -> str:
        out = subprocess.run(
            [str(self.bin), "token", "--sub", sub, "--role", role, "--org", org],
            env=self.env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()

    def start_nodes(self) -> None:
        for org in HOSPITALS:
            self._spawn(
                [
                    "run", "--gateway", self.url, "--org", org,
                    "--fhir", str(REPO / "examples" / "federation" / f"{org}.json"),
                    "--state-dir", str(self.work / "nodes" / org),
                    "--dev-key-dir", str(self.data_dir),
                    "--poll-wait", "5",
                ],
                self.work / f"node-{org}.log",
                self.node_bin,
            )

    def logs(self) -> str:
        parts = [f"--- gateway\n{_tail(self.log)}"]
        for org in HOSPITALS:
            parts.append(f"--- {org}\n{_tail(self.work / f'node-{org}.log', 15)}")
        return "\n".join(parts)

    def stop(self) -> None:
        for p in self.processes:
            p.terminate()
        for p in self.processes:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="session")
def gateway(tmp_path_factory):
    live = LiveGateway(tmp_path_factory.mktemp("ehds"))
    try:
        live.start_nodes()
        yield live
    finally:
        live.stop()
