// Progressive enhancement for every page; without it the pages still work (times stay in UTC,
// secrets can be selected and copied by hand).
(function () {
  // <time datetime="…" data-local="time|datetime">: the reader's local time replaces the UTC text.
  var formats = {
    time: { hour: '2-digit', minute: '2-digit', timeZoneName: 'short' },
    datetime: { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' },
  };
  document.querySelectorAll('time[data-local]').forEach(function (el) {
    var at = new Date(el.getAttribute('datetime'));
    if (isNaN(at.getTime())) return;
    el.title = at.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
    el.textContent = at.toLocaleString(undefined, formats[el.getAttribute('data-local')] || formats.datetime);
  });

  // <button data-copy="id-of-element">: copies that element's text and says so.
  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    var source = document.getElementById(button.getAttribute('data-copy'));
    if (!source || !navigator.clipboard) return;
    button.hidden = false;
    var label = button.textContent;
    button.addEventListener('click', function () {
      navigator.clipboard.writeText(source.textContent.trim()).then(
        function () { button.textContent = 'Copied'; },
        function () { button.textContent = 'Copy failed: select the text'; },
      );
      setTimeout(function () { button.textContent = label; }, 2500);
    });
  });
})();
