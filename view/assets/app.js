// promoral view: the page. Plain DOM, no library, no network beyond the
// local server. Every text from the run goes through textContent.
'use strict';

const app = document.getElementById('app');
const qbox = document.getElementById('q');
// B: a published bundle (promoral view --bundle, bundle.js): no server,
// the viewer answers in the page, and routes live in the URL's hash.
const B = window.promoralBundle;
const here = () => B ? B.here() : location;
const S = {meta: null, list: null, sel: 0, keys: null, annotator: localStorage.getItem('promoral.annotator') || ''};

// ---- helpers ----

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'style') el.style.cssText = v; // through the CSSOM: the policy blocks style attributes
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat(Infinity)) {
    if (k == null || k === false) continue;
    el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return el;
}

async function api(path, params) {
  const u = new URL(path, location.origin);
  if (params) for (const [k, v] of params) u.searchParams.append(k, v);
  const res = await (B ? B.fetch(u) : fetch(u));
  // The server reads a run again when its outputs change (apply re-scored
  // it): the run's description is then read again, on the next page.
  const outputs = res.headers.get('X-Promoral-Outputs');
  if (outputs != null) {
    if (S.outputs != null && outputs !== S.outputs) {
      S.stale = true;
      toast('The run\'s outputs changed on disk: the view has read them again');
      setTimeout(route, 0);
    }
    S.outputs = outputs;
  }
  const body = await res.json().catch(() => ({error: res.status + ' ' + res.statusText}));
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

const fmtInt = n => n == null ? '–' : Number(n).toLocaleString('en-US');
const fmt = (v, d = 3) => v == null || Number.isNaN(v) ? '–' : Number(v).toFixed(d);
const signed = (v, d = 3) => v == null ? '–' : (v > 0 ? '+' : v < 0 ? '−' : '±') + Math.abs(v).toFixed(d);
// arr: a list from the server as a list. The server answers [] for an
// empty one; a page that meets null still draws instead of failing.
const arr = v => Array.isArray(v) ? v : [];
const pval = p => p == null ? '–' : p < 0.0001 ? '<0.0001' : p.toPrecision(2);

function toast(msg) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  t.classList.add('on');
  clearTimeout(toast.t);
  toast.t = setTimeout(() => t.classList.remove('on'), 2200);
}

function errorBox(e) { return h('div', {class: 'error-box', text: e.message || String(e)}); }

function go(url, replace) {
  if (B) url = B.url(url.replace(/^#/, ''));
  if (replace) history.replaceState(null, '', url); else history.pushState(null, '', url);
  route();
}

document.addEventListener('click', e => {
  const a = e.target.closest('a[data-nav]');
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  go(a.getAttribute('href'));
});
window.addEventListener('popstate', route);

function outcomeTag(r) {
  const cls = {right: 'right', wrong: 'wrong', unparsed: 'unparsed', error: 'error', 'no gold': 'nogold'}[r.outcome] || 'nogold';
  return h('span', {class: 'oc ' + cls, title: r.error ? 'error: ' + r.error : null, text: r.outcome});
}

function flags(r, inQueue) {
  return [
    r.audit && !inQueue ? h('span', {class: 'flag audit', title: 'the judge flagged this case for audit', text: 'AUDIT'}) : null,
    r.labels && r.labels.length ? h('span', {class: 'flag lab', title: 'human labels: ' + r.labels.join(', '), text: '✓ ' + r.labels.join('/')}) : null,
    r.truncated ? h('span', {class: 'flag cut', title: 'a reply was cut off by max_tokens', text: 'CUT'}) : null,
    r.blocked ? h('span', {class: 'flag blk', title: 'a reply was blocked by the provider', text: 'BLOCKED'}) : null,
  ];
}

// shortID keeps the informative end of a long item id.
// shortID keeps an id's end, where its number is; the Item column is wide
// enough for it (the whole id is the cell's title).
function shortID(s) { return s.length > 18 ? '…' + s.slice(-16) : s; }

function caseHref(run, i, nav) {
  return '/case/' + run + '/' + i + (nav ? '?nav=' + encodeURIComponent(nav) : '');
}

// The list's filters live in the page URL: shareable, and the report's
// links open them directly.
function listParams() {
  const p = new URLSearchParams(here().search);
  p.delete('offset');
  return p;
}

// ---- routing ----

async function route() {
  S.keys = null;
  S.marks = null;
  if (S.stale || !S.meta) {
    // The run's description is replaced only once the new one is here: a
    // page still drawing from the old one keeps it meanwhile.
    S.stale = false;
    let meta;
    try { meta = await api('/api/meta'); } catch (e) { app.replaceChildren(errorBox(e)); return; }
    S.meta = meta;
    const r0 = S.meta.runs[0];
    const rn = document.getElementById('runname');
    rn.replaceChildren();
    if (S.meta.runs[1]) {
      // Two runs: the list shows either; Compare pairs them.
      rn.append(...S.meta.runs.map((r, k) => h('a', {href: k ? '/?run=1' : '/', 'data-nav': true, 'data-run': k, title: r.dir, text: r.name + ' (' + fmtInt(r.cases) + ')'})));
    } else {
      rn.textContent = r0.name + ' · ' + fmtInt(r0.cases) + ' cases';
      rn.title = r0.dir;
    }
    if (B) rn.append(h('span', {class: 'muted', text: ' · published copy, read-only', title: 'a static copy of the run (promoral view --bundle): labels cannot be given here'}));
    document.getElementById('reportlink').hidden = !(r0.report || (B && B.report));
    if (!S.annotator && S.meta.annotator) S.annotator = S.meta.annotator;
    const auditTab = document.querySelector('[data-tab=audit]');
    auditTab.querySelectorAll('.n').forEach(n => n.remove());
    if (r0.flagged) auditTab.append(h('span', {class: 'n', text: fmtInt(r0.flagged)}));
    document.getElementById('reloaderr').replaceChildren(...S.meta.runs.filter(r => r.reload_error).map(r => h('div', {class: 'note warn', text: r.reload_error})));
  }
  const path = here().pathname;
  let tab = 'cases';
  if (path.startsWith('/unparsed')) tab = 'unparsed';
  else if (path.startsWith('/compare')) tab = 'compare';
  else if (path.startsWith('/audit')) tab = 'audit';
  for (const a of document.querySelectorAll('nav.tabs a[data-tab]')) a.classList.toggle('on', a.dataset.tab === tab);
  qbox.value = new URLSearchParams(here().search).get('q') || '';
  window.scrollTo(0, 0);
  try {
    const m = path.match(/^\/case\/(\d+)\/(\d+)/);
    if (m) return await casePage(+m[1], +m[2]);
    if (tab === 'unparsed') return await unparsedPage();
    if (tab === 'compare') return await comparePage();
    if (tab === 'audit') return await auditPage();
    return await listPage();
  } catch (e) {
    console.error('promoral view: ' + ((e && e.stack) || e)); // the page shows it; the console keeps its stack
    app.replaceChildren(errorBox(e));
  }
}

// ---- keyboard ----

document.addEventListener('keydown', e => {
  const t = e.target;
  const typing = t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT';
  if (e.key === '/' && !typing) { e.preventDefault(); qbox.focus(); qbox.select(); return; }
  if (e.key === 'Escape' && typing) { t.blur(); return; }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (S.keys && S.keys(e)) e.preventDefault();
});

let searchTimer;
qbox.addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(applySearch, 250);
});
// Enter searches and hands the keys back to the list (j, k, Enter).
qbox.addEventListener('keydown', e => { if (e.key === 'Enter') { clearTimeout(searchTimer); qbox.blur(); applySearch(); } });

function applySearch() {
  const p = here().pathname === '/' || here().pathname.startsWith('/unparsed') || here().pathname.startsWith('/compare')
    ? new URLSearchParams(here().search) : new URLSearchParams();
  const v = qbox.value.trim();
  if (v) p.set('q', v); else p.delete('q');
  p.delete('offset');
  const base = here().pathname.startsWith('/unparsed') || here().pathname.startsWith('/compare') ? here().pathname : '/';
  const url = base + (p.toString() ? '?' + p : '');
  go(url, base === here().pathname);
}

// ---- the list ----

async function listPage() {
  const params = new URLSearchParams(here().search);
  const run = +(params.get('run') || 0);
  document.querySelectorAll('#runname a').forEach(a => a.classList.toggle('on', +a.dataset.run === run));
  S.marks = marksFor(params.get('q'));
  const offset = +(params.get('offset') || 0);
  const page = await api('/api/cases', [...params, ['limit', '100']]);
  page.rows = arr(page.rows);
  S.list = page;
  if (page.search === 'indexing') {
    clearTimeout(listPage.poll);
    listPage.poll = setTimeout(() => { if (here().pathname === '/') route(); }, 800);
  }
  const nav = listParams().toString();
  const table = h('table', {class: 'cases'},
    h('colgroup', null, h('col', {style: 'width:86px'}), h('col', {style: 'width:11%'}), h('col', {style: 'width:11%'}), h('col', {style: 'width:9%'}),
      h('col', {style: 'width:max(12%, 150px)'}), h('col', {style: 'width:10%'}), h('col', {style: 'width:11%'}), h('col', {style: 'width:56px'}), h('col', null)),
    h('thead', null, h('tr', null, ['Outcome', 'Model', 'Strategy', 'Task', 'Item', 'Gold', 'Answer', 'Conf', 'Item text'].map((c, k) => h('th', {class: k === 7 ? 'num' : null, text: c})))),
    h('tbody', null, page.rows.map((r, k) => h('tr', {'data-k': k, onclick: () => go(caseHref(run, r.i, nav))},
      h('td', null, outcomeTag(r)),
      h('td', {title: r.model, text: r.model}), h('td', {title: r.strategy, text: r.strategy}), h('td', {title: r.task, text: r.task}),
      h('td', {class: 'item', title: r.id, text: shortID(r.base || r.item) + (r.repeat ? ' #' + r.repeat : '')}),
      h('td', {text: r.gold || '–'}),
      h('td', {title: r.verdict ? 'judge verdict ' + r.verdict : null}, r.label || (r.verdict ? '' : '–'), flags(r)),
      h('td', {class: 'num', text: r.conf == null ? '–' : fmt(r.conf, 2)}),
      h('td', {class: 'ex'}, marked(h('div', {class: 'clamp'}), r.excerpt || '')))))
  );
  const selChips = [];
  for (const [k, v] of params) {
    if (k === 'offset' || k === 'sort' || k === 'run') continue;
    selChips.push(h('span', {class: 'chip x', title: 'remove this filter', onclick: () => {
      const p = new URLSearchParams(here().search);
      const vals = p.getAll(k).filter(x => x !== v);
      p.delete(k); vals.forEach(x => p.append(k, x)); p.delete('offset');
      go('/?' + p, true);
    }}, h('b', {text: k === 'q' ? 'search' : k}), v));
  }
  const sort = h('select', {onchange: e => { const p = listParams(); if (e.target.value) p.set('sort', e.target.value); else p.delete('sort'); go('/?' + p, true); }},
    [['', 'run order'], ['-conf', 'confidence ↓'], ['conf', 'confidence ↑'], ['-tokens', 'tokens ↓'], ['tokens', 'tokens ↑'], ['-cost', 'cost ↓']]
      .map(([v, t]) => h('option', {value: v, selected: (params.get('sort') || '') === v, text: t})));
  const summary = h('div', {class: 'summary'},
    h('span', {class: 'big', text: fmtInt(page.total)}),
    h('span', {class: 'muted', text: 'of ' + fmtInt(S.meta.runs[run].cases) + ' cases' + (S.meta.runs[1] ? ' in ' + S.meta.runs[run].name : '')}),
    h('span', {class: 'chips'}, selChips),
    h('span', {class: 'tools'}, h('span', {class: 'faint', title: 'time the server took to filter, count and fetch this page', text: (page.took_ms < 10 ? page.took_ms.toFixed(1) : page.took_ms.toFixed(0)) + ' ms'}), 'Sort', sort,
      page.total > 0 ? h('a', {href: '/compare?' + listParams(), 'data-nav': true, text: 'Compare…'}) : null,
      h('a', {href: '/unparsed?' + listParams(), 'data-nav': true, text: 'Unparsed…'})));
  const pager = h('div', {class: 'pager'},
    h('button', {disabled: offset === 0, onclick: () => { const p = new URLSearchParams(here().search); p.set('offset', Math.max(0, offset - 100)); go('/?' + p); }, text: '← Previous'}),
    h('span', {text: page.total ? `${fmtInt(offset + 1)}–${fmtInt(Math.min(offset + 100, page.total))} of ${fmtInt(page.total)}` : 'no case matches'}),
    h('button', {disabled: offset + 100 >= page.total, onclick: () => { const p = new URLSearchParams(here().search); p.set('offset', offset + 100); go('/?' + p); }, text: 'Next →'}));
  const main = h('div', null,
    page.search === 'indexing' ? h('div', {class: 'banner', text: `Building the search index (${Math.round(page.progress * 100)}%): the search applies as soon as it is ready; the other filters work now.`}) : null,
    summary,
    page.rows.length ? table : h('div', {class: 'empty', text: 'No case matches these filters.'}),
    pager,
    h('div', {class: 'keys'}, h('kbd', {text: 'j'}), h('kbd', {text: 'k'}), ' move  ', h('kbd', {text: 'Enter'}), ' open  ', h('kbd', {text: '/'}), ' search  ', h('kbd', {text: 'n'}), h('kbd', {text: 'p'}), ' next / previous page'));
  app.replaceChildren(h('div', {class: 'listview'}, facetPanel(page.facets, '/'), main));
  if (!page.rows.some(r => r.excerpt) && page.rows.length) fillExcerpts(params, offset);
  S.sel = Math.min(S.sel, Math.max(0, page.rows.length - 1));
  markSel();
  S.keys = e => {
    const n = page.rows.length;
    if (e.key === 'j' || e.key === 'ArrowDown') { S.sel = Math.min(n - 1, S.sel + 1); markSel(true); return true; }
    if (e.key === 'k' || e.key === 'ArrowUp') { S.sel = Math.max(0, S.sel - 1); markSel(true); return true; }
    if ((e.key === 'Enter' || e.key === 'o') && n) { go(caseHref(run, page.rows[S.sel].i, nav)); return true; }
    if (e.key === 'n' && offset + 100 < page.total) { S.sel = 0; pager.lastChild.click(); return true; }
    if (e.key === 'p' && offset > 0) { S.sel = 0; pager.firstChild.click(); return true; }
    return false;
  };
}

// fillExcerpts adds the item texts once the background index has read
// them, without redrawing the list under the reader's eyes.
async function fillExcerpts(params, offset) {
  const here = location.href;
  for (let tries = 0; tries < 120; tries++) {
    await new Promise(ok => setTimeout(ok, 1000));
    if (location.href !== here) return;
    const m = await api('/api/meta');
    if (!m.runs[0].search_ready) continue;
    S.meta.runs = m.runs;
    const page = await api('/api/cases', [...params, ['limit', '100']]);
    if (location.href !== here) return;
    app.querySelectorAll('table.cases tbody tr').forEach((tr, k) => {
      const c = tr.querySelector('.clamp');
      if (c && page.rows[k]) { c.replaceChildren(); marked(c, page.rows[k].excerpt || ''); }
    });
    return;
  }
}

function markSel(scroll) {
  const rows = app.querySelectorAll('table.cases tbody tr');
  rows.forEach((tr, k) => tr.classList.toggle('sel', k === S.sel));
  if (scroll && rows[S.sel]) rows[S.sel].scrollIntoView({block: 'nearest'});
}

// facetPanel draws the filters; clicking a value toggles it in the URL.
function facetPanel(facets, base) {
  const params = new URLSearchParams(here().search);
  // Values no case has under the other filters are left out (a selected
  // one stays, with its zero, so it can be cleared); a facet with one
  // value says nothing unless chosen.
  // When nothing matches, every count is 0: the values stay, with their
  // zeros, so the panel keeps its filters and says why the list is empty.
  const all = arr(facets).map(f => ({...f, values: arr(f.values)}));
  const nothing = all.every(f => f.values.every(v => !v.n));
  const shown = all.map(f => nothing ? f : {...f, values: f.values.filter(v => v.n > 0 || v.selected)})
    .filter(f => f.values.length > 1 || f.values.some(v => v.selected));
  const none = nothing ? h('p', {class: 'nothing faint'}, 'No case matches these filters and search. ',
    h('a', {href: base, 'data-nav': true, text: 'Clear all'})) : null;
  return h('aside', {class: 'facets'}, none, shown.map(f => {
    const max = Math.max(1, ...f.values.map(v => v.n));
    const any = f.values.some(v => v.selected);
    const long = f.values.length > 8;
    const box = h('div', {class: 'facet', 'data-facet': f.name},
      h('h4', null, f.title, any ? h('a', {href: '#', onclick: e => { e.preventDefault(); const p = new URLSearchParams(here().search); p.delete(f.name); p.delete('offset'); go(base + '?' + p, true); }, text: 'clear'}) : null));
    f.values.forEach((v, k) => {
      const row = h('div', {class: 'fv' + (v.selected ? ' on' : '') + (v.n === 0 ? ' zero' : ''), 'data-value': v.value, title: v.value, hidden: long && k >= 8 && !v.selected,
        onclick: () => {
          const p = new URLSearchParams(here().search);
          const vals = p.getAll(f.name);
          p.delete(f.name);
          (vals.includes(v.value) ? vals.filter(x => x !== v.value) : [...vals, v.value]).forEach(x => p.append(f.name, x));
          p.delete('offset');
          go(base + '?' + p, true);
        }},
        h('span', {class: 'box'}), h('span', {class: 'v', text: v.value}), h('span', {class: 'c', text: fmtInt(v.n)}),
        h('span', {class: 'bar', style: `width:calc((100% - 12px) * ${v.n / max})`}));
      box.append(row);
    });
    if (long) box.append(h('div', {class: 'more', onclick: e => { box.querySelectorAll('.fv[hidden]').forEach(x => x.hidden = false); e.target.remove(); }, text: `show all ${f.values.length}`}));
    return box;
  }));
}

// ---- a case ----

function kv(label, value, title) { return h('span', {class: 'chip', title}, h('b', {text: label}), value); }

// fieldsTable lists an object's fields; prefix names where they come from
// (item., outputs., judge.), so the item's own label is never mistaken for
// the model's.
function fieldsTable(obj, prefix) {
  return h('table', {class: 'fields'}, Object.entries(obj).map(([k, v]) => h('tr', null, h('th', {text: (prefix || '') + k}), h('td', null, valueNode(v)))));
}

function valueNode(v) {
  if (v == null) return h('span', {class: 'faint', text: 'null'});
  if (typeof v === 'string') return v.length > 80 || v.includes('\n') ? pre(v) : h('span', {text: v});
  if (typeof v === 'object') return h('pre', {class: 'text mono', text: JSON.stringify(v, null, 2)});
  return h('span', {class: 'mono', text: String(v)});
}

async function casePage(run, i) {
  const nav = new URLSearchParams(here().search).get('nav');
  S.marks = marksFor(nav ? new URLSearchParams(nav).get('q') : '');
  const params = [['run', run], ['i', i]];
  if (nav != null) params.push(['nav', nav]);
  const c = await api('/api/case', params);
  const r = c.row;
  const back = '/' + (nav ? '?' + nav : '');
  const navBox = h('div', {class: 'casenav'},
    h('a', {href: back, 'data-nav': true, text: '← list'}),
    c.nav && c.nav.pos >= 0 ? h('span', {text: `${fmtInt(c.nav.pos + 1)} of ${fmtInt(c.nav.total)}`}) : null,
    h('button', {class: 'btn', disabled: !(c.nav && c.nav.prev != null), onclick: () => go(caseHref(run, c.nav.prev, nav)), title: 'previous case (k)', text: '↑ prev'}),
    h('button', {class: 'btn', disabled: !(c.nav && c.nav.next != null), onclick: () => go(caseHref(run, c.nav.next, nav)), title: 'next case (j)', text: 'next ↓'}));
  const head = h('div', null,
    h('div', {class: 'casehead'}, h('h1', {text: r.id}), outcomeTag(r), flags(r), navBox),
    h('div', {class: 'kv'},
      kv('model', r.model), kv('strategy', r.strategy), kv('task', r.task), kv('item', r.item),
      c.samples ? kv('repeat', `${r.repeat || 0} (of ${c.samples.length})`, 'the sample index of this case; the panel below shows every sample of the item') : null,
      kv('gold', r.gold || '–', 'the gold label the task reads from the item'), kv('answer', r.label || '–', 'the label read from the model\'s reply'),
      kv('confidence', r.conf == null ? '–' : fmt(r.conf, 3)),
      r.verdict ? kv('judge', r.verdict) : null,
      (r.subsets || []).length ? kv('subsets', r.subsets.join(', ')) : null,
      kv('tokens', fmtInt(r.tokens)), c.fields.cost_usd != null ? kv('cost', '$' + Number(c.fields.cost_usd).toFixed(5)) : null,
      kv('steps', fmtInt(c.fields.steps))));
  const parts = [head];
  for (const n of c.notes || []) parts.push(h('div', {class: 'note warn', text: n}));
  if (c.error) parts.push(h('div', {class: 'error-box', text: 'error: ' + c.error}));
  if (c.row.audit) parts.push(h('div', {class: 'panel'}, h('h2', null, 'Human label', h('span', {class: 'sub', text: 'the judge flagged this case for audit'})), labelBox(run, i, c, null)));
  else labelState = null;
  if (c.samples) parts.push(samplesPanel(run, r, c.samples, nav));
  const item = c.item || {};
  const left = h('div', {class: 'panel item'}, h('h2', null, 'Item', h('span', {class: 'sub', text: Object.keys(item).length + ' fields of the dataset, as the prompts see them'})), fieldsTable(item, 'item.'));
  const outs = h('div', {class: 'panel outputs'}, h('h2', null, 'Strategy outputs', h('span', {class: 'sub', text: 'what the model\'s answer gave'})),
    c.outputs ? fieldsTable(c.outputs, 'outputs.') : h('p', {class: 'muted', text: 'none (the case did not finish its strategy)'}),
    c.judge ? [h('h2', {style: 'margin-top:14px'}, 'Judge outputs'), fieldsTable(c.judge, 'judge.')] : null);
  parts.push(h('div', {class: 'grid2'}, left, outs));
  parts.push(stepsPanel(c));
  parts.push(h('details', {class: 'raw panel'}, h('summary', {text: 'Every column of this results.parquet row'}), fieldsTable(c.fields)));
  parts.push(h('div', {class: 'keys'}, h('kbd', {text: 'j'}), h('kbd', {text: 'k'}), ' next / previous case  ', h('kbd', {text: 'u'}), ' back to the list'));
  app.replaceChildren(...parts);
  S.keys = e => {
    if (e.key === 'j' && c.nav && c.nav.next != null) { go(caseHref(run, c.nav.next, nav)); return true; }
    if (e.key === 'k' && c.nav && c.nav.prev != null) { go(caseHref(run, c.nav.prev, nav)); return true; }
    if (e.key === 'u' || e.key === 'Backspace') { go(back); return true; }
    return labelKeys(e);
  };
}

// samplesPanel shows every repeat of the case's item side by side: what
// each sample answered, and how it scored.
function samplesPanel(run, r, samples, nav) {
  const labels = new Set(samples.filter(x => x.label).map(x => x.label));
  const sub = `${samples.length} samples; ${labels.size} distinct label${labels.size === 1 ? '' : 's'}` +
    (samples.some(x => !x.label) ? ', some unparsed' : '');
  return h('div', {class: 'panel'}, h('h2', null, 'Every sample of this item', h('span', {class: 'sub', text: sub})),
    h('table', {class: 'cases'},
      h('thead', null, h('tr', null, ['Repeat', 'Outcome', 'Label', 'Conf', 'Reply'].map(c => h('th', {text: c})))),
      h('tbody', null, samples.map(x => h('tr', {class: x.i === r.i ? 'sel' : null, onclick: () => go(caseHref(run, x.i, nav)), title: x.id},
        h('td', {class: 'num', text: String(x.repeat || 0)}),
        h('td', null, outcomeTag(x)),
        h('td', {text: x.label || '–'}),
        h('td', {class: 'num', text: x.conf == null ? '–' : fmt(x.conf, 2)}),
        h('td', {class: 'ex'}, h('div', {class: 'clamp', text: x.reply || ''})))))));
}

// stepKind is the stage's kind as the trace records it; runs written
// before the trace carried kinds get a guess from what the step left.
function stepKind(s) {
  if (s.kind) return s.kind;
  if (s.call) return 'prompt';
  const o = s.out || {};
  if ('label_rule' in o || 'parsed' in o) return 'extract';
  return 'stage';
}

function stepsPanel(c) {
  const steps = c.steps || [];
  const list = h('ol', {class: 'steps'});
  // A prompt that continues an earlier conversation repeats its messages
  // and reply: those are folded away, the new ones shown.
  let prevConv = [];
  steps.forEach((s, k) => {
    const kind = stepKind(s);
    const judge = s.stage.startsWith('judge.');
    const body = h('div', {class: 'stepbody'});
    let meta = '';
    if (s.call) {
      const at = s.call.attempts;
      const last = at[at.length - 1];
      meta = callMeta(last, at.length);
      const msgs = last.messages || [];
      let shown = 0;
      while (shown < msgs.length - 1 && shown < prevConv.length && msgs[shown].role === prevConv[shown].role && msgs[shown].content === prevConv[shown].content) shown++;
      if (shown > 0) {
        const hidden = h('div', {hidden: true}, msgs.slice(0, shown).map(messageNode));
        body.append(h('span', {class: 'earlier', onclick: e => { hidden.hidden = !hidden.hidden; e.target.textContent = hidden.hidden ? `▸ ${shown} earlier message(s) of this conversation` : '▾ earlier messages'; }, text: `▸ ${shown} earlier message(s) of this conversation`}), hidden);
      }
      body.append(...msgs.slice(shown).map(messageNode));
      at.forEach((a, n) => {
        if (a.error) body.append(h('div', {class: 'msg failed'}, h('div', {class: 'role', text: `attempt ${a.attempt || n + 1} failed`}), pre(a.error)));
      });
      if (last.reply != null) body.append(h('div', {class: 'msg reply'}, h('div', {class: 'role', text: 'reply' + (last.finish_reason ? ' · ' + last.finish_reason : '')}), pre(last.reply || '(empty)')));
      if (last.choices) body.append(h('details', {class: 'raw'}, h('summary', {text: 'all samples'}), valueNode(last.choices)));
      prevConv = [...msgs, {role: 'assistant', content: last.reply || ''}];
    } else if (kind === 'extract') {
      body.append(extractNode(s));
    } else if (s.out && Object.keys(s.out).length) {
      body.append(fieldsTable(s.out));
    } else {
      body.append(h('span', {class: 'muted', text: 'no outputs'}));
    }
    if (s.error) body.append(h('div', {class: 'error-box', text: s.error}));
    list.append(h('li', {class: 'step' + (judge ? ' judge' : '')},
      h('div', {class: 'stephead'}, h('span', {class: 'n', text: '#' + (k + 1)}), h('span', {class: 'name', text: s.stage}),
        h('span', {class: 'kind', text: kind + (s.visit > 1 ? ' · visit ' + s.visit : '')}),
        s.next ? h('span', {class: 'goto', title: 'where this stage sent the case', text: '→ ' + s.next}) : null,
        h('span', {class: 'meta', text: meta})),
      body));
  });
  for (const g of c.calls || []) {
    const last = g.attempts[g.attempts.length - 1];
    const body = h('div', {class: 'stepbody'}, (last.messages || []).map(messageNode),
      g.attempts.filter(a => a.error).map(a => h('div', {class: 'msg failed'}, h('div', {class: 'role', text: `attempt ${a.attempt} failed`}), h('pre', {class: 'text', text: a.error}))),
      last.reply != null ? h('div', {class: 'msg reply'}, h('div', {class: 'role', text: 'reply'}), pre(last.reply)) : null);
    list.append(h('li', {class: 'step'}, h('div', {class: 'stephead'}, h('span', {class: 'name', text: g.stage}), h('span', {class: 'kind', text: 'call'}), h('span', {class: 'meta', text: callMeta(last, g.attempts.length)})), body));
  }
  const n = steps.length;
  return h('div', {class: 'panel'}, h('h2', null, 'Stages', h('span', {class: 'sub', text: n ? `${n} stage runs in order, with each call's rendered messages and reply` : 'no trace recorded'})),
    n || (c.calls || []).length ? list : h('p', {class: 'muted', text: 'This case made no model call and left no trace.'}));
}

function callMeta(a, attempts) {
  const parts = [];
  parts.push(a.from_journal ? 'from the journal' : 'new call');
  if (attempts > 1) parts.push(attempts + ' attempts');
  if (a.prompt_tokens != null) parts.push(`${fmtInt(a.prompt_tokens)} + ${fmtInt(a.completion_tokens)} tokens` + (a.thinking_tokens ? ` (${fmtInt(a.thinking_tokens)} thinking)` : ''));
  if (a.latency_ms != null && !a.from_journal) parts.push(Math.round(a.latency_ms) + ' ms');
  if (a.model_version) parts.push(a.model_version);
  return parts.join(' · ');
}

// pre shows a text, marking the words of the search the page was reached
// from (S.marks), the way the search matched them: at a word's start.
function pre(text) { return marked(h('pre', {class: 'text'}), text); }

function marked(el, text) {
  if (!S.marks) { el.textContent = text; return el; }
  let last = 0;
  for (const m of text.matchAll(S.marks)) {
    const at = m.index + m[1].length;
    el.append(text.slice(last, at), h('mark', {text: m[2]}));
    last = at + m[2].length;
  }
  el.append(text.slice(last));
  return el;
}

function marksFor(q) {
  const words = (q || '').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(w => w);
  if (!words.length) return null;
  const esc = words.map(w => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp('(^|[^\\p{L}\\p{N}])(' + esc.join('|') + ')', 'giu');
}

function messageNode(m) {
  return h('div', {class: 'msg ' + (m.role || '')}, h('div', {class: 'role', text: m.role}), pre(m.content));
}

function extractNode(s) {
  const o = s.out || {};
  const note = s.note || {};
  const box = h('div', null);
  const chips = h('div', {class: 'extract'},
    note.source ? kv('read', note.source === 'text' ? 'a text expression' : 'the reply of ' + note.source) : null,
    kv('label', o.label || '–'), kv('parsed', String(o.parsed)),
    o.label_rule ? kv('rule', o.label_rule) : null, o.label_raw ? kv('raw', o.label_raw) : null,
    kv('confidence', o.confidence == null ? '–' : fmt(o.confidence, 3)), o.confidence_bin ? kv('bin', o.confidence_bin) : null);
  box.append(chips);
  const extra = Object.entries(o).filter(([k]) => !['label', 'parsed', 'label_rule', 'label_raw', 'confidence', 'confidence_parsed', 'confidence_bin'].includes(k));
  if (extra.length) box.append(h('div', {style: 'margin-top:6px'}, fieldsTable(Object.fromEntries(extra))));
  if (note.miss) box.append(missNode(note.miss));
  return box;
}

function missNode(m) {
  return h('div', {class: 'miss'},
    h('div', null, h('b', {text: 'No label read. '}), 'Shape ', h('span', {class: 'shape', text: m.shape})),
    m.line ? h('div', {class: 'muted'}, 'Answer line: ', h('span', {class: 'mono', text: m.line})) : null,
    h('div', null, m.rule ? [h('b', {text: 'Nearest rule '}), h('code', {text: m.rule}), ': '] : null, m.why),
    m.fix ? h('div', {class: 'fix', text: '→ ' + m.fix}) : null);
}

// ---- labels ----

let labelState = null;

function labelBox(run, i, c, onSaved) {
  const task = c.row.task;
  const choices = (S.meta.runs[run].choices || {})[task] || [];
  const mine = (c.labels || []).find(l => l.annotator === S.annotator);
  const who = h('input', {type: 'text', value: S.annotator, placeholder: 'your name', size: 14, onchange: e => { S.annotator = e.target.value.trim(); localStorage.setItem('promoral.annotator', S.annotator); }});
  const note = h('input', {type: 'text', placeholder: 'note (optional)', size: 40, value: mine ? mine.note : ''});
  const status = h('div', {class: 'saved'});
  const others = h('div', {class: 'muted', style: 'font-size:12.5px'});
  const show = labels => {
    others.replaceChildren(...(labels || []).map(l => h('div', null, h('b', {text: l.annotator}), ': ', l.label, ' · ', new Date(l.time).toLocaleString(), l.note ? ' · “' + l.note + '”' : '')));
  };
  show(c.labels);
  const buttons = choices.map((v, k) => h('button', {class: 'choice' + (mine && mine.label === v ? ' on' : ''), 'data-label': v, onclick: () => save(v)}, h('kbd', {text: String(k + 1)}), v));
  async function save(v) {
    if (!S.annotator) { who.focus(); toast('Set your name first: labels are saved under it'); return; }
    try {
      const res = await fetch('/api/label', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({run, i, label: v, note: note.value, annotator: S.annotator})});
      const body = await res.json();
      if (!res.ok) throw new Error(body.error);
      buttons.forEach(b => b.classList.toggle('on', b.dataset.label === v));
      status.textContent = v ? `Saved “${v}” as ${S.annotator} to ${body.file}` : `Withdrawn (${body.file})`;
      show(body.labels);
      toast(v ? 'Label saved' : 'Label withdrawn');
      if (onSaved) onSaved(v, body.labels);
    } catch (e) {
      status.replaceChildren(errorBox(e));
    }
  }
  if (B) {
    labelState = null;
    return h('div', {class: 'labelbox'},
      h('div', {class: 'note', text: 'This is a published copy of the run, read-only: labels are given in `promoral view` on the run folder. Labels given before it was published are shown.'}),
      others);
  }
  labelState = {save, choices};
  return h('div', {class: 'labelbox'},
    h('div', {class: 'row'}, 'What did the reply do?', h('span', {class: 'muted', text: 'Saved append-only to the run\'s labels.jsonl; the latest label per person counts.'})),
    h('div', {class: 'choices'}, buttons, mine ? h('button', {class: 'choice', onclick: () => save(''), title: 'withdraw your label', text: 'withdraw'}) : null),
    h('div', {class: 'row'}, 'Annotator', who, 'Note', note),
    status, others);
}

function labelKeys(e) {
  if (!labelState) return false;
  const k = parseInt(e.key, 10);
  if (k >= 1 && k <= labelState.choices.length) { labelState.save(labelState.choices[k - 1]); return true; }
  return false;
}

// ---- unparsed ----

async function unparsedPage() {
  const params = new URLSearchParams(here().search);
  const u = await api('/api/unparsed', [...params]);
  const cfg = u.config || 'CONFIG';
  const howto = h('div', {class: 'howto'},
    h('b', {text: 'Fixing a rule and re-scoring. '}),
    'Each group below is a kind of reply from which no label was read, with the extraction rule that came closest and why it missed.',
    h('ol', null,
      h('li', null, 'Edit the extraction rules: the task\'s ', h('code', {text: 'extract:'}), ' block (configs/tasks/…) or the extract stage\'s ', h('code', {text: 'rules:'}), ' in the strategy. A suggested rule below has been tried on that reply.'),
      h('li', null, 'Run ', h('code', {text: 'promoral apply ' + cfg}), ' again. It re-scores every case from the journal without calling a model (', h('code', {text: '0 new'}), ' calls), and rewrites results.parquet and the metrics.'),
      h('li', null, 'Come back here (the view reads the new results as soon as apply has switched them in): what still misses is what is left.')),
    u.trace ? null : h('div', {class: 'note warn', text: 'This run has no trace column (written before promoral view existed), so the reasons are missing: apply again to write them.'}));
  const parts = [h('div', {class: 'summary'}, h('span', {class: 'big', text: fmtInt(u.total)}), h('span', {class: 'muted', text: 'unparsed replies (no error) among the cases these filters leave, in ' + (u.groups || []).length + ' shapes'})), howto];
  if (!u.total) parts.push(h('div', {class: 'empty', text: 'Every reply in this selection was parsed.'}));
  const max = Math.max(1, ...(u.groups || []).map(g => g.n));
  for (const g of u.groups || []) {
    const lines = h('table', {class: 'lines'});
    const addRows = rows => rows.forEach((row, k) => {
      const ex = (g.examples || []).find(x => x.i === row.i);
      lines.append(h('tr', {onclick: () => go(caseHref(0, row.i))},
        h('td', {class: 'id', text: row.model + ' · ' + row.strategy}),
        h('td', {class: 'l', text: ex ? (ex.line || ex.found || '') : (row.excerpt || '')}),
        h('td', {class: 'id', text: row.item})));
    });
    addRows((g.rows || []).slice(0, 6));
    const foot = h('div', {class: 'foot'});
    if ((g.rows || []).length > 6) foot.append(h('a', {href: '#', onclick: e => { e.preventDefault(); addRows(g.rows.slice(6)); foot.remove(); }, text: `show ${g.rows.length - 6} more` + (g.n > g.rows.length ? ` (of ${g.n - 6})` : '')}));
    parts.push(h('div', {class: 'group', 'data-shape': g.shape},
      h('div', {class: 'grouphead'},
        h('div', null, h('div', {class: 'shape', text: g.shape}), h('div', {class: 'faint', style: 'font-size:12px'}, (g.stage ? 'stage ' + g.stage + ' · ' : '') + (g.models || []).map(m => m.value + ' ' + m.n).join(', '))),
        h('div', {class: 'count', text: fmtInt(g.n)}),
        (g.why || []).slice(0, 2).map(w => h('div', {class: 'why', text: ((g.why || []).length > 1 ? w.n + '× ' : '') + w.value})),
        (g.fix || []).slice(0, 2).map(f => h('div', {class: 'fix', text: '→ ' + f.value}))),
      h('div', {class: 'gbar'}, h('i', {style: `width:${100 * g.n / max}%`})),
      lines, foot));
  }
  app.replaceChildren(h('div', {class: 'listview'}, facetPanel(await facetsFor(params), '/unparsed'), h('div', null, parts)));
}

async function facetsFor(params) {
  const p = await api('/api/cases', [...params, ['limit', '1']]);
  return p.facets;
}

// ---- compare ----

async function comparePage() {
  const params = new URLSearchParams(here().search);
  const meta = S.meta.runs[0];
  const two = S.meta.runs.length > 1;
  let by = params.get('by') || (two ? 'run' : 'strategy');
  const vals = by === 'run' ? [] : meta.values[by] || [];
  let a = params.get('a') || vals[0] || '';
  let b = params.get('b') || vals.find(v => v !== a) || '';
  const set = (k, v) => { const p = new URLSearchParams(here().search); p.set(k, v); if (k === 'by') { p.delete('a'); p.delete('b'); } p.delete('offset'); go('/compare?' + p, true); };
  const sel = (k, cur, options) => h('select', {'data-k': k, onchange: e => set(k, e.target.value)}, options.map(o => h('option', {value: o, selected: o === cur, text: o})));
  const controls = h('div', {class: 'controls'}, 'Compare',
    sel('by', by, two ? ['strategy', 'model', 'run'] : ['strategy', 'model']),
    by !== 'run' ? [sel('a', a, vals), h('span', {class: 'vs', text: 'vs'}), sel('b', b, vals)] : h('span', {text: S.meta.runs[0].name + ' vs ' + S.meta.runs[1].name}),
    'show', h('select', {'data-k': 'only', onchange: e => set('only', e.target.value)},
      [['', 'all pairs, flips first'], ['flips', 'flips only'], ['changed', 'any change']].map(([v, t]) => h('option', {value: v, selected: (params.get('only') || '') === v, text: t}))),
    h('span', {class: 'faint', text: 'on the same items; the filters on the left apply to both sides'}));
  if (by !== 'run' && (!a || !b || a === b)) {
    app.replaceChildren(controls, h('div', {class: 'empty', text: `This run has a single ${by}: nothing to compare.`}));
    return;
  }
  const q = [...params];
  if (!params.get('by')) q.push(['by', by]);
  if (!params.get('a') && by !== 'run') q.push(['a', a], ['b', b]);
  q.push(['limit', '200']);
  const c = await api('/api/compare', q);
  c.cells = arr(c.cells);
  c.pairs = arr(c.pairs);
  const cells = h('table', {class: 'cells'},
    h('thead', null, h('tr', null, ['Cell', 'n', 'A', 'B', 'B − A', '95% interval', 'A✓ B✗', 'A✗ B✓', 'McNemar p', 'Holm p', 'not scored'].map((t, k) => h('th', {class: k ? 'num' : null, text: t})))),
    h('tbody', null, c.cells.map(x => x.incomplete ? h('tr', null,
      h('td', {text: x.cell}), h('td', {class: 'num', text: fmtInt(x.n)}),
      h('td', {colspan: 8, class: 'muted', text: 'incomplete: a run has errored cases in this cell and counts them as incomplete (errors: incomplete); apply again retries them'}),
      h('td', {class: 'num', text: fmtInt(x.unscored)})) : h('tr', null,
      h('td', {text: x.cell}), h('td', {class: 'num', text: fmtInt(x.n)}), h('td', {class: 'num', text: fmt(x.acc_a)}), h('td', {class: 'num', text: fmt(x.acc_b)}),
      h('td', {class: 'num ' + (x.diff > 0 ? 'pos' : x.diff < 0 ? 'neg' : ''), text: signed(x.diff)}),
      h('td', {class: 'num', text: x.lo == null ? '–' : `${signed(x.lo)} … ${signed(x.hi)}`}),
      h('td', {class: 'num', text: fmtInt(x.a_right_b_wrong)}), h('td', {class: 'num', text: fmtInt(x.a_wrong_b_right)}),
      h('td', {class: 'num', text: pval(x.p)}), h('td', {class: 'num', text: pval(x.holm)}), h('td', {class: 'num', text: fmtInt(x.unscored)})))));
  const list = h('div', {class: 'pairs'});
  c.pairs.forEach(p => {
    const side = r => h('div', {class: 'side'}, outcomeTag(r), ' ', h('b', {text: r.label || r.verdict || '–'}),
      r.conf != null ? h('span', {class: 'muted', text: ' · ' + fmt(r.conf, 2)}) : null, flags(r));
    const row = h('div', {class: 'pair', 'data-item': p.item},
      h('div', null, h('div', null, h('span', {class: 'it', text: p.item}), ' ', h('span', {class: 'faint', style: 'font-size:11.5px', text: p.cell}),
        p.flip ? [' ', h('span', {class: 'fliptag ' + p.flip.replace(' ', '').replace('label', ''), text: p.flip})] : null),
        h('div', {class: 'ex', text: p.a.excerpt || ''})),
      side(p.a), side(p.b));
    row.addEventListener('click', () => openPair(row, p, by));
    list.append(row);
  });
  const headA = by === 'run' ? c.run_a : c.a, headB = by === 'run' ? c.run_b : c.b;
  const parts = [controls,
    h('div', {class: 'summary'}, h('span', {class: 'big', text: fmtInt(c.paired)}), h('span', {class: 'muted', text: 'items on both sides'}),
      h('span', {class: 'chip', title: 'items right on one side and wrong on the other'}, h('b', {text: 'right ↔ wrong'}), fmtInt(c.flips)),
      h('span', {class: 'chip', title: 'items whose label differs but are right on both sides or wrong on both (not counted in right ↔ wrong)'}, h('b', {text: 'other label, same correctness'}), fmtInt(c.changed)),
      c.alone ? h('span', {class: 'chip', title: 'A cases with no B case on the same item'}, h('b', {text: 'unpaired'}), fmtInt(c.alone)) : null),
    h('div', {class: 'panel'}, h('h2', null, `Paired accuracy: A = ${headA}, B = ${headB}`), cells, h('p', {class: 'faint', style: 'font-size:12px;margin:8px 0 0', text: c.method})),
    h('div', {class: 'pairhead'}, h('div', {text: 'Item'}), h('div', {class: 'side', text: 'A · ' + headA}), h('div', {class: 'side', text: 'B · ' + headB})),
    list,
    c.total > c.pairs.length ? h('p', {class: 'muted', text: `Showing the first ${c.pairs.length} of ${fmtInt(c.total)} pairs, flips first.`}) : null];
  app.replaceChildren(h('div', {class: 'listview'}, facetPanel(await facetsFor(params), '/compare'), h('div', null, parts)));
  let k = -1;
  const rows = () => list.querySelectorAll('.pair');
  S.keys = e => {
    const rs = rows();
    if (e.key === 'j' || e.key === 'k') {
      k = Math.max(0, Math.min(rs.length - 1, k + (e.key === 'j' ? 1 : -1)));
      rs.forEach((r, n) => r.classList.toggle('sel', n === k));
      if (rs[k]) rs[k].scrollIntoView({block: 'nearest'});
      return true;
    }
    if (e.key === 'Enter' && rs[k]) { rs[k].click(); return true; }
    return false;
  };
}

// mainReply is the reply a person wants to read: the last call's reply
// outside the judge, else a reply field of the outputs or the item.
function mainReply(c) {
  const steps = (c.steps || []).filter(s => s.call && !s.stage.startsWith('judge.'));
  if (steps.length) { const at = steps[steps.length - 1].call.attempts; return at[at.length - 1].reply || ''; }
  for (const src of [c.outputs, c.item]) for (const k of ['reply', 'response', 'answer', 'output']) if (src && typeof src[k] === 'string') return src[k];
  return '';
}

// openPair shows both cases under their row: every turn (model call) of
// each, the k-th turns side by side, each pair of replies with the words
// only one side has marked.
async function openPair(row, p, by) {
  const next = row.nextElementSibling;
  if (next && next.classList.contains('sidebyside')) { next.remove(); return; }
  const runB = by === 'run' ? 1 : 0;
  const pv = await api('/api/pair', [['a', p.a.i], ['b', p.b.i], ['run_b', runB]]);
  const head = (r, run) => h('div', {class: 'sbshead'}, h('span', {class: 'role', text: r.model + ' · ' + r.strategy}),
    h('a', {href: caseHref(run, r.i), 'data-nav': true, text: 'open the case →'}));
  const reply = (t, tp, keep) => {
    if (t.reply == null) return h('div', {class: 'msg failed'}, h('div', {class: 'role', text: 'no reply'}), pre(t.error || '(none)'));
    let body;
    if (tp.diff && !tp.same) {
      body = h('pre', {class: 'text'});
      for (const d of tp.diff) {
        if (d.op === '=') body.append(d.text);
        else if (d.op === keep) body.append(h(keep === '-' ? 'del' : 'ins', {class: 'dx', text: d.text}));
      }
    } else body = pre(t.reply || '(empty)');
    return h('div', {class: 'msg reply'}, h('div', {class: 'role', text: 'reply' + (tp.same ? ' · the same on both sides' : '')}), body);
  };
  const cell = (t, tp, k, keep) => {
    const side = keep === '-' ? ' a' : ' b';
    if (!t) return h('div', {class: 'turn none' + side, 'data-turn': k + 1}, h('div', {class: 'role', text: `turn ${k + 1}`}), h('span', {class: 'muted', text: 'no such turn on this side'}));
    const asked = t.asked || [];
    return h('div', {class: 'turn' + side, 'data-turn': k + 1},
      h('div', {class: 'role', text: `turn ${k + 1} · ${t.stage}` + (t.visit > 1 ? ' · visit ' + t.visit : '')}),
      asked.length ? h('details', {class: 'asked'}, h('summary', {text: `asked: ${asked.length} message${asked.length > 1 ? 's' : ''}` + (t.earlier ? ` after ${t.earlier} earlier` : '')}), asked.map(messageNode)) : null,
      reply(t, tp, keep));
  };
  const turns = arr(pv.turns).flatMap((tp, k) => [cell(tp.a, tp, k, '-'), cell(tp.b, tp, k, '+')]);
  row.after(h('div', {class: 'sidebyside'}, head(pv.a, 0), head(pv.b, runB),
    turns.length ? turns : h('div', {class: 'muted', style: 'grid-column:1/-1', text: 'Neither case has a reply.'}),
    h('div', {class: 'faint sbsnote', text: 'Each turn is one model call, in the order made; a continued conversation shows only what was new at that turn. Words only in A are marked on the left, only in B on the right.'})));
}

// ---- audit ----

async function auditPage() {
  const params = new URLSearchParams(here().search);
  if (!params.has('audit')) params.set('audit', 'flagged');
  const page = await api('/api/cases', [...params, ['limit', '2000']]);
  page.rows = arr(page.rows);
  if (!page.total) {
    app.replaceChildren(h('div', {class: 'listview'}, facetPanel(page.facets, '/audit'),
      h('div', {class: 'empty', text: S.meta.runs[0].flagged ? 'No flagged case matches these filters.' : 'The judge flagged no case in this run: there is nothing to audit. (The queue holds the cases a task\'s judge marks with audit: true, as the hybrid safety judge does.)'})));
    return;
  }
  let cur = +(params.get('at') || 0);
  const labelledChip = h('span', {class: 'chip'});
  const countLabelled = () => labelledChip.replaceChildren(h('b', {text: 'labelled'}), fmtInt(page.rows.filter(r => r.labels && r.labels.length).length));
  countLabelled();
  const queue = h('div', {class: 'queue'});
  const detail = h('div');
  const items = page.rows.map((r, k) => {
    const el = h('div', {class: 'qi', onclick: () => show(k)},
      h('div', {class: 't'}, r.model + ' · ' + r.strategy + ' · ' + r.item), h('div', null, h('b', {text: r.verdict || '–'}), flags(r, true)), h('div', {class: 'r', text: r.excerpt || ''}));
    queue.append(el);
    return el;
  });
  async function show(k) {
    cur = Math.max(0, Math.min(page.rows.length - 1, k));
    items.forEach((el, n) => el.classList.toggle('sel', n === cur));
    items[cur].scrollIntoView({block: 'nearest'});
    const r = page.rows[cur];
    const c = await api('/api/case', [['run', 0], ['i', r.i]]);
    const j = c.judge || {};
    const prompt = c.item ? (c.item.prompt || c.item.text || c.item.question || JSON.stringify(c.item, null, 2)) : '';
    detail.replaceChildren(
      h('div', {class: 'casehead'}, h('h1', {style: 'font-size:16px', text: r.id}), h('span', {class: 'muted', text: `${cur + 1} of ${page.total}`}),
        h('a', {href: caseHref(0, r.i), 'data-nav': true, class: 'casenav', text: 'every stage →'})),
      h('div', {class: 'kv'}, kv('verdict', j.label || '–'), kv('P(refusal)', j.confidence == null ? '–' : fmt(j.confidence, 2)),
        j.heuristic ? kv('heuristic', j.heuristic) : null, j.llm_label !== undefined ? kv('LLM', j.llm_label || '–') : null, j.source ? kv('decided by', j.source) : null,
        c.item && c.item.kind ? kv('kind', c.item.kind) : null),
      j.audit_reason ? h('div', {class: 'note warn', text: 'Flagged: ' + j.audit_reason}) : null,
      h('div', {class: 'panel'}, h('h2', null, 'Request'), h('pre', {class: 'text', text: prompt})),
      h('div', {class: 'panel'}, h('h2', null, 'Reply', h('span', {class: 'sub', text: r.model + ' · ' + r.strategy})), pre(mainReply(c) || '(no reply)')),
      labelBox(0, r.i, c, (v, labels) => {
        r.labels = labels.map(l => l.label);
        countLabelled();
        const fresh = h('div', {class: 'qi sel', onclick: () => show(cur)},
          h('div', {class: 't'}, r.model + ' · ' + r.strategy + ' · ' + r.item), h('div', null, h('b', {text: r.verdict || '–'}), flags(r, true)), h('div', {class: 'r', text: r.excerpt || ''}));
        items[cur].replaceWith(fresh);
        items[cur] = fresh;
        if (v && cur + 1 < page.rows.length) setTimeout(() => show(cur + 1), 350);
      }),
      h('div', {class: 'keys'}, h('kbd', {text: '1'}), '…', h('kbd', {text: String((labelState ? labelState.choices.length : 0) || 1)}), ' label  ', h('kbd', {text: 'j'}), h('kbd', {text: 'k'}), ' next / previous'));
  }
  app.replaceChildren(h('div', {class: 'summary'}, h('span', {class: 'big', text: fmtInt(page.total)}), h('span', {class: 'muted', text: 'cases in the audit queue'}),
    labelledChip,
    page.total > page.rows.length ? h('span', {class: 'muted', text: `the queue shows the first ${fmtInt(page.rows.length)}; narrow it with the filters (Cases › Audit flag)`}) : null),
    h('div', {class: 'auditview'}, queue, detail));
  S.keys = e => {
    if (e.key === 'j') { show(cur + 1); return true; }
    if (e.key === 'k') { show(cur - 1); return true; }
    return labelKeys(e);
  };
  await show(cur);
}

route();
