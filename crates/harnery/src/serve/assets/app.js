// harnery serve: live pages. Every 2 s the script asks the server for its
// newest ledger row (/api/last-seq); when it changed, the sessions page
// swaps in its table rows (marking new and changed sessions) and a session
// page appends the events it does not show yet. It writes ledger text only
// as text (textContent), and talks only to its own server. An event's
// anchor in the address marks its span in the timeline.
(function () {
  "use strict";
  var root = document.documentElement;
  var live = document.getElementById("live");
  var seen = null;

  function say(text) {
    if (live) live.textContent = text;
  }

  function poll() {
    fetch("/api/last-seq", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.json(); })
      .then(function (s) {
        var key = (s.epoch || "") + ":" + s.seq;
        root.setAttribute("data-live-seq", String(s.seq));
        if (seen !== null && key !== seen) {
          return Promise.all([refreshRows(), appendEvents()]).then(function () {
            seen = key;
            say("updated at seq " + s.seq);
          });
        }
        seen = key;
      })
      .catch(function () { say("server unreachable; retrying"); })
      .then(function () { setTimeout(poll, 2000); });
  }

  function refreshRows() {
    var table = document.getElementById("sessions");
    var body = document.getElementById("session-rows");
    if (!table || !body) return null;
    return fetch(table.getAttribute("data-fragment"), { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var before = {};
        Array.prototype.forEach.call(body.rows, function (tr) {
          before[tr.getAttribute("data-session")] = tr.getAttribute("data-sig");
        });
        var fresh = document.createElement("tbody");
        fresh.innerHTML = html;
        Array.prototype.forEach.call(fresh.rows, function (tr) {
          var id = tr.getAttribute("data-session");
          if (!(id in before)) tr.classList.add("new");
          else if (before[id] !== tr.getAttribute("data-sig")) tr.classList.add("changed");
        });
        body.replaceChildren.apply(body, Array.prototype.slice.call(fresh.rows));
      });
  }

  function since(ms) {
    var sign = ms < 0 ? "-" : "+";
    ms = Math.abs(ms);
    var frac = String(ms % 1000);
    while (frac.length < 3) frac = "0" + frac;
    return sign + Math.floor(ms / 1000) + "." + frac + "s";
  }

  function cell(tr, text, numeric) {
    var td = document.createElement("td");
    if (numeric) td.className = "n";
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  function appendEvents() {
    var body = document.getElementById("events");
    if (!body) return null;
    var id = body.getAttribute("data-session");
    var base = "/sessions/" + encodeURIComponent(id);
    return fetch("/api/sessions/" + encodeURIComponent(id), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (t) {
        var next = Number(body.getAttribute("data-next"));
        t.entries.forEach(function (e) {
          if (e.offset < next) return;
          var tr = document.createElement("tr");
          tr.className = "new";
          tr.id = "e" + e.offset;
          tr.setAttribute("data-offset", String(e.offset));
          if (e.span) tr.setAttribute("data-span", e.span.request_event_id);
          var a = document.createElement("a");
          a.href = base + "/events/" + e.offset;
          a.textContent = String(e.offset);
          cell(tr, "").appendChild(a);
          cell(tr, since(e.at_ms));
          cell(tr, e.text);
          cell(tr, e.agent_id || "");
          cell(tr, e.turn_tokens === undefined ? "-" : String(e.turn_tokens), true);
          body.appendChild(tr);
          next = e.offset + 1;
        });
        body.setAttribute("data-next", String(next));
      });
  }

  // A link to an event (#e{offset}, as the search page's hits are) also
  // marks the span of the timeline that event is a side of.
  function markTarget() {
    var old = document.querySelectorAll(".span.hit");
    for (var i = 0; i < old.length; i++) old[i].classList.remove("hit");
    var row = /^#e[0-9]+$/.test(location.hash) && document.getElementById(location.hash.slice(1));
    var span = row && row.getAttribute("data-span");
    if (!span) return;
    var spans = document.querySelectorAll("[data-span-id]");
    for (var j = 0; j < spans.length; j++) {
      if (spans[j].getAttribute("data-span-id") === span) spans[j].classList.add("hit");
    }
  }

  window.addEventListener("hashchange", markTarget);
  markTarget();
  poll();
})();
