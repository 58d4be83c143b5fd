"""`pongrl play`: the real server, a real browser (Debian's headless Chromium through Selenium) and bad clients."""

import asyncio
import json
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from pongrl import zoo


class Server:
    """`pongrl play ARGS --port 0` in its own process; `url` is the address it printed."""

    def __init__(self, *args):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pongrl", "play", *args, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()
        if "open http://" not in line:
            self.process.kill()
            raise AssertionError(line + self.process.stderr.read())
        self.url = line.split("open ")[1].split()[0]
        self.ws_url = self.url.replace("http://", "ws://") + "game"
        self.origin = self.url.rstrip("/")  # what a browser sends from the server's own page
        self.host = self.origin[len("http://") :]

    def stats(self) -> dict:
        with urllib.request.urlopen(self.url + "stats", timeout=5) as response:
            return json.load(response)

    def stop(self) -> tuple[int, str]:
        """Ctrl-C, as a user stops it; returns the exit code and stderr."""
        self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(timeout=15)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        return code, self.process.stderr.read()


def wait_for(condition, seconds: float, what: str):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_person_plays_an_agent_in_the_browser(browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    agent = "zoo:" + zoo.names()[0]
    server = Server(agent)
    try:
        browser.get(server.url)
        wait_for(lambda: browser.find_element(By.ID, "status").get_attribute("data-fps"), 20, "frames on the page")
        assert browser.find_element(By.ID, "name-right").text == agent
        assert browser.find_element(By.ID, "name-left").text == "you"
        assert len(browser.find_elements(By.CSS_SELECTOR, "#prefs-right .bar")) == 6

        def paddle():
            return server.stats()["games"][0]["paddle_left"]

        start = paddle()
        ActionChains(browser).key_down(Keys.ARROW_UP).pause(0.6).key_up(Keys.ARROW_UP).perform()
        top = wait_for(lambda: paddle() < start - 30 and paddle(), 5, "the left paddle to go up")
        ActionChains(browser).key_down(Keys.ARROW_DOWN).pause(0.6).key_up(Keys.ARROW_DOWN).perform()
        wait_for(lambda: paddle() > top + 30, 5, "the left paddle to go down")

        # Serve (space) until a point has been played, then the page's score is the emulator's.
        def scored():
            ActionChains(browser).key_down(Keys.SPACE).pause(0.1).key_up(Keys.SPACE).perform()
            game = server.stats()["games"][0]
            return game["ram_score_left"] + game["ram_score_right"] > 0

        wait_for(scored, 60, "a point")

        def page_matches_emulator():
            before = server.stats()["games"][0]
            page = (
                int(browser.find_element(By.ID, "score-left").text),
                int(browser.find_element(By.ID, "score-right").text),
            )
            after = server.stats()["games"][0]
            ram = (before["ram_score_left"], before["ram_score_right"])
            return ram == (after["ram_score_left"], after["ram_score_right"]) and page == ram

        wait_for(page_matches_emulator, 10, "the page's score to match the emulator's")
        game = server.stats()["games"][0]
        assert game["fps"] > 20 and game["key_latency_ms"]["count"] >= 4
    finally:
        code, err = server.stop()
    assert code == 0 and "Traceback" not in err, err


def test_bad_clients_do_not_stop_the_server_and_ctrl_c_leaves_nothing_running():
    import websockets

    server = Server("zoo:" + zoo.names()[0])

    async def frames(socket, count):
        received = 0
        while received < count:
            if isinstance(await asyncio.wait_for(socket.recv(), 10), bytes):
                received += 1

    async def scenario():
        async with websockets.connect(server.ws_url, origin=server.origin) as good:
            await frames(good, 5)
            # Garbage, wrong types, binary data, a key the page never sends: ignored.
            for junk in (
                "not json",
                "[1, 2]",
                json.dumps({"key": "up"}),
                json.dumps({"key": "../etc", "pressed": True}),
                json.dumps({"key": "up", "pressed": "yes"}),
            ):
                await good.send(junk)
            await good.send(b"\x00\x01binary")
            await frames(good, 5)
            assert server.stats()["games"][0]["ignored_messages"] == 6
            # An oversized message closes that connection only.
            oversized = await websockets.connect(server.ws_url, origin=server.origin)
            await oversized.send("x" * 5000)
            with pytest.raises(websockets.ConnectionClosed):
                await frames(oversized, 10_000)
            # More pages than games allowed: the extra ones are told the server is busy.
            others = [await websockets.connect(server.ws_url, origin=server.origin) for _ in range(6)]
            replies = []
            for other in others:
                try:
                    replies.append(json.loads(await asyncio.wait_for(other.recv(), 10))["type"])
                except websockets.ConnectionClosed:
                    replies.append("closed")
            assert replies.count("hello") == 3 and replies.count("busy") == 3, replies
            # Tabs closed mid-game without a goodbye: their games end, the others play on.
            for other in others:
                other.transport.abort()
            await frames(good, 30)
            assert good.state == websockets.protocol.State.OPEN

    try:
        asyncio.run(scenario())
        stats = wait_for(lambda: (lambda s: len(s["games"]) == 0 and s)(server.stats()), 10, "the closed games to end")
        assert stats["max_games"] == 4
    finally:
        code, err = server.stop()  # also when the scenario failed: no server is left running
    assert code == 0 and "Traceback" not in err, err
    # Nothing was left listening: the port can be listened on again (closed connections may linger in
    # TIME_WAIT, which SO_REUSEADDR allows for, as the server itself does; a live listener it does not).
    import socket

    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
        probe.listen(1)


def test_play_refuses_bad_agents_in_one_line():
    for args in (["no/such/file.pt"], ["builtin"], ["zoo:" + zoo.names()[0], "--opponent", "zoo:nothing"]):
        done = subprocess.run(
            [sys.executable, "-m", "pongrl", "play", *args, "--port", "0"], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 1 and done.stderr.count("\n") == 1 and done.stderr.startswith("pongrl: error: "), (
            done.stderr
        )


def handshake_status(server: Server, path: str, headers: dict) -> int:
    """The HTTP status a raw request to the server gets with exactly these headers (a WebSocket upgrade
    for /game): a hostile page or a rebound DNS name can send what no real client of this page would."""
    import socket

    lines = [f"GET {path} HTTP/1.1", *(f"{name}: {value}" for name, value in headers.items())]
    if path == "/game":
        lines += [
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13",
        ]
    port = int(server.host.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return int(connection.recv(1024).split(b" ", 2)[1])


def test_only_the_servers_own_page_may_open_a_game():
    import websockets

    server = Server("zoo:" + zoo.names()[0])
    try:
        own = {"Host": server.host, "Origin": server.origin}
        cases = {
            "foreign origin": {**own, "Origin": "http://evil.example"},
            "missing origin": {"Host": server.host},
            "foreign host": {"Host": "evil.example:" + server.host.rsplit(":", 1)[1], "Origin": "http://evil.example"},
            "other port": {**own, "Origin": server.origin.rsplit(":", 1)[0] + ":1"},
        }
        for case, headers in cases.items():
            assert handshake_status(server, "/game", headers) == 403, case
        assert handshake_status(server, "/", {"Host": "evil.example"}) == 403
        assert handshake_status(server, "/stats", {"Host": "rebound.example:80"}) == 403
        assert server.stats()["games"] == [], "no refused request started a game"
        assert handshake_status(server, "/game", own) == 101
        with urllib.request.urlopen(server.url, timeout=5) as response:  # the real page is still served
            assert b"<canvas" in response.read()

        async def play_a_little():
            async with websockets.connect(server.ws_url, origin=server.origin) as page:
                assert json.loads(await asyncio.wait_for(page.recv(), 10))["type"] == "hello"

        asyncio.run(play_a_little())
    finally:
        code, err = server.stop()
    assert code == 0 and "Traceback" not in err, err


def test_play_warns_when_it_listens_beyond_this_machine_and_stops_on_ctrl_c_at_once():
    # Started with SIGINT ignored, as a test runner's worker or a shell's background job starts it: only the
    # server's own handler can stop it then, so the address must not be shown before that handler is in place.
    process = subprocess.Popen(
        [sys.executable, "-m", "pongrl", "play", "zoo:" + zoo.names()[0], "--host", "0.0.0.0", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert "open http://0.0.0.0:" in process.stdout.readline()
        process.send_signal(signal.SIGINT)  # at once, as the address appears
        process.wait(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0 and "stopped" in process.stdout.read()
    warning = process.stderr.read()
    assert "warning: --host 0.0.0.0 lets every machine" in warning
