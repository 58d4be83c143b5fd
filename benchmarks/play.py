"""`pongrl play` under a real browser: frames per second held and key-to-emulator latency.

    python benchmarks/play.py --agent zoo:dqn [--opponent builtin|B] [--seconds 30] [--pages 1]

Starts `pongrl play` on a free port, opens the page in `--pages` headless Chromium windows (Debian's
chromium and chromium-driver, through Selenium), and in a person game taps the arrow keys (a press every
0.25 s, alternating up and down) for `--seconds`. Prints, per game, from the server's /stats: frames per
second over the whole game, the time from a key message's arrival to the emulator frame that plays it,
and from the page sending it to its arrival (both clocks are this machine's); and the page's own frame rate.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
import urllib.request


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="zoo:dqn")
    parser.add_argument("--opponent", default=None)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--pages", type=int, default=1)
    args = parser.parse_args()
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        sys.exit("play.py: needs chromium and chromedriver (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    command = [sys.executable, "-m", "pongrl", "play", args.agent, "--port", "0"]
    if args.opponent:
        command += ["--opponent", args.opponent]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().split("open ")[1].split()[0]
    browsers = []
    try:
        for _ in range(args.pages):
            options = webdriver.ChromeOptions()
            options.binary_location = shutil.which("chromium")
            for flag in (
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ):
                options.add_argument(flag)
            browser = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
            browser.get(url)
            browsers.append(browser)
        started, up = time.time(), True
        while time.time() - started < args.seconds:
            if not args.opponent:
                for browser in browsers:
                    key = Keys.ARROW_UP if up else Keys.ARROW_DOWN
                    ActionChains(browser).key_down(key).pause(0.1).key_up(key).perform()
                up = not up
            time.sleep(0.25)
        page_fps = [browser.find_element(By.ID, "status").get_attribute("data-fps") for browser in browsers]
        with urllib.request.urlopen(url + "stats") as response:
            stats = json.load(response)
    finally:
        for browser in browsers:
            browser.quit()
        server.terminate()
        server.wait()
    print(
        f"agent {args.agent} vs {args.opponent or 'a person (keys tapped by the script)'}; {args.pages} page(s), "
        f"{args.seconds:g} s"
    )
    for game, fps in zip(stats["games"], page_fps):
        latency, delivery = game["key_latency_ms"], game["delivery_ms"]
        print(
            f"game {game['id']}: {game['frames']} frames, {game['fps']:.2f} frames/s at the server, {fps} on the "
            f"page (its last second); key arrival -> emulator frame: median {latency['median']} ms, p95 "
            f"{latency['p95']} ms, max {latency['max']} ms over {latency['count']} key events; page -> server: "
            f"median {delivery['median']} ms, max {delivery['max']} ms"
        )


if __name__ == "__main__":
    main()
