#!/usr/bin/python3
"""The Swings page in Debian's chromium, for `ppc-tool bench studio`: how long after navigation its first page of swings
is painted, and how long after each new swing is catalogued its row is on the page.

    swings_bench.py --url http://127.0.0.1:PORT/ --adds N

Prints `READY <cold ms> <warm ms>` once the list is painted (ms from navigation start to the frame after the rows were in
the page; the first time, and again on a reload with the page's files cached),
then, for each row the page adds, `ADDED <wall ms>` (Date.now() when the row was put in, the frame after); exits after N.
"""
import argparse, os, sys, time

from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import chromium  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('--url', required=True)
ap.add_argument('--adds', type=int, default=5)
args = ap.parse_args()
driver = chromium(media=False)
try:
    js = driver.execute_script
    wait = lambda cond, t=120: WebDriverWait(driver, t).until(lambda d: cond())
    driver.get(args.url + '#/swings')
    wait(lambda: js("return window.studioPainted && window.studioPainted.page === 'swings'"))
    cold = js('return window.studioPainted.ms')
    # Again, as a coach who opened the studio before: its page and script come from the browser's cache.
    driver.refresh()
    wait(lambda: js("return window.studioPainted && window.studioPainted.page === 'swings'"))
    print('READY %.1f %.1f' % (cold, js('return window.studioPainted.ms')), flush=True)
    seen = 0
    while seen < args.adds:
        wait(lambda: len(js('return window.rowsAdded || []')) > seen)
        times = js('return window.rowsAdded')
        for t in times[seen:]:
            print('ADDED %.1f' % t, flush=True)
        seen = len(times)
finally:
    driver.quit()
