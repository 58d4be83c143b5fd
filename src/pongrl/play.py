"""`pongrl play`: a page in the browser where a person plays Pong against an agent, or watches agents play.

The server (Starlette on uvicorn) runs the real emulator at the game's 60 frames per second, one game per
open page, and sends every frame to the page's canvas over a WebSocket as raw RGB bytes (210 x 160 x 3),
with the score, the players' names and the agents' action preferences (Q-values, or the policy's
probabilities) as small JSON messages. What is played is fixed on the command line:

- `pongrl play AGENT`: the person holds the left paddle (up/down arrows, space to serve) against AGENT on
  the right, its trained side, on the two-player emulator; the agent sees its own observation profile and
  acts every 4 frames, as it was trained; the server serves for it when the ball is out of play (agents
  trained against the built-in AI never had to). The person's keys reach the emulator at the next frame.
- `pongrl play AGENT --opponent builtin`: AGENT against the built-in AI (the single-player game);
- `pongrl play A --opponent B`: two agents, A on the right, B on the left (mirrored), both served for.

Nothing the page sends names a file or an agent: it can only press keys. Messages are small JSON texts
(`{"key": "up"|"down"|"fire", "pressed": bool, "t": ms}`); anything else is ignored, an oversized one
closes that page's connection, and at most MAX_GAMES pages play at once (others are told the server is
busy). Only this server's own page may open a game: a WebSocket whose Origin is not the page's, or any
request whose Host header does not name this server (DNS rebinding), is refused with 403. `/stats` gives each
game's frame rate, key latency and what its emulator holds (paddles, score).

A little over 400 lines on purpose: the page's games, its server and the checks that keep other sites out are
one feature, reviewed together.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
from collections import deque

import numpy as np

from pongrl.agent import PolicyAgent
from pongrl.arena import Player, load_player
from pongrl.runner import BUILTIN, LiveGame, PersonPlayer
from pongrl.errors import PongrlError
from pongrl.game import (
    ACTION_NAMES,
    LEFT,
    RAM_LEFT_PADDLE_Y,
    RAM_RIGHT_PADDLE_Y,
    RAM_SCORE_LEFT,
    RAM_SCORE_RIGHT,
    RIGHT,
)

FRAME_SECONDS = 1 / 60
MAX_GAMES = 4
MAX_MESSAGE_BYTES = 1024
GAME_OVER_PAUSE_SECONDS = 3.0
PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "play_page.html")
# Pong's minimal action set moves the paddle up with RIGHT (2) and down with LEFT (3), for both players.
KEY_ACTIONS = {
    (False, False, False): 0,
    (False, False, True): 1,
    (True, False, False): 2,
    (False, True, False): 3,
    (True, False, True): 4,
    (False, True, True): 5,
    (True, True, False): 0,
    (True, True, True): 1,
}
# RAM bytes the page's claims can be checked against (two-player game): paddle heights and scores.
RAM_PADDLE = {RIGHT: RAM_RIGHT_PADDLE_Y, LEFT: RAM_LEFT_PADDLE_Y}
RAM_SCORE = {RIGHT: RAM_SCORE_RIGHT, LEFT: RAM_SCORE_LEFT}


def preferences(agent, observation: np.ndarray) -> tuple[int, dict]:
    """The agent's greedy action and its preferences for the bar chart: Q-values, or the policy's
    probabilities."""
    if isinstance(agent, PolicyAgent):
        probabilities = agent.probabilities(observation[None])[0]
        return int(probabilities.argmax()), {"kind": "policy", "values": probabilities.round(4).tolist()}
    values = agent.preferences(observation[None])[0].astype(np.float64)
    return int(values.argmax()), {"kind": "Q-values", "values": values.round(4).tolist()}


class Keys:
    """The person's keys, as the page reports them; the action they make now."""

    def __init__(self):
        self.up = self.down = self.fire = False
        self.pending: list[float] = []  # receive times of presses not yet played, for the latency figures

    def press(self, key: str, pressed: bool) -> None:
        setattr(self, key, pressed)
        self.pending.append(time.perf_counter())

    def action(self) -> int:
        return KEY_ACTIONS[(self.up, self.down, self.fire)]


class Table:
    """One game on the server: `frame()` advances the emulator one raw frame and returns the messages
    for the page (besides the frame itself, `screen()`)."""

    left_name = right_name = ""
    person = False

    def frame(self, keys: Keys) -> list[dict]:
        raise NotImplementedError

    def screen(self) -> np.ndarray:
        raise NotImplementedError

    def facts(self) -> dict:
        """What the emulator holds now, for /stats."""
        return {}

    def close(self) -> None:
        pass


class ShownAgent:
    """An agent at a paddle of the page's game (a runner player): greedy, keeping the preferences it acted on
    for the page's bar chart."""

    def __init__(self, agent):
        self.agent, self.profile, self.shown = agent, agent.obs_profile, {}

    def act(self, observations: np.ndarray) -> np.ndarray:
        action, self.shown = preferences(self.agent, observations[0])
        return np.array([action])


class TwoPlayerTable(Table):
    """The two-player emulator: an agent on the right; on the left the person (keys) or a second agent."""

    def __init__(self, right: Player, left: Player | None, keys: Keys):
        self.person = left is None
        self.right_name, self.left_name = right.name, ("you" if self.person else left.name)
        self.right_player = ShownAgent(right.agent)
        self.left_player = PersonPlayer(keys) if self.person else ShownAgent(left.agent)
        self.game = LiveGame(self.right_player, self.left_player)
        self.step_done, self.over_at = True, None

    def frame(self, keys: Keys) -> list[dict]:
        messages = []
        if self.game.done:
            if self.over_at is None:
                self.over_at = time.perf_counter()
                messages.append({"type": "over", "left": self.game.points[LEFT], "right": self.game.points[RIGHT]})
            if time.perf_counter() - self.over_at < GAME_OVER_PAUSE_SECONDS:
                return messages
            self.game.reset()
            self.over_at, self.step_done = None, True
            messages.append(self._score())
        if self.step_done:  # the agents choose this step's actions from what they see now
            self.game.begin_step()
            messages.append({"type": "prefs", "side": "right", **self.right_player.shown})
            if not self.person:
                messages.append({"type": "prefs", "side": "left", **self.left_player.shown})
        before = self.game.points
        self.step_done = self.game.play_frame()
        if self.game.points != before:
            messages.append(self._score())
        return messages

    def _score(self) -> dict:
        return {"type": "score", "left": self.game.points[LEFT], "right": self.game.points[RIGHT]}

    def screen(self) -> np.ndarray:
        return self.game.screen()

    def facts(self) -> dict:
        ram = self.game.ram()
        return {
            "paddle_left": int(ram[RAM_PADDLE[LEFT]]),
            "paddle_right": int(ram[RAM_PADDLE[RIGHT]]),
            "ram_score_left": int(ram[RAM_SCORE[LEFT]]),
            "ram_score_right": int(ram[RAM_SCORE[RIGHT]]),
            "score_left": self.game.points[LEFT],
            "score_right": self.game.points[RIGHT],
        }

    def close(self) -> None:
        self.game.close()


class BuiltinTable(Table):
    """An agent on the right against the built-in AI, in the single-player game it trained on: the agent
    steps 4 frames at once, which are then shown one per tick."""

    def __init__(self, agent: Player, seed: int):
        self.right_name, self.left_name = agent.name, "built-in AI"
        self.player = ShownAgent(agent.agent)
        self.game = LiveGame(self.player, BUILTIN, seed=seed, record_colour=True)
        self._screen = self.game.screen()
        self.game.colour_frames.clear()  # the first screen is shown as it is, not queued
        self.shown: deque = deque()
        self.over_at = None

    def _score(self) -> dict:
        return {"left": self.game.points[LEFT], "right": self.game.points[RIGHT]}

    def frame(self, keys: Keys) -> list[dict]:
        messages = []
        if not self.shown:
            if self.over_at is not None:
                if time.perf_counter() - self.over_at < GAME_OVER_PAUSE_SECONDS:
                    return messages
                self.game.reset()
                self.game.colour_frames.clear()
                self.over_at = None
                messages.append({"type": "score", **self._score()})
            self.game.begin_step()
            messages.append({"type": "prefs", "side": "right", **self.player.shown})
            before = self.game.points
            self.game.play_frame()  # the whole step: the built-in AI's game plays 4 frames at once
            self.shown.extend(self.game.colour_frames)
            self.game.colour_frames.clear()
            if self.game.points != before:
                messages.append({"type": "score", **self._score()})
            if self.game.done:
                self.over_at = time.perf_counter()
                messages.append({"type": "over", **self._score()})
        self._screen = self.shown.popleft()
        return messages

    def screen(self) -> np.ndarray:
        return self._screen

    def facts(self) -> dict:
        return {"score_left": self.game.points[LEFT], "score_right": self.game.points[RIGHT]}

    def close(self) -> None:
        self.game.close()


class Lobby:
    """The agents named on the command line and the games being played."""

    def __init__(self, agent: Player, opponent: Player | None, seed: int):
        self.agent, self.opponent, self.seed = agent, opponent, seed
        self.games: dict[int, dict] = {}
        self.next_id = 0

    def new_table(self, keys: Keys) -> Table:
        if self.opponent is None:
            return TwoPlayerTable(self.agent, None, keys)
        if self.opponent.is_builtin:
            return BuiltinTable(self.agent, self.seed + self.next_id)
        return TwoPlayerTable(self.agent, self.opponent, keys)


async def play_game(websocket, lobby: Lobby) -> None:
    """One page's game: frames out at 60 per second, key presses in, until the page goes away."""
    from starlette.websockets import WebSocketDisconnect

    await websocket.accept()
    if len(lobby.games) >= MAX_GAMES:
        await websocket.send_text(
            json.dumps({"type": "busy", "message": f"{MAX_GAMES} games are being played; try again later"})
        )
        await websocket.close(code=1013)
        return
    game_id, lobby.next_id = lobby.next_id, lobby.next_id + 1
    keys = Keys()
    table = lobby.new_table(keys)
    stats = {
        "frames": 0,
        "started": time.perf_counter(),
        "latency_ms": deque(maxlen=600),
        "delivery_ms": deque(maxlen=600),
        "ignored_messages": 0,
        "table": table,
    }
    lobby.games[game_id] = stats

    async def read_keys():
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            try:
                event = json.loads(text) if text is not None and len(text) <= MAX_MESSAGE_BYTES else None
                key, pressed = event["key"], event["pressed"]
                if not table.person or key not in ("up", "down", "fire") or not isinstance(pressed, bool):
                    raise ValueError(key)
            except (ValueError, TypeError, KeyError):
                stats["ignored_messages"] += 1
                continue
            keys.press(key, pressed)
            if isinstance(event.get("t"), (int, float)):  # the page's clock: the same machine's, on localhost
                stats["delivery_ms"].append(time.time() * 1000 - event["t"])

    reader = asyncio.create_task(read_keys())
    try:
        await websocket.send_text(
            json.dumps(
                {
                    "type": "hello",
                    "left": table.left_name,
                    "right": table.right_name,
                    "person": table.person,
                    "actions": ACTION_NAMES,
                }
            )
        )
        next_tick = time.perf_counter()
        while not reader.done():
            played = list(keys.pending)
            keys.pending.clear()
            messages = table.frame(keys)
            now = time.perf_counter()
            stats["latency_ms"].extend((now - received) * 1000 for received in played)
            stats["frames"] += 1
            await websocket.send_bytes(np.ascontiguousarray(table.screen()).tobytes())
            for message in messages:
                await websocket.send_text(json.dumps(message))
            next_tick += FRAME_SECONDS
            delay = next_tick - time.perf_counter()
            if delay < -0.25:  # fell far behind (a slow machine): start the schedule again from now
                next_tick, delay = time.perf_counter(), 0.0
            await asyncio.sleep(max(0.0, delay))
    except (WebSocketDisconnect, RuntimeError, ConnectionError):
        pass  # the page went away mid-game: its game ends, the others go on
    finally:
        reader.cancel()
        lobby.games.pop(game_id, None)
        table.close()


def _spread(values) -> dict:
    ordered = sorted(values)
    if not ordered:
        return {"count": 0, "median": None, "p95": None, "max": None}
    return {
        "count": len(ordered),
        "median": round(ordered[len(ordered) // 2], 3),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "max": round(ordered[-1], 3),
    }


def game_stats(lobby: Lobby) -> dict:
    """Each game: frames played and their rate, the time from a key message's arrival to the emulator
    frame that plays it (`key_latency_ms`) and from the page sending it to its arrival (`delivery_ms`),
    the last 600 of each; messages ignored; what the emulator holds."""
    games = []
    for game_id, stats in lobby.games.items():
        seconds = time.perf_counter() - stats["started"]
        fps = round(stats["frames"] / seconds, 2) if seconds else 0
        games.append(
            {
                "id": game_id,
                "frames": stats["frames"],
                "fps": fps,
                "key_latency_ms": _spread(stats["latency_ms"]),
                "delivery_ms": _spread(stats["delivery_ms"]),
                "ignored_messages": stats["ignored_messages"],
                **stats["table"].facts(),
            }
        )
    return {"games": games, "max_games": MAX_GAMES}


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1")


def served_hosts(host: str, port: int) -> set[str]:
    """The Host headers that name this server: `host:port` for each name the listening address answers
    to. A page reached under any other name (a DNS-rebinding attacker's domain, say) is not this server's."""
    names = {f"[{host}]" if ":" in host else host}
    if is_loopback(host) or host in ("0.0.0.0", "::", ""):
        names.update(LOOPBACK_NAMES)
    if host in ("0.0.0.0", "::", ""):  # every address of this machine
        hostname = socket.gethostname()
        names.add(hostname)
        try:
            addresses = {info[4][0] for info in socket.getaddrinfo(hostname, None)}
        except OSError:
            addresses = set()
        names.update(f"[{address}]" if ":" in address else address for address in addresses)
    return {f"{name}:{port}" for name in names}


def refusal(headers, allowed_hosts: set[str], websocket: bool) -> str | None:
    """Why a request is not this server's own page's, or None. Its Host header must name this server;
    a WebSocket must also come from this server's page: browsers send the page's origin with every
    WebSocket, and any page the person visits can open one (cross-site WebSocket hijacking)."""
    host = headers.get("host", "")
    if host.lower() not in allowed_hosts:
        return f"Host {host!r} does not name this server"
    if websocket and headers.get("origin", "").lower() != f"http://{host.lower()}":
        return f"Origin {headers.get('origin')!r} is not this server's page"
    return None


def make_app(lobby: Lobby, allowed_hosts: set[str]):
    """The page, its stats and its game socket, for requests whose Host is in `allowed_hosts` (lowercase
    host:port) and, for the socket, whose Origin is the page's own."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse
    from starlette.routing import Route, WebSocketRoute

    with open(PAGE) as handle:
        page = handle.read()
    allowed_hosts = {name.lower() for name in allowed_hosts}

    def forbidden(request):
        reason = refusal(request.headers, allowed_hosts, websocket=False)
        return PlainTextResponse(reason, status_code=403) if reason else None

    async def index(request):
        return forbidden(request) or HTMLResponse(page)

    async def stats(request):
        return forbidden(request) or JSONResponse(game_stats(lobby))

    async def game(websocket):
        if refusal(websocket.headers, allowed_hosts, websocket=True):
            await websocket.close(code=1008)  # before accepting: the server answers the handshake with 403
            return
        await play_game(websocket, lobby)

    return Starlette(routes=[Route("/", index), Route("/stats", stats), WebSocketRoute("/game", game)])


def serve(agent_spec: str, opponent_spec: str | None, host: str, port: int, seed: int = 0) -> int:
    """Load the agents, bind the port, print the address and serve until Ctrl-C."""
    try:
        import uvicorn
    except ImportError:
        raise PongrlError(
            "pongrl play needs starlette and uvicorn (pip install starlette uvicorn websockets)"
        ) from None
    import torch

    torch.set_num_threads(1)  # one small forward pass per agent step; the emulator loop wants the core
    if not 0 <= port <= 65535:
        raise PongrlError(f"--port must be between 0 and 65535, got {port}")
    agent = load_player(agent_spec)
    if agent.is_builtin:
        raise PongrlError(
            "the agent to play against must be a trained agent, not builtin "
            "(pongrl play AGENT --opponent builtin watches it play the built-in AI)"
        )
    opponent = load_player(opponent_spec) if opponent_spec else None
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(64)  # connections made before uvicorn starts wait in the queue
    except OSError as error:
        listener.close()
        raise PongrlError(f"cannot listen on {host}:{port} ({error.strerror}); choose another --port") from None
    bound_port = listener.getsockname()[1]
    what = "you (left) against " + agent.name if opponent is None else f"{agent.name} against {opponent.name}"
    if not is_loopback(host):
        print(
            f"pongrl play: warning: --host {host} lets every machine that reaches this one on port {bound_port} open "
            f"the page and play (up to {MAX_GAMES} games at once, on this machine's cores)",
            file=sys.stderr,
        )
    shown = f"[{host}]" if ":" in host else host
    address_line = f"pongrl play: {what}: open http://{shown}:{bound_port}/ (Ctrl-C stops)"

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            # Said only once the server answers and its Ctrl-C handler is in place: a Ctrl-C sent on reading
            # the address always stops it (a process started with SIGINT ignored would otherwise miss one).
            print(address_line, flush=True)

    app = make_app(Lobby(agent, opponent, seed), served_hosts(host, bound_port))
    config = uvicorn.Config(
        app,
        log_level="warning",
        ws="websockets-sansio",
        ws_max_size=MAX_MESSAGE_BYTES,
        lifespan="off",
        timeout_graceful_shutdown=2,
    )
    try:
        AnnouncingServer(config).run(sockets=[listener])
    except KeyboardInterrupt:  # uvicorn shuts down cleanly on Ctrl-C, then passes the signal on
        pass
    print("pongrl play: stopped", flush=True)
    return 0
