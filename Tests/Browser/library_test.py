#!/usr/bin/python3
"""The coach's library in a real browser (Debian's chromium through chromium-driver and python3-selenium): students,
lessons across cameras, search, a swing's place in its lesson, notes kept as typed, a coach's keys, discard that hides,
delete that asks, a phone-sized screen.

Started by Tests/ToolTests/StudioBrowserTests.swift; runs on its own too:

    /usr/bin/python3 Tests/Browser/library_test.py --host-tool .build/debug/ppc-host --tool .build/debug/ppc-tool --out DIR

What it proves, each step asserting and failing with what it saw:
  1. on Live the coach adds a student by name and sets who is hitting at the bay; two cameras' swings are then theirs,
     and after a change of student the next swing is the new one's;
  2. Swings filters by student and finds by text; Lessons lists one row a lesson across both cameras and opens it;
  3. the swing page says whose swing, where, when and which of the lesson; [ ] move between the lesson's swings;
     ← → step a frame, Home and End go to the ends, K and L play and pause;
  4. notes are kept as typed (no button) and are there after navigating away and back;
  5. a discarded swing leaves the list until "show discarded"; delete asks, and asks again for a starred swing;
  6. at 390×844 nothing lies past the right edge of Swings or a swing; opened with no address and no camera
     connected, the studio shows Swings;
  7. an export of a swing's two angles side by side, slowed, with sound and the drawn line burned in (ffprobe, ffmpeg's
     pixels); a share link that opens on a phone with the notes asked for and is refused for another swing, after
     revocation and after expiry.
Waiting is on conditions (WebDriverWait, process exit), never on a bare sleep.
"""
import json, os, sys, time, urllib.error, urllib.request

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Proc, chromium, fail, free_port, procs, test_arguments, watchdog  # noqa: E402

args, work, library, env = test_arguments('ppc-library-')
link_port, http_port = free_port(), free_port()
base = f'http://127.0.0.1:{http_port}/'


def step(msg):
    print('- ' + msg, flush=True)


def api(path, method='GET', body=None):
    req = urllib.request.Request(base.rstrip('/') + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={'Content-Type': 'application/json'} if body is not None else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def manifest(name, fps, impacts, start_ns):
    seconds = impacts[-1] + 2.5
    m = {
        'session': name,
        'sources': [
            {'plugin': 'synthetic.video', 'params': {'width': 320, 'height': 180, 'fps': fps, 'seconds': seconds, 'texture': 'flat',
                                                     'impacts': impacts, 'startNs': start_ns, 'pace': 'realtime'}},
            {'plugin': 'synthetic.audio', 'params': {'seconds': seconds, 'impacts': impacts, 'startNs': start_ns}},
        ],
        'encoder': {'plugin': 'x264', 'params': {'threads': 1, 'preset': 'ultrafast'}},
        'detector': {'plugin': 'impact'},
        'sinks': [{'plugin': 'network', 'params': {'insecureLoopbackOnly': True}}],
        'config': {'capture.videoBitrateBps': 1000000, 'capture.expectedFrameRate': fps, 'capture.clipPreNs': 1000000000,
                   'capture.clipPostNs': 1000000000},
    }
    path = os.path.join(work, f'{name}.json')
    with open(path, 'w') as f:
        json.dump(m, f)
    return path


def session(devices, impacts):
    """Devices at bay-1 watching the same impacts (one clock start), run to their end."""
    start = time.monotonic_ns()
    runs = [Proc([args.tool, 'run', manifest(f'{d}-{len(impacts)}', fps, impacts, start), '--out', os.path.join(work, f'out-{d}-{start}'),
                  '--device-id', d, '--host', f'127.0.0.1:{link_port}', '--insecure-loopback-only'], env=env, name=d) for d, fps in devices]
    for r in runs:
        if r.p.wait(timeout=180) != 0:
            fail(f'{r.name}: exit {r.p.returncode}\n' + '\n'.join(r.lines[-20:]))


driver = None
try:
    import subprocess
    subprocess.run([args.host_tool, 'bay', 'bay-1', 'face', 'dtl', '--library', library], check=True, env=env, stdout=subprocess.DEVNULL)
    host = Proc([args.host_tool, '--library', library, '--listen', f'127.0.0.1:{link_port}', '--http', f'127.0.0.1:{http_port}',
                 '--insecure-loopback-only', '--ingest-policy', 'any'], env=env, name='ppc-host')
    host.wait_for(r'listening on 127\.0\.0\.1:')
    driver = chromium()
    watchdog(int(os.environ.get('PPC_BROWSER_TEST_SECONDS', '600')), cleanup=lambda: driver.service.process.kill())
    # A list the page is rebuilding (a filter just changed) replaces its rows under a find: such a condition is asked again.
    wait = lambda cond, t=60, what='': WebDriverWait(driver, t, ignored_exceptions=[StaleElementReferenceException]).until(lambda d: cond(), message=what)
    js = driver.execute_script
    main = lambda key: js(f"return document.getElementById('main').dataset.{key}")
    find = lambda css: driver.find_elements(By.CSS_SELECTOR, css)
    # The rows' attributes read in one script: never a row replaced between finding it and reading it.
    rows_of = lambda attr: js(f"return [...document.querySelectorAll('.swing-row')].map(r => r.getAttribute('{attr}'))")

    def ready(page):
        wait(lambda: main('page') == page and main('ready') == 'yes', 60, f'{page} page ready')

    def shot(name):
        path = os.path.join(args.out, f'library-{name}.png')
        driver.save_screenshot(path)
        step(f'screenshot {path}')

    # 1. Live: a new student added by name, set hitting at bay-1.
    driver.get(base + '#/live')
    ready('live')
    Select(driver.find_element(By.CSS_SELECTOR, 'select.hitting-student[data-bay="bay-1"]')).select_by_value('+')
    WebDriverWait(driver, 10).until(EC.alert_is_present(), 'the new student prompt')
    prompt = driver.switch_to.alert
    prompt.send_keys('Ana Ruiz')
    prompt.accept()
    wait(lambda: driver.find_element(By.ID, 'hitting').get_attribute('data-hitting') == 'bay-1=ana-ruiz', 20, 'Ana hitting at bay-1')
    step('Live: Ana Ruiz added by name and set hitting at bay-1')
    session([('face', 120), ('dtl', 60)], [2.0, 5.0])
    wait(lambda: len([s for s in api('/api/swings')['swings'] if len(s['angles']) == 2]) == 2, 60, 'two swings of two angles')
    # Ben next, chosen from the list (he was added through the API, as a front desk's tool would).
    api('/api/students', 'POST', {'name': 'Ben Hogan', 'handedness': 'right'})
    driver.refresh()
    ready('live')
    Select(driver.find_element(By.CSS_SELECTOR, 'select.hitting-student[data-bay="bay-1"]')).select_by_value('ben-hogan')
    wait(lambda: driver.find_element(By.ID, 'hitting').get_attribute('data-hitting') == 'bay-1=ben-hogan', 20, 'Ben hitting at bay-1')
    session([('face', 120)], [2.0])
    wait(lambda: api('/api/swings')['total'] == 3, 60, 'the third swing')
    by = {}
    for s in api('/api/swings')['swings']:
        by.setdefault(s['student'], []).append(s['id'])
    if len(by.get('ana-ruiz', [])) != 2 or len(by.get('ben-hogan', [])) != 1:
        fail(f'swings by student: {by}')
    ana = sorted(by['ana-ruiz'], key=lambda i: next(s['seq'] for s in api('/api/swings')['swings'] if s['id'] == i))
    step(f'two swings (two cameras each) are Ana\'s, the next is Ben\'s: {by}')

    # 2. Swings: by student, by text; Lessons: one row a lesson, every camera.
    driver.get(base + '#/swings')
    ready('swings')
    Select(driver.find_element(By.ID, 'filter-student')).select_by_value('ana-ruiz')
    wait(lambda: rows_of('data-student') == ['ana-ruiz', 'ana-ruiz'], 20, "Ana's swings")
    if 'student=ana-ruiz' not in driver.current_url:
        fail(f'the filter is not in the address: {driver.current_url}')
    shot('swings')
    Select(driver.find_element(By.ID, 'filter-student')).select_by_value('')
    driver.find_element(By.ID, 'filter-q').send_keys('hogan')
    wait(lambda: rows_of('data-student') == ['ben-hogan'], 20, 'found by name')
    step('Swings: filtered by student, found by name')
    driver.get(base + '#/sessions')
    ready('sessions')
    rows = {r.get_attribute('data-student'): r for r in find('#lessons tr.link')}
    if set(rows) != {'ana-ruiz', 'ben-hogan'}:
        fail(f'lessons: {list(rows)}')
    cells = [c.text for c in rows['ana-ruiz'].find_elements(By.TAG_NAME, 'td')]
    if cells[0] != 'Ana Ruiz' or cells[4] != '2' or cells[5] != '2':
        fail(f"Ana's lesson row: {cells}")
    shot('lessons')
    rows['ana-ruiz'].click()
    ready('swings')
    wait(lambda: len(find('.swing-row')) == 2, 20, "the lesson's swings")
    step(f'Lessons: one row a lesson across both cameras ({cells}); it opens its swings')

    # 3. A swing's heading, its place in the lesson, the coach's keys.
    driver.get(base + '#/swing/' + ana[0])
    ready('swing')
    title = driver.find_element(By.ID, 'swing-title').text
    if 'Ana Ruiz' not in title or 'bay-1' not in title or 'swing 1 of 2' not in title:
        fail(f'swing heading: {title!r}')
    if 'in sync, ±' not in driver.find_element(By.ID, 'synced-on').text:
        fail('sync said as: ' + driver.find_element(By.ID, 'synced-on').text)
    body = driver.find_element(By.TAG_NAME, 'body')
    settle = lambda: wait(lambda: js('return studioPlayer.videos.every(v => !v.seeking && v.readyState >= 2)'), 30, 'videos settled')
    settle()
    f0 = js('return studioPlayer.frameOf(0)')
    body.send_keys('\ue014')  # →
    settle()
    if js('return studioPlayer.frameOf(0)') != f0 + 1:
        fail(f'→ went from frame {f0} to {js("return studioPlayer.frameOf(0)")}')
    body.send_keys('\ue012')  # ←
    settle()
    if js('return studioPlayer.frameOf(0)') != f0:
        fail('← did not step back')
    body.send_keys('\ue011')  # Home
    settle()
    home = js('return studioPlayer.T')
    body.send_keys('\ue010')  # End
    settle()
    end = js('return studioPlayer.T')
    if not (home < -0.5 and end > 0.5):
        fail(f'Home went to T={home:.3f} s, End to T={end:.3f} s')
    body.send_keys('\ue011')  # Home again: play from the start
    settle()
    body.send_keys('l')
    wait(lambda: js('return studioPlayer.playing'), 10, 'L plays')
    body.send_keys('k')
    wait(lambda: not js('return studioPlayer.playing'), 10, 'K pauses')
    step(f'keys: → ← a frame, Home T={home:.2f} s, End T={end:.2f} s, L plays, K pauses')

    # 4. Notes kept as typed; [ and ] between the lesson's swings.
    notes = driver.find_element(By.ID, 'notes')
    notes.send_keys('trail elbow tucks')
    wait(lambda: driver.find_element(By.ID, 'notes-status').text == 'saved', 20, 'notes saved as typed')
    driver.find_element(By.ID, 'flag-starred').click()
    wait(lambda: main('flags') == 'starred', 20, 'starred')
    body.send_keys(']')
    wait(lambda: driver.current_url.endswith('/swing/' + ana[1]), 20, '] opens the next swing of the lesson')
    ready('swing')
    if 'swing 2 of 2' not in driver.find_element(By.ID, 'swing-title').text:
        fail('second swing heading: ' + driver.find_element(By.ID, 'swing-title').text)
    shot('swing')
    # 5. Discarded: it leaves the list until asked for.
    driver.find_element(By.ID, 'flag-discarded').click()
    wait(lambda: main('flags') == 'discarded', 20, 'discarded')
    driver.find_element(By.TAG_NAME, 'body').send_keys('[')
    wait(lambda: driver.current_url.endswith('/swing/' + ana[0]), 20, '[ opens the one before')
    ready('swing')
    if driver.find_element(By.ID, 'notes').get_attribute('value') != 'trail elbow tucks':
        fail('the notes were not kept: ' + driver.find_element(By.ID, 'notes').get_attribute('value'))
    step('notes kept as typed and there after leaving; [ and ] move through the lesson')

    # Key positions marked with A, T, F on both of Ana's swings: the tempo follows; Compare aligns on top, and overlays
    # one angle on another.
    for sid in ana:
        driver.get(base + '#/swing/' + sid)
        ready('swing')
        settle()
        for T, key, name in [(-0.9, 'a', 'address'), (-0.3, 't', 'top'), (0.5, 'f', 'finish')]:
            js(f'studioPlayer.seek({T})')
            settle()
            driver.find_element(By.TAG_NAME, 'body').send_keys(key)
            wait(lambda: 'on' in driver.find_element(By.ID, 'mark-' + name).get_attribute('class').split(), 20, f'{name} marked')
        wait(lambda: main('tempo') and abs(float(main('tempo')) - 2.0) < 0.05, 20, 'tempo 2 : 1')
    tempo_text = driver.find_element(By.ID, 'tempo').text
    step(f'key positions marked with A T F on both swings: {tempo_text!r}')

    # Drawing a coach expects, on Ana's second swing (its last page open): every tool, a colour, a line for the whole
    # clip; one picked up and moved, one deleted; undo and redo after a reload.
    def point_at(x, y):
        return js(f'''const m = studioMeasure, c = m.canvases[0], r = c.getBoundingClientRect(), b = m.box(0);
                      return [(b.x + {x} * b.w) / c.width * r.width + r.left, (b.y + {y} * b.h) / c.height * r.height + r.top];''')

    def click_at(x, y):
        px, py = point_at(x, y)
        js(f"studioMeasure.canvases[0].dispatchEvent(new MouseEvent('click', {{clientX: {px}, clientY: {py}, bubbles: true}}))")

    def pointer(kind, x, y):
        px, py = point_at(x, y)
        js(f"studioMeasure.canvases[0].dispatchEvent(new PointerEvent('{kind}', {{clientX: {px}, clientY: {py}, bubbles: true, pointerId: 7}}))")

    def drawn():
        return api(f"/api/clips/{js('return studioMeasure.angles[0].clipId')}/drawings")['drawings']

    js('studioPlayer.seek(0)')
    settle()
    driver.find_element(By.ID, 'measure-whole').click()
    driver.find_element(By.ID, 'measure-line').click()
    click_at(0.5, 0.05)
    click_at(0.5, 0.95)
    wait(lambda: js('return studioMeasure.canvases[0].dataset.saved') == '1', 20, 'the whole-clip line kept')
    driver.find_element(By.ID, 'measure-whole').click()
    driver.find_element(By.ID, 'measure-angle').click()
    for x, y in [(0.2, 0.5), (0.3, 0.5), (0.3, 0.4)]:
        click_at(x, y)
    wait(lambda: js('return studioMeasure.canvases[0].dataset.saved') == '2', 20, 'the angle kept')
    js("const c = document.getElementById('measure-color'); c.value = '#ff0000'; c.dispatchEvent(new Event('input'))")
    driver.find_element(By.ID, 'measure-circle').click()
    click_at(0.7, 0.3)
    click_at(0.75, 0.3)
    wait(lambda: js('return studioMeasure.canvases[0].dataset.saved') == '3', 20, 'the circle kept')
    driver.find_element(By.ID, 'measure-arrow').click()
    click_at(0.1, 0.8)
    click_at(0.25, 0.7)
    wait(lambda: js('return studioMeasure.canvases[0].dataset.saved') == '4', 20, 'the arrow kept')
    driver.find_element(By.ID, 'measure-text').click()
    click_at(0.6, 0.8)
    WebDriverWait(driver, 10).until(EC.alert_is_present(), 'the words asked for')
    driver.switch_to.alert.send_keys('head still')
    driver.switch_to.alert.accept()
    wait(lambda: js('return studioMeasure.canvases[0].dataset.saved') == '5', 20, 'the text kept')
    driver.find_element(By.ID, 'measure-freehand').click()
    pointer('pointerdown', 0.4, 0.6)
    for k in range(1, 11):
        pointer('pointermove', 0.4 + 0.02 * k, 0.6 + 0.01 * k)
    pointer('pointerup', 0.6, 0.7)
    wait(lambda: js('return studioMeasure.canvases[0].dataset.saved') == '6', 20, 'the stroke kept')
    kinds = [d['kind'] for d in drawn()]
    if kinds != ['line', 'angle', 'circle', 'arrow', 'text', 'freehand']:
        fail(f'drawings kept: {kinds}')
    d = drawn()
    if d[0].get('span') != 'clip' or d[2].get('color') != '#ff0000' or d[4].get('text') != 'head still' or len(d[5]['points']) < 10:
        fail(f'what was kept: {d}')
    shot('drawings')
    # A second away from its frame only the whole-clip line is still drawn.
    js('studioPlayer.seek(1.0)')
    settle()
    wait(lambda: js('return studioMeasure.canvases[0].dataset.labels').startswith('line') and ';' not in js('return studioMeasure.canvases[0].dataset.labels'), 20, 'the whole-clip line alone, 1 s away')
    js('studioPlayer.seek(0)')
    settle()
    # Picked up and moved; another picked up and deleted.
    driver.find_element(By.ID, 'measure-select').click()
    pointer('pointerdown', 0.7, 0.3)
    pointer('pointermove', 0.75, 0.35)
    pointer('pointermove', 0.8, 0.4)
    pointer('pointerup', 0.8, 0.4)
    wait(lambda: abs(drawn()[2]['points'][0][0] - 0.8) < 0.01 and abs(drawn()[2]['points'][0][1] - 0.4) < 0.01, 20, 'the circle moved')
    pointer('pointerdown', 0.175, 0.75)
    pointer('pointerup', 0.175, 0.75)
    if js('return studioMeasure.canvases[0].dataset.selected') != '3':
        fail('the arrow was not picked up: ' + str(js('return studioMeasure.canvases[0].dataset.selected')))
    driver.find_element(By.TAG_NAME, 'body').send_keys('\ue017')  # Delete
    wait(lambda: [x['kind'] for x in drawn()] == ['line', 'angle', 'circle', 'text', 'freehand'], 20, 'the arrow deleted')
    # Undo and redo outlast a reload.
    driver.refresh()
    ready('swing')
    driver.find_element(By.ID, 'measure-undo').click()
    wait(lambda: [x['kind'] for x in drawn()] == ['line', 'angle', 'circle', 'arrow', 'text', 'freehand'], 20, 'undo after a reload: the arrow back')
    driver.find_element(By.ID, 'measure-redo').click()
    wait(lambda: len(drawn()) == 5, 20, 'redo: deleted again')
    step('drawing: line (whole clip), angle, circle in red, arrow, text, freehand kept; the line alone 1 s away; one moved, one deleted; undo and redo after a reload')
    driver.get(base + f'#/compare/{ana[0]}/{ana[1]}?on=top')
    ready('compare')
    if main('alignedOn') != 'top':
        fail(f'compare aligned on {main("alignedOn")}, not top')
    settle()
    r = js('return {t: studioPlayer.videos.map(v => v.currentTime), off: studioPlayer.offsets, fps: studioPlayer.fps}')
    for side, sid in enumerate(ana):
        detail = api(f'/api/swings/{sid}')
        angle = next(x for x in detail['angles'] if x['clipId'] == js(f'return studioPlayer.videos[{side}].dataset.clip'))
        want = angle['impactSeconds'] + detail['positions']['top']
        if abs(r['off'][side] - want) > 1e-6 or abs(r['t'][side] - want) > 1 / r['fps'][side]:
            fail(f'side {side}: offset {r["off"][side]:.4f}, shown {r["t"][side]:.4f}, its top at {want:.4f} s')
    step('Compare: both swings at their top')
    driver.get(base + f'#/compare/{ana[0]}/{ana[1]}?left=face&right=dtl&overlay=0.5')
    ready('compare')
    settle()
    wait(lambda: js("return Number(document.getElementById('overlay-canvas').dataset.drawn || 0) > 2"), 20, 'overlay drawn')
    # The overlay is the left frame with the right one at half opacity over it: where the two differ, its pixels are
    # their mean — both swings are in the picture.
    blend = js('''const [l, r] = studioPlayer.videos, c = document.getElementById('overlay-canvas');
        studioOverlay.draw();
        const one = v => { const k = document.createElement('canvas'); k.width = c.width; k.height = c.height;
          const x = k.getContext('2d'); x.drawImage(v, 0, 0, k.width, k.height); return x.getImageData(0, 0, k.width, k.height).data; };
        const L = one(l), R = one(r), O = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let differ = 0, mean = 0;
        for (let i = 0; i < O.length; i += 4) if (Math.abs(L[i] - R[i]) > 60) { differ++; if (Math.abs(O[i] - (L[i] + R[i]) / 2) <= 8) mean++; }
        return [differ, mean];''')
    if blend[0] < 50 or blend[1] < 0.9 * blend[0]:
        fail(f'overlay: {blend[0]} pixels where the two angles differ, {blend[1]} of them their mean')
    shot('overlay')
    step(f'overlay: the right angle at half opacity over the left ({blend[1]} of {blend[0]} differing pixels their mean)')
    # 5. Something to send: an export of Ana's second swing (the one drawn on): its two angles side by side, slowed around the impact, its drawings
    # burned in, with sound — made by the host while the page waits on its progress; judged by ffprobe and ffmpeg.
    driver.get(base + f'#/swing/{ana[1]}')
    ready('swing')
    # A tag typed on the swing; Swings then filters on it.
    tag_field = driver.find_element(By.ID, 'tag-add')
    tag_field.send_keys('Driver')
    tag_field.send_keys('\ue007')  # Enter
    wait(lambda: main('tags') == 'Driver', 20, 'the tag kept')
    driver.get(base + '#/swings?discarded=show')  # (this swing was discarded above)
    ready('swings')
    Select(driver.find_element(By.ID, 'filter-tag')).select_by_value('Driver')
    wait(lambda: rows_of('data-swing') == [ana[1]], 20, 'Swings filtered by the tag')
    step('a tag typed on a swing; Swings filters on it')
    driver.get(base + f'#/swing/{ana[1]}')
    ready('swing')
    detail = api(f'/api/swings/{ana[1]}')
    for id_, v in [('export-from', '-0.2'), ('export-to', '0.2')]:
        f = driver.find_element(By.ID, id_)
        f.clear()
        f.send_keys(v)
    Select(driver.find_element(By.ID, 'export-speed')).select_by_value('0.25')
    driver.find_element(By.ID, 'export-make').click()
    wait(lambda: js("const e = document.querySelector('#export-state .export-status'); return e && e.dataset.state") == 'done', 180, 'the export made')
    href = js("return document.querySelector('#export-state .export-download').getAttribute('href')")
    mp4 = os.path.join(work, 'export.mp4')
    with urllib.request.urlopen(base.rstrip('/') + href, timeout=30) as r, open(mp4, 'wb') as f:
        f.write(r.read())
    probe = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_type,width,height:format=duration', '-of', 'json', mp4],
                                      check=True, capture_output=True).stdout)
    video = next(x for x in probe['streams'] if x['codec_type'] == 'video')
    widths = [int(a['captureProfile'].split('x')[0]) for a in detail['angles']]
    if video['width'] != sum(widths) or video['height'] != 180:
        fail(f"export {video['width']}x{video['height']}: not the angles {widths} side by side at 180")
    if not any(x['codec_type'] == 'audio' for x in probe['streams']):
        fail('export: no sound track, though the clips have one')
    before = min(a['impactSeconds'] for a in detail['angles'])
    after = min(a['durationSeconds'] - a['impactSeconds'] for a in detail['angles'])
    want = before + after + 0.4 * 3  # 0.4 s played at ¼×
    got = float(probe['format']['duration'])
    if abs(got - want) > 0.2:
        fail(f'export lasts {got:.2f} s, not the {want:.2f} s its slowed span makes')
    # The whole-clip line drawn on an angle: its pixels in the export's frame, in the studio's yellow.
    lined = None
    for i, a in enumerate(detail['angles']):
        lines = [d for d in api(f"/api/clips/{a['clipId']}/drawings")['drawings'] if d['kind'] == 'line' and d.get('span') == 'clip']
        if lines:
            lined = (i, lines[0])
            break
    if not lined:
        fail('no whole-clip line to look for')
    i, line = lined
    (x0, y0), (x1, y1) = line['points']
    left = sum(widths[:i])
    # A fifth of the way along it (away from the synthetic club, white, that stands in the middle of the frame).
    px, py = left + round((x0 + 0.2 * (x1 - x0)) * widths[i]), round((y0 + 0.2 * (y1 - y0)) * 180)
    raw = subprocess.run(['ffmpeg', '-v', 'error', '-ss', '0.3', '-i', mp4, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'],
                         check=True, capture_output=True).stdout
    W = video['width']
    near = [raw[((py + dy) * W + px + dx) * 3:((py + dy) * W + px + dx) * 3 + 3] for dx in range(-3, 4) for dy in range(-3, 4)]
    # Yellow (#ffd23f) over the dark scene, its colour spread by H.264's 4:2:0 over the thin line: red and green well above
    # blue. Twelve pixels away, none of it.
    yellow = lambda c: c[0] > 120 and c[1] > 100 and c[0] - c[2] > 50 and c[1] - c[2] > 40
    beside = raw[(py * W + px + 12) * 3:(py * W + px + 12) * 3 + 3]
    if not any(yellow(c) for c in near) or yellow(beside):
        fail(f'the drawn line is not in the export at ({px}, {py}): {[tuple(c) for c in near[21:28]]}, beside it {tuple(beside)}')
    shot('export')
    step(f'export: {video["width"]}x{video["height"]}, both angles side by side, {got:.2f} s (¼× over 0.4 s), sound, the drawn line burned in')
    # A share link to the swing, opened on a phone: plays its angles, with the coach's notes (asked for by ticking "with
    # my notes"); refused for another swing's clip, after revocation and after its expiry.
    api(f'/api/swings/{ana[1]}/annotate', 'POST', {'notes': 'Hold the finish <b>2 s</b>'})
    driver.find_element(By.CSS_SELECTOR, '.share .share-notes').click()
    driver.find_element(By.CSS_SELECTOR, '.share-make[data-kind="swing"]').click()
    wait(lambda: find('.share-url'), 20, 'the link shown')
    link = find('.share-url')[0].get_attribute('value')
    key = link.rsplit('/', 1)[1]
    driver.set_window_size(390, 844)
    driver.get(link)
    wait(lambda: js("return document.querySelectorAll('section.swing video').length") == len(detail['angles']), 20, 'the shared swing on the phone')
    wait(lambda: js("return [...document.querySelectorAll('section.swing video')].every(v => v.readyState >= 2)"), 30, 'its videos loaded')
    # What the coach drew is drawn there too (the whole-clip line), and each angle says which camera it is.
    wait(lambda: js("return [...document.querySelectorAll('section.swing canvas')].some(c => Number(c.dataset.drawn || 0) >= 1)"), 20,
         'the drawings on the shared swing')
    # The notes as typed, shown as text (never read as markup).
    said = js("const n = document.querySelector('section.swing .notes'); return n ? [n.textContent, n.querySelectorAll('b').length] : null")
    if said != ['Hold the finish <b>2 s</b>', 0]:
        fail(f'the shared swing shows the notes as {said}')
    labels = js("return [...document.querySelectorAll('section.swing .label')].map(l => l.textContent)")
    if sorted(labels) != sorted(a['device'] for a in detail['angles']):
        fail(f'the shared swing names its cameras {labels}')
    over = js("const w = document.documentElement.clientWidth; return [document.documentElement.scrollWidth - w, "
              "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > w + 1).length]")
    if over[0] > 0 or over[1] > 0:
        fail(f'the share page at 390×844: {over[0]} px past the right edge, {over[1]} elements')
    shot('share-phone')
    other = api(f'/api/swings/{ana[0]}')['angles'][0]['clipId']
    try:
        urllib.request.urlopen(f"{base.rstrip('/')}/share/{key}/media/{other}/clip.mp4", timeout=10)
        fail('a swing link served another swing\'s clip')
    except urllib.error.HTTPError as e:
        if e.code != 403:
            fail(f'another swing through the link: {e.code}, not 403')
    driver.set_window_size(1400, 1000)
    driver.get(base + '#/exports')
    ready('exports')
    share_id = next(sh['id'] for sh in api('/api/shares')['shares'] if sh['key'] == key)
    driver.find_element(By.CSS_SELECTOR, f'tr[data-share="{share_id}"] button.revoke').click()
    WebDriverWait(driver, 10).until(EC.alert_is_present(), 'revoking asks first')
    driver.switch_to.alert.accept()
    wait(lambda: js(f"const r = document.querySelector('tr[data-share=\"{share_id}\"]'); return r && r.dataset.state") == 'revoked', 20, 'revoked')
    driver.get(link)
    wait(lambda: 'withdrawn' in js("const r = document.getElementById('refused'); return r ? r.textContent : ''"), 20, 'the revoked link refused')
    brief = api('/api/shares', 'POST', {'kind': 'swing', 'target': ana[1], 'hours': 0.0005})  # 1.8 s
    wait(lambda: next(sh['state'] for sh in api('/api/shares')['shares'] if sh['id'] == brief['id']) == 'expired', 30, 'the brief link expired')
    driver.get(base.rstrip('/') + brief['url'])
    wait(lambda: 'expired' in js("const r = document.getElementById('refused'); return r ? r.textContent : ''"), 20, 'the expired link refused')
    step('share link: opens the swing at 390×844 with the notes asked for, refused for another swing\'s clip, after revocation and after expiry')
    driver.get(base + '#/swings?student=ana-ruiz')
    ready('swings')
    wait(lambda: rows_of('data-swing') == [ana[0]], 20, 'the discarded swing hidden')
    driver.find_element(By.ID, 'filter-discarded').click()
    wait(lambda: len(find('.swing-row')) == 2, 20, 'shown when asked for')
    step('a discarded swing is hidden until "show discarded"')
    # "Not a swing": discarded, and labelled for the detector's corpus.
    driver.get(base + '#/swing/' + by['ben-hogan'][0])
    ready('swing')
    driver.find_element(By.ID, 'flag-not-a-swing').click()
    wait(lambda: main('flags') == 'discarded,not-a-swing', 20, 'not a swing')
    if api(f"/api/swings/{by['ben-hogan'][0]}")['flags'] != ['discarded', 'not-a-swing']:
        fail('not a swing was not kept')
    step('"Not a swing" discards the swing and labels it for the corpus')

    # Delete asks; for a starred swing it asks again, and no is no.
    driver.get(base + '#/swing/' + ana[0])
    ready('swing')
    driver.find_element(By.ID, 'delete-swing').click()
    WebDriverWait(driver, 10).until(EC.alert_is_present(), 'delete asks')
    driver.switch_to.alert.accept()
    WebDriverWait(driver, 10).until(EC.alert_is_present(), 'asked again: starred')
    again = driver.switch_to.alert.text
    driver.switch_to.alert.dismiss()
    if 'starred' not in again:
        fail(f'the second question does not say it is starred: {again!r}')
    if ana[0] not in [s['id'] for s in api('/api/swings')['swings']]:
        fail('a starred swing was deleted though the coach said no')
    driver.get(base + '#/swing/' + ana[1])
    ready('swing')
    driver.find_element(By.ID, 'delete-swing').click()
    WebDriverWait(driver, 10).until(EC.alert_is_present(), 'delete asks')
    driver.switch_to.alert.accept()
    wait(lambda: ana[1] not in [s['id'] for s in api('/api/swings')['swings']], 20, 'deleted')
    step(f'delete asked, asked again for the starred swing ({again!r}), and removed the discarded one')

    # Touch (emulated): a finger drags along the scrubber to scrub; two fingers pinch the session's timeline to zoom it.
    driver.execute_cdp_cmd('Emulation.setTouchEmulationEnabled', {'enabled': True, 'maxTouchPoints': 5})
    touch = lambda kind, points: driver.execute_cdp_cmd('Input.dispatchTouchEvent', {'type': kind, 'touchPoints': [{'x': x, 'y': y} for x, y in points]})
    driver.get(base + '#/swing/' + ana[0])
    ready('swing')
    settle()
    r = js("const r = document.getElementById('scrub').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]")
    y = r[1] + r[3] / 2
    touch('touchStart', [(r[0] + 0.1 * r[2], y)])
    before = js('return studioPlayer.T')
    for f in [0.3, 0.5, 0.7, 0.9]:
        touch('touchMove', [(r[0] + f * r[2], y)])
    touch('touchEnd', [])
    settle()
    after = js('return studioPlayer.T')
    if not after > before + 0.5:
        fail(f'a finger along the scrubber went from T={before:.2f} to T={after:.2f} s')
    sess = next(x for x in api('/api/sessions')['sessions'] if x['device'] == 'face')
    driver.get(base + f"#/session/face/{sess['sessionId']}")
    ready('session')
    r = js("const r = document.getElementById('timeline').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]")
    cx, cy = r[0] + r[2] / 2, r[1] + r[3] / 2
    span0 = float(js("return document.getElementById('timeline').dataset.span"))
    touch('touchStart', [(cx - 20, cy), (cx + 20, cy)])
    for d in [40, 80, 120]:
        touch('touchMove', [(cx - d, cy), (cx + d, cy)])
    touch('touchEnd', [])
    span1 = float(js("return document.getElementById('timeline').dataset.span"))
    zoom = js('return window.visualViewport.scale')
    if not span1 < span0 / 3 or zoom != 1:
        fail(f'a pinch: the timeline showed {span0:.2f} s, then {span1:.2f} s; the page scale {zoom}')
    driver.execute_cdp_cmd('Emulation.setTouchEmulationEnabled', {'enabled': False})
    step(f'touch: a finger scrubbed from T={before:.2f} to {after:.2f} s; a pinch zoomed the timeline from {span0:.1f} s to {span1:.1f} s, not the page')

    # 6. A phone: nothing past the right edge; opened with no address and no camera connected: Swings.
    driver.set_window_size(390, 844)
    for page in ['#/swings', '#/swing/' + ana[0], '#/sessions', '#/exports']:  # noqa: the drawings bar wraps
        driver.get(base + page)
        ready(page.split('/')[1])
        over = js("""const w = document.documentElement.clientWidth; return [document.documentElement.scrollWidth - w,
                   [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > w + 1).length]""")
        if over[0] > 0 or over[1] > 0:
            fail(f'{page} at 390×844: {over[0]} px past the right edge, {over[1]} elements')
    shot('phone')
    driver.get(base)
    wait(lambda: driver.current_url.endswith('#/swings'), 20, 'opened on Swings')
    ready('swings')
    step('at 390×844 nothing past the right edge; opened without an address, the studio shows Swings')
    # 409: a starred swing's delete asked again; 410: the revoked and expired links, refused as they should be.
    logs = [l for l in driver.get_log('browser') if l['level'] == 'SEVERE' and '409' not in l['message'] and '410 (Gone)' not in l['message']]
    if logs:
        fail(f'the browser logged errors: {logs}')
    print('PASS', flush=True)
except Exception as e:
    if driver:
        driver.save_screenshot(os.path.join(args.out, 'library-failure.png'))
    for p in procs:
        print(f'--- {p.name} (last lines)\n' + '\n'.join(p.lines[-25:]))
    fail(f'{type(e).__name__}: {e}')
finally:
    if driver:
        driver.quit()
    for p in procs:
        p.stop()
