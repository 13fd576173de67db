// ppc Studio: Live, Swings (a swing's angles in sync on the host clock), Compare, Sessions. Plain JS, no build step;
// every page reads the JSON API (docs/studio.md) and live state arrives over one WebSocket, never by polling.
'use strict';

const $ = (sel, root = document) => root.querySelector(sel);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
};
const api = async (path, opts) => {
  const r = await fetch(path, opts);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || `${path}: HTTP ${r.status}`);
  return body;
};
const fmtNs = ns => {
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
  if (a >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
  if (a >= 1e3) return (ns / 1e3).toFixed(1) + ' µs';
  return ns + ' ns';
};
const fmtBytes = b => b >= 1e9 ? (b / 1e9).toFixed(1) + ' GB' : b >= 1e6 ? (b / 1e6).toFixed(1) + ' MB' : Math.round(b / 1e3) + ' kB';
const fmtWhen = iso => iso ? new Date(iso).toLocaleString() : '—';
// A coach's words for a time: "Fri 4:53:07 PM" (today: the time alone).
// (Its formatters are made once: a list of a hundred swings made two hundred of them, a tenth of a second's work.)
const clockParts = { day: new Intl.DateTimeFormat(undefined, { weekday: 'short', month: 'short', day: 'numeric' }),
  time: new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', second: '2-digit' }) };
const fmtClock = iso => {
  if (!iso) return '—';
  const d = new Date(iso), today = new Date().toDateString() === d.toDateString();
  return (today ? '' : clockParts.day.format(d) + ' ') + clockParts.time.format(d);
};
const jsonBody = (method, body) => ({ method, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

// ---------------------------------------------------------------- live state over the WebSocket

const live = { devices: [], latestClip: null, listeners: new Set() };
function connectSocket() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);  // behind a TLS proxy: wss
  ws.binaryType = 'arraybuffer';
  const badge = $('#socket');
  ws.onopen = () => { badge.textContent = 'live'; badge.classList.add('up'); };
  ws.onclose = () => {
    badge.textContent = 'reconnecting…'; badge.classList.remove('up');
    setTimeout(connectSocket, 1000); // a reconnect after the host restarts, not a poll
  };
  ws.onmessage = ev => {
    if (typeof ev.data !== 'string') return preview(new Uint8Array(ev.data));
    const m = JSON.parse(ev.data);
    if (m.type === 'devices') live.devices = m.devices;
    if (m.type === 'clip') live.latestClip = m;
    for (const f of live.listeners) f(m);
  };
  ws.onopen = () => {
    badge.textContent = 'live'; badge.classList.add('up');
    for (const f of live.listeners) f({ type: 'reconnected' });  // a page that missed messages while away catches up
  };
}

// A preview frame: "P", u16 width, u16 height, u8 id length, id, luma.
function preview(b) {
  if (b[0] !== 0x50) return;
  const w = b[1] | b[2] << 8, h = b[3] | b[4] << 8, n = b[5];
  const id = new TextDecoder().decode(b.subarray(6, 6 + n));
  const canvas = document.querySelector(`canvas.preview[data-device="${CSS.escape(id)}"]`);
  if (!canvas) return;
  canvas.width = w; canvas.height = h;
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(w, h);
  const luma = b.subarray(6 + n);
  for (let i = 0; i < w * h; i++) { const v = luma[i]; img.data[4 * i] = v; img.data[4 * i + 1] = v; img.data[4 * i + 2] = v; img.data[4 * i + 3] = 255; }
  ctx.putImageData(img, 0, 0);
}

// ---------------------------------------------------------------- router

const pages = { live: pageLive, swings: pageSwings, swing: pageSwing, compare: pageCompare, sessions: pageSessions, session: pageSession, bay: pageBay, exports: pageExports };
let teardown = null;
async function route() {
  if (teardown) { teardown(); teardown = null; }
  live.listeners.clear();
  if (!location.hash) {
    // Opened without an address: a coach with swings and no camera connected wants the swings, not an empty Live page.
    const [d, w] = await Promise.all([api('/api/devices').catch(() => ({ devices: [] })), api('/api/swings?limit=1').catch(() => ({ swings: [] }))]);
    if (!d.devices.some(x => x.link === 'connected') && w.swings.length) { location.replace('#/swings'); return; }
  }
  const parts = (location.hash || '#/live').slice(2).split('?')[0].split('/').map(decodeURIComponent);
  const name = pages[parts[0]] ? parts[0] : 'live';
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.page === name || (name === 'swing' && a.dataset.page === 'swings') || (name === 'session' && a.dataset.page === 'sessions'));
  const main = $('#main');
  delete main.dataset.ready;  // set again by the new page once it is ready: never the last page's word
  main.replaceChildren();
  main.dataset.page = name;
  document.body.classList.toggle('bay-screen', name === 'bay');
  try { await pages[name](main, parts.slice(1)); } catch (e) { main.append(el('p', { class: 'error' }, String(e.message || e))); }
  // When the page is first painted, from navigation start (what `ppc-tool bench studio` reads in chromium).
  requestAnimationFrame(() => { window.studioPainted = window.studioPainted || { page: name, ms: performance.now() }; });
}
window.addEventListener('hashchange', route);
window.addEventListener('DOMContentLoaded', () => { connectSocket(); route(); });

// ---------------------------------------------------------------- Live


async function pageLive(main) {
  main.append(el('h1', {}, 'Live'));
  const latest = el('div', { class: 'latest', id: 'latest', hidden: '' });
  const hitting = el('div', { class: 'hitting', id: 'hitting' });
  const cards = el('div', { class: 'cards', id: 'devices' });
  main.append(latest, hitting, cards);
  await nowHitting(hitting);
  const render = () => {
    const seen = new Set();
    for (const d of live.devices) {
      seen.add(d.id);
      let card = cards.querySelector(`[data-device="${CSS.escape(d.id)}"]`);
      if (!card) {
        card = el('div', { class: 'card', 'data-device': d.id },
          el('h3', {}, el('span', {}, d.id), el('span', { class: 'badge link' })),
          el('dl', { class: 'kv' }),
          el('canvas', { class: 'preview', 'data-device': d.id, width: 16, height: 9 }));
        cards.append(card);
      }
      const badge = card.querySelector('.badge.link');
      badge.textContent = d.link; badge.className = 'badge link ' + d.link;
      card.dataset.link = d.link;
      const s = d.status;
      const rel = d.relation;
      const rows = [
        ['Clock', rel ? `linked to this host, ±${(rel.uncertaintyNs / 1e6).toFixed(2)} ms` : 'not linked yet'],
        ['Armed', s ? (s.armed ? 'armed' : 'not armed') : '—'],
        ['Frame rate', s ? `${s.framesPerSecond.toFixed(1)} fps` : '—'],
        ['Dropped', s ? String(s.framesDropped) : '—'],
        ['Thermal', s ? `${s.thermal}${s.thermalCelsius != null ? ` (${s.thermalCelsius.toFixed(0)} °C)` : ''}` : '—'],
        ['Storage free', s ? fmtBytes(s.storageFreeBytes) : '—'],
        ['Bay', d.bay ? `${d.bay}${d.hears === false ? ' (no microphone: its bay-mates\' shots are relayed to it)' : ''}` : 'none set'],
        ['Profile', d.captureProfile || '—'],
        ['Last shot', d.lastShotAgoNs != null ? `${(d.lastShotAgoNs / 1e9).toFixed(1)} s ago` : d.lastShotDeviceNs != null ? 'heard' : 'none yet'],
      ];
      const dl = card.querySelector('dl');
      dl.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', { 'data-field': k }, v)]));
    }
    for (const c of [...cards.children]) if (!seen.has(c.dataset.device)) c.remove();
    if (!live.devices.length) cards.replaceChildren(el('p', { class: 'muted', id: 'no-devices' }, 'No device has connected since this host started.'));
    else $('#no-devices', cards)?.remove();
  };
  const showLatest = m => {
    latest.hidden = false;
    latest.replaceChildren('Latest clip from ', el('b', {}, m.device), ': ', el('a', { href: '#/swing/' + encodeURIComponent(m.swingId || m.clipId), id: 'latest-link' }, 'replay the swing'));
  };
  render();
  if (live.latestClip) showLatest(live.latestClip);
  live.listeners.add(m => {
    if (m.type === 'devices') render();
    if (m.type === 'shot') {
      const card = cards.querySelector(`[data-device="${CSS.escape(m.device)}"]`);
      if (card) { card.classList.remove('flash'); void card.offsetWidth; card.classList.add('flash'); card.dataset.shots = String(Number(card.dataset.shots || 0) + 1); }
    }
    if (m.type === 'clip') showLatest(m);
  });
  main.dataset.ready = 'yes';
}

// Who is hitting at each bay: every swing of the bay from now on is theirs (PUT /api/hitting). A new student is added
// by name here, without leaving the bay.
async function nowHitting(box) {
  const [{ bays }, roster] = await Promise.all([api('/api/bays').catch(() => ({ bays: [] })), api('/api/students').catch(() => null)]);
  if (!roster) { box.remove(); return; }
  const places = bays.length ? bays.map(b => b.name) : [null];
  const render = (r) => {
    box.replaceChildren(el('h2', {}, 'Now hitting'), ...places.map(bay => {
      const now = r.hitting.find(h => (h.bay ?? null) === bay);
      const select = el('select', { 'data-bay': bay ?? '', class: 'hitting-student', onchange: async e => {
        if (e.target.value === '+') {
          const name = prompt('The new student\'s name');
          if (!name) { e.target.value = now?.student ?? ''; return; }
          try {
            const s = await api('/api/students', jsonBody('POST', { name }));
            render(await api('/api/hitting', jsonBody('PUT', { bay, student: s.id })));
          } catch (err) { box.append(el('p', { class: 'error' }, err.message)); }
          return;
        }
        render(await api('/api/hitting', jsonBody('PUT', { bay, student: e.target.value || null })));
      } }, el('option', { value: '' }, 'nobody'), ...r.students.map(st => el('option', { value: st.id }, st.name)), el('option', { value: '+' }, 'New student…'));
      select.value = now?.student ?? '';
      return el('label', { class: 'filter' }, `${bay ?? 'This bay'} `, select,
        now?.student ? el('span', { class: 'muted' }, ` since ${fmtClock(now.since)}`) : '');
    }));
    box.dataset.hitting = r.hitting.filter(h => h.student).map(h => `${h.bay ?? ''}=${h.student}`).join(',');
  };
  render(roster);
}

// ---------------------------------------------------------------- Swings

function flagText(flags) {
  return el('span', { class: 'flags' }, flags.includes('starred') ? el('span', { class: 'f' }, '★') : null,
    flags.includes('kept') ? el('span', { class: 'f', style: 'color:var(--ok)' }, 'kept') : null,
    flags.includes('not-a-swing') ? el('span', { class: 'f', style: 'color:var(--bad)' }, 'not a swing')
      : flags.includes('discarded') ? el('span', { class: 'f', style: 'color:var(--bad)' }, 'discarded') : null);
}

// Swings at the scale of a season: a page of the newest (paged further back on request), filtered by bay, device,
// flag and day; each angle a still cut at its impact (an image, not a video element); a swing catalogued while the
// page is open is added to it, or its row updated, without rebuilding the list.
async function pageSwings(main) {
  main.append(el('h1', {}, 'Swings'));
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  const filters = {};
  for (const k of ['bay', 'device', 'flag', 'tag', 'from', 'to', 'student', 'lesson', 'q']) filters[k] = params.get(k) || '';
  // Discarded swings are hidden unless asked for (or the flag filter asks for them).
  filters.discarded = params.get('discarded') === 'show' ? 'show' : 'hide';
  const query = () => Object.entries(filters).filter(([, v]) => v).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
  // The first page and what the filters offer (bays, students, tags) are asked for at once; the rows are painted as soon
  // as their page arrives, the filters when theirs do — a coach sees swings first.
  const url = '/api/swings?limit=100&' + query();
  // The page's address asked for by index.html before this script had loaded, when it is this one.
  const early = window.earlySwings && window.earlySwings.url === url ? window.earlySwings.answer : null;
  window.earlySwings = null;
  const first = early
    ? early.then(a => { if (!a.ok) throw new Error(a.body.error || `${url}: HTTP ${a.status}`); return a.body; })
    : api(url);
  const offered = Promise.all([api('/api/bays').catch(() => ({ bays: [] })), api('/api/students').catch(() => ({ students: [] })),
    api('/api/tags').catch(() => ({ tags: [] }))]);
  const pick = (key, label, options) => el('label', { class: 'filter' }, label + ' ', el('select', { id: 'filter-' + key, onchange: e => { filters[key] = e.target.value; apply(); } },
    [['', 'all'], ...options].map(([v, t]) => { const o = el('option', { value: v }, t); if (v === filters[key]) o.selected = true; return o; })));
  const day = (key, label) => el('label', { class: 'filter' }, label + ' ', el('input', { type: 'date', id: 'filter-' + key, value: filters[key], onchange: e => { filters[key] = e.target.value; apply(); } }));
  let typing = null;
  const search = el('input', { type: 'search', id: 'filter-q', placeholder: 'Search notes, names…', value: filters.q, oninput: e => {
    clearTimeout(typing); typing = setTimeout(() => { filters.q = e.target.value.trim(); apply(); }, 300);
  } });
  const showDiscarded = el('input', { type: 'checkbox', id: 'filter-discarded', onchange: e => { filters.discarded = e.target.checked ? 'show' : 'hide'; apply(); } });
  showDiscarded.checked = filters.discarded === 'show';
  const filterBar = el('div', { class: 'controls filters' }, el('span', { class: 'muted', id: 'swings-total' }));
  main.append(filterBar);
  const offerFilters = ([{ bays }, roster, { tags }]) => {
    const devices = [...new Set([...live.devices.map(d => d.id), ...bays.flatMap(b => b.devices)])].sort();
    filterBar.prepend(
      pick('student', 'Student', [...roster.students.map(st => [st.id, st.name]), ['none', 'no student']]),
      pick('bay', 'Bay', bays.map(b => [b.name, b.name])), pick('device', 'Device', devices.map(d => [d, d])),
      pick('flag', 'Flag', [['starred', '★ starred'], ['kept', 'kept'], ['discarded', 'discarded'], ['none', 'not marked']]),
      tags.length || filters.tag ? pick('tag', 'Tag', tags.map(t => [t.tag, `${t.tag} (${t.swings})`])) : '',
      day('from', 'From'), day('to', 'To'), search, el('label', { class: 'filter' }, showDiscarded, ' show discarded'),
      filters.lesson ? el('a', { href: '#/swings', id: 'filter-lesson' }, 'one lesson ✕') : '');
  };
  const list = el('div', { class: 'swings', id: 'swings' });
  const more = el('button', { id: 'more-swings', hidden: '' }, 'Older swings');
  main.append(list, more);
  let next = null;
  const row = s => el('div', { class: 'swing-row', 'data-swing': s.id, 'data-seq': s.seq ?? '', 'data-student': s.student ?? '', onclick: () => { location.hash = '#/swing/' + encodeURIComponent(s.id); } },
    el('div', { class: 'when' }, el('div', { class: 'who' }, s.studentName || 'no student'), el('div', {}, fmtClock(s.receivedAt)),
      el('div', { class: 'muted' }, `${s.bay ? s.bay + ' · ' : ''}${s.angles.length} angle${s.angles.length > 1 ? 's' : ''}`), flagText(s.flags),
      (s.tags || []).length ? el('div', { class: 'tags' }, s.tags.map(t => el('span', { class: 'tag' }, t))) : ''),
    el('div', { class: 'thumbs' }, s.angles.map(a => el('div', { class: 'thumb' },
      el('img', { src: a.thumb, loading: 'lazy', alt: `${a.device} at impact`, width: 180, height: 101 }),
      el('span', {}, `${a.device} · ${a.captureProfile}`)))));
  let prefetched = first;
  // A filter changed while a page was on its way: that page is dropped (each change starts a generation of its own).
  let generation = 0;
  // A screenful of rows is put in at once and painted; the rest of the page follows after that frame, so the first
  // paint waits on what a screen shows (about 8 rows at 1000 px), not on a hundred.
  const screenful = 20;
  let rest = Promise.resolve();
  const load = async () => {
    const mine = generation;
    await rest;  // the last page's rows are all in first
    const r = prefetched ? await prefetched : await api('/api/swings?limit=100&' + query() + (next ? '&before=' + next : ''));
    if (mine !== generation) return;
    prefetched = null;
    list.append(...r.swings.slice(0, screenful).map(row));
    rest = r.swings.length <= screenful ? Promise.resolve() : new Promise(done => requestAnimationFrame(() => setTimeout(() => {
      if (mine === generation) list.append(...r.swings.slice(screenful).map(row));
      done();
    }, 0)));
    next = r.next;
    more.hidden = next == null;
    $('#swings-total', main).textContent = `${r.total} swing${r.total === 1 ? '' : 's'}`;
    if (!list.children.length) list.append(el('p', { class: 'muted', id: 'no-swings' }, 'No swings yet: clips appear here as devices deliver them.'));
  };
  const apply = () => {
    const q = query();
    history.replaceState(null, '', '#/swings' + (q ? '?' + q : ''));
    generation++;
    list.replaceChildren(); next = null; prefetched = null; load();
  };
  more.addEventListener('click', load);
  await load();
  // Ready (for a person's keys and the tests) once the filters are there too; the page counts as painted now.
  // (A page left before they arrive is not touched: its bar is no longer in the document.)
  // Ready once the page's last rows are in as well.
  Promise.all([offered.then(o => { if (filterBar.isConnected) offerFilters(o); }), rest])
    .finally(() => { if (filterBar.isConnected) main.dataset.ready = 'yes'; });
  // A swing catalogued now: its row is added on top (or, for an angle of a swing listed, updated in place).
  live.listeners.add(async m => {
    if (m.type !== 'clip') return;
    if ((filters.bay && m.bay !== filters.bay) || filters.flag || filters.tag || filters.to || filters.q || filters.lesson) return;  // a new swing is unmarked, untagged, today's, without notes
    const s = await api('/api/swings/' + encodeURIComponent(m.swingId));
    await rest;  // the page's last rows in first: an angle of one of them updates its row, never adds a second
    if (filters.device && !s.angles.some(a => a.device === filters.device)) return;
    if (filters.student && (s.student ?? 'none') !== filters.student) return;
    const summary = { id: s.id, seq: s.seq, bay: s.bay, flags: s.flags, tags: s.tags, student: s.student, studentName: s.studentName, receivedAt: s.receivedAt, angles: s.angles };
    const old = list.querySelector(`[data-swing="${CSS.escape(s.id)}"]`);
    $('#no-swings', list)?.remove();
    if (old) old.replaceWith(row(summary)); else list.prepend(row(summary));
    main.dataset.added = String(Number(main.dataset.added || 0) + 1);
    requestAnimationFrame(() => { (window.rowsAdded = window.rowsAdded || []).push(Date.now()); });
  });
}

// Plays several videos as one: a common timeline T (s, 0 at the swing's impact on the host clock); angle i shows
// video time T + offset[i]. The first angle leads while playing; the others follow it to within a frame.
class SyncPlayer {
  constructor(videos, offsets, fps) {
    this.videos = videos; this.offsets = offsets; this.fps = fps;
    this.rate = 1; this.raf = null; this.audible = true;
    const lead = videos[0];
    lead.addEventListener('play', () => this.follow());
    lead.addEventListener('pause', () => this.align());
    lead.addEventListener('seeked', () => { if (lead.paused) this.align(); });
  }
  get T() { return this.videos[0].currentTime - this.offsets[0]; }
  frameOf(i) { return Math.floor(this.videos[i].currentTime * this.fps[i] + 1e-6); }
  seek(T) { this.videos.forEach((v, i) => { v.currentTime = Math.max(0, T + this.offsets[i]); }); }
  align() { this.seek(this.T); }
  play() { this.videos.forEach(v => { v.playbackRate = this.rate; }); this.sound(); this.align(); this.videos.forEach(v => v.play().catch(() => {})); }
  // The strike is heard at 1× only, from the lead angle: slowed, a browser stretches the sound (pitch kept, smeared
  // past use), so slow motion is muted.
  sound() { this.videos.forEach((v, i) => { v.muted = !(i === 0 && this.rate === 1 && this.audible); }); }
  pause() { this.videos.forEach(v => v.pause()); }
  get playing() { return !this.videos[0].paused; }
  setRate(r) { this.rate = r; this.videos.forEach(v => { v.playbackRate = r; }); this.sound(); }
  step(n) {
    this.pause();
    const f0 = this.fps[0];
    const k = this.frameOf(0) + n;
    this.seek((k + 0.5) / f0 - this.offsets[0]);
  }
  follow() {
    cancelAnimationFrame(this.raf);
    const tick = () => {
      if (!this.playing) return;
      const T = this.T;
      this.videos.forEach((v, i) => {
        if (i === 0) return;
        const want = T + this.offsets[i];
        if (Math.abs(v.currentTime - want) > 1 / this.fps[i]) v.currentTime = want;
        if (v.paused) v.play().catch(() => {});
      });
      this.raf = requestAnimationFrame(tick);
    };
    this.raf = requestAnimationFrame(tick);
  }
  destroy() { cancelAnimationFrame(this.raf); this.pause(); }
}

function transport(player, extra = []) {
  const speeds = [[1, '1×'], [0.5, '½×'], [0.25, '¼×'], [0.125, '⅛×']];
  const playBtn = el('button', { id: 'play', onclick: () => { player.playing ? player.pause() : player.play(); } }, 'Play');
  player.videos[0].addEventListener('play', () => { playBtn.textContent = 'Pause'; });
  player.videos[0].addEventListener('pause', () => { playBtn.textContent = 'Play'; });
  const speedBtns = speeds.map(([r, label]) => el('button', { 'data-rate': r, class: r === 1 ? 'on' : '', onclick: e => {
    player.setRate(r); for (const b of speedBtns) b.classList.toggle('on', b === e.currentTarget);
  } }, label));
  return el('div', { class: 'controls' }, playBtn,
    el('button', { id: 'frame-back', title: 'one frame back (,)', onclick: () => player.step(-1) }, '◀ frame'),
    el('button', { id: 'frame-forward', title: 'one frame forward (.)', onclick: () => player.step(1) }, 'frame ▶'),
    el('button', { id: 'to-impact', onclick: () => { player.pause(); player.seek(0); } }, 'Impact'),
    el('span', { class: 'sep' }), ...speedBtns, el('span', { class: 'sep' }), ...extra);
}

async function drawWaveform(canvas, angle, player, positions = () => ({})) {
  const w = await api(angle.waveform + '?buckets=1200');
  const ctx = canvas.getContext('2d');
  const dur = w.samples * angle.audioSecondsPerSample;
  const xOf = videoTime => (videoTime - angle.audioStartSeconds) / dur * canvas.width;
  const timeOf = x => angle.audioStartSeconds + x / canvas.width * dur;
  const draw = () => {
    canvas.width = canvas.clientWidth * devicePixelRatio; canvas.height = canvas.clientHeight * devicePixelRatio;
    const W = canvas.width, H = canvas.height, mid = H / 2;
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = '#4fb3ff88';
    const peak = Math.max(1e-6, ...w.max, ...w.min.map(Math.abs));
    for (let b = 0; b < w.buckets; b++) {
      const x = b / w.buckets * W;
      const y1 = mid - w.max[b] / peak * mid * 0.95, y2 = mid - w.min[b] / peak * mid * 0.95;
      ctx.fillRect(x, y1, Math.max(1, W / w.buckets), Math.max(1, y2 - y1));
    }
    if (w.impactSample != null) {
      const x = w.impactSample / w.samples * W;
      ctx.fillStyle = '#ef6461'; ctx.fillRect(x - 1, 0, 2, H);
      ctx.font = `${11 * devicePixelRatio}px system-ui`; ctx.fillText('impact', x + 4, 12 * devicePixelRatio);
    }
    // Key positions, where the coach marked them (T from the impact, on the lead angle's video time).
    for (const [key, T] of Object.entries(positions() || {})) {
      if (T == null) continue;
      const x = xOf(T + player.offsets[0]) / canvas.width * W;
      ctx.fillStyle = '#ffd24d'; ctx.fillRect(x - 1, 0, 2, H);
      ctx.font = `${11 * devicePixelRatio}px system-ui`; ctx.fillText(key, x + 4, H - 6 * devicePixelRatio);
    }
    const px = xOf(player.videos[0].currentTime) / canvas.width * W;
    ctx.fillStyle = '#e6e9ec'; ctx.fillRect(px - 1, 0, 2, H);
  };
  // A mouse, a pen or a finger: press and drag to scrub (the page does not scroll under it: touch-action none).
  let dragging = false;
  const scrub = e => { const r = canvas.getBoundingClientRect(); player.pause(); const v = timeOf((e.clientX - r.left) / r.width * canvas.width); player.seek(v - player.offsets[0]); };
  canvas.addEventListener('pointerdown', e => { dragging = true; try { canvas.setPointerCapture(e.pointerId); } catch { /* synthetic */ } scrub(e); });
  canvas.addEventListener('pointerup', () => { dragging = false; });
  canvas.addEventListener('pointercancel', () => { dragging = false; });
  canvas.addEventListener('pointermove', e => { if (dragging) scrub(e); });
  player.videos[0].addEventListener('timeupdate', draw);
  player.videos[0].addEventListener('seeked', draw);
  draw();
  return draw;
}

// Drawing and measuring on the frame, as a coach does in Kinovea: a line (its tilt from the horizontal: a shaft, a
// spine), an angle (three points, the vertex in the middle: a wrist, a knee), a circle (centre, then a point on it: the
// head), an arrow, a text, a freehand stroke — each in a colour, shown near the frame it was drawn on (fading out over
// 0.25 s) or, drawn for the whole clip, all through it (a reference line that stays while the swing plays). Select
// picks one up (click near it): drag moves it, Delete removes it. Kept beside its clip with the states before each
// change (PUT /api/clips/<id>/drawings), so Undo and Redo outlast a reload. Points are fractions of the video frame;
// degrees are measured in the frame's own pixels, whatever size the page shows it at.
class Measure {
  constructor(angles, videos, player, status) {
    this.angles = angles; this.videos = videos; this.player = player; this.status = status;
    this.drawings = angles.map(() => []); this.history = angles.map(() => ({ canUndo: false, canRedo: false }));
    this.tool = null; this.pending = null; this.last = []; this.selected = null; this.color = '#ffd23f'; this.wholeClip = false;
    this.canvases = videos.map((v, i) => {
      const c = el('canvas', { class: 'draw', 'data-draw': i });
      c.addEventListener('click', e => this.click(i, e));
      c.addEventListener('pointerdown', e => this.down(i, e));
      c.addEventListener('pointermove', e => this.move(i, e));
      c.addEventListener('pointerup', e => this.up(i, e));
      v.after(c);
      for (const ev of ['timeupdate', 'seeked', 'loadedmetadata']) v.addEventListener(ev, () => this.draw(i));
      return c;
    });
    this.resize = () => this.videos.forEach((_, i) => this.draw(i));
    window.addEventListener('resize', this.resize);
  }
  static points = { line: 2, arrow: 2, circle: 2, angle: 3, text: 1 };
  async load() {
    await Promise.all(this.angles.map(async (a, i) => {
      try { this.took(i, await api(`/api/clips/${encodeURIComponent(a.clipId)}/drawings`)); }
      catch (e) { this.status.textContent = `drawings of ${a.device}: ${e.message}`; }
      this.draw(i);
    }));
  }
  took(i, r) {
    this.drawings[i] = r.drawings; this.history[i] = { canUndo: r.canUndo, canRedo: r.canRedo };
    if (this.onHistory) this.onHistory();
  }
  use(tool) {
    this.tool = this.tool === tool ? null : tool; this.pending = null;
    if (tool !== 'select') this.selected = null;
    if (this.tool) this.player.pause();
    for (const c of this.canvases) c.classList.toggle('on', !!this.tool);
    const how = { line: 'click two points', arrow: 'click its tail, then its head', circle: 'click its centre, then a point on it',
      angle: 'click three points, the vertex second', text: 'click where the words go', freehand: 'drag to draw',
      select: 'click a drawing to pick it up: drag moves it, Delete removes it' }[this.tool];
    this.status.textContent = this.tool ? `${this.tool}: ${how} on a frame` : '';
    this.videos.forEach((_, i) => this.draw(i));
    if (this.onTool) this.onTool();
  }
  box(i) {  // where the frame is drawn inside the element (object-fit: contain), in canvas pixels
    const v = this.videos[i], c = this.canvases[i];
    const vw = v.videoWidth || 16, vh = v.videoHeight || 9, s = Math.min(c.width / vw, c.height / vh);
    return { x: (c.width - vw * s) / 2, y: (c.height - vh * s) / 2, w: vw * s, h: vh * s, vw, vh };
  }
  at(i, e) {  // the event's place as fractions of the frame, or null outside it
    const c = this.canvases[i], r = c.getBoundingClientRect(), b = this.box(i);
    const px = (e.clientX - r.left) / r.width * c.width, py = (e.clientY - r.top) / r.height * c.height;
    const x = (px - b.x) / b.w, y = (py - b.y) / b.h;
    return x < 0 || x > 1 || y < 0 || y > 1 ? null : [x, y];
  }
  fresh(i, kind, points, text) {
    const d = { kind, t: this.videos[i].currentTime, points, color: this.color };
    if (this.wholeClip) d.span = 'clip';
    if (text) d.text = text;
    return d;
  }
  click(i, e) {
    const n = Measure.points[this.tool];
    if (!n) return;
    const p = this.at(i, e);
    if (!p) return;
    if (!this.pending || this.pending.angle !== i) this.pending = { angle: i, points: [] };
    this.pending.points.push(p);
    if (this.pending.points.length < n) { this.draw(i); return; }
    const points = this.pending.points;
    this.pending = null;
    let text;
    if (this.tool === 'text') { text = (prompt('Words to show on the frame') || '').trim().slice(0, 200); if (!text) { this.draw(i); return; } }
    this.save(i, [...this.drawings[i], this.fresh(i, this.tool, points, text)]);
  }
  // Freehand strokes and moving a picked-up drawing: pointer down, move, up (a mouse, a pen or a finger).
  down(i, e) {
    const p = this.at(i, e);
    if (!p) return;
    if (this.tool === 'freehand') {
      this.stroke = { angle: i, points: [p] };
      try { this.canvases[i].setPointerCapture(e.pointerId); } catch { /* a pointer the page did not see go down */ }
    }
    if (this.tool === 'select') {
      const hit = this.nearest(i, p);
      this.selected = hit == null ? null : { angle: i, index: hit };
      this.drag = hit == null ? null : { angle: i, from: p, original: this.drawings[i][hit].points.map(q => q.slice()), moved: false };
      this.draw(i);
      this.canvases[i].dataset.selected = hit == null ? '' : String(hit);
    }
  }
  move(i, e) {
    const p = this.at(i, e);
    if (!p) return;
    if (this.stroke && this.stroke.angle === i) {
      const q = this.stroke.points[this.stroke.points.length - 1];
      if (Math.hypot(p[0] - q[0], p[1] - q[1]) > 0.004 && this.stroke.points.length < 500) { this.stroke.points.push(p); this.draw(i); }
    }
    if (this.drag && this.drag.angle === i) {
      const dx = p[0] - this.drag.from[0], dy = p[1] - this.drag.from[1];
      const d = this.drawings[i][this.selected.index];
      d.points = this.drag.original.map(([x, y]) => [Math.max(0, Math.min(1, x + dx)), Math.max(0, Math.min(1, y + dy))]);
      this.drag.moved = true;
      this.draw(i);
    }
  }
  up(i) {
    if (this.stroke && this.stroke.angle === i) {
      const pts = this.stroke.points;
      this.stroke = null;
      if (pts.length >= 2) this.save(i, [...this.drawings[i], this.fresh(i, 'freehand', pts)]);
    }
    if (this.drag && this.drag.angle === i) {
      const moved = this.drag.moved;
      this.drag = null;
      if (moved) this.save(i, this.drawings[i]);
    }
  }
  // The shown drawing nearest `p` (within 3 % of the frame), by its points and segments.
  nearest(i, p) {
    let best = null, bestD = 0.03;
    const seg = (a, b) => { const [x1, y1] = a, [x2, y2] = b, L = (x2 - x1) ** 2 + (y2 - y1) ** 2; const t = L ? Math.max(0, Math.min(1, ((p[0] - x1) * (x2 - x1) + (p[1] - y1) * (y2 - y1)) / L)) : 0; return Math.hypot(p[0] - (x1 + t * (x2 - x1)), p[1] - (y1 + t * (y2 - y1))); };
    this.shown(i).forEach(({ d, index }) => {
      let dist = Math.min(...d.points.map(q => Math.hypot(p[0] - q[0], p[1] - q[1])));
      for (let k = 1; k < d.points.length; k++) dist = Math.min(dist, seg(d.points[k - 1], d.points[k]));
      if (d.kind === 'circle') { const r = Math.hypot(d.points[1][0] - d.points[0][0], d.points[1][1] - d.points[0][1]); dist = Math.min(dist, Math.abs(Math.hypot(p[0] - d.points[0][0], p[1] - d.points[0][1]) - r)); }
      if (dist < bestD) { bestD = dist; best = index; }
    });
    return best;
  }
  removeSelected() {
    if (!this.selected) return;
    const { angle, index } = this.selected;
    this.selected = null;
    this.save(angle, this.drawings[angle].filter((_, k) => k !== index));
  }
  async save(i, list) {
    try {
      this.took(i, await api(`/api/clips/${encodeURIComponent(this.angles[i].clipId)}/drawings`, jsonBody('PUT', { drawings: list })));
      this.last = this.last.filter(k => k !== i); this.last.push(i);
      this.status.textContent = '';
    } catch (e) { this.status.textContent = `not kept: ${e.message}`; await this.load(); }
    this.draw(i);
    this.canvases[i].dataset.saved = String(this.drawings[i].length);
  }
  // Undo and redo on the clip last changed (after a reload: the one picked up, else the first that can).
  async step(way) {
    const can = i => way === 'undo' ? this.history[i].canUndo : this.history[i].canRedo;
    const i = [...this.last].reverse().find(can) ?? (this.selected && can(this.selected.angle) ? this.selected.angle : this.history.findIndex((_, k) => can(k)));
    if (i == null || i < 0) { this.status.textContent = `nothing to ${way}`; return; }
    this.selected = null;
    try { this.took(i, await api(`/api/clips/${encodeURIComponent(this.angles[i].clipId)}/drawings/${way}`, jsonBody('POST', {}))); }
    catch (e) { this.status.textContent = e.message; }
    this.draw(i);
    this.canvases[i].dataset.saved = String(this.drawings[i].length);
  }
  static degrees(d, vw, vh) {
    const P = d.points.map(([x, y]) => [x * vw, y * vh]);
    if (d.kind === 'line') {
      let a = Math.abs(Math.atan2(P[0][1] - P[1][1], P[1][0] - P[0][0]) * 180 / Math.PI);
      return a > 90 ? 180 - a : a;
    }
    const u = [P[0][0] - P[1][0], P[0][1] - P[1][1]], w = [P[2][0] - P[1][0], P[2][1] - P[1][1]];
    const n = Math.hypot(...u) * Math.hypot(...w);
    return n > 0 ? Math.acos(Math.max(-1, Math.min(1, (u[0] * w[0] + u[1] * w[1]) / n))) * 180 / Math.PI : 0;
  }
  // The drawings shown now: the whole clip's always, the others within 0.25 s of their frame (fading).
  shown(i) {
    const v = this.videos[i];
    return this.drawings[i].map((d, index) => ({ d, index, dt: d.span === 'clip' ? 0 : Math.abs(d.t - v.currentTime) })).filter(o => o.dt <= 0.25);
  }
  draw(i) {
    const c = this.canvases[i];
    c.width = c.clientWidth * devicePixelRatio; c.height = c.clientHeight * devicePixelRatio;
    const ctx = c.getContext('2d'), b = this.box(i), frame = 1 / (this.angles[i].framesPerSecond || 60), dpr = devicePixelRatio;
    ctx.clearRect(0, 0, c.width, c.height);
    const at = ([x, y]) => [b.x + x * b.w, b.y + y * b.h];
    const labels = [];
    const shown = this.shown(i);
    if (this.pending && this.pending.angle === i) shown.push({ d: { kind: this.tool, points: this.pending.points, color: this.color }, dt: 0, pending: true });
    if (this.stroke && this.stroke.angle === i) shown.push({ d: { kind: 'freehand', points: this.stroke.points, color: this.color }, dt: 0, pending: true });
    for (const { d, dt, pending, index } of shown) {
      ctx.globalAlpha = dt <= frame ? 1 : 1 - dt / 0.25;
      const color = d.color || '#ffd23f', picked = this.selected && this.selected.angle === i && this.selected.index === index;
      ctx.strokeStyle = color; ctx.fillStyle = color; ctx.lineWidth = (picked ? 4 : 2) * dpr;
      const pts = d.points.map(at);
      const text = (t, x, y) => { ctx.font = `${13 * dpr}px system-ui`; ctx.lineWidth = 3 * dpr; ctx.strokeStyle = 'rgba(0,0,0,.7)'; ctx.strokeText(t, x, y); ctx.fillText(t, x, y); };
      if (d.kind === 'circle' && pts.length === 2) {
        ctx.beginPath(); ctx.arc(pts[0][0], pts[0][1], Math.hypot(pts[1][0] - pts[0][0], pts[1][1] - pts[0][1]), 0, 2 * Math.PI); ctx.stroke();
      } else if (d.kind === 'text') {
        if (pts.length && d.text) text(d.text, pts[0][0], pts[0][1]);
      } else {
        ctx.beginPath(); pts.forEach(([x, y], k) => k ? ctx.lineTo(x, y) : ctx.moveTo(x, y)); ctx.stroke();
      }
      if (d.kind === 'arrow' && pts.length === 2) {
        const [[x1, y1], [x2, y2]] = pts, a = Math.atan2(y2 - y1, x2 - x1), h = 12 * dpr;
        ctx.beginPath(); ctx.moveTo(x2, y2); ctx.lineTo(x2 - h * Math.cos(a - 0.45), y2 - h * Math.sin(a - 0.45)); ctx.lineTo(x2 - h * Math.cos(a + 0.45), y2 - h * Math.sin(a + 0.45)); ctx.closePath(); ctx.fill();
      }
      if (d.kind === 'line' || d.kind === 'angle' || pending || picked) for (const [x, y] of pts) { ctx.beginPath(); ctx.arc(x, y, 3 * dpr, 0, 2 * Math.PI); ctx.fill(); }
      if (pending) continue;
      if (d.kind === 'line' || d.kind === 'angle') {
        const deg = Measure.degrees(d, b.vw, b.vh), t = `${deg.toFixed(1)}°`;
        const [lx, ly] = d.kind === 'line' ? at([(d.points[0][0] + d.points[1][0]) / 2, (d.points[0][1] + d.points[1][1]) / 2]) : pts[1];
        ctx.fillStyle = color; text(t, lx + 6 * dpr, ly - 6 * dpr);
        labels.push(`${d.kind} ${t}`);
      } else labels.push(d.kind === 'text' ? `text ${d.text}` : d.kind);
    }
    ctx.globalAlpha = 1;
    c.dataset.labels = labels.join('; ');
  }
  destroy() { window.removeEventListener('resize', this.resize); }
}

// The drawing tools over `videos` (one per angle): a Measure, and the bar of its buttons.
function measuring(angles, videos, player) {
  const status = el('span', { class: 'muted', id: 'measure-status' });
  const measure = new Measure(angles, videos, player, status);
  window.studioMeasure = measure;
  const tips = { line: 'a line and its tilt from the horizontal', angle: 'three points: the angle at the second', circle: 'centre, then a point on it',
    arrow: 'tail, then head', text: 'words on the frame', freehand: 'drag to draw', select: 'pick up a drawing: drag moves it, Delete removes it' };
  const toolBtn = (tool, label) => el('button', { id: 'measure-' + tool, 'data-tool': tool, title: tips[tool], onclick: () => measure.use(tool) }, label);
  const tools = [toolBtn('line', '╱ Line'), toolBtn('angle', '∠ Angle'), toolBtn('circle', '◯ Circle'), toolBtn('arrow', '➚ Arrow'),
    toolBtn('text', 'T Text'), toolBtn('freehand', '✎ Draw'), toolBtn('select', '⬚ Select')];
  measure.onTool = () => { for (const b of tools) b.classList.toggle('on', measure.tool === b.dataset.tool); };
  const color = el('input', { type: 'color', id: 'measure-color', value: measure.color, title: 'colour of what is drawn next', oninput: e => { measure.color = e.target.value; } });
  const whole = el('input', { type: 'checkbox', id: 'measure-whole', onchange: e => { measure.wholeClip = e.target.checked; } });
  const undo = el('button', { id: 'measure-undo', title: 'undo the last change to the drawings (kept: works after a reload)', onclick: () => measure.step('undo') }, 'Undo');
  const redo = el('button', { id: 'measure-redo', onclick: () => measure.step('redo') }, 'Redo');
  const remove = el('button', { id: 'measure-delete', title: 'remove the drawing picked up (Delete)', onclick: () => measure.removeSelected() }, 'Delete drawing');
  measure.onHistory = () => { undo.disabled = !measure.history.some(h => h.canUndo); redo.disabled = !measure.history.some(h => h.canRedo); };
  measure.onHistory();
  const keys = e => { if ((e.key === 'Delete' || e.key === 'Backspace') && measure.selected && e.target.tagName !== 'TEXTAREA' && e.target.tagName !== 'INPUT') { e.preventDefault(); measure.removeSelected(); } };
  document.addEventListener('keydown', keys);
  const destroy = measure.destroy.bind(measure);
  measure.destroy = () => { destroy(); document.removeEventListener('keydown', keys); };
  return [measure, el('div', { class: 'controls' }, ...tools, color, el('label', { class: 'filter' }, whole, ' whole clip'), remove, undo, redo, status)];
}

async function pageSwing(main, [id]) {
  const s = await api('/api/swings/' + encodeURIComponent(id));
  // The lead angle (whose audio is the scrubber) is the first with audio.
  const lead = s.angles.findIndex(a => a.waveform);
  if (lead > 0) s.angles.unshift(s.angles.splice(lead, 1)[0]);
  // Whose swing, where, when, and its place in the lesson; its neighbours a key away ([ and ]).
  const go = id => { if (id) location.hash = '#/swing/' + encodeURIComponent(id); };
  const place = s.lessonIndex ? `swing ${s.lessonIndex} of ${s.lessonSwings}` : '';
  main.append(el('div', { class: 'swing-head' },
    el('h1', { id: 'swing-title' }, [s.studentName || 'No student', s.bay, fmtClock(s.receivedAt), place].filter(x => x).join(' · ')),
    el('span', { class: 'sep' }),
    el('button', { id: 'previous-swing', title: 'the swing before ([)', disabled: s.previous ? null : '', onclick: () => go(s.previous) }, '◀ Previous'),
    el('button', { id: 'next-swing', title: 'the swing after (])', disabled: s.next ? null : '', onclick: () => go(s.next) }, 'Next ▶')),
    el('p', { class: 'muted', id: 'synced-on' }, s.syncUncertaintyNs != null
      ? `${s.angles.length} angle${s.angles.length > 1 ? 's' : ''}, in sync, ±${(s.syncUncertaintyNs / 1e6).toFixed(2)} ms`
      : `${s.angles.length} angle${s.angles.length > 1 ? 's' : ''}, lined up on the impact (a camera had no clock link to this host)`));
  // Common timeline: T = 0 at the swing's host-clock t0; angle i's video time is T + offset.
  const offsets = s.angles.map(a => (a.zeroHostNs != null && s.t0HostNs != null) ? (s.t0HostNs - a.zeroHostNs) / 1e9 : a.impactSeconds);
  const videos = s.angles.map(a => el('video', { src: a.video, preload: 'auto', muted: '', playsinline: '', 'data-clip': a.clipId }));
  const grid = el('div', { class: 'angles' }, s.angles.map((a, i) => el('div', { class: 'angle', 'data-angle': i },
    videos[i], el('span', { class: 'label' }, `${a.device} · ${a.captureProfile}`), el('span', { class: 'time', 'data-time': i }, ''))));
  const player = new SyncPlayer(videos, offsets, s.angles.map(a => a.framesPerSecond));
  window.studioPlayer = player; // for the browser tests and a person's console
  window.studioSwing = s;
  const times = () => videos.forEach((v, i) => {
    const t = v.currentTime - s.angles[i].impactSeconds, fps = s.angles[i].framesPerSecond || 60;
    // From the impact, in a coach's words: "impact" on its frame, else "+7.0 ms" or "−120.0 ms".
    const from = Math.abs(t) < 0.5 / fps ? 'impact' : `${t > 0 ? '+' : '−'}${Math.abs(t) >= 1 ? Math.abs(t).toFixed(2) + ' s' : (Math.abs(t) * 1000).toFixed(1) + ' ms'}`;
    grid.querySelector(`[data-time="${i}"]`).textContent = `frame ${player.frameOf(i)} · ${from}`;
  });
  videos.forEach(v => { v.addEventListener('timeupdate', times); v.addEventListener('seeked', times); });
  const flagBtn = name => el('button', { class: name + (s.flags.includes(name) ? ' on' : ''), id: 'flag-' + name, onclick: () => setFlag(name),
    title: name === 'not-a-swing' ? 'what was heard was not a swing: discarded, and a label for the detector (ppc-host corpus export)' : null },
    { starred: '★ star', kept: 'Keep', discarded: 'Discard', 'not-a-swing': 'Not a swing' }[name]);
  const flagBtns = ['kept', 'discarded', 'starred', 'not-a-swing'].map(flagBtn);
  async function setFlag(name) {
    let flags = new Set(s.flags);
    if (flags.has(name)) flags.delete(name); else flags.add(name);
    if (name === 'kept') { flags.delete('discarded'); flags.delete('not-a-swing'); }
    if (name === 'discarded') { flags.delete('kept'); if (!flags.has('discarded')) flags.delete('not-a-swing'); }
    if (name === 'not-a-swing' && flags.has('not-a-swing')) { flags.add('discarded'); flags.delete('kept'); flags.delete('starred'); }
    const r = await api(`/api/swings/${encodeURIComponent(s.id)}/annotate`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ flags: [...flags] }) });
    s.flags = r.flags;
    for (const b of flagBtns) b.classList.toggle('on', s.flags.includes(b.id.slice(5)));
    main.dataset.flags = s.flags.join(',');
  }
  main.dataset.flags = s.flags.join(',');
  const downloads = s.angles.map(a => el('a', { href: a.download, download: `${a.clipId}.mp4` }, `⤓ ${a.device}`));
  const scrub = el('canvas', { class: 'scrub', id: 'scrub' });
  const [measure, measureBar] = measuring(s.angles, videos, player);
  // Key positions: the coach marks address, top and finish on the frame shown (A, T, F); the impact is t0. The tempo
  // (backswing : downswing) follows from address and top.
  const tempo = el('span', { class: 'muted', id: 'tempo' });
  const posBtns = {};
  const showPositions = () => {
    for (const [k, b] of Object.entries(posBtns)) { b.classList.toggle('on', s.positions[k] != null); b.title = s.positions[k] != null ? `${k} at ${(s.positions[k] * 1000).toFixed(0)} ms from impact: click to mark again here` : `mark ${k} on this frame`; }
    tempo.textContent = s.tempo ? `tempo ${s.tempo.ratio.toFixed(1)} : 1 (backswing ${s.tempo.backswingSeconds.toFixed(2)} s, downswing ${s.tempo.downswingSeconds.toFixed(2)} s)` : 'mark address and top for the tempo';
    main.dataset.tempo = s.tempo ? s.tempo.ratio.toFixed(2) : '';
  };
  const mark = async key => {
    player.pause();
    const next = { ...s.positions, [key]: Math.round(player.T * 1e4) / 1e4 };
    try {
      const r = await api(`/api/swings/${encodeURIComponent(s.id)}/positions`, jsonBody('PUT', next));
      s.positions = r.positions; s.tempo = r.tempo; tempo.classList.remove('error');
    } catch (e) { tempo.textContent = e.message; tempo.classList.add('error'); return; }
    showPositions();
    if (redrawScrub) redrawScrub();
  };
  for (const [key, label] of [['address', 'Address (A)'], ['top', 'Top (T)'], ['finish', 'Finish (F)']]) posBtns[key] = el('button', { id: 'mark-' + key, onclick: () => mark(key) }, label);
  const positionsBar = el('div', { class: 'controls' }, el('span', { class: 'muted' }, 'Key positions'), ...Object.values(posBtns), tempo);
  // Tags: the coach's words on the swing (Enter adds one, × takes it off); the library's tags offered as they type.
  const tagChips = el('span', { id: 'tags' });
  const tagState = el('span', { class: 'muted', id: 'tags-status' });
  const saveTags = async next => {
    try { s.tags = (await api(`/api/swings/${encodeURIComponent(s.id)}/tags`, jsonBody('PUT', { tags: next }))).tags; tagState.textContent = ''; }
    catch (e) { tagState.textContent = e.message; }
    showTags();
  };
  const showTags = () => {
    tagChips.replaceChildren(...s.tags.map(t => el('span', { class: 'tag' }, t, el('button', { class: 'untag', title: `take "${t}" off`, onclick: () => saveTags(s.tags.filter(x => x !== t)) }, '×'))));
    main.dataset.tags = s.tags.join(',');
  };
  const known = el('datalist', { id: 'known-tags' });
  api('/api/tags').then(r => known.replaceChildren(...r.tags.map(t => el('option', { value: t.tag })))).catch(() => {});
  const tagInput = el('input', { id: 'tag-add', list: 'known-tags', placeholder: 'add a tag…', size: 14, onkeydown: e => {
    if (e.key === 'Enter' && e.target.value.trim()) { e.preventDefault(); const t = e.target.value.trim(); e.target.value = ''; saveTags([...s.tags, t]); }
  } });
  const tagsBar = el('div', { class: 'controls' }, el('span', { class: 'muted' }, 'Tags'), tagChips, tagInput, known, tagState);
  showTags();
  showPositions();
  let redrawScrub = null;
  main.append(grid, transport(player, [...flagBtns, el('span', { class: 'sep' }), ...downloads.flatMap(d => [d, ' '])]), measureBar, positionsBar, tagsBar, scrub,
    exportPanel(() => ({ swings: [{ swing: s.id }] }), `${s.angles.length > 1 ? 'its angles side by side' : 'this swing'}`),
    el('div', { class: 'controls' }, shareButton('swing', s.id, 'Share this swing')));
  await measure.load();
  // Notes are kept as they are typed (a pause of 0.6 s, or leaving the page), and say so.
  const notes = el('textarea', { id: 'notes', placeholder: 'Notes on this swing…' }, s.angles[0].notes || '');
  const noteState = el('span', { class: 'muted', id: 'notes-status' }, s.angles[0].notes ? 'saved' : '');
  let noteTimer = null, savedText = notes.value;
  const saveNotes = async () => {
    clearTimeout(noteTimer); noteTimer = null;
    if (notes.value === savedText) return;
    const text = notes.value;
    noteState.textContent = 'saving…';
    try {
      await api(`/api/swings/${encodeURIComponent(s.id)}/annotate`, jsonBody('POST', { notes: text }));
      savedText = text;
      noteState.textContent = notes.value === text ? 'saved' : 'saving…';
    } catch (e) { noteState.textContent = `not saved: ${e.message}`; }
  };
  notes.addEventListener('input', () => { noteState.textContent = 'editing…'; clearTimeout(noteTimer); noteTimer = setTimeout(saveNotes, 600); });
  notes.addEventListener('blur', saveNotes);
  // Delete asks first, and again, saying so, for a kept or starred swing.
  const remove = async () => {
    if (!confirm('Delete this swing — every angle, from the library?')) return;
    const del = force => fetch(`/api/swings/${encodeURIComponent(s.id)}${force ? '?force=yes' : ''}`, jsonBody('DELETE', {}));
    let r = await del(false);
    if (r.status === 409) {
      const why = (await r.json()).error;
      if (!confirm(`${why.split(':')[0]}. Delete it anyway?`)) return;
      r = await del(true);
    }
    if (!r.ok) { noteState.textContent = `not deleted: ${(await r.json()).error}`; return; }
    location.hash = s.next ? '#/swing/' + encodeURIComponent(s.next) : s.previous ? '#/swing/' + encodeURIComponent(s.previous) : '#/swings';
  };
  main.append(el('div', { class: 'notes' }, notes, el('div', { class: 'notes-side' }, noteState,
    el('button', { id: 'delete-swing', class: 'danger', onclick: remove }, 'Delete…'))));
  if (s.angles[0].waveform) {
    redrawScrub = await drawWaveform(scrub, s.angles[0], player, () => s.positions);
  } else scrub.replaceWith(el('p', { class: 'muted' }, 'No audio in this swing.'));
  await Promise.all(videos.map(v => v.readyState >= 1 ? null : new Promise(r => v.addEventListener('loadedmetadata', r, { once: true }))));
  player.seek(0);
  main.dataset.ready = 'yes';
  // An angle that arrives while the page is open (a second camera's clip) joins it: the page is made again with it.
  live.listeners.add(m => { if (m.type === 'clip' && m.swingId === s.id && !s.angles.some(a => a.clipId === m.clipId)) route(); });
  const keys = e => {
    if (e.target.tagName !== 'TEXTAREA' && e.target.tagName !== 'INPUT' && !e.ctrlKey && !e.metaKey && !e.altKey) {
      const key = { a: 'address', t: 'top', f: 'finish' }[e.key.toLowerCase()];
      if (key) { e.preventDefault(); mark(key); return; }
    }
    swingKeys(e, player, { previous: () => go(s.previous), next: () => go(s.next) });
  };
  document.addEventListener('keydown', keys);
  teardown = () => { saveNotes(); player.destroy(); measure.destroy(); document.removeEventListener('keydown', keys); };
}

// A coach's keys on a player: ← → (and , .) a frame; space, K play or pause; J back half a second; L play; Home and End
// the first and last moment every angle has; [ and ] the swing before and after.
function swingKeys(e, player, around = {}) {
  if (e.target.tagName === 'TEXTAREA' || e.target.tagName === 'INPUT' || e.ctrlKey || e.metaKey || e.altKey) return;
  const span = () => [Math.max(...player.videos.map((v, i) => -player.offsets[i])), Math.min(...player.videos.map((v, i) => (v.duration || 0) - player.offsets[i]))];
  const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  const act = {
    ArrowRight: () => player.step(1), '.': () => player.step(1), ArrowLeft: () => player.step(-1), ',': () => player.step(-1),
    ' ': () => { player.playing ? player.pause() : player.play(); }, k: () => { player.playing ? player.pause() : player.play(); },
    j: () => { player.pause(); player.seek(Math.max(span()[0], player.T - 0.5)); }, l: () => player.play(),
    Home: () => { player.pause(); player.seek(span()[0]); }, End: () => { player.pause(); player.seek(span()[1] - 1 / (player.fps[0] || 60)); },
    '[': () => around.previous && around.previous(), ']': () => around.next && around.next(),
  }[k];
  if (!act) return;
  e.preventDefault();
  act();
}

// ---------------------------------------------------------------- Compare

// Two swings side by side — or one over the other (onion skin, its opacity on a slider) — aligned on any key position
// the coach marked on both (impact by default), each showing the angle chosen for it. The choices stay in the address:
// #/compare/<a>/<b>?on=top&left=face&right=face&overlay=0.5
async function pageCompare(main, [a, b]) {
  main.append(el('h1', {}, 'Compare'));
  const { swings } = await api('/api/swings?limit=200');
  if (swings.length < 1) { main.append(el('p', { class: 'muted' }, 'No swings yet.')); return; }
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  a = a || swings[Math.min(1, swings.length - 1)].id; b = b || swings[0].id;
  const choice = { on: params.get('on') || 'impact', left: params.get('left') || '', right: params.get('right') || '', overlay: params.get('overlay') || '' };
  const go = () => {
    const q = Object.entries(choice).filter(([, v]) => v && !(v === 'impact')).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
    location.hash = `#/compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}${q ? '?' + q : ''}`;
  };
  const label = s => `${s.studentName ? s.studentName + ' · ' : ''}${fmtClock(s.receivedAt)} · ${s.angles.map(x => x.device).join(', ')}`;
  const pickSwing = (value, which) => el('select', { id: 'pick-' + which, onchange: e => { if (which === 'a') a = e.target.value; else b = e.target.value; go(); } },
    swings.map(s => { const o = el('option', { value: s.id }, label(s)); if (s.id === value) o.selected = true; return o; }));
  let sa, sb;
  try {
    [sa, sb] = await Promise.all([api('/api/swings/' + encodeURIComponent(a)), api('/api/swings/' + encodeURIComponent(b))]);
  } catch (e) {
    // A link to a swing since deleted: said, with the way back to the pickers (the newest two swings).
    main.append(el('p', { class: 'error' }, e.message), el('p', {}, el('a', { href: '#/compare', id: 'compare-again' }, 'Compare the newest two swings')));
    main.dataset.ready = 'yes';
    return;
  }
  // Each side's angle: the one chosen, else the first.
  const angleOf = (s, device) => s.angles.find(x => x.device === device) || s.angles[0];
  const pickAngle = (s, which) => el('select', { id: 'angle-' + which, onchange: e => { choice[which] = e.target.value; go(); } },
    s.angles.map(x => { const o = el('option', { value: x.device }, x.device); if (x.device === angleOf(s, choice[which]).device) o.selected = true; return o; }));
  // Align on a position both swings have.
  const keys = ['impact', 'address', 'top', 'finish'].filter(k => k === 'impact' || (sa.positions[k] != null && sb.positions[k] != null));
  if (!keys.includes(choice.on)) choice.on = 'impact';
  const alignOn = el('select', { id: 'align-on', onchange: e => { choice.on = e.target.value; go(); } },
    keys.map(k => { const o = el('option', { value: k }, k); if (k === choice.on) o.selected = true; return o; }));
  const overlayBox = el('input', { type: 'checkbox', id: 'overlay', onchange: e => { choice.overlay = e.target.checked ? '0.5' : ''; go(); } });
  overlayBox.checked = !!choice.overlay;
  main.append(el('div', { class: 'controls' }, 'Left ', pickSwing(a, 'a'), pickAngle(sa, 'left'), el('span', { class: 'sep' }), 'Right ', pickSwing(b, 'b'), pickAngle(sb, 'right')),
    el('div', { class: 'controls' }, 'Aligned on ', alignOn, el('span', { class: 'sep' }), el('label', { class: 'filter' }, overlayBox, ' overlay (onion skin)'),
      el('span', { class: 'muted' }, keys.length > 1 ? '' : ' · mark key positions on both swings to align on them')));
  const angles = [angleOf(sa, choice.left), angleOf(sb, choice.right)];
  const at = (s, x) => x.impactSeconds + (choice.on === 'impact' ? 0 : s.positions[choice.on]);
  const videos = angles.map(x => el('video', { src: x.video, preload: 'auto', muted: '', playsinline: '', 'data-clip': x.clipId }));
  const player = new SyncPlayer(videos, [at(sa, angles[0]), at(sb, angles[1])], angles.map(x => x.framesPerSecond));
  window.studioPlayer = player;
  let overlay = null;
  if (choice.overlay) {
    // One picture: the left swing, the right drawn over it at the slider's opacity (a canvas, so what is shown can be read).
    const opacity = Math.max(0, Math.min(1, Number(choice.overlay) || 0.5));
    const canvas = el('canvas', { class: 'overlay', id: 'overlay-canvas' });
    const slider = el('input', { type: 'range', id: 'overlay-opacity', min: 0, max: 1, step: 0.05, value: opacity, oninput: e => { overlay.alpha = Number(e.target.value); overlay.draw(); } });
    main.append(el('div', { class: 'angle overlay-stage' }, canvas, ...videos.map(v => { v.classList.add('hidden-source'); return v; }),
      el('span', { class: 'label' }, `${angles[0].device} with ${angles[1].device} over it`)),
      el('div', { class: 'controls' }, 'Opacity of the right swing ', slider));
    overlay = {
      alpha: opacity, raf: null,
      draw() {
        const [l, r] = videos;
        if (!l.videoWidth) return;
        canvas.width = l.videoWidth; canvas.height = l.videoHeight;
        const ctx = canvas.getContext('2d');
        ctx.globalAlpha = 1; ctx.drawImage(l, 0, 0, canvas.width, canvas.height);
        if (r.videoWidth) { ctx.globalAlpha = this.alpha; ctx.drawImage(r, 0, 0, canvas.width, canvas.height); ctx.globalAlpha = 1; }
        canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
      },
      loop() { this.draw(); this.raf = requestAnimationFrame(() => this.loop()); },
    };
    for (const v of videos) for (const ev of ['seeked', 'loadeddata']) v.addEventListener(ev, () => overlay.draw());
    overlay.loop();
    window.studioOverlay = overlay;
  } else {
    main.append(el('div', { class: 'compare' }, angles.map((x, i) => el('div', { class: 'angle' }, videos[i],
      el('span', { class: 'label' }, `${i ? 'Right' : 'Left'} · ${x.device} · ${fmtClock(x.receivedAt)}`)))));
  }
  const [measure, measureBar] = choice.overlay ? [{ load: async () => {}, destroy: () => {} }, ''] : measuring(angles, videos, player);
  const exportRequest = () => ({ swings: [{ swing: a, angle: angles[0].clipId }, { swing: b, angle: angles[1].clipId }],
    layout: choice.overlay ? 'overlay' : 'side-by-side', opacity: overlay ? overlay.alpha : undefined, align: choice.on });
  main.append(transport(player), measureBar, exportPanel(exportRequest, choice.overlay ? 'the overlay' : 'the two side by side', choice.on));
  await measure.load();
  await Promise.all(videos.map(v => v.readyState >= 1 ? null : new Promise(r => v.addEventListener('loadedmetadata', r, { once: true }))));
  player.seek(0);
  main.dataset.ready = 'yes';
  main.dataset.alignedOn = choice.on;
  const keysDown = e => swingKeys(e, player);
  document.addEventListener('keydown', keysDown);
  teardown = () => { player.destroy(); measure.destroy(); if (overlay) cancelAnimationFrame(overlay.raf); document.removeEventListener('keydown', keysDown); };
}

// ---------------------------------------------------------------- Something to send: exports and share links

const rateWords = { 1: '1×', 0.5: '½×', 0.25: '¼×', 0.125: '⅛×' };

// An export's state in words, with its progress bar, download and share link once made.
function exportStatus(e) {
  const box = el('span', { class: 'export-status', 'data-export': e.id, 'data-state': e.state });
  const fill = () => {
    box.dataset.state = e.state;
    if (e.state === 'done') box.replaceChildren(el('a', { href: e.video, download: `ppc-${e.id}.mp4`, class: 'export-download' }, `⤓ MP4 (${fmtBytes(e.bytes || 0)}, ${(e.durationSeconds || 0).toFixed(1)} s${e.sound ? ', with sound' : ''})`), ' ', shareButton('export', e.id, 'Share'));
    else if (e.state === 'failed') box.replaceChildren(el('span', { class: 'error' }, `not made: ${e.error}`));
    else box.replaceChildren(el('progress', { max: 1, value: e.progress }), ` ${e.state === 'queued' ? 'waiting' : 'making'} ${Math.round(e.progress * 100)} %`);
  };
  fill();
  live.listeners.add(m => { if (m.type === 'export' && m.export.id === e.id) { e = m.export; fill(); } });
  return box;
}

// "Export MP4": what `request()` names, slowed over a span around the aligned moment (¼× from −0.3 s to +0.2 s by
// default), drawings burned in; made by the host while the coach goes on, its progress shown here and on Exports.
function exportPanel(request, what, alignOn = 'impact') {
  const speed = el('select', { id: 'export-speed', title: 'how slow the span plays' }, [1, 0.5, 0.25, 0.125].map(r => { const o = el('option', { value: r }, rateWords[r]); if (r === 0.25) o.selected = true; return o; }));
  const num = (id, v) => el('input', { type: 'number', id, value: v, step: 0.1, style: 'width: 5em' });
  const from = num('export-from', -0.3), to = num('export-to', 0.2);
  const drawn = el('input', { type: 'checkbox', id: 'export-drawings' }); drawn.checked = true;
  const status = el('span', { id: 'export-state' });
  const make = el('button', { id: 'export-make', onclick: async () => {
    const q = { ...request(), drawings: drawn.checked };
    const factor = Number(speed.value);
    if (factor < 1) q.slow = { factor, from: Number(from.value), to: Number(to.value) };
    make.disabled = true;
    try { const e = await api('/api/exports', jsonBody('POST', q)); status.replaceChildren(exportStatus(e)); }
    catch (err) { status.replaceChildren(el('span', { class: 'error' }, err.message)); }
    make.disabled = false;
  } }, 'Export MP4');
  return el('div', { class: 'controls export-panel' }, el('span', { class: 'muted' }, `Send ${what}:`), speed, ' from ', from, ' to ', to, ` s around ${alignOn}`,
    el('label', { class: 'filter' }, drawn, ' drawings'), make, status);
}

// "Share link": a read-only link to one swing, lesson or export (7 days), shown to copy; revocable on Exports. A swing's
// or lesson's notes go with it only when the coach ticks "with my notes" (notes may not be meant for the student).
function shareButton(kind, target, label) {
  const out = el('span', { class: 'share-out' });
  const notes = kind === 'export' ? null : el('input', { type: 'checkbox', class: 'share-notes', onclick: e => e.stopPropagation() });
  const b = el('button', { class: 'share-make', 'data-kind': kind, onclick: async e => {
    e.stopPropagation();
    try {
      const sh = await api('/api/shares', jsonBody('POST', { kind, target, withNotes: !!notes?.checked }));
      const url = location.origin + sh.url;
      const field = el('input', { class: 'share-url', readonly: '', value: url, size: 28, onclick: ev => { ev.stopPropagation(); ev.target.select(); } });
      out.replaceChildren(field, ' ', el('button', { onclick: ev => { ev.stopPropagation(); navigator.clipboard?.writeText(url); field.select(); } }, 'Copy'),
        el('span', { class: 'muted' }, ` until ${fmtClock(sh.expires)}`));
    } catch (err) { out.replaceChildren(el('span', { class: 'error' }, err.message)); }
  } }, label || 'Share link');
  return el('span', { class: 'share' }, notes ? el('label', { class: 'filter', onclick: e => e.stopPropagation() }, notes, ' with my notes') : '', ' ', b, ' ', out);
}

// Exports made and being made, and the links shared (revocable).
async function pageExports(main) {
  main.append(el('h1', {}, 'Exports'));
  const [{ exports }, { shares }] = await Promise.all([api('/api/exports'), api('/api/shares')]);
  if (!exports.length) main.append(el('p', { class: 'muted' }, 'Nothing exported yet: a swing, or Compare, has "Export MP4".'));
  else main.append(el('table', { id: 'exports' }, el('tr', {}, ['Asked', 'What', 'State', ''].map(h => el('th', {}, h))),
    exports.map(e => el('tr', { 'data-export': e.id }, el('td', {}, fmtClock(e.created)), el('td', {}, e.title), el('td', {}, exportStatus(e)),
      el('td', {}, el('button', { class: 'danger', onclick: async () => { await api('/api/exports/' + e.id, jsonBody('DELETE', {})); route(); } }, 'Delete'))))));
  main.append(el('h2', {}, 'Links shared'));
  if (!shares.length) main.append(el('p', { class: 'muted' }, 'No links yet: "Share" on a swing, a lesson or an export makes one.'));
  else main.append(el('table', { id: 'shares' }, el('tr', {}, ['Made', 'What', 'Open until', 'State', ''].map(h => el('th', {}, h))),
    shares.map(sh => el('tr', { 'data-share': sh.id, 'data-state': sh.state }, el('td', {}, fmtClock(sh.created)),
      el('td', {}, el('a', { href: sh.url, target: '_blank', rel: 'noopener' }, sh.title), sh.withNotes ? el('span', { class: 'muted' }, ' · with notes') : '',
        sh.kind === 'swing' ? [' · ', el('a', { href: '#/swing/' + encodeURIComponent(sh.target) }, 'open the swing')] : ''),
      el('td', {}, fmtClock(sh.expires)), el('td', {}, sh.state),
      el('td', {}, sh.state === 'active' ? [
        el('button', { class: 'copy-link', onclick: () => navigator.clipboard?.writeText(location.origin + sh.url) }, 'Copy link'), ' ',
        el('button', { class: 'danger revoke', onclick: async () => {
          // Asked first: whoever was sent the link can no longer open it, and a revoked link is not opened again.
          if (!confirm(`Revoke the link to "${sh.title}"? Whoever has it can no longer open it; this cannot be undone.`)) return;
          await api('/api/shares/' + sh.id, jsonBody('DELETE', {})); route();
        } }, 'Revoke')] : '')))));
  main.dataset.ready = 'yes';
}

// ---------------------------------------------------------------- Sessions

async function pageSessions(main) {
  main.append(el('h1', {}, 'Lessons'));
  const [{ lessons }, { sessions }] = await Promise.all([api('/api/lessons'), api('/api/sessions')]);
  // A lesson: a student's swings at one bay in one sitting, every camera in one row.
  const time = iso => new Date(iso).toLocaleTimeString([], { hour: 'numeric', minute: '2-digit' });
  if (!lessons.length) main.append(el('p', { class: 'muted' }, 'No lessons yet: set who is hitting on the Live page, and their swings gather here.'));
  else main.append(el('table', { id: 'lessons' }, el('tr', {}, ['Student', 'Bay', 'Day', 'Time', 'Swings', 'Cameras', 'Starred', 'Kept', ''].map(h => el('th', {}, h))),
    lessons.map(l => el('tr', { class: 'link', 'data-lesson': l.id, 'data-student': l.student ?? '', onclick: e => { if (!e.target.closest('.share')) location.hash = '#/swings?lesson=' + encodeURIComponent(l.id) + '&discarded=show'; } },
      el('td', {}, l.studentName || 'no student'), el('td', {}, l.bay || '—'), el('td', {}, new Date(l.from).toLocaleDateString(undefined, { weekday: 'short', month: 'short', day: 'numeric' })),
      el('td', {}, `${time(l.from)}–${time(l.to)}`), el('td', {}, l.swings), el('td', {}, l.devices.length), el('td', {}, l.starred), el('td', {}, l.kept),
      el('td', { class: 'share' }, shareButton('lesson', l.id, 'Share'))))));
  main.append(el('h2', {}, 'Capture sessions, one per camera'));
  if (!sessions.length) { main.append(el('p', { class: 'muted' }, 'No sessions yet.')); main.dataset.ready = 'yes'; return; }
  main.append(el('table', { id: 'sessions' }, el('tr', {}, ['Device', 'Session', 'Shots', 'Kept', 'Starred', 'Discarded', 'Size', 'Last clip'].map(h => el('th', {}, h))),
    sessions.map(s => el('tr', { class: 'link', 'data-session': `${s.device}/${s.sessionId}`, onclick: () => { location.hash = `#/session/${encodeURIComponent(s.device)}/${encodeURIComponent(s.sessionId)}`; } },
      el('td', {}, s.device), el('td', {}, `${s.session} (${s.sessionId})`), el('td', {}, s.shots), el('td', {}, s.kept), el('td', {}, s.starred),
      el('td', {}, s.discarded), el('td', {}, fmtBytes(s.bytes)), el('td', {}, fmtWhen(s.lastReceivedAt))))));
  main.dataset.ready = 'yes';
}

async function pageSession(main, [device, sid]) {
  const s = await api(`/api/sessions/${encodeURIComponent(device)}/${encodeURIComponent(sid)}`);
  const r = s.report;
  main.append(el('h1', {}, `${s.session} · ${device}`), el('dl', { class: 'kv', id: 'report' }));
  const dl = $('#report', main);
  for (const [k, v] of [['Session id', s.sessionId], ['Capture', s.captureProfile], ['Shots', r.shots], ['Span', fmtNs(r.spanNs)], ['Frames', r.frames],
    ['Size', fmtBytes(r.bytes)], ['Kept / starred / discarded', `${r.kept} / ${r.starred} / ${r.discarded}`], ['Below policy', r.belowPolicy.length ? r.belowPolicy.join('; ') : 'none']]) dl.append(el('dt', {}, k), el('dd', {}, v));
  main.append(el('p', { class: 'muted' }, r.note));
  main.append(el('h2', {}, 'Timeline from the first shot — scroll to zoom, drag to pan, click a shot to open its swing'));
  const canvas = el('canvas', { class: 'timeline', id: 'timeline' });
  main.append(canvas);
  const shots = s.shots;
  // Times from the session's first shot (the device clock's own zero means nothing to a coach).
  const base = Math.min(...shots.map(x => x.t0DeviceNs));
  const t0s = shots.map(x => (x.t0DeviceNs - base) / 1e9);
  const lo = Math.min(...t0s), hi = Math.max(...t0s);
  const pad = Math.max(1, (hi - lo) * 0.05);
  let view = [lo - pad, hi + pad];
  const ctx = canvas.getContext('2d');
  const hits = [];
  const niceStep = span => { const raw = span / 8; const p = 10 ** Math.floor(Math.log10(raw)); return [1, 2, 5, 10].map(m => m * p).find(x => x >= raw) || 10 * p; };
  const draw = () => {
    canvas.width = canvas.clientWidth * devicePixelRatio; canvas.height = canvas.clientHeight * devicePixelRatio;
    const W = canvas.width, H = canvas.height, d = devicePixelRatio;
    const x = t => (t - view[0]) / (view[1] - view[0]) * W;
    ctx.clearRect(0, 0, W, H);
    ctx.font = `${11 * d}px system-ui`;
    const step = niceStep(view[1] - view[0]);
    ctx.fillStyle = '#8a949e';
    for (let t = Math.ceil(view[0] / step) * step; t <= view[1]; t += step) {
      ctx.fillRect(x(t), H - 18 * d, 1, 5 * d);
      const label = step >= 60 ? `${Math.floor(t / 60)}:${String(Math.round(t % 60)).padStart(2, '0')}` : `${t.toFixed(step < 1 ? 1 : 0)} s`;
      ctx.fillText(label, x(t) + 3 * d, H - 4 * d);
    }
    hits.length = 0;
    canvas.dataset.span = (view[1] - view[0]).toFixed(3);  // seconds shown (what a zoom changes)
    let lastLabelEnd = -Infinity;
    shots.forEach((sh, i) => {
      const px = x(t0s[i]);
      if (px < -5 || px > W + 5) return;
      ctx.fillStyle = sh.flags.includes('discarded') ? '#ef6461' : sh.flags.includes('kept') ? '#4cc38a' : '#4fb3ff';
      ctx.fillRect(px - 2 * d, 14 * d, 4 * d, H - 40 * d);
      hits.push([px, sh]);
      const label = `#${i + 1}${sh.flags.includes('starred') ? ' ★' : ''}`;
      const w = ctx.measureText(label).width;
      if (px + 4 * d > lastLabelEnd) { ctx.fillStyle = '#e6e9ec'; ctx.fillText(label, px + 4 * d, 12 * d); lastLabelEnd = px + 4 * d + w + 6 * d; } // labels never overlap: thinned
    });
  };
  canvas.addEventListener('wheel', e => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect(), f = (e.clientX - r.left) / r.width;
    const at = view[0] + f * (view[1] - view[0]);
    const k = e.deltaY > 0 ? 1.25 : 0.8;
    const span = Math.max(0.05, (view[1] - view[0]) * k);
    view = [at - f * span, at + (1 - f) * span];
    draw();
  }, { passive: false });
  // One pointer drags to pan (a click opens the shot under it); two fingers pinch to zoom the timeline, not the page.
  let drag = null, moved = false;
  const fingers = new Map();
  let pinch = null;
  canvas.addEventListener('pointerdown', e => {
    fingers.set(e.pointerId, e.clientX);
    try { canvas.setPointerCapture(e.pointerId); } catch { /* synthetic */ }
    if (fingers.size === 2) {
      const [a, b] = [...fingers.values()], r = canvas.getBoundingClientRect();
      const mid = ((a + b) / 2 - r.left) / r.width;
      pinch = { span: Math.abs(a - b) || 1, view: view.slice(), at: view[0] + mid * (view[1] - view[0]), f: mid };
      drag = null; moved = true;
    } else { drag = [e.clientX, view.slice()]; moved = false; }
  });
  canvas.addEventListener('pointermove', e => {
    if (!fingers.has(e.pointerId)) return;
    fingers.set(e.pointerId, e.clientX);
    if (pinch && fingers.size === 2) {
      const [a, b] = [...fingers.values()];
      const span = Math.max(0.05, (pinch.view[1] - pinch.view[0]) * pinch.span / Math.max(1, Math.abs(a - b)));
      view = [pinch.at - pinch.f * span, pinch.at + (1 - pinch.f) * span]; draw();
      return;
    }
    if (!drag) return;
    const r = canvas.getBoundingClientRect(), dx = (e.clientX - drag[0]) / r.width * (drag[1][1] - drag[1][0]);
    if (Math.abs(e.clientX - drag[0]) > 3) moved = true;
    view = [drag[1][0] - dx, drag[1][1] - dx]; draw();
  });
  const lift = e => { fingers.delete(e.pointerId); if (fingers.size < 2) pinch = null; if (!fingers.size) drag = null; };
  canvas.addEventListener('pointercancel', lift);
  canvas.addEventListener('pointerup', e => {
    if (drag && !moved && fingers.size === 1) {
      const r = canvas.getBoundingClientRect(), px = (e.clientX - r.left) * devicePixelRatio;
      const near = hits.map(([x, sh]) => [Math.abs(x - px), sh]).sort((p, q) => p[0] - q[0])[0];
      if (near && near[0] < 10 * devicePixelRatio) location.hash = '#/swing/' + encodeURIComponent(near[1].swingId);
    }
    lift(e);
  });
  draw();
  main.append(el('h2', {}, 'Shots'), el('table', { id: 'shots' }, el('tr', {}, ['#', 'After the first shot', 'Received', 'Frames', 'Flags', ''].map(h => el('th', {}, h))),
    shots.map((sh, i) => el('tr', { class: 'link', 'data-swing': sh.swingId, onclick: () => { location.hash = '#/swing/' + encodeURIComponent(sh.swingId); } },
      el('td', {}, i + 1), el('td', {}, `+${fmtNs(sh.t0DeviceNs - base)}`), el('td', {}, fmtWhen(sh.receivedAt)), el('td', {}, sh.frames), el('td', {}, flagText(sh.flags)),
      el('td', {}, el('a', { href: '#/swing/' + encodeURIComponent(sh.swingId) }, 'open'))))));
  main.dataset.ready = 'yes';
}

// ---------------------------------------------------------------- Bay screen

// The screen at the bay (a TV or a tablet): opened once, then nothing to touch. Each new swing of the bay plays at
// once — its first looks (pre-roll and impact, sent ahead of the clip) within about a second of impact, then the whole
// clips as they are catalogued — every angle in sync on the host clock, slowed to the coach's speed, impact marked,
// looping until the next swing. Space replays, ← → step a frame, 1–4 choose the speed (1×, ½, ¼, ⅛), F fills the
// screen, S turns the strike's sound on at 1× (a browser allows sound only after a touch or a key).
async function pageBay(main, [bay]) {
  const speeds = [1, 0.5, 0.25, 0.125];
  const state = { rate: 0.25, audible: false, swing: null, player: null, loopRaf: null };
  window.bayStats = window.bayStats || [];  // per swing: when its impact happened and when it was first on screen
  const stage = el('div', { class: 'bay-stage', id: 'bay-stage' });
  const caption = el('div', { class: 'bay-caption', id: 'bay-caption' }, bay ? `Bay ${bay} · waiting for a swing` : 'Waiting for a swing');
  const impact = el('div', { class: 'bay-impact', id: 'bay-impact' }, 'IMPACT');
  const bar = el('div', { class: 'bay-bar' }, el('div', { class: 'bay-progress', id: 'bay-progress' }), el('div', { class: 'bay-mark', id: 'bay-mark' }));
  const help = el('div', { class: 'bay-help' }, 'space replay · ← → frame · 1 2 3 4 speed · F full screen · S sound');
  main.append(stage, caption, impact, bar, help);
  const mine = m => !bay || m.bay === bay;
  // The bay's angles in its order (face-on left, down-the-line right), the devices it does not list after.
  const order = ((await api('/api/bays').catch(() => ({ bays: [] }))).bays.find(b => b.name === bay) || { devices: [] }).devices;
  const inOrder = angles => angles.map((a, i) => [a, i]).sort((p, q) => ((order.indexOf(p[0].device) + 1 || 99) - (order.indexOf(q[0].device) + 1 || 99)) || p[1] - q[1]).map(p => p[0]);
  const speedText = r => ({ 1: '1×', 0.5: '½×', 0.25: '¼×', 0.125: '⅛×' })[r];
  const fmtClock = ms => ms ? new Date(ms).toLocaleTimeString() : '';

  // angles: [{ clipId, device, src, offset (video time at impact, s), fps }]; T = 0 at the impact.
  function show(swing) {
    swing.angles = inOrder(swing.angles);
    if (state.player) state.player.destroy();
    cancelAnimationFrame(state.loopRaf);
    const videos = swing.angles.map(a => el('video', { src: a.src, muted: '', playsinline: '', preload: 'auto', 'data-clip': a.clipId }));
    stage.replaceChildren(...swing.angles.map((a, i) => el('div', { class: 'bay-angle', 'data-device': a.device }, videos[i], el('span', { class: 'label' }, a.label))));
    stage.style.setProperty('--angles', swing.angles.length);
    const player = new SyncPlayer(videos, swing.angles.map(a => a.offset), swing.angles.map(a => a.fps || 60));
    player.audible = state.audible;
    player.setRate(state.rate);
    state.player = player; state.swing = swing;
    window.studioPlayer = player;
    caption.textContent = `${bay ? 'Bay ' + bay + ' · ' : ''}${fmtClock(swing.t0WallMs)} · ${swing.angles.length} angle${swing.angles.length > 1 ? 's' : ''} · ${speedText(state.rate)}${swing.first ? ' · first look' : ''}`;
    // The loop: from where every angle has a picture to where the first one ends.
    const span = () => {
      const starts = videos.map((v, i) => -player.offsets[i]);
      const ends = videos.map((v, i) => (v.duration || 0) - player.offsets[i]);
      return [Math.max(...starts), Math.min(...ends)];
    };
    const tick = () => {
      const [from, to] = span();
      const T = player.T;
      if (player.playing && to > from && T >= to - 0.02) { player.seek(from); }
      const p = to > from ? (T - from) / (to - from) : 0;
      $('#bay-progress').style.width = `${Math.max(0, Math.min(1, p)) * 100}%`;
      $('#bay-mark').style.left = `${to > from ? (-from) / (to - from) * 100 : 0}%`;
      impact.classList.toggle('on', Math.abs(T) < 0.5 / (swing.angles[0].fps || 60) + 0.04 * state.rate);
      state.loopRaf = requestAnimationFrame(tick);
    };
    const ready = Promise.all(videos.map(v => v.readyState >= 1 ? null : new Promise(r => v.addEventListener('loadedmetadata', r, { once: true }))));
    ready.then(() => {
      if (state.player !== player) return;
      player.seek(span()[0]);
      player.play();
      state.loopRaf = requestAnimationFrame(tick);
    });
    // When the swing's first frame is on screen: the figure `ppc-tool bench replay` reads.
    const lead = videos[0];
    if (lead.requestVideoFrameCallback && swing.t0WallMs && !swing.measured) {
      swing.measured = true;
      lead.requestVideoFrameCallback((now, meta) => {
        window.bayStats.push({ key: swing.key, first: !!swing.first, t0WallMs: swing.t0WallMs, shownWallMs: performance.timeOrigin + meta.expectedDisplayTime });
        main.dataset.shown = String(window.bayStats.length);
      });
    }
    main.dataset.swing = swing.key;
    main.dataset.angles = String(swing.angles.length);
    main.dataset.first = swing.first ? 'yes' : 'no';
  }

  // A catalogued swing as the bay screen plays it.
  async function loadSwing(id) {
    const s = await api('/api/swings/' + encodeURIComponent(id));
    const t0 = s.t0HostNs;
    return {
      key: s.id, swingId: s.id, t0HostNs: t0, t0WallMs: s.t0WallMs, first: false,
      angles: s.angles.map(a => ({ clipId: a.clipId, device: a.device, src: a.video, fps: a.framesPerSecond, label: a.bay ? `${a.device}` : a.device,
        offset: (a.zeroHostNs != null && t0 != null) ? (t0 - a.zeroHostNs) / 1e9 : a.impactSeconds })),
    };
  }

  // A first look: a new swing, or one more angle of the swing just begun (within 100 ms on the host clock).
  function looked(m) {
    const cur = state.swing;
    const same = cur && cur.t0HostNs != null && m.t0HostNs != null && Math.abs(cur.t0HostNs - m.t0HostNs) < 100e6 && !cur.angles.some(a => a.device === m.device);
    const angle = { clipId: m.clipId, device: m.device, src: m.url, fps: 0, label: m.device,
      offset: (m.zeroHostNs != null && m.t0HostNs != null) ? (m.t0HostNs - m.zeroHostNs) / 1e9 : m.impactSeconds };
    if (same) {
      const T = state.player ? state.player.T : 0;
      show({ ...cur, angles: [...cur.angles, angle] });
      state.player.seek(T);
    } else {
      show({ key: m.clipId, t0HostNs: m.t0HostNs, t0WallMs: m.t0WallMs, first: true, angles: [angle] });
    }
  }

  // A clip catalogued: its whole angle replaces its first look (same moment kept), or, for a swing not on screen, the
  // swing is loaded anew when it is the newest.
  async function catalogued(m) {
    const cur = state.swing;
    const ours = cur && (cur.swingId === m.swingId || cur.angles.some(a => a.clipId === m.clipId));
    if (!ours && cur && cur.t0HostNs != null && m.t0HostNs != null && m.t0HostNs < cur.t0HostNs - 1e9) return;  // an older swing's late angle
    const s = await loadSwing(m.swingId);
    if (ours) {
      const T = state.player ? state.player.T : 0;
      s.t0WallMs = cur.t0WallMs; s.key = cur.key; s.measured = cur.measured;
      // Angles still only a first look stay until their clip comes.
      s.angles = [...s.angles, ...cur.angles.filter(a => !s.angles.some(b => b.device === a.device))];
      s.first = s.angles.some(a => a.src.startsWith('/looks/'));  // some angle is still only its first look
      show(s);
      state.player.seek(T);
    } else {
      show(s);
    }
  }

  live.listeners.add(m => {
    if (m.type === 'look' && mine(m)) looked(m);
    if (m.type === 'clip' && mine(m)) catalogued(m).catch(e => { caption.textContent = String(e.message || e); });
    if (m.type === 'reconnected') newest();
  });
  async function newest() {
    const { swings } = await api('/api/swings?limit=1' + (bay ? '&bay=' + encodeURIComponent(bay) : ''));
    if (swings.length && (!state.swing || state.swing.swingId !== swings[0].id)) show(await loadSwing(swings[0].id));
  }
  await newest();
  const keys = e => {
    const p = state.player;
    if (e.key === 'f' || e.key === 'F') { document.fullscreenElement ? document.exitFullscreen() : document.documentElement.requestFullscreen().catch(() => {}); }
    if (e.key === 's' || e.key === 'S') { state.audible = !state.audible; if (p) { p.audible = state.audible; p.sound(); } }
    if (!p) return;
    if (e.key === ' ') { e.preventDefault(); const [from] = [Math.max(...p.videos.map((v, i) => -p.offsets[i]))]; p.seek(from); p.play(); }
    if (e.key === 'ArrowRight') { e.preventDefault(); p.step(1); }
    if (e.key === 'ArrowLeft') { e.preventDefault(); p.step(-1); }
    if ('1234'.includes(e.key) && e.key.length === 1) {
      state.rate = speeds[Number(e.key) - 1]; p.setRate(state.rate);
      if (state.swing) caption.textContent = caption.textContent.replace(/[0-9½¼⅛]+×/, speedText(state.rate));
      main.dataset.rate = String(state.rate);
    }
  };
  document.addEventListener('keydown', keys);
  main.dataset.rate = String(state.rate);
  main.dataset.ready = 'yes';
  teardown = () => { document.removeEventListener('keydown', keys); cancelAnimationFrame(state.loopRaf); if (state.player) state.player.destroy(); };
}
