// The owners' portal (/account): each <form data-api="/account/api/…"> is sent to the JSON API with
// fetch, as JSON from this origin (the API's defence against other sites' forms), and then:
//   data-done="reload"        reloads the page, which shows data-notice;
//   data-done="go:/path"      goes there, which shows data-notice;
//   data-done="secret"        fills the hidden section named by data-secret with the answer's fields
//                             ([data-field="agent_secret"] …) and shows it: a secret shown once, never stored;
//                             the websites table keeps only the websites the answer still lists.
// Fields: a checkbox sends true/false; data-type="boolean" sends value === "true"; data-type="nullable"
// sends null for an empty value; data-type="json" sends the value parsed (data-invalid says why not).
// An unchecked checkbox's data-notice-unchecked replaces the form's data-notice.
// A refusal's error_description appears in the form's role=status element.
// A change that weakens the owner's protection answers 403 fresh_authentication_required when the
// session's last confirmation is too old: the page asks in place (the passkey, or else a fresh sign-in
// link) and sends the change again, so nothing typed is lost. window.agentAuthPortal.api does the same
// for the pages' own scripts.
(function () {
  var KEY = 'portal-notice';
  var notice = document.getElementById('portal-notice');
  var kept = window.sessionStorage.getItem(KEY);
  if (kept && notice) {
    window.sessionStorage.removeItem(KEY);
    notice.textContent = kept;
    notice.hidden = false;
  }

  function fields(form) {
    var data = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name) return;
      var type = el.getAttribute('data-type');
      if (el.type === 'checkbox') data[el.name] = el.checked;
      else if (type === 'boolean') data[el.name] = el.value === 'true';
      else if (type === 'nullable') data[el.name] = el.value.trim() === '' ? null : el.value.trim();
      else if (type === 'json') data[el.name] = parsed(el);
      else data[el.name] = el.value;
    });
    return data;
  }

  function parsed(el) {
    try {
      return JSON.parse(el.value);
    } catch (e) {
      throw new Error(el.getAttribute('data-invalid') || el.name + ' is not JSON');
    }
  }

  function noticeOf(form) {
    var message = form.getAttribute('data-notice');
    form.querySelectorAll('input[type=checkbox][data-notice-unchecked]').forEach(function (box) {
      if (!box.checked) message = box.getAttribute('data-notice-unchecked');
    });
    return message;
  }

  function showSecret(section, data) {
    section.querySelectorAll('[data-field]').forEach(function (el) {
      el.textContent = data[el.getAttribute('data-field')] || '';
    });
    section.querySelectorAll('a[data-agent-link]').forEach(function (a) {
      a.href = '/account/agents/' + encodeURIComponent(data.agent_id);
    });
    section.hidden = false;
    section.focus();
  }

  // An answer that lists the agent's websites (a rotation that signed it out of them) trims the table, as a
  // reload would, without losing the secret shown once.
  function keepWebsites(websites) {
    var table = document.getElementById('websites-table');
    if (!table || !Array.isArray(websites)) return;
    var live = websites.map(function (w) { return w.client_id; });
    table.querySelectorAll('tbody tr[data-client]').forEach(function (row) {
      if (live.indexOf(row.getAttribute('data-client')) < 0) row.remove();
    });
    if (table.querySelector('tbody tr')) return;
    var section = table.closest('section');
    section.querySelectorAll(':scope > .hint, :scope > .table-wrap').forEach(function (el) { el.remove(); });
    var empty = document.createElement('p');
    empty.className = 'empty';
    empty.textContent = 'None: this agent holds no live sign-in anywhere.';
    section.appendChild(empty);
  }

  var JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };
  function post(url, body) {
    return fetch(url, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body || {}) });
  }
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }
  function failure(res) {
    return res.json().then(function (data) {
      throw new Error(data.error_description || 'that did not work');
    });
  }

  // The question, after the element `near`: resolves once the session is fresh, rejects when it cannot be now.
  function confirmFresh(near) {
    var old = document.getElementById('step-up');
    if (old) old.remove();
    var box = el('div', null, 'card offer');
    box.id = 'step-up';
    box.setAttribute('role', 'group');
    box.setAttribute('aria-label', 'Confirm that it is you');
    var text = el('p');
    box.appendChild(text);
    var actions = el('div', null, 'actions');
    box.appendChild(actions);
    near.insertAdjacentElement('afterend', box);
    return post('/account/api/reauthenticate/options').then(function (res) {
      return res.json().then(function (options) {
        if (!res.ok) return offerLink(box, text, actions);
        text.textContent = 'This change weakens the protection of your account, so we ask you to confirm that it is you.';
        return new Promise(function (resolve, reject) {
          var confirm = el('button', 'Confirm with your passkey', 'primary');
          var cancel = el('button', 'Cancel');
          confirm.type = cancel.type = 'button';
          actions.append(confirm, cancel);
          cancel.addEventListener('click', function () {
            box.remove();
            reject(new Error('not confirmed'));
          });
          confirm.addEventListener('click', function () {
            confirm.disabled = true;
            navigator.credentials
              .get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) })
              .then(function (cred) {
                return post('/account/api/reauthenticate', { credential: cred.toJSON() });
              })
              .then(function (res) {
                return res.status === 204 ? undefined : failure(res);
              })
              .then(
                function () {
                  box.remove();
                  resolve();
                },
                function (err) {
                  box.remove();
                  reject(err);
                },
              );
          });
        });
      });
    });
  }

  // No passkey: only a new sign-in link makes the session fresh. This page stays as it is meanwhile.
  function offerLink(box, text, actions) {
    text.textContent =
      'This change weakens the protection of your account and needs a fresh sign-in. Open the link we mail you in this browser, then come back to this page and press the button again: what you typed stays here.';
    var send = el('button', 'Email me a sign-in link', 'primary');
    send.type = 'button';
    actions.appendChild(send);
    send.addEventListener('click', function () {
      send.disabled = true;
      fetch('/account/api/me', { headers: { accept: 'application/json' } })
        .then(function (res) {
          return res.json();
        })
        .then(function (me) {
          return post('/account/email-link', { email: me.email }).then(function (res) {
            return res.ok ? me.email : failure(res);
          });
        })
        .then(
          function (email) {
            text.textContent = 'A sign-in link is on its way to ' + email + '. Open it in this browser, then press the button here again.';
            send.remove();
          },
          function (err) {
            text.textContent = 'No link sent: ' + err.message + '.';
            send.disabled = false;
          },
        );
    });
    throw new Error('this change needs a fresh sign-in first');
  }

  // A call of the JSON API that asks for freshness in place (after `near`) and is sent again once fresh.
  function api(method, url, body, near) {
    var send = function () {
      return fetch(url, { method: method, headers: JSON_HEADERS, body: body });
    };
    return send().then(function (res) {
      if (res.status !== 403) return res;
      return res
        .clone()
        .json()
        .then(function (data) {
          return data.error === 'fresh_authentication_required' ? confirmFresh(near).then(send) : res;
        });
    });
  }
  window.agentAuthPortal = { api: api };

  document.querySelectorAll('form[data-api]').forEach(function (form) {
    var status = form.querySelector('[role=status]');
    var say = function (text) { if (status) status.textContent = text; };
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var method = form.getAttribute('data-method') || 'POST';
      var body;
      try {
        body = method === 'DELETE' ? undefined : JSON.stringify(fields(form));
      } catch (err) {
        return say('Not done: ' + err.message + '.');
      }
      var buttons = form.querySelectorAll('button');
      buttons.forEach(function (b) { b.disabled = true; });
      say('Working…');
      api(method, form.getAttribute('data-api'), body, status || form)
        .then(function (res) {
          // The session ended (signed out elsewhere, or idle): the sign-in page.
          if (res.status === 401) return void window.location.assign('/account');
          return (res.status === 204 ? Promise.resolve({}) : res.json()).then(function (data) {
            if (!res.ok) throw new Error(data.error_description || 'that did not work');
            var done = form.getAttribute('data-done') || 'reload';
            var message = noticeOf(form);
            if (done === 'secret') {
              showSecret(document.getElementById(form.getAttribute('data-secret')), data);
              keepWebsites(data.websites);
              say(message || '');
              buttons.forEach(function (b) { b.disabled = false; });
              return;
            }
            if (message) window.sessionStorage.setItem(KEY, message);
            if (done.indexOf('go:') === 0) window.location.assign(done.slice(3));
            else window.location.reload();
          });
        })
        .catch(function (err) {
          say('Not done: ' + err.message + '.');
          buttons.forEach(function (b) { b.disabled = false; });
        });
    });
  });
})();
