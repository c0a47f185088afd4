// promoral view: turns the report's data-view marks into links to the
// view's filtered lists (report.html itself has no script and opens offline).
'use strict';
(function () {
  document.querySelectorAll('[data-view]').forEach(function (el) {
    var href = '/?' + el.getAttribute('data-view');
    var a = document.createElement('a'); a.className = 'pv-link'; a.href = href; a.textContent = 'samples →';
    a.title = 'Open these cases in promoral view';
    if (el.tagName === 'TR') { var c = el.querySelector('td'); if (c) c.appendChild(a); }
    else { var cap = el.querySelector('figcaption') || el; cap.appendChild(a); }
  });
})();
