#!/usr/bin/python3
"""The Swings page in Debian's chromium, for `ppc-tool bench studio`: how long after navigation its first page of swings
is painted, and how long after each new swing is catalogued its row is on the page.

    swings_bench.py --url http://127.0.0.1:PORT/ --adds N

Prints `READY {"firstVisit": [ms, …], "again": [ms, …], "browsersFirstPage": ms}` once the list has been painted
`--visits` times each way (ms from navigation start to the frame after the rows were in the page; a first visit with the
browser's cache emptied, and again with the page's files cached; and the browser's very first page, its renderer started
for it), then, for each row the page adds, `ADDED <wall ms>` (Date.now() when the row was put in, the frame after); exits
after N.
"""
import argparse, json, os, signal, sys, time

from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import chromium  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument('--url', required=True)
ap.add_argument('--adds', type=int, default=5)
ap.add_argument('--visits', type=int, default=7)
args = ap.parse_args()
# Ended by its caller (SIGTERM), it still closes chromium: the browser is not left running behind it.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
driver = chromium(media=False)
try:
    js = driver.execute_script
    wait = lambda cond, t=120: WebDriverWait(driver, t).until(lambda d: cond())
    # Every thumbnail in view loaded: the visit is over, and the next does not share the machine with its requests.
    settled = '''return window.studioPainted && window.studioPainted.page === 'swings' && document.readyState === 'complete'
      && [...document.images].filter(i => i.getBoundingClientRect().top < innerHeight).every(i => i.complete)'''

    def visit(cached):
        if not cached:
            driver.execute_cdp_cmd('Network.clearBrowserCache', {})
        driver.get('about:blank')
        driver.get(args.url + '#/swings')
        wait(lambda: js(settled))
        return js('return window.studioPainted.ms')

    # A first visit (nothing cached), then again as a coach who opened the studio before: its page and script come from
    # the browser's cache. Alternated, so both see the same machine.
    first, again = [], []
    # The browser's own first page (its renderer started for it) is said apart: not the studio's to answer for.
    browser_start = visit(True)
    for _ in range(args.visits):
        first.append(visit(False))
        again.append(visit(True))
    print('READY ' + json.dumps({'firstVisit': first, 'again': again, 'browsersFirstPage': browser_start}), flush=True)
    driver.get(args.url + '#/swings')
    wait(lambda: js(settled))
    seen = 0
    while seen < args.adds:
        wait(lambda: len(js('return window.rowsAdded || []')) > seen)
        times = js('return window.rowsAdded')
        for t in times[seen:]:
            print('ADDED %.1f' % t, flush=True)
        seen = len(times)
finally:
    driver.quit()
