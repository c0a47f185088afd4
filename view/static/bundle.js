// promoral view, published: the page of `promoral view --bundle`. There is
// no server: the viewer's Go code, compiled to WebAssembly (view.wasm.gz),
// answers the page's /api/* requests here, and the page's routes live in
// the URL's hash (#/case/0/12), which any static host serves.
'use strict';

(function () {
  const base = new URL('.', location.href.split('#')[0]).href;
  let resolveReady, rejectReady;
  const ready = new Promise((res, rej) => { resolveReady = res; rejectReady = rej; });
  ready.catch(() => {});
  const B = window.promoralBundle = {
    base,
    readOnly: true,
    ready: serve => resolveReady(serve),
    failed: msg => rejectReady(new Error('The bundle cannot be opened: ' + msg)),
    // here is the page's route: the hash as a path and query.
    here() {
      const u = new URL((location.hash || '#/').slice(1) || '/', 'http://bundle');
      return {pathname: u.pathname, search: u.search, href: location.href};
    },
    url: path => '#' + path,
    // fetch answers a request of the page as the server would.
    async fetch(u, init) {
      const serve = await ready;
      const url = new URL(u, 'http://bundle');
      const a = await serve((init && init.method) || 'GET', url.pathname + url.search, (init && init.body) || '');
      return new Response(a.body, {status: a.status, headers: {'Content-Type': a.type || 'application/json'}});
    },
  };

  async function start() {
    const res = await fetch(new URL('view.wasm.gz', base));
    if (!res.ok) throw new Error('view.wasm.gz: ' + res.status + ' ' + res.statusText);
    let bytes = new Uint8Array(await res.arrayBuffer());
    // A host may have undone the gzip already (Content-Encoding).
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      bytes = new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer());
    }
    B.report = await fetch(new URL('promoral-bundle.json', base)).then(r => r.json()).then(b => !!b.report, () => false);
    const go = new Go();
    const {instance} = await WebAssembly.instantiate(bytes, go.importObject);
    go.run(instance).then(() => rejectReady(new Error('the viewer stopped')));
  }
  start().catch(e => rejectReady(e));

  // Links the page draws as /path open as #/path (a new tab, a copied link).
  new MutationObserver(muts => {
    for (const m of muts) for (const n of m.addedNodes) {
      if (n.nodeType !== 1) continue;
      const links = n.matches('a[data-nav]') ? [n] : n.querySelectorAll('a[data-nav]');
      for (const a of links) {
        const href = a.getAttribute('href');
        if (href && href.startsWith('/')) a.setAttribute('href', '#' + href);
      }
    }
  }).observe(document.documentElement, {childList: true, subtree: true});
  // The header is drawn before this script runs.
  for (const a of document.querySelectorAll('a[data-nav]')) {
    const href = a.getAttribute('href');
    if (href && href.startsWith('/')) a.setAttribute('href', '#' + href);
  }
  const report = document.getElementById('reportlink');
  if (report) report.setAttribute('href', 'report.html');
})();
