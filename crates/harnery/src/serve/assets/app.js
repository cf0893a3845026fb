// harnery serve: live pages, the search shortcut and the theme switch.
//
// Every 2 s the script asks the server for its newest ledger row
// (/api/last-seq; on a session page, with that session's own counts).
// When it changed, the sessions page swaps in its table rows (marking new
// and changed sessions), and any other page fetches itself again and
// swaps in the regions the server marked data-live, plus, on a session
// page, the header and the drawing (keeping the zoom). The server renders
// every fragment: this script only moves its nodes, never builds markup
// from ledger text. It talks only to its own server. An event's anchor in
// the address marks its span in the timeline.
(function () {
  "use strict";
  var root = document.documentElement;
  var live = document.getElementById("live");
  var events = document.getElementById("events");
  var session = events && events.getAttribute("data-session");
  var seen = null;

  function say(text) {
    if (live) live.textContent = text;
  }

  function get(url) {
    return fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error(url + ": " + r.status);
      return r;
    });
  }

  function poll() {
    var url = "/api/last-seq" + (session ? "?session=" + encodeURIComponent(session) : "");
    get(url)
      .then(function (r) { return r.json(); })
      .then(function (s) {
        var key = (s.epoch || "") + ":" + (s.session ? s.session.events + ":" + s.session.last_seq : s.seq);
        root.setAttribute("data-live-seq", String(s.seq));
        if (seen !== null && key !== seen) {
          return refresh().then(function () {
            seen = key;
            say("updated at seq " + s.seq);
          });
        }
        seen = key;
      })
      .catch(function () { say("server unreachable; retrying"); })
      .then(function () { setTimeout(poll, 2000); });
  }

  function refresh() {
    if (document.getElementById("session-rows")) return refreshRows();
    if (!document.querySelector("[data-live]")) return Promise.resolve();
    return get(location.href)
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        swap(document.querySelector("main header"), fresh.querySelector("main header"));
        swap(document.getElementById("track"), fresh.getElementById("track"));
        var regions = document.querySelectorAll("[data-live]");
        for (var i = 0; i < regions.length; i++) {
          var name = regions[i].getAttribute("data-live");
          var next = fresh.querySelector('[data-live="' + name + '"]');
          if (name === "events") markNew(regions[i], next);
          else if (name === "conversation") keepOpen(regions[i], next);
          swap(regions[i], next);
        }
        root.setAttribute("data-view-spans", String(document.querySelectorAll("[data-span-id]").length));
        markTarget();
      });
  }

  // Move the children of `next` (from the fetched copy) into `here`.
  function swap(here, next) {
    if (here && next) here.replaceChildren.apply(here, Array.prototype.slice.call(next.childNodes));
  }

  // Rows of the events table the page did not show yet are marked new.
  function markNew(here, next) {
    if (!next) return;
    var had = {};
    Array.prototype.forEach.call(here.rows, function (tr) { had[tr.id] = true; });
    Array.prototype.forEach.call(next.rows, function (tr) {
      if (!had[tr.id]) tr.classList.add("new");
    });
  }

  // A tool call the reader opened stays open.
  function keepOpen(here, next) {
    if (!next) return;
    var open = here.querySelectorAll("li[id] > details[open]");
    for (var i = 0; i < open.length; i++) {
      var same = next.querySelector("#" + open[i].parentNode.id + " > details");
      if (same) same.open = true;
    }
  }

  function refreshRows() {
    var table = document.getElementById("sessions");
    var body = document.getElementById("session-rows");
    return get(table.getAttribute("data-fragment"))
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

  // "/" anywhere but in a field goes to the search box. Keys typed in a
  // field stay there (the drawing's zoom keys listen on the document).
  var find = document.getElementById("find");
  window.addEventListener("keydown", function (event) {
    var t = event.target;
    var field = t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
    if (field) {
      event.stopPropagation();
      if (event.key === "Escape") t.blur();
      return;
    }
    if (event.key === "/" && find && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      event.stopPropagation();
      find.focus();
      find.select();
    }
  }, true);

  // The theme: the system's, or the one the reader picked (theme.js
  // applies it before the first paint).
  var button = document.getElementById("theme");
  var order = ["auto", "dark", "light"];
  function showTheme() {
    var now = root.getAttribute("data-theme") || "auto";
    if (button) button.textContent = "theme: " + now;
  }
  if (button) {
    button.addEventListener("click", function () {
      var now = root.getAttribute("data-theme") || "auto";
      var next = order[(order.indexOf(now) + 1) % order.length];
      if (next === "auto") root.removeAttribute("data-theme");
      else root.setAttribute("data-theme", next);
      try {
        if (next === "auto") localStorage.removeItem("harnery-theme");
        else localStorage.setItem("harnery-theme", next);
      } catch (e) { /* storage refused: the choice lasts this page */ }
      showTheme();
    });
  }
  showTheme();

  // For tests: how wide the page is against the window.
  function measure() {
    root.setAttribute("data-scroll-width", String(root.scrollWidth));
    root.setAttribute("data-inner-width", String(window.innerWidth));
  }
  window.addEventListener("load", measure);
  window.addEventListener("resize", measure);

  window.addEventListener("hashchange", markTarget);
  markTarget();
  poll();
})();
