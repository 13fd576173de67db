#!/usr/bin/python3
"""ppc Studio in a real browser (Debian's chromium, driven by chromium-driver through python3-selenium).

Started by Tests/ToolTests/StudioBrowserTests.swift with the built tools; runs on its own too:

    /usr/bin/python3 Tests/Browser/studio_test.py --host-tool .build/debug/ppc-host --tool .build/debug/ppc-tool --out DIR

What it proves, each step asserting and failing with what it saw:
  1. the Live page updates when a device connects and when a shot arrives (pushed over the WebSocket; no reload);
  2. a swing seen by two devices (120 fps and 60 fps, different clip windows) plays in sync on the host clock: at the
     impact both videos' currentTime agree within a frame, and again after playing at half speed;
  3. frame step moves one frame, forward and back; the speed buttons set 1/2, 1/4, 1/8;
  4. keep and star persist across a host restart;
  5. Compare aligns two swings at impact; Sessions shows each session's report and a timeline that zooms, pans and
     opens a shot's swing; the download link serves the clip by Range;
  6. the host serves its studio as it would to a LAN (--studio-on-network): without the key nothing is served (403); the
     link it prints sets the cookie and leaves the address bar; the key and the cookie outlast a host restart.
Screenshots of every page go to --out. Waiting is on conditions (WebDriverWait, process exit), never on a bare sleep.
"""
import json, os, re, signal, subprocess, sys, threading, time, urllib.error, urllib.request

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Proc, chromium, fail, free_port, procs, test_arguments, watchdog  # noqa: E402

args, work, library, env = test_arguments('ppc-studio-')



def step(msg):
    print('- ' + msg, flush=True)




def start_host():
    h = Proc([args.host_tool, '--library', library, '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0', '--insecure-loopback-only',
              '--ingest-policy', 'any', '--studio-on-network'], env=env, name='ppc-host')
    m = h.wait_for(r'studio at (http://[0-9.]+:[0-9]+/)\?key=([0-9a-f]{64}) ')
    port = int(h.wait_for(r'listening on 127\.0\.0\.1:([0-9]+)').group(1))
    return h, m.group(1), port, m.group(2)


def manifest(name, width, height, fps, start_ns, impacts, pre_ns):
    m = {
        'session': name,
        'sources': [
            {'plugin': 'synthetic.video', 'params': {'width': width, 'height': height, 'fps': fps, 'seconds': 7, 'texture': 'flat',
                                                     'impacts': impacts, 'startNs': start_ns, 'pace': 'realtime'}},
            {'plugin': 'synthetic.audio', 'params': {'seconds': 7, 'impacts': impacts, 'startNs': start_ns}},
        ],
        'encoder': {'plugin': 'x264', 'params': {'threads': 1, 'preset': 'ultrafast'}},
        'detector': {'plugin': 'impact'},
        'sinks': [{'plugin': 'network', 'params': {'insecureLoopbackOnly': True}}],
        'config': {'capture.videoBitrateBps': 1500000, 'capture.expectedFrameRate': fps, 'capture.clipPreNs': pre_ns,
                   'capture.clipPostNs': 1500000000},
    }
    path = os.path.join(work, name + '.json')
    with open(path, 'w') as f:
        json.dump(m, f)
    return path


def http_json(url):
    """The API as a script reads it: the key given as ?key= on the request."""
    with urllib.request.urlopen(url + ('&' if '?' in url else '?') + 'key=' + key, timeout=10) as r:
        return json.load(r)


def refused_without_key(url):
    try:
        urllib.request.urlopen(url, timeout=10)
    except urllib.error.HTTPError as e:
        return e.code == 403 and 'asks for its key' in e.read().decode()
    return False


driver = None
try:
    driver = chromium()
    # Ten minutes for the whole script (it takes one or two; a loaded machine, a few): never a run held for ever.
    watchdog(int(os.environ.get('PPC_BROWSER_TEST_SECONDS', '600')), cleanup=lambda: driver.service.process.kill())
    wait = lambda cond, t=60, what='': WebDriverWait(driver, t).until(lambda d: cond(), message=what)
    js = driver.execute_script

    def shot(name):
        path = os.path.join(args.out, f'studio-{name}.png')
        driver.save_screenshot(path)
        step(f'screenshot {path}')

    def ready(page):
        # The page asked for is the one shown, and it says it is ready (a hash change routes asynchronously: until
        # then the last page is still there).
        main = lambda: driver.find_element(By.ID, 'main')
        wait(lambda: main().get_attribute('data-page') == page and main().get_attribute('data-ready') == 'yes', 60, f'{page} page ready')

    def settled():
        # Every video has the frame at its current time decoded (not seeking, data for the current position).
        wait(lambda: js('return studioPlayer.videos.every(v => !v.seeking && v.readyState >= 2)'), 30, 'videos settled')

    host, url, port, key = start_host()
    step(f'host up: studio {url}, devices on {port}')

    # 6 (first half). Served as to a LAN: nothing without the key; the printed link sets the cookie and leaves the address.
    for path in ['', 'api/swings', 'api/devices']:
        if not refused_without_key(url + path):
            fail(f'{url + path} was served without the key')
    driver.get(url + '?key=' + key)
    wait(lambda: 'key=' not in driver.current_url and driver.find_elements(By.ID, 'main'), 20, 'the link opened the studio and left the address')
    step('without the key: 403 for pages and the API; the link set the cookie and left the address bar')

    # 1. Live: nothing yet; then a device connects and a shot arrives, pushed to the open page.
    driver.get(url + '#/live')
    wait(lambda: js("return document.querySelector('#socket').classList.contains('up')"), 20, 'websocket up')
    wait(lambda: len(driver.find_elements(By.ID, 'no-devices')) == 1, 20, 'empty live page')
    shot('live-empty')

    # Two devices watch one swing: the same impacts on the same clock (CLOCK_MONOTONIC, where ppc's capture clock is),
    # one at 120 fps with the default 1.5 s before t0, one at 60 fps with 1.0 s before.
    start_ns = time.monotonic_ns()
    impacts = [2.0, 4.2]
    face = manifest('face', 320, 180, 120, start_ns, impacts, 1500000000)
    side = manifest('side', 320, 180, 60, start_ns, impacts, 1000000000)
    dev = lambda m, id: Proc([args.tool, 'run', m, '--out', os.path.join(work, 'out-' + id), '--device-id', id, '--host', f'127.0.0.1:{port}',
                              '--insecure-loopback-only', '--preview-fps', '5'], env=env, name=id)
    a = dev(face, 'bay-face')
    card = lambda id: f"document.querySelector('.card[data-device=\"{id}\"]')"
    wait(lambda: js(f"return {card('bay-face')}?.dataset.link === 'connected'"), 60, 'bay-face shown connected on the live page')
    step('live page: bay-face connected (pushed)')
    b = dev(side, 'bay-side')
    wait(lambda: js(f"return {card('bay-side')}?.dataset.link === 'connected'"), 60, 'bay-side shown connected')
    wait(lambda: js(f"return Number({card('bay-face')}?.dataset.shots || 0) >= 1"), 60, 'a shot flashed on the live page')
    wait(lambda: js(f"return {card('bay-face')}.querySelector('[data-field=\"Last shot\"]').textContent.includes(' ago')"), 20, 'last shot shown')
    wait(lambda: js(f"return /fps/.test({card('bay-face')}.querySelector('[data-field=\"Frame rate\"]').textContent)"), 20, 'frame rate shown')
    wait(lambda: js(f"return {card('bay-face')}.querySelector('canvas.preview').width === 160"), 30, 'preview drawn')
    step('live page: shot, device state and preview arrived')
    shot('live')
    for p in (a, b):
        if p.p.wait(timeout=120) != 0:
            fail(f'{p.name} exited {p.p.returncode}:\n' + '\n'.join(p.lines[-30:]))
    wait(lambda: js(f"return {card('bay-face')}?.dataset.link === 'disconnected'"), 30, 'bay-face shown disconnected after its session')
    step('live page: devices disconnected at the end of their sessions')

    # 2. Swings: the newest swing has both angles (the page refreshes itself when clips are catalogued).
    driver.get(url + '#/swings')
    wait(lambda: js("return [...document.querySelectorAll('.swing-row')].filter(r => r.querySelectorAll('.thumb').length === 2).length") >= 2, 90,
         'two swings with two angles each')
    shot('swings')
    swings = http_json(url + 'api/swings')['swings']
    both = [s for s in swings if len(s['angles']) == 2]
    first, second = both[-1]['id'], both[0]['id']
    driver.get(url + '#/swing/' + first)
    ready('swing')
    settled()
    info = js('return {fps: studioPlayer.fps, impact: studioSwing.angles.map(a => a.impactSeconds), times: studioPlayer.videos.map(v => v.currentTime), synced: studioSwing.syncedOn}')
    if not info['synced'].startswith('host clock'):
        fail(f'swing synced on {info["synced"]}, not the host clock')
    if abs(info['impact'][0] - info['impact'][1]) < 0.2:
        fail(f'the two angles put the impact at nearly the same video time ({info["impact"]}): sync would not be tested')

    def at_impact(label):
        r = js('return {fps: studioPlayer.fps, impact: studioSwing.angles.map(a => a.impactSeconds), times: studioPlayer.videos.map(v => v.currentTime)}')
        err = [t - i for t, i in zip(r['times'], r['impact'])]
        frame = 1 / max(r['fps'])
        slack = [1 / f for f in r['fps']]
        if any(abs(e) > s for e, s in zip(err, slack)) or abs(err[0] - err[1]) > 1 / min(r['fps']):
            fail(f'{label}: not in sync at impact: currentTime {r["times"]} against impact {r["impact"]} (errors {err}, frame {frame})')
        step(f'{label}: both angles at impact: errors {[round(e * 1000, 2) for e in err]} ms (frames {[round(1000 / f, 2) for f in r["fps"]]} ms)')

    driver.find_element(By.ID, 'to-impact').click()
    settled()
    at_impact('impact button')
    shot('swing')

    # 3. Frame step, forward and back: the lead moves one frame; the other angle follows to the same instant.
    before = js('return [studioPlayer.frameOf(0), studioPlayer.videos[1].currentTime]')
    driver.find_element(By.ID, 'frame-forward').click()
    settled()
    after = js('return [studioPlayer.frameOf(0), studioPlayer.videos[1].currentTime]')
    if after[0] != before[0] + 1:
        fail(f'frame forward: lead frame {before[0]} → {after[0]}')
    if abs((after[1] - before[1]) - 1 / info['fps'][0]) > 1 / info['fps'][1]:
        fail(f'frame forward: the other angle moved {after[1] - before[1]:.4f} s, not one lead frame')
    driver.find_element(By.ID, 'frame-back').click()
    settled()
    if js('return studioPlayer.frameOf(0)') != before[0]:
        fail('frame back did not return to the frame before')
    step(f'frame step: {before[0]} → {after[0]} → {before[0]}')
    for rate in ['0.125', '0.25', '0.5']:
        driver.find_element(By.CSS_SELECTOR, f'button[data-rate="{rate}"]').click()
        if js('return studioPlayer.videos.map(v => v.playbackRate)') != [float(rate)] * 2:
            fail(f'speed {rate}: playback rates are {js("return studioPlayer.videos.map(v => v.playbackRate)")}')
    step('speed buttons: 1/8, 1/4, 1/2')
    # Play at half speed through the impact and stop: still in sync.
    js('studioPlayer.seek(-0.3)')
    settled()
    driver.find_element(By.ID, 'play').click()
    wait(lambda: js('return studioPlayer.T') > 0.05, 30, 'playing past the impact')
    driver.find_element(By.ID, 'play').click()
    settled()
    r = js('return {T: studioPlayer.T, off: studioPlayer.offsets, times: studioPlayer.videos.map(v => v.currentTime), fps: studioPlayer.fps}')
    for i in range(2):
        if abs(r['times'][i] - (r['T'] + r['off'][i])) > 1 / r['fps'][i]:
            fail(f'after playing, angle {i} is at {r["times"][i]:.4f} s, the common time says {r["T"] + r["off"][i]:.4f}')
    step('played at 1/2 through the impact and paused: both angles at the same instant')
    driver.find_element(By.ID, 'to-impact').click()
    settled()
    at_impact('impact after playing')

    # 3b. Measuring on the frame: an angle and a line drawn on the lead angle at impact, measured in the frame's own
    # pixels and kept beside its clip.
    def click_at(i, x, y):
        # x, y: fractions of the frame; the click lands where the frame is drawn in the element (object-fit: contain).
        js(f"""const m = studioMeasure, c = m.canvases[{i}], r = c.getBoundingClientRect(), b = m.box({i});
               const px = (b.x + {x} * b.w) / c.width * r.width + r.left, py = (b.y + {y} * b.h) / c.height * r.height + r.top;
               c.dispatchEvent(new MouseEvent('click', {{clientX: px, clientY: py, bubbles: true}}));""")
    driver.find_element(By.ID, 'measure-angle').click()
    for x, y in [(0.2, 0.5), (0.5, 0.5), (0.5, 0.2)]:
        click_at(0, x, y)
    wait(lambda: js('return studioMeasure.canvases[0].dataset.saved') == '1', 20, 'the angle kept')
    driver.find_element(By.ID, 'measure-line').click()
    for x, y in [(0.25, 0.75), (0.75, 0.25)]:
        click_at(0, x, y)
    wait(lambda: js('return studioMeasure.canvases[0].dataset.saved') == '2', 20, 'the line kept')
    # A 320×180 frame: the angle's arms run 96 px left and 54 px up from its vertex (90°); the line rises 90 px over
    # 160 (29.4° from the horizontal). Fractions of the element would have said 90° and 45°.
    # A click lands on a whole pixel of the page, so each point is within half a pixel of where it was aimed: the
    # degrees to within 0.15°. What was shown is then what must come back (after the restart, on Compare).
    labels = js('return studioMeasure.canvases[0].dataset.labels')
    got = [float(v) for v in re.findall(r'(?:angle|line) ([0-9.]+)°', labels or '')]
    if len(got) != 2 or abs(got[0] - 90.0) > 0.15 or abs(got[1] - 29.36) > 0.15:
        fail(f'measured on the frame: {labels!r}, not angle 90.0° and line 29.4° (to within 0.15°)')
    measured = labels
    lead_clip = js('return studioSwing.angles[0].clipId')
    kept = http_json(url + f'api/clips/{lead_clip}/drawings')['drawings']
    if [d['kind'] for d in kept] != ['angle', 'line']:
        fail(f'drawings kept: {kept}')
    step(f'measured at impact: {labels}; kept beside the clip')
    shot('swing-measured')
    # Stepping away hides them (they belong to their frame, fading over 0.25 s); back at impact they are there.
    js('studioPlayer.seek(0.5)')
    settled()
    wait(lambda: js('return studioMeasure.canvases[0].dataset.labels') == '', 20, 'drawings hidden half a second away')
    driver.find_element(By.ID, 'to-impact').click()
    settled()
    wait(lambda: js('return studioMeasure.canvases[0].dataset.labels') == measured, 20, 'drawings back at impact')
    step('drawings hidden half a second away, shown again at impact')

    # 4. Keep and star; they persist across a host restart.
    driver.find_element(By.ID, 'flag-kept').click()
    wait(lambda: 'kept' in driver.find_element(By.ID, 'main').get_attribute('data-flags'), 20, 'kept recorded')
    driver.find_element(By.ID, 'flag-starred').click()
    wait(lambda: 'starred' in driver.find_element(By.ID, 'main').get_attribute('data-flags'), 20, 'starred recorded')
    shot('swing-kept')
    severe = [l for l in driver.get_log('browser') if l['level'] == 'SEVERE']
    if severe:
        fail(f'the browser logged errors: {severe}')
    old_url = url
    host.stop()
    step('host stopped')
    old_key = key
    host, url, port, key = start_host()
    if key != old_key:
        fail('the studio key changed across a restart: every link given out would stop working')
    step(f'host restarted: studio {url}, the same key; the browser\'s cookie still lets it in')
    driver.get(url + '#/swing/' + first)
    ready('swing')
    classes = {f: driver.find_element(By.ID, 'flag-' + f).get_attribute('class') for f in ['kept', 'discarded', 'starred']}
    if 'on' not in classes['kept'].split() or 'on' not in classes['starred'].split() or 'on' in classes['discarded'].split():
        fail(f'after the restart the flags are {classes}')
    step('keep and star persisted across the restart')
    settled()
    wait(lambda: js('return studioMeasure.canvases[0].dataset.labels') == measured, 20, 'drawings shown after the restart')
    step('the measurements persisted across the restart')
    driver.find_element(By.ID, 'flag-discarded').click()
    wait(lambda: driver.find_element(By.ID, 'main').get_attribute('data-flags') == 'discarded,starred', 20, 'discard replaces keep')

    # Downloads: the clip by Range.
    href = driver.find_element(By.CSS_SELECTOR, 'a[download]').get_attribute('href')
    req = urllib.request.Request(href, headers={'Range': 'bytes=0-15', 'Cookie': 'ppc_studio=' + key})
    with urllib.request.urlopen(req, timeout=10) as resp:
        if resp.status != 206 or resp.headers['Content-Type'] != 'video/mp4' or len(resp.read()) != 16:
            fail(f'download {href}: {resp.status} {resp.headers["Content-Type"]}')
    step('download link serves the clip by Range (206)')

    # 5. Compare: two swings aligned at impact.
    driver.get(url + f'#/compare/{first}/{second}')
    ready('compare')
    settled()
    r = js('return {times: studioPlayer.videos.map(v => v.currentTime), off: studioPlayer.offsets, fps: studioPlayer.fps}')
    for i in range(2):
        if abs(r['times'][i] - r['off'][i]) > 1 / r['fps'][i]:
            fail(f'compare: side {i} at {r["times"][i]:.4f} s, its impact at {r["off"][i]:.4f} s')
    step('compare: both swings at their impacts')
    sides = js('return studioMeasure.angles.map((a, i) => [a.clipId, studioMeasure.canvases[i].dataset.labels])')
    for clip, labels in sides:
        if clip == lead_clip and labels != measured:
            fail(f'compare: the measured clip shows {labels!r}, not {measured!r}')
    if lead_clip not in [c for c, _ in sides] and any(l for _, l in sides):
        fail(f'compare: drawings shown on clips nobody drew on: {sides}')
    step(f'compare: the measurements drawn on the swing page show here too ({sides})')
    shot('compare')

    # Sessions: a report, a timeline that zooms and pans, a shot that opens its swing.
    driver.get(url + '#/sessions')
    wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, '#sessions tr.link')) >= 2, 20, 'two sessions listed')
    shot('sessions')
    driver.find_element(By.CSS_SELECTOR, '#sessions tr.link[data-session^="bay-face/"]').click()
    ready('session')
    if 'Shots' not in driver.find_element(By.ID, 'report').text:
        fail('session report missing')
    js("const c = document.getElementById('timeline'); c.dispatchEvent(new WheelEvent('wheel', {deltaY: -300, clientX: c.getBoundingClientRect().left + 200, bubbles: true, cancelable: true}));")
    js("const c = document.getElementById('timeline'), r = c.getBoundingClientRect(), o = x => ({clientX: r.left + x, clientY: r.top + 50, bubbles: true, pointerId: 1}); c.dispatchEvent(new PointerEvent('pointerdown', o(300))); c.dispatchEvent(new PointerEvent('pointermove', o(360))); c.dispatchEvent(new PointerEvent('pointerup', o(360)));")
    shot('session')
    driver.find_element(By.CSS_SELECTOR, '#shots tr.link').click()
    wait(lambda: driver.current_url.split('#')[1].startswith('/swing/'), 20, 'a shot opens its swing')
    ready('swing')
    step('sessions: report, timeline zoomed and panned, a shot opened its swing')
    # While the host was down the open page kept trying its WebSocket (as it should): those refusals are expected.
    logs = [l for l in driver.get_log('browser') if l['level'] == 'SEVERE' and not (old_url.rstrip('/').replace('http://', 'ws://') in l['message'] and 'WebSocket' in l['message'])]
    if logs:
        fail(f'the browser logged errors: {logs}')
    print('PASS', flush=True)
except TimeoutException as e:
    shot_path = os.path.join(args.out, 'studio-failure.png')
    if driver:
        driver.save_screenshot(shot_path)
    for p in procs:
        print(f'--- {p.name} (last lines)\n' + '\n'.join(p.lines[-25:]))
    fail(f'timed out waiting for: {e.msg} (screenshot {shot_path})')
finally:
    if driver:
        driver.quit()
    for p in procs:
        p.stop()
